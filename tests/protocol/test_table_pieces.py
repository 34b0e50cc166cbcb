"""table_changes: a re-registration's changed topics from the pieces of its topic table,
equal to what a full parse finds, or None when the body cannot be split soundly."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
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
