"""Reading and writing the JSON dialect of fastjson, the library Java RocketMQ uses.

fastjson's default output writes maps with integer keys as ``{0:"addr"}``, which no
strict JSON parser accepts; its "browser compatible" mode, used for route answers to
new clients, writes standard JSON with ``\\/`` and ``\\uXXXX`` escapes. Readers here take
both; writers produce exactly the form the Java name server would (spec 5.1).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

# One alternation does both jobs in a single pass: a string literal is matched (and
# left alone) before a bare number key can be, so ``"a,1:b"`` is never touched.
_BARE_KEY = re.compile(r'"(?:[^"\\]|\\.)*"|([{,]\s*)(-?\d+)(\s*:)', re.S)


def _quote_key(m: re.Match[str]) -> str:
    if m.group(1) is None:
        return m.group(0)
    return f'{m.group(1)}"{m.group(2)}"{m.group(3)}'


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: Java refuses it too, and int(inf) would escape
        raise ValueError(f"number {text} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# An escaped UTF-16 surrogate; only then can the stdlib parser produce a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _stdlib_loads(text: str) -> Any:
    """``json.loads`` held to what orjson and Java accept: no NaN/Infinity, no
    overflowing numbers, no lone surrogates, and deep nesting a ValueError instead of
    a RecursionError. Every refusal is a ValueError naming what was wrong."""
    try:
        obj = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("string holds a lone UTF-16 surrogate (not valid Unicode)") from None
    return obj


def lenient_loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse standard JSON or fastjson's default dialect (unquoted integer keys).

    Integer map keys come back as strings; callers that know a map is keyed by
    Long convert them. Raises ValueError (UnicodeDecodeError included) on anything
    that is neither, and on what no peer may send: NaN, Infinity, numbers beyond a
    double, lone surrogates, nesting deeper than orjson's 1024 levels.

    orjson parses the common, standard case several times faster than ``json``; what
    it refuses (fastjson's bare keys, and everything above) goes the slower way.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    text = str(data, "utf-8") if isinstance(data, (bytes, bytearray, memoryview)) else data
    try:
        return _stdlib_loads(text)
    except json.JSONDecodeError:
        pass
    return _stdlib_loads(_BARE_KEY.sub(_quote_key, text))


# ------------------------------------------------------------------ writers ----

# fastjson escapes U+007F..U+009F and the two JavaScript line separators even in its
# default mode, where other non-ASCII characters are written raw.
_FASTJSON_EXTRA_ESCAPES = re.compile("[\u007f-\u009f\u2028\u2029]")


def _escape_extra(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group(0)):04X}"


# Python writes \\u escapes in lower-case hex, fastjson in upper case. An escaped
# backslash is matched first so that the text "\\\\u00e9" is left alone.
_LOWER_HEX_ESCAPE = re.compile(r"\\\\|\\u[0-9a-f]{4}")


def _upper_escape(m: re.Match[str]) -> str:
    text = m.group(0)
    return text if text == "\\\\" else "\\u" + text[2:].upper()


def dumps_str(value: str, *, standard: bool = False) -> str:
    """A JSON string literal as fastjson writes it in the chosen mode."""
    if standard:
        # Browser-compatible mode: every char >= U+007F as \\uXXXX, and '/' as '\\/'.
        out = json.dumps(value, ensure_ascii=True).replace("/", "\\/")
    else:
        out = json.dumps(value, ensure_ascii=False)
        if _FASTJSON_EXTRA_ESCAPES.search(out):
            out = _FASTJSON_EXTRA_ESCAPES.sub(_escape_extra, out)
    if "\\u" in out:
        out = _LOWER_HEX_ESCAPE.sub(_upper_escape, out)
    return out


def dumps_long_key_map(mapping: dict[int, str], *, standard: bool) -> str:
    """A Java ``Map<Long,String>``: ``{0:"a",1:"b"}`` by default, ``{"0":"a","1":"b"}``
    in standard mode. Sorted ascending in both: standard mode sorts map keys, and
    HashMap iterates small Long keys in ascending order anyway."""
    items = sorted(mapping.items())
    if standard:
        inner = ",".join(f'"{k}":{dumps_str(v, standard=True)}' for k, v in items)
    else:
        inner = ",".join(f"{k}:{dumps_str(v)}" for k, v in items)
    return "{" + inner + "}"


def dumps_plain(obj: Any) -> str:
    """Compact JSON for simple values (lists of strings, string maps) in default mode."""
    out = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    # (DEL is the one extra escape of an ASCII character: a 4 x 10^4-topic list is
    # checked in ~0.05 ms instead of the search's ~3 ms)
    if (not out.isascii() or "\x7f" in out) and _FASTJSON_EXTRA_ESCAPES.search(out):
        out = _FASTJSON_EXTRA_ESCAPES.sub(_escape_extra, out)
    if "\\u" in out:
        out = _LOWER_HEX_ESCAPE.sub(_upper_escape, out)
    return out


#: the ASCII characters ``dumps_plain`` writes as they are: printable, bar the backslash
#: (the quote is counted apart) and DEL (fastjson's first extra escape)
_ASCII_UNESCAPED = bytes(range(0x20, 0x7F)).replace(b"\\", b"")


def dumps_str_list(items: list[str]) -> str:
    """``dumps_plain(items)`` for a list of strings. Topic names need no escape, so when
    none does the list is written by one join: a 4 x 10^4-topic list in ~0.5 ms instead
    of ~3 ms (the topic lists hold the loop for as long)."""
    text = '","'.join(items)
    # every quote in the text is a separator's, and nothing else would be escaped (a
    # C pass deleting what is written as is; a regex search took 2 ms of 600 KB)
    if items and text.isascii() and text.count('"') == 2 * (len(items) - 1) and \
            not text.encode("ascii").translate(None, _ASCII_UNESCAPED):
        return '["' + text + '"]'
    return dumps_plain(items)
