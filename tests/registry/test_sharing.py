"""Shared queue maps: topics with the same queues share one read-only map, and every
write makes a new one, so a change to one topic never shows in another."""

from __future__ import annotations

import pytest

from mqnamesrv.protocol.bodies import QueueData
from mqnamesrv.registry.clock import ManualClock
from mqnamesrv.registry.routes import QueueMap, RouteTable
from tests.registry.builders import CLUSTER, MASTER_A, MASTER_B, register, topic

NAMES = [f"t{i}" for i in range(50)]


@pytest.fixture
def table() -> RouteTable:
    t = RouteTable(clock=ManualClock())
    register(t, "broker-a", MASTER_A, 0, [topic(n) for n in NAMES], conn="a")
    register(t, "broker-b", MASTER_B, 0, [topic(n, 8) for n in NAMES], conn="b")
    return t


def snapshot(table: RouteTable) -> dict[str, dict[str, QueueData]]:
    return {t: dict(q) for t, q in table.topic_queue_table.items()}


def test_topics_with_the_same_queues_share_one_map(table: RouteTable) -> None:
    maps = {id(table.topic_queue_table[n]) for n in NAMES}
    assert len(maps) == 1 and table.queue_maps() == 1
    assert table.topic_queue_table["t0"] == {"broker-a": QueueData("broker-a", 4, 4, 6, 0),
                                             "broker-b": QueueData("broker-b", 8, 8, 6, 0)}


def test_a_shared_map_is_read_only(table: RouteTable) -> None:
    queues = table.topic_queue_table["t0"]
    assert isinstance(queues, QueueMap)
    for mutate in (lambda: queues.__setitem__("x", None), lambda: queues.pop("broker-a"),
                   lambda: queues.__delitem__("broker-a"), queues.clear, lambda: queues.update({}),
                   lambda: queues.setdefault("x", None), queues.popitem):
        with pytest.raises(TypeError):
            mutate()
    assert list(table.topic_queue_table["t1"]) == ["broker-a", "broker-b"]


def test_changing_one_topic_leaves_the_others(table: RouteTable) -> None:
    before = snapshot(table)
    register(table, "broker-a", MASTER_A, 0, [topic(n) for n in NAMES[1:]] + [topic("t0", 2)], counter=2, conn="a")
    after = snapshot(table)
    assert after["t0"]["broker-a"] == QueueData("broker-a", 2, 2, 6, 0)
    assert after["t0"]["broker-b"] == before["t0"]["broker-b"]
    assert {t: q for t, q in after.items() if t != "t0"} == {t: q for t, q in before.items() if t != "t0"}
    assert list(after["t0"]) == ["broker-a", "broker-b"]  # replaced in place, order kept
    assert table.queue_maps() == 2


def test_removals_and_perm_changes_rewrite_only_what_they_name(table: RouteTable) -> None:
    register(table, "broker-a", MASTER_A, 0, [topic(n) for n in NAMES] + [topic("solo")], counter=2, conn="a")
    table.wipe_write_perm("broker-b")
    assert {table.topic_queue_table[n]["broker-b"].perm for n in NAMES} == {4}
    assert {table.topic_queue_table[n]["broker-a"].perm for n in NAMES + ["solo"]} == {6}

    table.delete_topic("t3", CLUSTER)
    assert "t3" not in table.topic_queue_table
    assert table.topic_queue_table["t4"]["broker-a"].perm == 6

    table.connection_closed("a")  # broker-a's group goes: its queues leave every topic
    assert "solo" not in table.topic_queue_table
    assert all(list(q) == ["broker-b"] for q in table.topic_queue_table.values())
    assert table.queue_maps() == 1
    table.add_write_perm("broker-b")
    assert {q["broker-b"].perm for q in table.topic_queue_table.values()} == {6}


def test_many_distinct_layouts_are_forgotten_once_unused() -> None:
    table = RouteTable(clock=ManualClock())
    names = [f"t{i}" for i in range(3000)]
    register(table, "broker-a", MASTER_A, 0, [topic(n, 1 + i % 2000) for i, n in enumerate(names)], conn="a")
    assert table.queue_maps() == 2000
    register(table, "broker-a", MASTER_A, 0, [topic(n) for n in names], counter=2, conn="a")
    assert table.queue_maps() == 1
    register(table, "broker-a", MASTER_A, 0, [topic(n, 5000 + i % 1500) for i, n in enumerate(names)], counter=3,
             conn="a")
    # The 2,000 unused layouts of the first registration were dropped on the way
    # (without that, 3,501 would be interned).
    assert table.queue_maps() == 1500
    assert len(table._maps) <= 1600
    assert [table.topic_queue_table[n]["broker-a"].read_queue_nums for n in ("t0", "t1499", "t1500", "t2999")] == \
        [5000, 6499, 5000, 6499]


def test_export_import_round_trip_shares_again(table: RouteTable) -> None:
    state = table.export_state()
    fresh = RouteTable(clock=ManualClock())
    fresh.import_state(state)
    assert snapshot(fresh) == snapshot(table)
    assert fresh.queue_maps() == 1


def test_a_broker_leaving_keeps_every_map_still_held_interned_and_forgets_the_rest() -> None:
    """A broker's leaving rewrites every map naming it and then compacts the interned maps:
    those the topics still hold stay interned (a later write finds and shares them), the
    ones no topic holds go."""
    t = RouteTable(clock=ManualClock())
    register(t, "broker-a", MASTER_A, 0, [topic(n) for n in NAMES], conn="a")
    register(t, "broker-b", MASTER_B, 0, [topic(n, 8) for n in NAMES[:30]] + [topic("b-only", 2)], conn="b")
    t.connection_closed("b")
    held = {id(q): q for q in t.topic_queue_table.distinct_values()}
    assert set(held) == {id(m) for m in t._maps.values()}
    # the map left for t0 (broker-a alone) is the interned one a new write shares
    register(t, "broker-a", MASTER_A, 0, [topic(n) for n in NAMES] + [topic("late")], conn="a", counter=2)
    assert t.topic_queue_table["late"] is t.topic_queue_table["t0"]
