"""A first registration's table read in a 4.x broker's layout (``table_pieces._read_layout``):
one regular expression instead of a parse, never giving other topics than the full parse.
Whatever it does not read is parsed, and what no full parse accepts is declined."""

from __future__ import annotations

import json
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqnamesrv.protocol.bodies import RegisterBrokerBody
from mqnamesrv.protocol.errors import BodyDecodeError
from mqnamesrv.protocol.fastjson import dumps_str
from mqnamesrv.protocol.table_pieces import _TABLE_KEY, TableChanges, _pieces, _read_layout, table_changes

V = 409
NONE: array = array("q")
HEAD = b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},'
FIELDS = ("order", "perm", "readQueueNums", "topicFilterType", "topicName", "topicSysFlag", "writeQueueNums")


def member(name: str, *, key: str | None = None, fields: tuple[str, ...] = FIELDS, **values: str) -> bytes:
    """A table member as fastjson writes it (``values``: raw JSON text per field)."""
    written = {"order": "false", "perm": "6", "readQueueNums": "8", "topicFilterType": '"SINGLE_TAG"',
              "topicName": dumps_str(name), "topicSysFlag": "0", "writeQueueNums": "8", **values}
    return (dumps_str(key if key is not None else name) + ":{"
            + ",".join(f'"{f}":{written[f]}' for f in fields if f in written) + "}").encode()


def table(*members: bytes, head: bytes = HEAD) -> bytes:
    return head + b'"topicConfigTable":{' + b",".join(members) + b"}}}"


def layout(data: bytes) -> dict | None:
    """What the layout reader makes of a body's table (None: it declines)."""
    opened = data.index(_TABLE_KEY) + len(_TABLE_KEY)
    end = data.index(b"}}", max(data.rfind(b"},", opened) + 2, opened))
    read = _read_layout(data, opened, end + 1)
    if read is not None:
        assert read[0] == _pieces(data, opened, end)  # what a re-registration's split will cut
    return None if read is None else read[1]


def checked(data: bytes) -> TableChanges | None:
    """``table_changes`` from nothing, held to the full parse: None where that refuses the
    body, else None or exactly its topics."""
    try:
        expected = RegisterBrokerBody.decode_queues_mapped(data, V)[1]
    except BodyDecodeError:
        assert table_changes(data, V, NONE) is None
        return None
    got = table_changes(data, V, NONE)
    assert got is None or got.changed == expected
    return got


# Names a RocketMQ broker would refuse but JSON carries: regex syntax, unicode, a space, the
# table's own key. Each is read in the layout and found as the full parse finds it.
ODD_NAMES = ["a.b*c", "(x)|[y]{2,", "^$?+\\d", "\u00e9t\u00e9", "\U0001f600", "\uffff\U0010ffff", "\x7f", "a b", "{x", "",
             "topicConfigTable", "%RETRY%g|t", ":,"]


@pytest.mark.parametrize("name", ODD_NAMES, ids=[ascii(n) for n in ODD_NAMES])
def test_any_name_a_json_string_holds_raw_is_read_as_the_full_parse_reads_it(name: str) -> None:
    data = table(member("before"), member(name, perm="7"), member("after"))
    got = checked(data)
    if b"\\" not in member(name):  # those written with an escape are parsed instead
        assert layout(data) is not None and got is not None


# (id, table members, read in the layout, declined): bodies the layout reader must not
# read differently from the parse. Those it declines are parsed, or declined outright.
CASES = [
    ("plain", [member("a"), member("b")], True, False),
    ("one-member", [member("a")], True, False),
    ("negative-and-minus-zero", [member("a", perm="-0", topicSysFlag="-3")], True, False),
    ("eighteen-digits", [member("a", readQueueNums="999999999999999999")], True, False),
    ("multi-tag-and-order", [member("a", order="true", topicFilterType='"MULTI_TAG"')], True, False),
    ("del-raw-in-name", [member("a").replace(b'"a"', b'"a\x7f"')], True, False),  # fastjson escapes it
    ("key-is-not-the-topic-name", [member("a", key="b")], False, False),
    ("fields-in-another-order", [member("a", fields=tuple(reversed(FIELDS)))], False, False),
    ("a-field-missing", [member("a", fields=FIELDS[:5] + FIELDS[6:])], False, False),
    ("nineteen-digits", [member("a", writeQueueNums="1234567890123456789")], False, False),
    ("past-64-bits", [member("a", perm="123456789012345678901")], False, False),
    ("a-boolean-count", [member("a", perm="true")], False, False),
    ("other-filter-type", [member("a", topicFilterType='"OTHER"')], False, False),
    ("null-order", [member("a", order="null")], False, False),
    ("empty-config", [member("a"), b'"k":{}', member("b")], False, False),
    ("a-space-after-the-comma", [member("a"), b" " + member("b")], False, False),
    ("escaped-name", [member('a"b\\c')], False, False),
    ("leading-zero", [member("a", perm="06")], False, True),
    ("not-a-config", [member("a"), b'"k":1', member("b")], False, True),
    ("nested-value", [member("a").replace(b'"order"', b'"attributes":{},"order"')], False, True),
    ("a-brace-in-a-name", [member("a}b"), member("c")], False, True),
    ("same-topic-twice", [member("a"), member("a", perm="2")], False, True),
    ("invalid-utf8", [member("a").replace(b'"a"', b'"a\xff"')], False, True),
    ("encoded-surrogate", [member("a").replace(b'"a"', b'"a\xed\xa0\x80"')], False, True),
    ("raw-control-character", [member("a").replace(b'"a"', b'"a\x01"')], False, True),
]


@pytest.mark.parametrize(("members", "read", "declined"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_layout_reader_reads_only_what_it_can_vouch_for(members: list[bytes], read: bool, declined: bool) -> None:
    data = table(*members)
    assert (layout(data) is not None) is read
    assert (checked(data) is None) is declined


def test_members_not_joined_as_json_joins_them_are_declined() -> None:
    a, b = member("a"), member("b")
    for glued in (a + b, a + b",," + b, a + b"}" + b, a + b",}" + b):
        assert checked(table(glued)) is None
    assert checked(table(a, b)[:-3] + b"x}}}") is None  # junk after the last member


def test_topic_like_members_outside_the_table_are_not_read_as_topics() -> None:
    """Members in the 4.x layout before the table (in another object of the wrapper) and
    after it: the reader's first gap and last gap must be exactly the head, or it declines."""
    sibling = b'"zz":{' + member("x") + b"," + member("y") + b"},"
    before = table(member("a"), member("b"), head=HEAD + sibling)
    assert layout(before) is None and checked(before) is not None
    after = table(member("a"), member("b"))[:-2] + b',"zz":{' + member("x") + b"," + member("y") + b"}}}"
    checked(after)


names = st.text(st.sampled_from(list('ab.*+?()[]{}|^$\\"/:, \u00e9\u2028\U0001f600\x7f\x1f')), max_size=8)
numbers = st.one_of(st.integers(0, 16), st.integers(-(2**70), 2**70))


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(st.tuples(names, numbers, numbers, numbers, numbers, st.booleans(), st.booleans()), max_size=8))
def test_random_names_and_shapes_are_read_exactly_or_declined(topics: list[tuple]) -> None:
    """Names full of regex syntax, quotes, backslashes and unicode (fastjson's escapes),
    counts of any size and sign, either order flag and filter type: exactly the full
    parse's topics, or declined; and where every name is plain and every count fits in
    18 digits, read in the layout (the fast path is not lost on what brokers send)."""
    members = [member(name, perm=str(perm), readQueueNums=str(read), topicSysFlag=str(flag), writeQueueNums=str(write),
                      order=json.dumps(order), topicFilterType='"MULTI_TAG"' if multi else '"SINGLE_TAG"')
               for name, perm, read, flag, write, order, multi in topics]
    data = table(*members)
    checked(data)
    plain = all("}" not in name and "\\" not in dumps_str(name) for name, *_ in topics)  # no fastjson escape
    small = all(abs(n) < 10**18 for _, *counts, _, _ in topics for n in counts)
    distinct = len({name for name, *_ in topics}) == len(topics)
    if topics and plain and small and distinct:
        assert layout(data) == RegisterBrokerBody.decode_queues_mapped(data, V)[1]


junk = st.sampled_from([b'"k":1,', b',"k":{}', b"}", b",", b"{", b'"', b"01", b"\xff", b" ", b"-", b'"x"',
                        member("x") + b",", b"," + member("x"), member("c", key="d") + b",", b"}}", b"},"])


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "t.x", "t*"]), min_size=1, max_size=5, unique=True), junk,
       st.integers(0, 10**6), st.booleans())
def test_junk_spliced_into_a_layout_table_is_declined_or_read_exactly(topics: list[str], extra: bytes, at: int,
                                                                       boundary: bool) -> None:
    """Bytes inserted into a table every member of which is in the layout, half the time
    where members meet (where a reader that skips bytes would lose them unseen)."""
    data = table(*(member(t, perm=str(i + 2)) for i, t in enumerate(topics)))
    opened = data.index(_TABLE_KEY) + len(_TABLE_KEY)
    cuts = [opened, len(data) - 3] + [i + k for i in range(len(data)) if data.startswith(b"},", i) for k in (1, 2)]
    spot = cuts[at % len(cuts)] if boundary else at % (len(data) + 1)
    checked(data[:spot] + extra + data[spot:])
