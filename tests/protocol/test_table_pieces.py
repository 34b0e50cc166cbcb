"""table_changes: a re-registration's changed topics from the pieces of its topic table,
equal to what a full parse finds, or None when the body cannot be split soundly.
(The layout reader of first registrations: test_table_layout.py.)"""

from __future__ import annotations

from array import array
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xxhash import xxh3_64_intdigest

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.errors import BodyDecodeError
from mqnamesrv.protocol.frame import decode
from mqnamesrv.protocol import table_pieces
from mqnamesrv.protocol.register import register_body
from mqnamesrv.protocol.table_pieces import (
    _BLOCK, _SEED, _TABLE_KEY, BeyondBound, PieceHashes, TwinTable, WalkBound, _common, _differing, _pieces,
    _read_layout, _shifted, table_changes, table_changes_steps)

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


def test_changed_topics_come_in_body_order_across_blocks_changed_in_place_and_by_insertion() -> None:
    """The walk batches the blocks changed in place (their topics are reported at the end
    of a run of them) and matches a block with a topic inserted at once: the topics
    still come in the body's order, as a full parse gives them, which is the order new
    topics enter the registry in."""
    names = [f"topic_{i:04d}" for i in range(200)]
    first = table_changes(body(dict.fromkeys(names, 8)), V, NONE)
    assert first is not None
    second = table_changes(body(dict.fromkeys(names, 8), counter=2), V, first.hashes)  # the walk's blocks
    assert second is not None and second.changed == {}
    # In place in blocks 0 and 3, a topic inserted in block 5, in place again in block 8.
    edited = [f"{name}_renamed" if i in (3, 50, 130) else name for i, name in enumerate(names)]
    edited.insert(85, "inserted")
    got = table_changes(body(dict.fromkeys(edited, 8), counter=3), V, second.hashes)
    assert got is not None
    assert list(got.changed) == ["topic_0003_renamed", "topic_0050_renamed", "inserted", "topic_0130_renamed"]


def test_a_bounded_walk_gives_the_unbounded_result_or_refuses_past_its_bound() -> None:
    """The event loop's share (``WalkBound``): within it, exactly what the walk without
    one finds; past any of its limits, or with no blocks to walk, BeyondBound."""
    names = [f"topic_{i:04d}" for i in range(2000)]  # 125 blocks
    base = table_changes(body(dict.fromkeys(names, 8)), V, NONE)
    assert base is not None and isinstance(base.hashes, PieceHashes) and base.hashes.blocks is not None
    bound = WalkBound(blocks=8, topics=20, rest_bytes=2000)

    def renamed(every: int, each: int = 1, more: int = 0) -> bytes:
        edited = [f"{name}_x" if i % every < each else name for i, name in enumerate(names)]
        return body(dict.fromkeys(edited + [f"more_{i}" for i in range(more)], 8), counter=2)

    for within in (renamed(400), renamed(400, each=4), renamed(2000, more=4), body(dict.fromkeys(names, 8), 2)):
        bounded = table_changes(within, V, base.hashes, None, bound)
        unbounded = table_changes(within, V, base.hashes)
        assert bounded is not None and unbounded is not None
        assert bounded.changed == unbounded.changed and bounded.hashes == unbounded.hashes
        assert getattr(bounded.hashes, "blocks") == getattr(unbounded.hashes, "blocks")  # noqa: B009
    for beyond in (renamed(200),  # 10 blocks changed
                   renamed(400, each=5),  # 25 topics to parse
                   renamed(2000, more=20),  # ~3 KB appended past the last block, split whole
                   renamed(1)):  # everything changed: the walk would split the rest
        assert table_changes(beyond, V, base.hashes) is not None
        with pytest.raises(BeyondBound):
            table_changes(beyond, V, base.hashes, None, bound)
    with pytest.raises(BeyondBound):  # a first registration: nothing to walk
        table_changes(renamed(400), V, NONE, None, bound)
    with pytest.raises(BeyondBound):  # piece hashes without blocks (a full parse's)
        table_changes(renamed(400), V, array("Q", base.hashes), None, bound)


def test_a_walk_yields_between_slices_and_ends_with_what_table_changes_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the event loop the walk is driven a slice at a time: with no time to a slice,
    it yields every ``_CLOCK_EVERY`` blocks, and its result is ``table_changes``'."""
    names = [f"topic_{i:04d}" for i in range(2000)]  # 125 blocks
    base = table_changes(body(dict.fromkeys(names, 8)), V, NONE)
    assert base is not None
    renamed = body(dict.fromkeys((f"{name}_x" if i % 300 == 0 else name for i, name in enumerate(names)), 8), 2)
    whole = table_changes(renamed, V, base.hashes)
    monkeypatch.setattr(table_pieces, "SLICE_SECONDS", 0.0)
    steps = table_changes_steps(renamed, V, base.hashes)
    slices = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            sliced = done.value
            break
        slices += 1
    assert slices == len(range(0, 125, table_pieces._CLOCK_EVERY))  # a look at the clock at each 16th block
    assert whole is not None and sliced is not None
    assert sliced.changed == whole.changed and sliced.hashes == whole.hashes and len(sliced.changed) == 7


def test_bodies_it_cannot_vouch_for_are_left_to_the_full_parse() -> None:
    plain = body({"a": 8, "b": 8})
    assert table_changes(plain, 36, NONE) is None  # a bare wrapper (pre-3.0.11 request)
    braced = body({"a}b": 8, "b": 8})  # a "}" in a name: one topic, two pieces
    assert table_changes(braced, V, NONE) is None
    nested = plain.replace(b'"order":false', b'"attributes":{},"order":false')  # 5.x TopicConfig
    assert table_changes(nested, V, NONE) is None
    again = plain[:-2] + b',"topicConfigTable":{}}}'  # a second table after the first
    assert table_changes(again, V, NONE) is None
    elsewhere = b'{"x":{"topicConfigTable":' + plain[plain.index(b'{"a"'):-2] + b'},"topicConfigSerializeWrapper":{}}'
    assert table_changes(elsewhere, V, NONE) is None  # not the wrapper's table
    # The first table in an array before the wrapper, and no "}," after it (no dataVersion):
    # its end is found right, and only the head shows the wrapper's own, empty, table.
    in_array = (b'{"x":[{"topicConfigTable":' + plain[plain.index(b'{"a"'):-2]
                + b'}],"topicConfigSerializeWrapper":{"topicConfigTable":{}}}')
    assert b"}," not in in_array[in_array.index(b"}}]"):]
    assert full(in_array) == {} and table_changes(in_array, V, NONE) is None
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


def table_bounds(data: bytes) -> tuple[int, int]:
    """Where a plain body's table members start and where its last one closes."""
    opened = data.index(_TABLE_KEY) + len(_TABLE_KEY)
    return opened, data.index(b"}}", data.rindex(b"},") + 2)


FOURX = [(name, cmd) for name, cmd in GOLDEN_REGISTERS if cmd.ext_get("enableActingMaster") is None]


@pytest.mark.parametrize(("name", "cmd"), FOURX, ids=[n for n, _ in FOURX])
def test_a_4x_brokers_own_table_is_read_in_its_layout_to_the_split_pieces(name: str, cmd: RemotingCommand) -> None:
    """Real 4.9.8 brokers' bytes are what the layout reader is for: it reads them (no
    parse), finds the full parse's topics, and cuts the same pieces the split at "}" does,
    so the next re-registration finds them known."""
    opened, end = table_bounds(cmd.body)
    read = _read_layout(cmd.body, opened, end + 1)
    assert read is not None
    assert read[1] == full(cmd.body) and read[0] == _pieces(cmd.body, opened, end)


def test_golden_registrations_diffed_against_each_other_apply_to_their_full_parse() -> None:
    """Each 4.x capture against every other's pieces: what it reports as changed is its own
    full parse's, and applied over the other's topics it gives its own."""
    assert len(FOURX) >= 2
    for _, old in FOURX:
        before = table_changes(old.body, V, NONE)
        assert before is not None
        for _, cmd in FOURX:
            got = table_changes(cmd.body, V, before.hashes)
            expected = full(cmd.body)
            assert got is not None and got.changed.items() <= expected.items()
            applied = {**full(old.body), **got.changed}
            assert {t: applied[t] for t in expected} == expected


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


# ---- re-registrations: topics changed in place, inserted, dropped and moved ----

Shape = tuple[int, int, int]  # (read/write queues, perm, topicSysFlag) of a test topic
shapes = st.tuples(st.integers(1, 16), st.sampled_from([2, 4, 6, 7]), st.integers(0, 3))
# two characters at least: no name is the one-letter "k" the junk below may add a second time
plain_names = st.from_regex(r"[a-zA-Z0-9_%|-]{2,12}", fullmatch=True)
edits = st.lists(st.tuples(st.sampled_from(["change", "insert", "drop", "move", "rename"]), st.integers(0, 10**6),
                           plain_names, shapes), max_size=6)


def shaped_body(topics: list[tuple[str, Shape]], counter: int) -> bytes:
    return register_body(RegisterBrokerBody(DataVersion(counter, 1_700_000_000_000 + counter), {
        name: TopicConfig(name, n, n, perm, topic_sys_flag=flag) for name, (n, perm, flag) in topics}))


def edited(topics: list[tuple[str, Shape]], steps: list[tuple[str, int, str, Shape]]) -> list[tuple[str, Shape]]:
    """``topics`` after the edits, each at a position drawn from its integer; names stay
    distinct (an inserted or renamed topic whose name is taken is left out)."""
    out = list(topics)
    for kind, at, name, shape in steps:
        taken = {t for t, _ in out}
        if kind == "insert" and name not in taken:
            out.insert(at % (len(out) + 1), (name, shape))
        elif not out:
            continue
        elif kind == "change":
            i = at % len(out)
            out[i] = (out[i][0], shape)
        elif kind == "drop":
            del out[at % len(out)]
        elif kind == "move":
            out.insert(at // 7 % len(out), out.pop(at % len(out)))
        elif kind == "rename" and name not in taken:
            i = at % len(out)
            out[i] = (name, out[i][1])
    return out


@settings(max_examples=300, deadline=None, database=None)
@given(st.dictionaries(plain_names, shapes, max_size=60), st.lists(edits, min_size=1, max_size=4))
def test_re_registrations_report_exactly_the_topics_whose_configs_changed(start: dict[str, Shape],
                                                                          rounds: list[list]) -> None:
    """Round after round, each body diffed against the last one's pieces: exactly the
    topics whose config is new or differs from the last body's are reported (topics that
    only moved, or that other topics' insertions and drops shifted, are known), and what
    is reported, applied over what went before, equals each body's full parse."""
    topics = list(start.items())
    data = shaped_body(topics, 1)
    got = table_changes(data, V, NONE)
    assert got is not None and got.changed == full(data)
    applied = dict(got.changed)
    for n, steps in enumerate(rounds, 2):
        before, topics = dict(topics), edited(topics, steps)
        data = shaped_body(topics, n)
        expected = full(data)
        got = table_changes(data, V, got.hashes)
        assert got is not None
        assert got.changed == {t: expected[t] for t, shape in topics if before.get(t) != shape}
        applied.update(got.changed)
        assert {t: applied[t] for t in expected} == expected


raw_junk = st.lists(st.sampled_from([b"}", b"{", b",", b'"', b":", b"1", b"\\", b" ", b"x", b"\xff", b"\x00",
                                     b'"k":1', b'"k":{}', b'"k":{', b"},", b"}}", b"\xed\xa0\x80"]), max_size=4).map(b"".join)


def test_a_new_piece_is_trusted_only_with_the_comma_before_it() -> None:
    """A member cut short and a brace-less one after it: the new piece lacks its comma, and
    its bytes but for the first are a member. The body is not JSON; it must be declined."""
    data = body({"a": 8, "b": 8})
    first = table_changes(data, V, NONE)
    assert first is not None
    cut = data.index(b"}", data.index(b'"a":{'))
    spliced = data[:cut] + b'}x"k":{' + data[cut:]
    with pytest.raises(BodyDecodeError):
        full(spliced)
    assert table_changes(spliced, V, first.hashes) is None


@settings(max_examples=300, deadline=None, database=None)
@given(st.dictionaries(plain_names, shapes, min_size=1, max_size=8), st.dictionaries(plain_names, shapes, max_size=8),
       raw_junk, st.integers(0, 2000))
def test_a_re_registration_with_junk_spliced_anywhere_is_declined_or_applies_exactly(
        before: dict[str, Shape], more: dict[str, Shape], extra: bytes, at: int) -> None:
    """Bytes inserted anywhere in a re-registration diffed against a clean one's pieces:
    declined, or what it reports is the full parse's (DataVersion and filters too), and
    applied over the first body's topics it gives the full parse's topics."""
    first = table_changes(shaped_body(list(before.items()), 1), V, NONE)
    assert first is not None
    data = shaped_body(list({**before, **more}.items()), 2)
    at = at % (len(data) + 1)
    spliced = data[:at] + extra + data[at:]
    try:
        dv, expected, filters, mappings = RegisterBrokerBody.decode_queues_mapped(spliced, V)
    except BodyDecodeError:
        assert table_changes(spliced, V, first.hashes) is None
        return
    got = table_changes(spliced, V, first.hashes)
    if got is not None:
        assert not mappings and (got.data_version, got.filters) == (dv, filters)
        assert got.changed.items() <= expected.items()
        applied = {**first.changed, **got.changed}
        assert {t: applied[t] for t in expected} == expected


# ---- the hash comparison: blocks of _BLOCK hashes, descents, shifts ----

def hash_array(values: list[int]) -> array:
    return array("Q", values)


SIZES = [1, _BLOCK - 1, _BLOCK, _BLOCK + 1, 2 * _BLOCK, 3 * _BLOCK + 5]


@pytest.mark.parametrize("n", SIZES)
def test_positions_that_differ_are_found_at_every_edge_of_a_block(n: int) -> None:
    """A change at a block's first or last hash, in the short last block, in every block,
    or nowhere: exactly the positions that differ, whatever the length's remainder."""
    old = hash_array(list(range(1000, 1000 + n)))
    edges = {0, n - 1} | {at for b in range(0, n, _BLOCK) for at in (b, b + _BLOCK - 1) if at < n}
    for changed in [set(), {0}, {n - 1}, edges, set(range(n)), set(range(0, n, _BLOCK))]:
        new = hash_array([h + 10**6 if i in changed else h for i, h in enumerate(old)])
        assert _differing(new, old) == sorted(changed)


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=5 * _BLOCK + 7), st.integers(0, 300), st.integers(0, 300),
       st.integers(0, 300))
def test_a_common_run_is_measured_to_its_first_mismatch(values: list[int], shift: int, j: int, change: int) -> None:
    """``old`` is ``new`` without its first ``shift`` hashes and with one changed, compared
    from aligned places: the run ends at the change or at the shorter's end."""
    shift = shift % (len(values) + 1)
    old_values = values[shift:]
    if old_values:
        old_values[change % len(old_values)] ^= 1
    new, old = hash_array(values), hash_array(old_values)
    j = j % (len(old) + 1)
    i = j + shift
    limit = min(len(new) - i, len(old) - j)
    run = 0
    while run < limit and new[i + run] == old[j + run]:
        run += 1
    assert _common(new, i, old, j, limit) == run


shifts = st.lists(st.tuples(st.sampled_from(["change", "insert", "drop"]), st.integers(0, 10**6)), max_size=12)


@settings(max_examples=400, deadline=None, database=None)
@given(st.integers(0, 4 * _BLOCK + 3), shifts, st.booleans())
def test_a_shifted_table_leaves_exactly_its_new_hashes_and_matches_each_old_one_once(size: int, steps: list,
                                                                                        twice: bool) -> None:
    """Hashes inserted, dropped and changed anywhere (at block edges too, the length not a
    multiple of a block): the positions left over whose hash is not among the old ones
    left over are exactly the new hashes; every hash matched is an old one, matched once.
    With a hash repeated (a topic named twice) the matching is still one to one."""
    old_values = list(range(10, 10 + size))
    if twice and old_values:
        old_values.append(old_values[0])
    values, fresh = list(old_values), 10**9
    for kind, at in steps:
        fresh += 1
        if kind == "insert":
            values.insert(at % (len(values) + 1), fresh)
        elif values and kind == "change":
            values[at % len(values)] = fresh
        elif values:
            del values[at % len(values)]
    new, old = hash_array(values), hash_array(old_values)
    if len(new) == len(old):
        loose = _differing(new, old)
        stale = {old[i] for i in loose}
    else:
        loose, stale = _shifted(new, old)
    assert len(set(loose)) == len(loose) and stale <= set(old_values)
    matched = Counter(h for i, h in enumerate(values) if i not in set(loose))
    assert all(matched[h] <= old_values.count(h) for h in matched)
    found = {values[i] for i in loose if values[i] not in stale}
    assert set(values) - set(old_values) <= found
    if not twice:
        assert found == set(values) - set(old_values)


@pytest.mark.parametrize("n", SIZES)
def test_re_registrations_changed_at_block_edges_report_exactly_those_topics(n: int) -> None:
    """Through table_changes: a table of n topics changed at its blocks' edges, with one
    more or one fewer topic at the start, the end or a block edge, or only bumped."""
    topics = {f"t{i:04d}": 8 for i in range(n)}
    first = table_changes(body(topics), V, NONE)
    assert first is not None
    names = list(topics)
    edge = [names[at] for at in {0, n - 1, min(_BLOCK - 1, n - 1), min(_BLOCK, n - 1)}]
    cases: list[dict[str, int]] = [
        dict(topics),
        {**topics, **{t: 4 for t in edge}},
        {"a_new": 2, **topics},
        {**topics, "z_new": 2},
        dict(list(topics.items())[1:]),
        dict(list(topics.items())[:-1]),
        {t: s for t, s in topics.items() if t != names[min(_BLOCK, n - 1)]},
        {**dict(list(topics.items())[:_BLOCK]), "m_new": 2, **dict(list(topics.items())[_BLOCK:])},
    ]
    for counter, after in enumerate(cases, 2):
        got = table_changes(body(after, counter=counter), V, first.hashes)
        assert got is not None
        assert got.changed == {t: s for t, s in full(body(after)).items() if topics.get(t) != s[0]}


# ---- first registrations answered by a twin: a table read before, by its bytes ----


def test_a_table_read_before_is_answered_by_its_twin_and_any_other_is_read() -> None:
    topics = {f"topic_{i:04d}": 1 + i % 3 for i in range(300)}
    first = table_changes(body(topics), V, NONE, {})
    assert first is not None and first.table_key is not None and first.table_key[1] > 0
    twin = TwinTable.of(first.hashes, first.changed)
    assert twin is not None and len(twin.runs) == 300  # shapes alternate: no run longer than one
    twins = {first.table_key: twin}
    # Another broker of the cluster: the same table, another DataVersion and filter servers.
    joining = table_changes(body(topics, counter=9, filters=("f:1",)), V, NONE, twins)
    assert joining is not None and joining.hashes is first.hashes
    assert list(joining.changed.items()) == list(first.changed.items()) == list(full(body(topics)).items())
    assert joining.data_version == DataVersion(9, 1_700_000_000_009) and joining.filters == ("f:1",)
    # One queue count, one name or the order different: other bytes, read, exactly.
    for other in ({**topics, "topic_0150": 16}, {**topics, "topic_015x": 1},
                  dict(reversed(list(topics.items())))):
        read = table_changes(body(other), V, NONE, twins)
        assert read is not None and read.hashes is not first.hashes and read.table_key != first.table_key
        assert list(read.changed.items()) == list(full(body(other)).items())
    # A re-registration (a base) never asks the twins, and carries no key.
    again = table_changes(body(topics, counter=10), V, first.hashes, twins)
    assert again is not None and again.changed == {} and again.table_key is None


def test_a_twin_goes_with_its_hashes_and_is_not_made_where_names_could_not_come_back() -> None:
    topics = {"a": 2, "b": 2, "c": 4}
    first = table_changes(body(topics), V, NONE)
    assert first is not None and first.table_key is not None
    hashes = array("Q", first.hashes)  # held by nothing else
    twin = TwinTable.of(hashes, first.changed)
    assert twin is not None and twin.runs == ((2, (2, 2, 6, 0)), (1, (4, 4, 6, 0)))
    del hashes
    assert twin.read() is None  # the registry let go of the hashes: a read, as without a twin
    later = table_changes(body(topics, counter=2), V, NONE, {first.table_key: twin})
    assert later is not None and later.changed == first.changed and later.hashes == first.hashes
    shape = (8, 8, 6, 0)
    assert TwinTable.of(array("Q", [1, 2]), {"a\0b": shape, "c": shape}) is None
    assert TwinTable.of(array("Q", [1]), {"a": shape, "c": shape}) is None  # not a topic per piece
    assert TwinTable.of(array("Q"), {}) is None


@settings(max_examples=200, deadline=None, database=None)
@given(st.dictionaries(names, st.integers(1, 16), max_size=6))
def test_whatever_the_names_a_twin_reads_as_its_table_did(topics: dict[str, int]) -> None:
    """Names full of braces, quotes, escapes and non-ASCII: a twin, where one is made,
    gives back exactly the read it was made from."""
    first = table_changes(body(topics), V, NONE)
    if first is None or first.table_key is None:
        return
    twin = TwinTable.of(first.hashes, first.changed)
    if twin is None:
        assert not topics
        return
    again = table_changes(body(topics, counter=3), V, NONE, {first.table_key: twin})
    assert again is not None and again.hashes is first.hashes
    assert list(again.changed.items()) == list(first.changed.items())


# ---- the walk: a re-registration against the blocks of the one before ----

def walked_base(topics: list[tuple[str, Shape]]) -> PieceHashes:
    """The piece hashes a broker's re-registration leaves (they carry blocks), as a
    broker re-registering every 30 s meets them."""
    first = table_changes(shaped_body(topics, 1), V, NONE)
    assert first is not None
    again = table_changes(shaped_body(topics, 2), V, first.hashes)
    assert again is not None and again.changed == {}
    assert isinstance(again.hashes, PieceHashes) and again.hashes.blocks is not None
    return again.hashes


def assert_blocks_describe(data: bytes, hashes: PieceHashes) -> None:
    """Each block is where the blocks before it end, its bytes hash to it and a "}" closes
    it, it holds its count of pieces, and together they cover the table exactly."""
    blocks = hashes.blocks
    assert blocks is not None
    opened = data.index(_TABLE_KEY) + len(_TABLE_KEY)
    spot = opened
    for h, length, count in zip(blocks.hashes, blocks.lengths, blocks.counts):
        span = data[spot:spot + length]
        assert count >= 1 and data[spot + length] == ord("}") and span.count(b"}") == count - 1
        assert xxh3_64_intdigest(span, _SEED) == h
        spot += length + 1
    assert data[spot] == ord("}") and sum(blocks.counts) == len(hashes)  # the table's own "}"


many_topics = st.lists(st.tuples(plain_names, shapes), min_size=20, max_size=160,
                       unique_by=lambda topic: topic[0])


@settings(max_examples=120, deadline=None, database=None)
@given(many_topics, st.lists(edits, min_size=1, max_size=5))
def test_a_walked_re_registration_finds_what_the_whole_split_finds(start: list[tuple[str, Shape]],
                                                                 rounds: list[list]) -> None:
    """Round after round against the blocks the last round left: the same piece hashes
    and exactly the topics whose config is new or changed (moved topics known, across
    blocks too), as the whole table split against the same hashes without blocks; and
    the blocks left describe the body."""
    topics = start
    base = walked_base(topics)
    for n, steps in enumerate(rounds, 3):
        before, topics = dict(topics), edited(topics, steps)
        data = shaped_body(topics, n)
        got = table_changes(data, V, base)
        whole = table_changes(data, V, array("Q", base))
        assert got is not None and whole is not None
        assert got.hashes == whole.hashes and got.changed == whole.changed
        expected = full(data)
        assert got.changed == {t: expected[t] for t, shape in topics if before.get(t) != shape}
        assert isinstance(got.hashes, PieceHashes)
        assert_blocks_describe(data, got.hashes)
        base = got.hashes


def test_a_walk_splits_only_the_blocks_that_changed() -> None:
    """1% of 2,000 topics renamed in place: exactly those are reported, and the blocks of
    the unchanged topics are the base's own."""
    topics = [(f"topic_{i:04d}", (8, 6, 0)) for i in range(2000)]
    base = walked_base(topics)
    renamed = [(f"{name}_r" if i % 100 == 7 else name, shape) for i, (name, shape) in enumerate(topics)]
    data = shaped_body(renamed, 3)
    got = table_changes(data, V, base)
    assert got is not None and set(got.changed) == {f"topic_{i:04d}_r" for i in range(7, 2000, 100)}
    assert isinstance(got.hashes, PieceHashes) and got.hashes.blocks is not None and base.blocks is not None
    kept = sum(map(int.__eq__, got.hashes.blocks.hashes, base.blocks.hashes))
    assert kept == len(base.blocks.hashes) - 20  # one block per renamed topic changed
    assert_blocks_describe(data, got.hashes)


@settings(max_examples=150, deadline=None, database=None)
@given(many_topics, raw_junk, st.integers(0, 10**6))
def test_a_walked_re_registration_with_junk_spliced_anywhere_is_declined_or_exact(
        topics: list[tuple[str, Shape]], extra: bytes, at: int) -> None:
    """Bytes inserted anywhere in a body walked against blocks: declined where the whole
    split declines it, else what the whole split finds (a found block's bytes are the
    base's; anything else is split, hashed and parsed), which applied over the topics
    before gives the full parse's."""
    base = walked_base(topics)
    data = shaped_body(topics, 3)
    at = at % (len(data) + 1)
    spliced = data[:at] + extra + data[at:]
    got = table_changes(spliced, V, base)
    whole = table_changes(spliced, V, array("Q", base))
    try:
        dv, expected, filters, mappings = RegisterBrokerBody.decode_queues_mapped(spliced, V)
    except BodyDecodeError:
        assert got is None and whole is None
        return
    assert (got is None) == (whole is None)
    if got is not None and whole is not None:
        assert not mappings and (got.data_version, got.filters) == (dv, filters)
        assert got.changed == whole.changed and got.hashes == whole.hashes
        applied = {**{t: (n, n, perm, flag) for t, (n, perm, flag) in topics}, **got.changed}
        assert {t: applied[t] for t in expected} == expected


def test_a_first_registration_leaves_blocks_so_the_first_change_walks() -> None:
    """Brokers re-register unchanged between changes (not read at all): the first change
    after a first registration walks the blocks that registration left."""
    topics = [(f"topic_{i:04d}", (8, 6, 0)) for i in range(500)]
    data = shaped_body(topics, 1)
    first = table_changes(data, V, NONE)
    assert first is not None and isinstance(first.hashes, PieceHashes)
    assert_blocks_describe(data, first.hashes)
    changed = [(name, (4, 6, 0) if i == 250 else shape) for i, (name, shape) in enumerate(topics)]
    again = table_changes(shaped_body(changed, 2), V, first.hashes)
    assert again is not None and again.changed == {"topic_0250": (4, 4, 6, 0)}
    assert isinstance(again.hashes, PieceHashes) and again.hashes.blocks is not None
    assert first.hashes.blocks is not None
    assert sum(map(int.__ne__, again.hashes.blocks.hashes, first.hashes.blocks.hashes)) == 1  # one block split
