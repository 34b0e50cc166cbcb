"""fastjson's JSON dialect (spec 5.1): a reader for both of its forms, and writers
that produce exactly what the Java name server writes."""

from __future__ import annotations

import json

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from mqnamesrv.protocol.fastjson import dumps_long_key_map, dumps_plain, dumps_str, dumps_str_list, lenient_loads

# ------------------------------------------------------------------- reader ----


def test_standard_json_is_read_as_is() -> None:
    assert lenient_loads(b'{"a":[1,2.5,true,null,"x"],"b":{"c":"d"}}') == {
        "a": [1, 2.5, True, None, "x"], "b": {"c": "d"},
    }


def test_unquoted_integer_keys_become_string_keys() -> None:
    assert lenient_loads('{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}}') == {
        "brokerAddrs": {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"},
    }


def test_unquoted_keys_negative_large_and_spaced() -> None:
    assert lenient_loads('{ -1 : "a" ,\n 12345678901234 :"b",\t7:"c"}') == {
        "-1": "a", "12345678901234": "b", "7": "c",
    }


def test_unquoted_keys_nested_in_lists_and_maps() -> None:
    text = '{"brokerAddrTable":{"b":{"brokerAddrs":{0:"x"}}},"list":[{0:{1:[{2:"y"}]}}],"n":[0,1]}'
    assert lenient_loads(text) == {
        "brokerAddrTable": {"b": {"brokerAddrs": {"0": "x"}}},
        "list": [{"0": {"1": [{"2": "y"}]}}],
        "n": [0, 1],
    }


@pytest.mark.parametrize(
    "value",
    ["1.2.3.4:10911", "a,1:b", "{0:\\\"x\\\"}", ",7:", "x\\\\", "{,1:2}", "[0,1:2]"],
    ids=["address", "comma-number-colon", "looks-like-map", "bare", "escaped-backslash", "brace", "bracket"],
)
def test_string_literals_are_never_rewritten(value: str) -> None:
    text = '{0:"' + value + '","k,2:":"' + value + '",3:["' + value + '"]}'
    expected = json.loads('"' + value + '"')
    assert lenient_loads(text) == {"0": expected, "k,2:": expected, "3": [expected]}


def test_escaped_quote_inside_string_before_bare_key() -> None:
    assert lenient_loads(r'{"r":"say \"hi\", 1:ok",2:"z"}') == {"r": 'say "hi", 1:ok', "2": "z"}


def test_escaped_slash_is_accepted() -> None:
    assert lenient_loads(b'{"url":"http:\\/\\/rocketmq.apache.org\\/docs"}') == {"url": "http://rocketmq.apache.org/docs"}
    assert lenient_loads('{0:"a\\/b"}') == {"0": "a/b"}


def test_unicode_escapes_in_either_case() -> None:
    assert lenient_loads(b'{"n":"\\u4E2D\\u56fd","m":"\\u2028"}') == {"n": "中国", "m": "\u2028"}


def test_raw_utf8_bytes_and_str_input() -> None:
    assert lenient_loads('{"n":"брокер"}'.encode()) == {"n": "брокер"}
    assert lenient_loads('{0:"брокер"}'.encode()) == {"0": "брокер"}
    assert lenient_loads('{0:"брокер"}') == {"0": "брокер"}


def test_java_long_extremes_are_exact_and_strings_pass_through() -> None:
    assert lenient_loads('{"t":9223372036854775807,"u":-9223372036854775808}') == {
        "t": 9223372036854775807, "u": -9223372036854775808,
    }
    assert lenient_loads('{0:9223372036854775807}') == {"0": 9223372036854775807}
    # standard mode writes longs beyond 2^53-1 as strings (spec 5.1)
    assert lenient_loads('{"t":"9007199254740993"}') == {"t": "9007199254740993"}


@pytest.mark.parametrize(
    "text",
    ["", "{", '{"a":}', "{a:1}", "{0:}", '{"a":1,}x', "\xff", b"\xff\xfe{}"],
    ids=["empty", "open", "no-value", "bare-word-key", "bare-key-no-value", "trailing-garbage", "latin1", "bad-utf8"],
)
def test_invalid_input_raises_value_error(text: str | bytes) -> None:
    with pytest.raises(ValueError):
        lenient_loads(text)


# ------------------------------------------------------------------ writers ----


def test_default_mode_plain_strings() -> None:
    assert dumps_str("broker-a") == '"broker-a"'
    assert dumps_str('a"b\\c') == '"a\\"b\\\\c"'
    assert dumps_str("a/b") == '"a/b"'
    assert dumps_str("\b\t\n\f\r") == '"\\b\\t\\n\\f\\r"'


def test_default_mode_writes_non_ascii_raw() -> None:
    assert dumps_str("брокер-é-中国-😀") == '"брокер-é-中国-😀"'
    assert dumps_str("\u00a0") == '"\u00a0"'  # U+00A0 is past the escaped range


@pytest.mark.parametrize(
    "char, escaped",
    [("\u007f", "\\u007F"), ("\u0080", "\\u0080"), ("\u0085", "\\u0085"), ("\u009f", "\\u009F"),
     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")],
    ids=["U+007F", "U+0080", "U+0085", "U+009F", "U+2028", "U+2029"],
)
def test_default_mode_escapes_del_c1_and_line_separators(char: str, escaped: str) -> None:
    assert dumps_str(f"a{char}b").lower() == f'"a{escaped}b"'.lower()


def test_standard_mode_escapes_slash_and_non_ascii() -> None:
    assert dumps_str("a/b", standard=True) == '"a\\/b"'
    assert dumps_str("ёж", standard=True) == '"\\u0451\\u0436"'
    assert dumps_str("a\u2028b", standard=True) == '"a\\u2028b"'
    assert dumps_str('q"\\', standard=True) == '"q\\"\\\\"'
    assert dumps_str("\n\t", standard=True) == '"\\n\\t"'
    assert dumps_str("plain-ascii_1.2:3", standard=True) == '"plain-ascii_1.2:3"'


def test_standard_mode_writes_non_bmp_as_a_surrogate_pair() -> None:
    # Java strings are UTF-16: fastjson escapes each surrogate
    assert dumps_str("\U0001f600", standard=True).lower() == '"\\ud83d\\ude00"'


def test_standard_mode_output_is_pure_ascii_and_parses_back() -> None:
    value = "брокер/é\u007f\u2028中国\U0001f600\x01"
    out = dumps_str(value, standard=True)
    assert out.isascii()
    assert lenient_loads(out) == json.loads(out) == value
    assert lenient_loads(dumps_str(value)) == value


@pytest.mark.parametrize(
    "value, standard, expected",
    [
        ("中国", True, '"\\u4E2D\\u56FD"'),
        ("é", True, '"\\u00E9"'),
        ("\u007f", True, '"\\u007F"'),
        ("\u009f", False, '"\\u009F"'),
        ("\x0b\x1f", False, '"\\u000B\\u001F"'),
    ],
    ids=["cjk-standard", "latin1-standard", "del-standard", "c1-default", "control-default"],
)
def test_unicode_escapes_use_upper_case_hex_like_fastjson(value: str, standard: bool, expected: str) -> None:
    """fastjson writes \\uXXXX with IOUtils.DIGITS / ASCII_CHARS, which are upper case
    (fastjson's own test: toJSONString("中国", BrowserCompatible) == "\\u4E2D\\u56FD").
    Python's json.dumps writes lower case, so byte equality with Java breaks."""
    assert dumps_str(value, standard=standard) == expected


def test_long_key_map_default_mode_has_bare_sorted_keys() -> None:
    assert dumps_long_key_map({1: "b", 0: "a"}, standard=False) == '{0:"a",1:"b"}'


def test_long_key_map_standard_mode_quotes_and_sorts_numerically() -> None:
    assert dumps_long_key_map({10: "c", 2: "b", 0: "a"}, standard=True) == '{"0":"a","2":"b","10":"c"}'


def test_long_key_map_values_follow_the_mode() -> None:
    assert dumps_long_key_map({0: "a/é"}, standard=False) == '{0:"a/é"}'
    assert dumps_long_key_map({0: "a/ё"}, standard=True) == '{"0":"a\\/\\u0451"}'
    assert dumps_long_key_map({}, standard=True) == dumps_long_key_map({}, standard=False) == "{}"


def test_long_key_map_reads_back() -> None:
    for standard in (False, True):
        text = dumps_long_key_map({0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, standard=standard)
        assert lenient_loads(text) == {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}


def test_dumps_plain_is_compact_default_mode() -> None:
    assert dumps_plain({"counter": 1, "timestamp": 2}) == '{"counter":1,"timestamp":2}'
    assert dumps_plain(["a/b", "é", "x\u2028"]) == '["a/b","é","x\\u2028"]'
    assert dumps_plain([]) == "[]"
    assert dumps_plain({}) == "{}"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=8), st.sampled_from(["topic_1", "%RETRY%g", 'a","b', "a\\b", "a\x7fb", "",
                                                               "a\u2028", "\x00", "é"])), max_size=12))
def test_a_list_of_strings_is_written_as_each_string_would_be(items: list[str]) -> None:
    """``dumps_plain`` skips its escape search for ASCII text (DEL aside), and
    ``dumps_str_list`` joins names that need no escape: both write what each string's
    own literal is, in a list."""
    expected = "[" + ",".join(dumps_str(item) for item in items) + "]"
    assert dumps_plain(items) == expected
    assert dumps_str_list(items) == expected


def test_a_topic_list_with_del_in_a_name_escapes_it() -> None:
    """DEL is ASCII, yet fastjson escapes it: neither shortcut may skip it."""
    assert dumps_plain(["a\x7f"]) == '["a\\u007F"]'
    assert dumps_str_list(["a\x7f", "b"]) == '["a\\u007F","b"]'
