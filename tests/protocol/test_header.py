"""Command headers: JSON (type 0, spec 2.2) and ROCKETMQ binary (type 1, spec 2.3)."""

from __future__ import annotations

import struct

import pytest

from mqnamesrv.protocol.codes import SerializeType
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.errors import LocalProtocolError, RemoteProtocolError
from mqnamesrv.protocol.frame import decode, encode
from mqnamesrv.protocol.header import (
    decode_binary_header,
    decode_json_header,
    encode_binary_header,
    encode_header,
    encode_json_header,
)

NOT_FOUND_REMARK = (
    "No topic route info in name server for the topic: TopicTest\n"
    "See http://rocketmq.apache.org/docs/faq/ for further details."
)


def fields(code: int = 0, language: str = "JAVA", version: int = 0, opaque: int = 0, flag: int = 0,
           remark: str | None = None, ext: dict[str, str] | None = None) -> dict[str, object]:
    return {"code": code, "language": language, "version": version, "opaque": opaque, "flag": flag,
            "remark": remark, "ext": ext}


# ===================================================================== JSON ====

def test_json_request_example_from_spec() -> None:
    assert encode_json_header(105, "JAVA", 409, 1, 0, None, {"topic": "TopicTest"}) == (
        b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )


def test_json_not_found_response_example_from_spec() -> None:
    header = encode_json_header(17, "JAVA", 409, 1, 1, NOT_FOUND_REMARK, None)
    assert header == (
        b'{"code":17,"flag":1,"language":"JAVA","opaque":1,"remark":"No topic route info in name server '
        b'for the topic: TopicTest\\nSee http://rocketmq.apache.org/docs/faq/ for further details.",'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    assert len(header) == 230
    assert decode_json_header(header) == fields(17, version=409, opaque=1, flag=1, remark=NOT_FOUND_REMARK)


def test_json_plain_header_has_neither_ext_nor_remark() -> None:
    assert encode_json_header(0, "JAVA", 409, 8, 1, None, None) == (
        b'{"code":0,"flag":1,"language":"JAVA","opaque":8,"serializeTypeCurrentRPC":"JSON","version":409}'
    )


def test_json_ext_none_and_empty_map_round_trip_differently() -> None:
    with_empty = encode_json_header(0, "JAVA", 409, 0, 1, None, {})
    assert with_empty == (
        b'{"code":0,"extFields":{},"flag":1,"language":"JAVA","opaque":0,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    assert decode_json_header(with_empty)["ext"] == {}
    assert decode_json_header(with_empty)["ext"] is not None
    without = encode_json_header(0, "JAVA", 409, 0, 1, None, None)
    assert b"extFields" not in without
    assert decode_json_header(without)["ext"] is None
    empty: dict[str, str] = {}
    for ext in (None, empty):
        cmd = RemotingCommand(code=0, flag=1, ext=ext)
        assert decode(encode(cmd)).ext == ext


def test_json_ext_keeps_insertion_order() -> None:
    ext = {"brokerId": "0", "clusterName": "c", "brokerName": "b"}
    header = encode_json_header(103, "JAVA", 409, 0, 0, None, ext)
    assert b'"extFields":{"brokerId":"0","clusterName":"c","brokerName":"b"}' in header
    assert list(decode_json_header(header)["ext"]) == list(ext)


def test_json_empty_remark_is_kept() -> None:
    header = encode_json_header(0, "JAVA", 409, 0, 1, "", None)
    assert b'"remark":""' in header
    assert decode_json_header(header)["remark"] == ""


def test_json_non_ascii_is_written_raw_utf8() -> None:
    header = encode_json_header(1, "JAVA", 409, 0, 1, "brokér", {"k": "значение"})
    assert '"remark":"brokér"'.encode() in header
    assert '"extFields":{"k":"значение"}'.encode() in header
    assert decode_json_header(header)["remark"] == "brokér"


@pytest.mark.parametrize(
    "ext, remark, expected",
    [
        ({"k": "a\u2028b"}, None, b'"extFields":{"k":"a\\u2028b"}'),
        (None, "a\u2029b", b'"remark":"a\\u2029b"'),
        (None, "del\x7f", b'"remark":"del\\u007F"'),
        (None, "c1\x85", b'"remark":"c1\\u0085"'),
    ],
    ids=["ext-u2028", "remark-u2029", "remark-del", "remark-c1-control"],
)
def test_json_header_strings_escaped_like_fastjson_default(
    ext: dict[str, str] | None, remark: str | None, expected: bytes
) -> None:
    """Java writes RemotingCommand with fastjson's default mode (spec 5.1): U+007F-U+009F
    and U+2028/U+2029 are escaped (hex digits upper case, IOUtils.DIGITS). The header
    writer uses json.dumps(ensure_ascii=False) and writes them raw."""
    header = encode_json_header(1, "JAVA", 409, 0, 1, remark, ext)
    assert expected in header


# -------------------------------------------------------------- JSON leniency ----

def test_json_any_field_order() -> None:
    header = (
        b'{"version":409,"serializeTypeCurrentRPC":"JSON","remark":"r","opaque":3,'
        b'"language":"JAVA","flag":1,"extFields":{"a":"1"},"code":22}'
    )
    assert decode_json_header(header) == fields(22, version=409, opaque=3, flag=1, remark="r", ext={"a": "1"})


def test_json_missing_fields_take_defaults() -> None:
    assert decode_json_header(b"{}") == fields()
    assert decode_json_header(b'{"code":105}') == fields(105)


def test_json_null_fields_take_defaults() -> None:
    header = b'{"code":null,"language":null,"version":null,"opaque":null,"flag":null,"remark":null,"extFields":null}'
    assert decode_json_header(header) == fields()


def test_json_unknown_fields_are_ignored() -> None:
    header = b'{"code":105,"serializeTypeCurrentRPC":"ROCKETMQ","future":{"x":[1,2]},"zoneName":"z"}'
    assert decode_json_header(header) == fields(105)


def test_json_numbers_bools_in_ext_become_strings() -> None:
    header = b'{"code":103,"extFields":{"brokerId":0,"compressed":false,"ok":true,"bodyCrc32":2013166091,"ratio":1.5,"gone":null,"s":"x"}}'
    assert decode_json_header(header)["ext"] == {
        "brokerId": "0", "compressed": "false", "ok": "true", "bodyCrc32": "2013166091", "ratio": "1.5", "s": "x",
    }


def test_json_unquoted_integer_ext_keys_are_accepted() -> None:
    # a fastjson writer with a non-string key would produce this; keep it as a string key
    assert decode_json_header(b'{"extFields":{1:"a"}}')["ext"] == {"1": "a"}


@pytest.mark.parametrize("name", ["GO", "RUST", "NODE_JS", "KOTLIN", "SOMETHING_NEW"])
def test_json_language_names_are_kept(name: str) -> None:
    header = f'{{"code":105,"language":"{name}"}}'.encode()
    assert decode_json_header(header)["language"] == name
    cmd = RemotingCommand(code=105, language=name)
    assert decode(encode(cmd)).language == name
    assert f'"language":"{name}"'.encode() in encode(cmd)


def test_json_numeric_language_is_mapped_to_its_name() -> None:
    assert decode_json_header(b'{"language":3}')["language"] == "PYTHON"
    assert decode_json_header(b'{"language":99}')["language"] == "99"


def test_json_numeric_fields_given_as_strings_are_parsed() -> None:
    assert decode_json_header(b'{"code":"105","opaque":"7","flag":"1","version":"409"}') == fields(
        105, opaque=7, flag=1, version=409
    )


def test_json_whitespace_is_accepted() -> None:
    assert decode_json_header(b' { "code" : 1 ,\n "extFields" : { "a" : "b" } } ') == fields(1, ext={"a": "b"})


def test_json_escaped_slash_in_remark() -> None:
    assert decode_json_header(b'{"remark":"http:\\/\\/x"}')["remark"] == "http://x"


@pytest.mark.parametrize(
    "header",
    [b"", b"{", b"}", b"nope", b"[]", b'"str"', b"1", b'{"code":"x"}', b'{"code":true}', b'{"opaque":1.5}',
     b'{"flag":[1]}', b'{"extFields":"a=b"}', b'{"extFields":[["a","b"]]}', b"\xc3\x28"],
    ids=["empty", "open", "close", "word", "array", "string", "number", "code-text", "code-bool",
         "opaque-float", "flag-list", "ext-string", "ext-list", "bad-utf8"],
)
def test_json_bad_header_raises_remote_protocol_error(header: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_json_header(header)


# =================================================================== binary ====

SPEC_BINARY_HEADER = bytes.fromhex(
    "0069 00 0199 00000001 00000000 00000000 00000014 0005 746f706963 00000009 546f70696354657374"
)


def test_binary_example_from_spec() -> None:
    assert encode_binary_header(105, "JAVA", 409, 1, 0, None, {"topic": "TopicTest"}) == SPEC_BINARY_HEADER
    assert len(SPEC_BINARY_HEADER) == 41
    assert decode_binary_header(SPEC_BINARY_HEADER) == fields(105, version=409, opaque=1, ext={"topic": "TopicTest"})


def test_binary_minimal_header_is_21_bytes() -> None:
    header = encode_binary_header(0, "JAVA", 409, 4, 1, None, None)
    assert header == bytes.fromhex("0000 00 0199 00000004 00000001 00000000 00000000")
    assert decode_binary_header(header) == fields(0, version=409, opaque=4, flag=1)


def test_binary_remark_and_several_ext_entries() -> None:
    ext = {"masterAddr": "127.0.0.1:10911", "haServerAddr": "127.0.0.1:10912"}
    header = encode_binary_header(0, "JAVA", 409, 2, 1, "héllo", ext)
    remark = "héllo".encode()
    entries = b"".join(
        struct.pack(">h", len(k)) + k.encode() + struct.pack(">i", len(v)) + v.encode() for k, v in ext.items()
    )
    assert header == (
        struct.pack(">hBhii", 0, 0, 409, 2, 1) + struct.pack(">i", len(remark)) + remark
        + struct.pack(">i", len(entries)) + entries
    )
    assert len(header) == 21 + len(remark) + len(entries)
    decoded = decode_binary_header(header)
    assert decoded == fields(0, version=409, opaque=2, flag=1, remark="héllo", ext=ext)
    assert list(decoded["ext"]) == list(ext)


def test_binary_empty_remark_is_no_remark() -> None:
    assert encode_binary_header(1, "JAVA", 409, 0, 1, "", None) == encode_binary_header(1, "JAVA", 409, 0, 1, None, None)
    assert decode_binary_header(encode_binary_header(1, "JAVA", 409, 0, 1, "", None))["remark"] is None


def test_binary_empty_ext_is_no_ext() -> None:
    # the format cannot tell {} from null: both are extLength 0
    assert encode_binary_header(0, "JAVA", 409, 0, 1, None, {}) == encode_binary_header(0, "JAVA", 409, 0, 1, None, None)
    cmd = RemotingCommand(code=0, flag=1, ext={}, serialize_type=SerializeType.ROCKETMQ)
    assert decode(encode(cmd)).ext is None


def test_binary_zero_length_value_decodes_as_null_and_is_dropped() -> None:
    entries = b"\x00\x01a\x00\x00\x00\x00" + b"\x00\x01b\x00\x00\x00\x01x"
    header = struct.pack(">hBhii", 0, 0, 409, 0, 0) + b"\x00\x00\x00\x00" + struct.pack(">i", len(entries)) + entries
    assert decode_binary_header(header)["ext"] == {"b": "x"}


def test_binary_language_codes() -> None:
    for name, code in [("JAVA", 0), ("CPP", 1), ("PYTHON", 3), ("GO", 9), ("RUST", 12), ("NODE_JS", 13)]:
        header = encode_binary_header(0, name, 0, 0, 0, None, None)
        assert header[2] == code
        assert decode_binary_header(header)["language"] == name


def test_binary_unknown_language_name_is_sent_as_other() -> None:
    assert encode_binary_header(0, "KOTLIN", 0, 0, 0, None, None)[2] == 7


def test_binary_unknown_language_byte_is_kept_as_number() -> None:
    header = bytearray(encode_binary_header(0, "JAVA", 0, 0, 0, None, None))
    header[2] = 99
    assert decode_binary_header(bytes(header))["language"] == "99"


def test_binary_negative_numbers_round_trip() -> None:
    header = encode_binary_header(-1, "JAVA", -2, -3, -4, None, None)
    assert decode_binary_header(header) == fields(-1, version=-2, opaque=-3, flag=-4)


@pytest.mark.parametrize(
    "code, version, opaque", [(40000, 0, 0), (0, 70000, 0), (0, 0, 1 << 31)],
    ids=["code-over-int16", "version-over-int16", "opaque-over-int32"],
)
def test_binary_values_out_of_range_are_our_bug(code: int, version: int, opaque: int) -> None:
    with pytest.raises(LocalProtocolError):
        encode_binary_header(code, "JAVA", version, opaque, 0, None, None)


def _binary(remark_len: int, remark: bytes, ext_len: int, ext: bytes) -> bytes:
    return struct.pack(">hBhii", 105, 0, 409, 1, 0) + struct.pack(">i", remark_len) + remark + struct.pack(">i", ext_len) + ext


@pytest.mark.parametrize(
    "header",
    [
        pytest.param(b"", id="empty"),
        pytest.param(SPEC_BINARY_HEADER[:20], id="shorter-than-fixed-part"),
        pytest.param(_binary(1000, b"abc", 0, b""), id="remark-length-beyond-header"),
        pytest.param(struct.pack(">hBhii", 0, 0, 0, 0, 0) + struct.pack(">i", 5) + b"abcd", id="remark-eats-ext-length"),
        pytest.param(_binary(-1, b"", 0, b""), id="remark-length-negative"),
        pytest.param(_binary(0, b"", 100, b"\x00\x01a\x00\x00\x00\x01b"), id="ext-length-beyond-header"),
        pytest.param(_binary(0, b"", -8, b""), id="ext-length-negative"),
        pytest.param(_binary(0, b"", 8, b"\x00\x09a\x00\x00\x00\x01b"), id="key-length-beyond-map"),
        pytest.param(_binary(0, b"", 8, b"\xff\xffa\x00\x00\x00\x01b"), id="key-length-negative"),
        pytest.param(_binary(0, b"", 8, b"\x00\x01a\x00\x00\x00\x09b"), id="value-length-beyond-map"),
        pytest.param(_binary(0, b"", 8, b"\x00\x01a\xff\xff\xff\xffb"), id="value-length-negative"),
        pytest.param(_binary(0, b"", 1, b"\x00"), id="truncated-key-length"),
        pytest.param(_binary(0, b"", 3, b"\x00\x01a"), id="truncated-before-value-length"),
        pytest.param(_binary(0, b"", 6, b"\x00\x01a\x00\x00\x00"), id="truncated-value-length"),
        pytest.param(_binary(0, b"", 9, b"\x00\x01a\x00\x00\x00\x01b\x00"), id="truncated-second-entry"),
        pytest.param(_binary(0, b"", 8, b"\x00\x01a\x00\x00\x00\x01b") + b"\x00", id="trailing-bytes"),
        pytest.param(_binary(2, b"\xc3\x28", 0, b""), id="remark-not-utf8"),
        pytest.param(_binary(0, b"", 8, b"\x00\x01\xff\x00\x00\x00\x01b"), id="key-not-utf8"),
    ],
)
def test_binary_bad_header_raises_remote_protocol_error(header: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_binary_header(header)


# ================================================================ dispatch ====

def test_encode_header_dispatches_on_serialize_type() -> None:
    args = (105, "JAVA", 409, 1, 0, None, {"topic": "TopicTest"})
    assert encode_header(SerializeType.JSON, *args) == encode_json_header(*args)
    assert encode_header(SerializeType.ROCKETMQ, *args) == SPEC_BINARY_HEADER
    with pytest.raises(LocalProtocolError):
        encode_header(5, *args)  # type: ignore[arg-type]
