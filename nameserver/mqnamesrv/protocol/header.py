"""Command headers in both serializations: JSON (type 0) and ROCKETMQ binary (type 1).

Pure functions, bytes in and out. Decoders raise RemoteProtocolError for input a
Java peer would refuse; encoders raise LocalProtocolError for values that cannot
be put on the wire.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Mapping

from .codes import LANGUAGE_CODES, LANGUAGE_NAMES, SerializeType
from .errors import LocalProtocolError, RemoteProtocolError
from .fastjson import dumps_str, lenient_loads

_BIN_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_COMPACT = (",", ":")
# Most answers (routes, topic lists, cluster info) carry neither ext nor remark.
_PLAIN_JSON_HEADER = (
    '{{"code":{},"flag":{},"language":"JAVA","opaque":{},"serializeTypeCurrentRPC":"JSON","version":{}}}'
)


# --------------------------------------------------------------------- JSON ----

def _json_map(mapping: Mapping[str, str]) -> str:
    return "{" + ",".join(f"{dumps_str(k)}:{dumps_str(str(v))}" for k, v in mapping.items()) + "}"


def encode_json_header(
    code: int,
    language: str,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext: Mapping[str, str] | None,
) -> bytes:
    """Header JSON exactly as fastjson writes RemotingCommand: keys in alphabetical order,
    nulls omitted, no spaces. Hand-assembled because it runs once per response."""
    if ext is None and remark is None and language == "JAVA":
        return _PLAIN_JSON_HEADER.format(code, flag, opaque, version).encode()
    parts = ['{"code":', str(code)]
    if ext is not None:
        parts.append(',"extFields":')
        parts.append(_json_map(ext))
    parts += [',"flag":', str(flag), ',"language":', dumps_str(language), ',"opaque":', str(opaque)]
    if remark is not None:
        parts += [',"remark":', dumps_str(remark)]
    parts += [',"serializeTypeCurrentRPC":"JSON","version":', str(version), "}"]
    return "".join(parts).encode("utf-8")


def _as_int(obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key, 0)
    if type(value) is int:
        return _int32(value, key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise RemoteProtocolError(f"header field {key!r} is not a number: {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise RemoteProtocolError(f"header field {key!r} is not a number: {value!r}") from None
    return _int32(number, key)


def _int32(number: int, key: str) -> int:
    # Java reads these into an int; a bigger number would fail there, and here it
    # could not be echoed in a ROCKETMQ header.
    if not -0x80000000 <= number <= 0x7FFFFFFF:
        raise RemoteProtocolError(f"header field {key!r} is out of range: {number}")
    return number


def _ext_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    # Java would call toString(); nested structures are not legal custom-header values.
    try:
        return json.dumps(value, separators=_COMPACT)
    except RecursionError:
        raise RemoteProtocolError("header field 'extFields' holds a value nested too deeply") from None


def decode_json_header(data: bytes) -> dict[str, Any]:
    """Parse a JSON header leniently: any field order, missing fields defaulted,
    unknown fields ignored, numbers inside extFields turned into strings."""
    try:
        obj = lenient_loads(data)
    except ValueError as exc:
        raise RemoteProtocolError(f"header is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RemoteProtocolError("header JSON is not an object")
    raw_ext = obj.get("extFields")
    ext: dict[str, str] | None
    if raw_ext is None:
        ext = None
    elif isinstance(raw_ext, dict):
        ext = raw_ext
        if not all(type(v) is str for v in raw_ext.values()):
            ext = {str(k): _ext_value(v) for k, v in raw_ext.items() if v is not None}
    else:
        raise RemoteProtocolError("header field 'extFields' is not an object")
    remark = obj.get("remark")
    language = obj.get("language", "JAVA")
    if isinstance(language, int) and not isinstance(language, bool):
        language = LANGUAGE_NAMES.get(language, str(language))
    return {
        "code": _as_int(obj, "code"),
        "language": str(language) if language is not None else "JAVA",
        "version": _as_int(obj, "version"),
        "opaque": _as_int(obj, "opaque"),
        "flag": _as_int(obj, "flag"),
        "remark": None if remark is None else str(remark),
        "ext": ext,
    }


# ------------------------------------------------------------------- binary ----

def encode_binary_header(
    code: int,
    language: str,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext: Mapping[str, str] | None,
) -> bytes:
    """ROCKETMQ header. Empty strings and empty maps are written as length 0, which
    the reader takes for null: the format cannot tell them apart."""
    try:
        fixed = _BIN_FIXED.pack(code, LANGUAGE_CODES.get(language, LANGUAGE_CODES["OTHER"]), version, opaque, flag)
    except struct.error as exc:
        raise LocalProtocolError(f"header value out of range for ROCKETMQ serialization: {exc}") from None
    out = bytearray(fixed)
    remark_bytes = remark.encode("utf-8") if remark else b""
    out += _I32.pack(len(remark_bytes))
    out += remark_bytes
    entries = bytearray()
    if ext:
        for key, value in ext.items():
            if key is None or value is None:
                continue
            kb = key.encode("utf-8")
            vb = str(value).encode("utf-8")
            if len(kb) > 0x7FFF:
                raise LocalProtocolError(f"ext key too long for ROCKETMQ serialization: {len(kb)} bytes")
            entries += _I16.pack(len(kb))
            entries += kb
            entries += _I32.pack(len(vb))
            entries += vb
    out += _I32.pack(len(entries))
    out += entries
    return bytes(out)


def decode_binary_header(data: bytes) -> dict[str, Any]:
    """Parse a ROCKETMQ header; every length is checked against what is left."""
    size = len(data)
    if size < _BIN_FIXED.size + 8:
        raise RemoteProtocolError(f"ROCKETMQ header too short: {size} bytes")
    code, lang, version, opaque, flag = _BIN_FIXED.unpack_from(data, 0)
    pos = _BIN_FIXED.size

    def take(n: int, what: str) -> bytes:
        nonlocal pos
        if n < 0 or n > size - pos:
            raise RemoteProtocolError(f"ROCKETMQ header: {what} length {n} exceeds the header")
        chunk = data[pos:pos + n]
        pos += n
        return chunk

    def text(raw: bytes, what: str) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RemoteProtocolError(f"ROCKETMQ header: {what} is not UTF-8") from None

    (remark_len,) = _I32.unpack(take(4, "remark length"))
    remark_raw = take(remark_len, "remark")
    remark = text(remark_raw, "remark") if remark_len else None
    (ext_len,) = _I32.unpack(take(4, "ext length"))
    ext_raw = take(ext_len, "ext map")
    ext: dict[str, str] | None = None
    if ext_len:
        ext = {}
        p = 0
        while p < ext_len:
            if ext_len - p < 2:
                raise RemoteProtocolError("ROCKETMQ header: truncated ext key length")
            (klen,) = _I16.unpack_from(ext_raw, p)
            p += 2
            if klen < 0 or klen > ext_len - p - 4:
                raise RemoteProtocolError(f"ROCKETMQ header: ext key length {klen} exceeds the map")
            key = ext_raw[p:p + klen]
            p += klen
            (vlen,) = _I32.unpack_from(ext_raw, p)
            p += 4
            if vlen < 0 or vlen > ext_len - p:
                raise RemoteProtocolError(f"ROCKETMQ header: ext value length {vlen} exceeds the map")
            value = ext_raw[p:p + vlen]
            p += vlen
            if klen and vlen:
                ext[text(key, "ext key")] = text(value, "ext value")
    if pos != size:
        raise RemoteProtocolError(f"ROCKETMQ header: {size - pos} unexpected trailing bytes")
    return {
        "code": code,
        "language": LANGUAGE_NAMES.get(lang, str(lang)),
        "version": version,
        "opaque": opaque,
        "flag": flag,
        "remark": remark,
        "ext": ext,
    }


def encode_header(serialize_type: SerializeType, *fields: Any) -> bytes:
    if serialize_type == SerializeType.JSON:
        return encode_json_header(*fields)
    if serialize_type == SerializeType.ROCKETMQ:
        return encode_binary_header(*fields)
    raise LocalProtocolError(f"unknown serialization type {serialize_type}")
