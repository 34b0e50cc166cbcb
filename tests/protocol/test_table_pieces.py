"""table_changes: a re-registration's changed topics from the pieces of its topic table,
equal to what a full parse finds, or None when the body cannot be split soundly."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.errors import BodyDecodeError
from mqnamesrv.protocol.frame import decode
from mqnamesrv.protocol.register import register_body
from mqnamesrv.protocol.table_pieces import table_changes

V = 409  # a 4.9.8 broker's request version
NONE: array = array("q")


def body(topics: dict[str, int], counter: int = 1, filters: tuple[str, ...] = ()) -> bytes:
    return register_body(RegisterBrokerBody(DataVersion(counter, 1_700_000_000_000 + counter),
                                            {t: TopicConfig(t, n, n) for t, n in topics.items()}, filters))


def full(data: bytes) -> dict:
    return RegisterBrokerBody.decode_queues_mapped(data, V)[1]


def test_only_the_changed_topics_are_parsed_and_the_rest_is_known_by_hash() -> None:
    topics = {f"topic_{i:04d}": 8 for i in range(2000)}
    first = table_changes(body(topics), V, NONE)
    assert first is not None and first.changed == full(body(topics)) and len(first.hashes) == 2000
    bumped = table_changes(body({**topics, "topic_0007": 4, "new_topic": 2}, counter=2, filters=("f:1",)), V,
                           first.hashes)
    assert bumped is not None
    assert bumped.changed == {"topic_0007": (4, 4, 6, 0), "new_topic": (2, 2, 6, 0)}
    assert bumped.data_version == DataVersion(2, 1_700_000_000_002) and bumped.filters == ("f:1",)
    same = table_changes(body(topics, counter=3), V, first.hashes)
    assert same is not None and same.changed == {} and same.hashes == first.hashes
    empty = table_changes(body({}), V, first.hashes)
    assert empty is not None and empty.changed == {} and len(empty.hashes) == 0


def test_bodies_it_cannot_vouch_for_are_left_to_the_full_parse() -> None:
    plain = body({"a": 8, "b": 8})
    assert table_changes(plain, 36, NONE) is None  # a bare wrapper (pre-3.0.11 request)
    spaced = plain.replace(b'"perm":6', b'"perm": 6')
    assert table_changes(spaced, V, NONE) is None
    nested = plain.replace(b'"order":false', b'"attributes":{},"order":false')  # 5.x TopicConfig
    assert table_changes(nested, V, NONE) is None
    again = plain[:-2] + b',"topicConfigTable":{}}}'  # a second table after the first
    assert table_changes(again, V, NONE) is None
    elsewhere = b'{"x":{"topicConfigTable":' + plain[plain.index(b'{"a"'):-2] + b'},"topicConfigSerializeWrapper":{}}'
    assert table_changes(elsewhere, V, NONE) is None  # not the wrapper's table
    assert table_changes(b"{" + plain, V, NONE) is None  # not JSON


names = st.text(alphabet='ab},{"\\: \u00e9', min_size=1, max_size=6)


@settings(max_examples=300, deadline=None, database=None)
@given(st.dictionaries(names, st.integers(1, 16), max_size=6), st.dictionaries(names, st.integers(1, 16), max_size=6))
def test_whatever_the_topic_names_the_changes_equal_a_full_parse(before: dict[str, int], after: dict[str, int]) -> None:
    """Names full of braces, commas, quotes and escapes: either declined, or exactly the
    topics of ``after`` whose shape is not as in ``before`` (first: all of them)."""
    first = table_changes(body(before), V, NONE)
    if first is None:
        return
    assert first.changed == full(body(before))
    later = table_changes(body(after, counter=2), V, first.hashes)
    if later is None:
        return
    expected = {t: s for t, s in full(body(after)).items() if full(body(before)).get(t) != s}
    assert later.changed == expected


# ---- a first registration through the pieces (empty base), and where the table ends ----

GOLDEN_ROOTS = [Path(__file__).resolve().parent.parent / name for name in ("golden", "golden5")]


def _golden_register_requests() -> list[tuple[str, RemotingCommand]]:
    found = []
    for root in GOLDEN_ROOTS:
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            cmd = decode((folder / "request.bin").read_bytes())
            if cmd.code == RequestCode.REGISTER_BROKER and cmd.body and cmd.ext_get("compressed") != "true":
                found.append((f"{root.name}/{folder.name}", cmd))
    return found


GOLDEN_REGISTERS = _golden_register_requests()


def test_the_golden_captures_hold_registrations_to_check() -> None:
    assert len(GOLDEN_REGISTERS) >= 5  # 4.9.8 and 5.x brokers' own bodies


@pytest.mark.parametrize(("name", "cmd"), GOLDEN_REGISTERS, ids=[n for n, _ in GOLDEN_REGISTERS])
def test_every_golden_registration_split_from_nothing_equals_its_full_parse(name: str, cmd: RemotingCommand) -> None:
    """Real brokers' bodies: split with no base (a first registration), the topics are
    exactly the full parse's, or the body is declined; and against its own pieces nothing
    is new."""
    changes = table_changes(cmd.body, cmd.version, NONE)
    dv, topics, filters, mappings = RegisterBrokerBody.decode_queues_mapped(cmd.body, cmd.version)
    if changes is None:
        return
    assert not mappings
    assert (changes.changed, changes.data_version, changes.filters) == (topics, dv, filters)
    again = table_changes(cmd.body, cmd.version, changes.hashes)
    assert again is not None and again.changed == {} and again.hashes == changes.hashes


def test_at_least_the_4x_captures_go_through_the_pieces() -> None:
    assert any(table_changes(cmd.body, cmd.version, NONE) is not None for _, cmd in GOLDEN_REGISTERS)


def test_the_table_ends_where_the_last_piece_says_and_anything_else_is_declined() -> None:
    plain = body({"a": 8, "b": 8})
    wrapper = plain.index(b'"topicConfigSerializeWrapper"')
    # A sibling key after the table, whose members look like topics: not taken for topics.
    sibling = plain[:-2] + b',"zz":{"c":{"perm":6,"readQueueNums":1,"writeQueueNums":1}}}}'
    assert table_changes(sibling, V, NONE) is None
    sibling_flat = plain[:-2] + b',"zz":{"perm":6}}}'
    got = table_changes(sibling_flat, V, NONE)
    assert got is None or got.changed == full(sibling_flat)
    # A nested object closing a config: whatever is decided, it is what a full parse finds.
    nested_end = plain.replace(b'"writeQueueNums":8}', b'"writeQueueNums":8,"z":{}}')
    got = table_changes(nested_end, V, NONE)
    assert got is None or got.changed == full(nested_end)
    # Names holding "}}" and "},": declined or exact, and known pieces are still known.
    odd = body({"x}}y": 3, "p},q": 4, "last}}": 5})
    got = table_changes(odd, V, NONE)
    assert got is None or got.changed == full(odd)
    assert wrapper > 0


alphabet = st.sampled_from(['a', 'b', '}', '{', ',', '"', ':', '1', ' ', '\\', 'x'])
junk = st.text(alphabet=alphabet, max_size=12)


@settings(max_examples=400, deadline=None, database=None)
@given(st.dictionaries(names, st.integers(1, 16), min_size=1, max_size=5), junk, st.integers(0, 400))
def test_a_table_with_junk_spliced_anywhere_is_declined_or_parsed_exactly(topics: dict[str, int], extra: str,
                                                                           at: int) -> None:
    """Bytes inserted at any point of a body: ``table_changes`` with no base declines it,
    or gives exactly the full parse's topics (and DataVersion, filters) of what was sent."""
    data = body(topics)
    at = at % (len(data) + 1)
    spliced = data[:at] + extra.encode() + data[at:]
    try:
        dv, expected, filters, mappings = RegisterBrokerBody.decode_queues_mapped(spliced, V)
    except BodyDecodeError:
        assert table_changes(spliced, V, NONE) is None
        return
    got = table_changes(spliced, V, NONE)
    if got is not None:
        assert not mappings and (got.changed, got.data_version, got.filters) == (expected, dv, filters)
