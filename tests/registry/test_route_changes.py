"""RouteTable.watch_changes: which topics and brokers each kind of write reports, so that
answers computed from the table can be dropped one topic at a time (the server's kept
route answers; tests/server/test_route_answers_property.py checks those end to end)."""

from __future__ import annotations

from mqnamesrv.protocol.bodies import QueueData, TopicQueueMappingInfo
from mqnamesrv.registry.clock import ManualClock
from mqnamesrv.registry.routes import RouteTable
from tests.registry.builders import CLUSTER, MASTER_A, MASTER_B, SLAVE_A, dv, register, topic


def test_each_write_reports_what_it_touched() -> None:
    clock = ManualClock()
    table = RouteTable(clock)
    changes = table.watch_changes()
    register(table, "broker-a", MASTER_A, topics=[topic("t1"), topic("t2")])
    register(table, "broker-b", MASTER_B, topics=[topic("t3")])
    assert changes.take() == ({"t1", "t2", "t3"}, {"broker-a", "broker-b"})
    assert changes.take() == (set(), set())
    register(table, "broker-a", MASTER_A, topics=[topic("t1"), topic("t2", 8)], counter=2)
    assert changes.take() == ({"t2"}, set())  # same group, one topic's queues changed
    register(table, "broker-a", SLAVE_A, broker_id=1)
    assert changes.take() == (set(), {"broker-a"})  # the group gained an address
    register(table, "broker-b", MASTER_B, topics=[topic("t3")], counter=2, filters=["fs:1"])
    assert changes.take() == (set(), {"broker-b"})  # filter servers of one of its addresses
    table.wipe_write_perm("broker-a")
    assert changes.take() == ({"t1", "t2"}, set())
    table.register_topic("t4", [QueueData("broker-b", 1, 1, 6, 0)])
    table.delete_topic("t1")
    assert changes.take() == ({"t1", "t4"}, set())
    table.register_broker(CLUSTER, "broker-b", MASTER_B, 0, "x", dv(3), {"t3": (4, 4, 6, 0)}, enable_acting_master=False,
                          mappings={"t3": TopicQueueMappingInfo("t3", "broker-b", 1)})
    assert changes.take() == ({"t3"}, {"broker-b"})  # a 5.x flag for the group, a static topic's mapping
    table.unregister_broker(CLUSTER, "broker-a", SLAVE_A, 1)
    assert changes.take() == (set(), {"broker-a"})
    clock.advance(200_000)
    assert [r.broker_addr for r in table.scan_not_active()] == [MASTER_A, MASTER_B]
    topics, brokers = changes.take()
    assert topics == {"t2", "t3", "t4"} and brokers == {"broker-a", "broker-b"}


def test_tables_replaced_wholesale_report_everything() -> None:
    table = RouteTable()
    register(table, "broker-a", MASTER_A, topics=[topic("t1")])
    state = table.export_state()
    changes = table.watch_changes()
    table.import_state(state)
    assert changes.take() == (None, set())
    table.delete_topic("t1")  # recorded again, on the new table
    assert changes.take() == ({"t1"}, set())
    changes.close()
    table.delete_topic("t9")
    assert not table._watchers


def test_what_a_take_hands_over_stays_as_it_was_while_the_next_writes_are_recorded() -> None:
    """``take`` hands the recorded topics over without a copy (a new journal records from
    then on): later writes go to the next take only, with a staged registration's swap too."""
    table = RouteTable()
    changes = table.watch_changes()
    register(table, "broker-a", MASTER_A, topics=[topic("t1"), topic("t2")])
    first, _ = changes.take()
    register(table, "broker-b", MASTER_B, topics=[topic("t3")])
    table.delete_topic("t1")
    assert first == {"t1", "t2"}
    second, _ = changes.take()
    assert second == {"t1", "t3"} and first == {"t1", "t2"}
    assert changes.take() == (set(), set())
    assert len(table.topic_queue_table.journals()) == 1  # the handed-over journals record nothing
