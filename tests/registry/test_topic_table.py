"""TopicTable behaves like the dict it replaces, for every sequence of operations."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqnamesrv.registry import topic_table
from mqnamesrv.registry.topic_table import TopicTable

# Few distinct names so that sequences re-add, delete and collide often; odd ones too.
NAMES = st.sampled_from(["a", "b", "topic_1", "%RETRY%g", "тема", "\ud800lone", "", "x" * 300]
                        + [f"t{i}" for i in range(40)])
OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), NAMES, st.integers(0, 3)),
    st.tuples(st.just("del"), NAMES, st.just(0)),
    st.tuples(st.just("remap"), st.just(""), st.integers(0, 3)),
    st.tuples(st.just("update"), st.lists(st.tuples(NAMES, st.integers(0, 3)), max_size=20), st.just(0)),
), max_size=300)


def check(table: TopicTable[int], model: dict[str, int]) -> None:
    assert list(table.items()) == list(model.items())  # same order, as a dict keeps it
    assert len(table) == len(model)
    # the C-loop readers: every name, names and counts by a test of the value, the values
    assert table.names_where() == list(model)
    assert table.names_where(lambda v: v % 2 == 1) == [t for t, v in model.items() if v % 2 == 1]
    assert table.count_where(lambda v: v > 1) == sum(1 for v in model.values() if v > 1)
    assert sorted(table.distinct_values()) == sorted(set(model.values()))
    for name in ["a", "t7", "\ud800lone", "never"]:
        assert table.get(name) == model.get(name)
        assert (name in table) == (name in model)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_same_as_a_dict(ops: list[tuple[str, str | list[tuple[str, int]], int]]) -> None:
    run_ops(ops)


def run_ops(ops: list[tuple[str, str | list[tuple[str, int]], int]]) -> None:
    """Apply ``ops`` to a table and to a dict, checking they agree all along."""
    table: TopicTable[int] = TopicTable()
    model: dict[str, int] = {}
    for op, name, value in ops:
        if op == "set":
            assert isinstance(name, str)
            table[name] = value
            model[name] = value
        elif op == "del":
            assert isinstance(name, str)
            assert table.pop(name, None) == model.pop(name, None)
        elif op == "update":  # keep a value when the arg is 0, else set the arg
            assert isinstance(name, list)
            changed = 0
            for topic, arg in name:
                if not (arg == 0 and topic in model):
                    changed += model.get(topic) != arg  # storing the value already there is no change
                    model[topic] = arg
            assert table.update_each(name, lambda old, arg: old if arg == 0 and old is not None else arg) == changed
        elif op == "copy":  # the copy goes on where the table stood, a half-built index and all
            table = table.copy()
        else:  # value k: drop entries equal to k, bump the others by one
            def change(v: int, k: int = value) -> int | None:
                return None if v == k else v + 1
            expected = {t: change(v) for t, v in model.items()}
            assert table.remap(change) == sum(1 for t in model if expected[t] != model[t])
            model = {t: v for t, v in expected.items() if v is not None}
        assert len(table) == len(model)
        for probe in ("a", "n0", "n77", "тема", "never"):
            assert table.get(probe) == model.get(probe)
    check(table, model)
    assert all(table.get(t) == v for t, v in model.items())


def test_a_run_of_topics_sharing_value_and_arg_asks_change_once() -> None:
    shared, other = ["queues"], ["other"]
    table: TopicTable[list[str]] = TopicTable()
    for i in range(6):
        table[f"t{i}"] = shared if i < 4 else other
    calls: list[tuple[list[str] | None, tuple[int, ...]]] = []

    def change(old: list[str] | None, arg: tuple[int, ...]) -> list[str]:
        calls.append((old, arg))
        return [*(old or []), str(arg)]

    # equal args that are distinct objects still share the answer; a new value or arg asks again
    pairs = [("t0", (8, 8)), ("t1", (8, 8)), ("t2", tuple([8, 8])), ("t3", (4, 4)), ("t4", (4, 4)),
             ("t5", (4, 4)), ("new", (4, 4)), ("new2", (4, 4))]
    assert table.update_each(pairs, change) == 8
    assert [(old, arg) for old, arg in calls] == [(shared, (8, 8)), (shared, (4, 4)), (other, (4, 4)), (None, (4, 4))]
    assert table["t0"] is table["t2"] and table["t0"] == ["queues", "(8, 8)"]
    assert table["t3"] == ["queues", "(4, 4)"] and table["t5"] == ["other", "(4, 4)"]
    assert table["new"] is table["new2"] and table["new"] == ["(4, 4)"]


def test_grows_and_compacts_without_losing_anything() -> None:
    table: TopicTable[int] = TopicTable()
    for i in range(50_000):
        table[f"topic_{i}"] = i
    for i in range(0, 50_000, 3):
        del table[f"topic_{i}"]
    assert len(table) == 50_000 - 16_667
    assert table["topic_1"] == 1 and "topic_3" not in table and table.get("topic_49999") == 49_999
    table["topic_3"] = -3  # re-added: goes to the end
    assert list(table)[-1] == "topic_3"
    # deleted entries were compacted away: the buffer holds little more than live names
    assert len(table._values) < 2 * len(table)


# Many names, so that tables grow while the operations go on (a growth indexes one entry a
# step here), deleting, adding again and copying while the next index is half built.
MANY = st.sampled_from([f"n{i}" for i in range(120)] + ["тема", "\ud800lone", ""])
GROWING_OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), MANY, st.integers(0, 3)),
    st.tuples(st.just("del"), MANY, st.just(0)),
    st.tuples(st.just("update"), st.lists(st.tuples(MANY, st.integers(0, 3)), max_size=30), st.just(0)),
    st.tuples(st.just("copy"), st.just(""), st.just(0)),
), max_size=400)


@settings(max_examples=200, deadline=None)
@given(GROWING_OPS)
def test_same_as_a_dict_while_the_index_grows_a_step_at_a_time(
        ops: list[tuple[str, str | list[tuple[str, int]], int]]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(topic_table, "_GROW_STEP", 1)
        run_ops(ops)


@settings(max_examples=200, deadline=None)
@given(OPS, st.sampled_from([1, 10**9]))
def test_same_as_a_dict_whether_readers_step_runs_or_entries(
        ops: list[tuple[str, str | list[tuple[str, int]], int]], share: int) -> None:
    """The per-entry readers (remap, names_where, count_where, distinct_values) step a run
    of equal values at a time, or entry by entry when runs are short: both ways agree
    with a dict (share 1: runs whatever their length; 10^9: never)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(topic_table, "_RUN_SHARE", share)
        run_ops(ops)


def test_a_fleet_table_is_read_a_run_at_a_time() -> None:
    """A broker's topics share a value in long runs: the readers ask once per distinct
    value and step runs, and deleted entries inside a run end it."""
    table: TopicTable[tuple[str, ...]] = TopicTable()
    maps = [("b0",), ("b0", "b1"), ("b2",)]
    model: dict[str, tuple[str, ...]] = {}
    for i in range(3000):
        model[f"t{i:05d}"] = table[f"t{i:05d}"] = maps[i // 1000]
    for name in ("t00500", "t01999", "t02000"):
        del table[name], model[name]
    assert table._runs() is not None  # long runs: stepped a run at a time
    asked: list[tuple[str, ...]] = []

    def with_b1(value: tuple[str, ...]) -> bool:
        asked.append(value)
        return "b1" in value

    assert table.names_where(with_b1) == [t for t, v in model.items() if "b1" in v]
    assert sorted(asked) == sorted(maps)  # once per distinct value
    assert table.count_where(lambda v: "b0" in v) == sum("b0" in v for v in model.values()) == 1998
    assert table.remap(lambda v: None if v == ("b2",) else v + ("b9",)) == 2997
    assert list(table.items()) == [(t, v + ("b9",)) for t, v in model.items() if v != ("b2",)]


def test_a_growing_index_is_built_a_few_entries_per_topic_added() -> None:
    """No one addition re-indexes the whole table (that held the loop ~135 ms at 4 * 10^5
    topics): the next index gets ``_GROW_STEP`` entries per topic added, and is swapped
    in, holding every topic, before the one in use is past its limit."""
    table: TopicTable[int] = TopicTable()
    for i in range(40_000):
        table[f"topic_{i}"] = i
    for _ in range(40_000):  # up to the load where growing starts
        table[f"more_{len(table)}"] = 0
        if table._growing is not None:
            break
    assert table._growing is not None  # under way, not done at once
    before, size = len(table), len(table._index)
    steps = []
    while table._growing is not None:
        indexed = table._growing[2]
        table[f"more_{len(table)}"] = 0
        if table._growing is not None:
            steps.append(table._growing[2] - indexed)
    assert len(table._index) == 2 * size
    assert steps and max(steps) == topic_table._GROW_STEP  # a step per topic added, never all at once
    assert len(table) - before < before / 6  # done well before the index in use filled up
    assert len(table) * topic_table._GROW_LIMIT[1] < size * topic_table._GROW_LIMIT[0]
    assert all(table.get(f"topic_{i}") == i for i in range(0, 40_000, 7)) and table.get("topic_x") is None
    assert table.get(f"more_{len(table) - 1}") == 0


def test_a_topic_deleted_and_added_again_while_the_index_grows_is_found_once_it_is_swapped_in() -> None:
    """Its first entry went into the next index while it lived; its new entry, added
    after, must take that slot there (as in the index in use), not a later one that the
    dead entry's would hide."""
    table: TopicTable[int] = TopicTable()
    for i in range(1000):
        table[f"t{i}"] = i
    for _ in range(2000):
        table[f"more_{len(table)}"] = 0
        if table._growing is not None:
            break
    while table._growing is not None and table._growing[2] < 100:  # t0..t99 are in the next index
        table[f"more_{len(table)}"] = 0
    assert table._growing is not None
    for i in range(0, 100, 3):
        del table[f"t{i}"]
        table[f"t{i}"] = -i
    while table._growing is not None:
        table[f"more_{len(table)}"] = 0
    assert all(table.get(f"t{i}") == (-i if i < 100 and i % 3 == 0 else i) for i in range(1000))
    assert list(table)[-1].startswith("more_") and len(table) == sum(1 for _ in table.items())


def test_refuses_what_a_dict_would() -> None:
    table: TopicTable[int] = TopicTable()
    with pytest.raises(KeyError):
        table["missing"]
    with pytest.raises(KeyError):
        del table["missing"]
    with pytest.raises(ValueError):
        table["t"] = None  # type: ignore[assignment]
    table["t"] = 1
    with pytest.raises(RuntimeError, match="changed size during iteration"):
        for name in table:
            table[name + "x"] = 2
    table2: TopicTable[int] = TopicTable()
    table2["t"] = 1
    for name in table2:  # replacing values while iterating is fine, as in a dict
        table2[name] = 5
    assert dict(table2.items()) == {"t": 5}


def test_a_topic_costs_tens_of_bytes() -> None:
    table: TopicTable[object] = TopicTable()
    shared = object()
    for i in range(100_000):
        table[f"topic_{i:07d}"] = shared
    # 13 name bytes + 4 end + 8 hash + 8 value slot + 4-8 per index slot x load
    assert table.memory_bytes() / len(table) < 55


# ---- entry numbers noted under a numbering, and updates by them ----

def test_a_numbering_moves_to_a_copy_and_ends_with_a_compaction() -> None:
    table: TopicTable[int] = TopicTable()
    for i in range(20):
        table[f"t{i}"] = i
    token = table.numbering
    table["more"] = 1  # appends keep it: no entry is renumbered
    assert table.numbering is token
    copy = table.copy()
    assert copy.numbering is token and table.numbering is not token  # the two may append apart now
    for i in range(15):
        del copy[f"t{i}"]  # compacts
    assert copy.numbering is not token


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(NAMES, st.integers(0, 3)), max_size=60, unique_by=lambda p: p[0]),
       st.lists(st.tuples(st.sampled_from(["del", "readd", "set"]), NAMES, st.integers(0, 3)), max_size=8),
       st.integers(0, 3), st.booleans(), st.booleans())
def test_an_update_by_noted_entries_equals_one_by_lookups(pairs: list[tuple[str, int]], meanwhile: list,
                                                         arg: int, watched: bool, uniform: bool) -> None:
    """Entries noted while applying some topics, then writes (deletes, re-adds, other
    values), then the same topics again by those entries or by lookups: the same table,
    the same count, the same journal."""
    table: TopicTable[int] = TopicTable()
    for name, value in pairs[::2]:
        table[name] = value
    noted = array("i")
    table.update_each(pairs, lambda old, a: a, noted)
    assert [table._name(e) for e in noted] == [name for name, _ in pairs]
    token = table.numbering
    for kind, name, value in meanwhile:
        if kind == "del" or kind == "readd":
            table.pop(name, None)
        if kind != "del":
            table[name] = value
    again = [(name, arg if uniform else (value + arg) % 4) for name, value in pairs]
    by_entries = table.copy()  # takes over the table's numbering
    by_lookup = table.copy()
    if by_entries.numbering is not token:  # compacted meanwhile: the entries are not to be used
        return
    journals = [t.watch() for t in (by_entries, by_lookup)] if watched else []

    def change(old: int | None, a: int) -> int:
        return a if old is None else (old + a) % 4

    got = by_entries.update_entries(noted, again, change)
    assert got == by_lookup.update_each(again, change)
    assert list(by_entries.items()) == list(by_lookup.items())
    if watched:
        assert journals[0] == journals[1]


def test_new_topics_appended_by_update_each_across_rebuilds_are_counted_indexed_and_journaled() -> None:
    """update_each appends new topics itself (one probe each): across the index growing
    and a compaction of deleted entries mid-way, every topic is found, counted, noted at
    its entry and recorded by a journal, as ``table[topic] = value`` one by one does."""
    table: TopicTable[int] = TopicTable()
    plain: TopicTable[int] = TopicTable()
    for i in range(20):
        table[f"old{i}"] = plain[f"old{i}"] = i
    for i in range(0, 20, 4):  # deleted entries stay until a rebuild compacts them
        del table[f"old{i}"]
        del plain[f"old{i}"]
    journal = table.watch()
    numbering = table.numbering
    pairs = [(f"new{i}", i) for i in range(200)] + [("old0", 7), ("old1", 1), ("old2", 9)]
    assert table.update_each(pairs, lambda old, arg: arg if old != arg else old) == 202
    for topic, value in pairs:
        plain[topic] = value
    assert table.numbering is not numbering  # compacted mid-way: entries were renumbered
    assert list(table.items()) == list(plain.items()) and len(table) == len(plain) == 216
    assert all(table.get(t) == v for t, v in pairs) and table.get("old4") is None
    assert list(journal) == [t for t, _ in pairs if t != "old1"]
    # with nothing to compact, the entries noted are where the topics are
    entries = array("i")
    more = [(f"more{i}", i) for i in range(300)]
    numbering = table.numbering
    assert table.update_each(more, lambda old, arg: arg, entries) == 300
    assert table.numbering is numbering
    again: TopicTable[int] = table.copy()
    assert again.update_entries(entries, [(t, v + 1) for t, v in more], lambda old, arg: arg) == 300
    assert all(again.get(t) == v + 1 for t, v in more) and len(again) == 516


def test_frozen_names_are_the_topics_as_of_the_freeze_whatever_happens_after() -> None:
    """A whole topic list is built off the loop from names frozen on it: later writes to
    the table must not show, and the table itself (its numbering) is left as it was."""
    table: TopicTable[int] = TopicTable()
    for i in range(50):
        table[f"t{i}"] = i % 3
    del table["t7"]
    numbering = table.numbering
    names = table.frozen_names()
    assert table.numbering is numbering  # (a copy would have taken it over)
    table["new"] = 1
    del table["t8"]
    table["t7"] = 2  # re-added: a new entry at the end
    for i in range(50, 5000):  # past a growth and a compaction or two
        table[f"t{i}"] = 0
    for i in range(10, 3000):
        del table[f"t{i}"]
    assert names() == [f"t{i}" for i in range(50) if i != 7]
    fresh: TopicTable[int] = TopicTable()
    fresh["a"] = 1
    kept = fresh.numbering
    fresh.frozen_names()
    assert fresh.numbering is kept and fresh.names_where() == ["a"]
