"""5.x registry behaviours, each from the 5.0.0 RouteInfoManager, with a manual clock.

tests/golden5 shows what a real 5.0.0 name server answered; these cover the rules that
capture could not reach (prime-slave registrations, expiry and connection loss of an
acting-master group, 4.x and 5.x brokers in one group, snapshots) and that 4.x brokers
are untouched.
"""

from __future__ import annotations

import pytest

from mqnamesrv.protocol.bodies import TopicQueueMappingInfo
from mqnamesrv.registry.clock import ManualClock
from mqnamesrv.registry.route5 import filter_by_zone, requested_zone, with_acting_masters
from mqnamesrv.registry.routes import RouteTable
from tests.registry.builders import CLUSTER, MASTER_A, MASTER_B, SLAVE_A, dv, ha_of, topic
from tests.registry.test_expiry import clock, table  # noqa: F401  (the manual clock and its table)

MAPPING = TopicQueueMappingInfo(topic="static_t", bname="broker-a", total_queues=2, epoch=7, curr_id_map={0: 0, 1: 1})


def register5(table: RouteTable, addr: str = MASTER_A, broker_id: int = 0, topics: dict[str, int] | None = None,
              counter: int = 1, *, acting: bool | None = True, zone: str | None = "zoneA", conn: object = None,
              name: str = "broker-a", mappings: dict[str, TopicQueueMappingInfo] | None = None) -> None:
    """A 5.x broker's registration (acting=None: a 4.x broker's)."""
    shapes = {t: topic(t, n, perm=7).shape for t, n in (topics or {"t1": 4}).items()}
    table.register_broker(CLUSTER, name, addr, broker_id, ha_of(addr), dv(counter), shapes, (), conn, 10_000,
                          enable_acting_master=acting, zone_name=zone, mappings=mappings)


def perm(table: RouteTable, t: str, name: str = "broker-a") -> int:
    route = table.pickup_route(t)
    assert route is not None
    return next(q.perm for q in route.queue_datas if q.broker_name == name)


def test_group_keeps_the_last_registrations_flag_and_zone(table: RouteTable) -> None:
    register5(table)
    (b,) = table.pickup_route("t1").broker_datas  # type: ignore[union-attr]
    assert (b.enable_acting_master, b.zone_name) == (True, "zoneA")
    generation = table.generation
    register5(table, zone="zoneB")
    assert table.cluster_info().broker_addr_table["broker-a"].zone_name == "zoneB"
    assert table.generation > generation  # cached answers must not survive a zone change


def test_4x_broker_reports_no_5x_fields(table: RouteTable) -> None:
    register5(table, acting=None, zone=None)
    (b,) = table.pickup_route("t1").broker_datas  # type: ignore[union-attr]
    assert (b.enable_acting_master, b.zone_name) == (None, None)
    assert b"enableActingMaster" not in table.pickup_route("t1").encode(standard=True)  # type: ignore[union-attr]


@pytest.mark.parametrize("how", ["unregister", "expiry", "connection-closed"])
def test_losing_the_master_of_an_acting_group_makes_its_queues_read_only(
        table: RouteTable, clock: ManualClock, how: str) -> None:
    register5(table, conn="m")
    register5(table, SLAVE_A, 1, conn="s")
    assert perm(table, "t1") == 7
    if how == "unregister":
        table.unregister_broker(CLUSTER, "broker-a", MASTER_A, 0)
    elif how == "expiry":
        clock.advance(9_000)
        table.heartbeat(SLAVE_A)
        clock.advance(1_001)  # the master's own 10 s timeout, not 120 s
        assert [(r.broker_addr, r.timeout_ms) for r in table.scan_not_active()] == [(MASTER_A, 10_000)]
    else:
        table.connection_closed("m")
    assert perm(table, "t1") == 5
    assert table.pickup_route("t1").broker_datas[0].broker_addrs == {1: SLAVE_A}  # type: ignore[union-attr]


def test_losing_a_4x_master_keeps_the_slaves_queues_writable(table: RouteTable) -> None:
    register5(table, acting=None, conn="m")
    register5(table, SLAVE_A, 1, acting=None, conn="s")
    table.connection_closed("m")
    assert perm(table, "t1") == 7


def test_losing_the_master_without_acting_master_mode_keeps_queues(table: RouteTable) -> None:
    register5(table, acting=False, conn="m")
    register5(table, SLAVE_A, 1, acting=False, conn="s")
    table.connection_closed("m")
    assert perm(table, "t1") == 7


def test_prime_slave_registers_its_topics_read_only(table: RouteTable) -> None:
    register5(table, conn="m")
    register5(table, SLAVE_A, 1, {"t1": 4}, conn="s")
    table.connection_closed("m")
    # Same DataVersion: only topics the table lacks for this broker are added (5.x), read-only.
    register5(table, SLAVE_A, 1, {"t1": 4, "t2": 2}, conn="s")
    assert (perm(table, "t1"), perm(table, "t2")) == (5, 5)
    # A changed DataVersion re-files every topic, still read-only while it acts.
    register5(table, SLAVE_A, 1, {"t1": 8, "t2": 2}, counter=2, conn="s")
    assert table.pickup_route("t1").queue_datas[0].read_queue_nums == 8  # type: ignore[union-attr]
    assert perm(table, "t1") == 5
    # The master comes back: its first registration restores write.
    register5(table, MASTER_A, 0, {"t1": 8, "t2": 2}, counter=2, conn="m2")
    assert (perm(table, "t1"), perm(table, "t2")) == (7, 7)


def test_slave_with_a_master_present_registers_no_topics(table: RouteTable) -> None:
    register5(table, conn="m")
    register5(table, SLAVE_A, 1, {"t1": 4, "only_on_slave": 1}, counter=5, conn="s")
    assert table.pickup_route("only_on_slave") is None


def test_5x_master_refiles_a_deleted_topic_on_an_unchanged_version(table: RouteTable) -> None:
    register5(table, topics={"t1": 4})
    table.delete_topic("t1")
    register5(table, topics={"t1": 4})
    assert table.pickup_route("t1") is not None


def test_4x_master_does_not_refile_on_an_unchanged_version(table: RouteTable) -> None:
    register5(table, topics={"t1": 4}, acting=None, zone=None)
    table.delete_topic("t1")
    register5(table, topics={"t1": 4}, acting=None, zone=None)
    assert table.pickup_route("t1") is None  # 4.9.8: deleted until the broker's version changes


def test_static_topic_mappings_are_filed_under_their_own_broker_name(table: RouteTable) -> None:
    register5(table, topics={"static_t": 2}, mappings={"static_t": MAPPING})
    route = table.pickup_route("static_t")
    assert route is not None and route.topic_queue_mapping_by_broker == {"broker-a": MAPPING}
    assert table.has_mappings("static_t") and not table.has_mappings("t1")
    # Unchanged version: the body's mappings are not looked at again (5.x).
    later = TopicQueueMappingInfo(topic="static_t", bname="broker-a", total_queues=4, epoch=8)
    register5(table, topics={"static_t": 2}, mappings={"static_t": later})
    assert table.pickup_route("static_t").topic_queue_mapping_by_broker == {"broker-a": MAPPING}  # type: ignore
    register5(table, topics={"static_t": 2}, counter=2, mappings={"static_t": later})
    assert table.pickup_route("static_t").topic_queue_mapping_by_broker == {"broker-a": later}  # type: ignore


def test_snapshot_keeps_5x_fields_and_reads_older_snapshots(clock: ManualClock) -> None:
    table = RouteTable(clock=clock)
    register5(table, topics={"static_t": 2}, mappings={"static_t": MAPPING})
    state = table.export_state()
    again = RouteTable(clock=clock)
    again.import_state(state)
    assert again.pickup_route("static_t") == table.pickup_route("static_t")
    old = {**state, "brokers": {n: g[:2] for n, g in state["brokers"].items()}}
    del old["mappings"]
    again.import_state(old)
    route = again.pickup_route("static_t")
    assert route is not None and route.topic_queue_mapping_by_broker is None
    assert route.broker_datas[0].enable_acting_master is None


# ------------------------------------------------------------ route5 rules ----

def test_acting_master_lists_the_read_only_slave_as_id_0(table: RouteTable) -> None:
    register5(table, conn="m")
    register5(table, SLAVE_A, 1, conn="s")
    register5(table, MASTER_B, 0, name="broker-b", acting=False, conn="b")
    table.connection_closed("m")
    route = with_acting_masters(table.pickup_route("t1"), "t1")  # type: ignore[arg-type]
    assert {b.broker_name: dict(b.broker_addrs) for b in route.broker_datas} == {
        "broker-a": {0: SLAVE_A}, "broker-b": {0: MASTER_B}}
    # The brokers' own member-group topics are never rewritten.
    same = table.pickup_route("t1")
    assert with_acting_masters(same, "rmq_sys_SYNC_BROKER_MEMBER_broker-a") is same  # type: ignore[arg-type]


def test_acting_master_leaves_non_acting_groups(table: RouteTable) -> None:
    register5(table, SLAVE_A, 1, acting=False, conn="s")  # a prime slave, but not in acting-master mode
    route = table.pickup_route("t1")
    assert route is not None and route.queue_datas[0].perm == 5
    assert with_acting_masters(route, "t1").broker_datas[0].broker_addrs == {1: SLAVE_A}


def test_acting_master_leaves_groups_whose_queues_are_writable(table: RouteTable) -> None:
    register5(table, SLAVE_A, 1, conn="s")
    table.add_write_perm("broker-a")  # an operator re-enabled writes
    route = table.pickup_route("t1")
    assert route is not None and with_acting_masters(route, "t1").broker_datas[0].broker_addrs == {1: SLAVE_A}


@pytest.mark.parametrize("ext, zone", [
    ({"__ZONE_MODE": "true", "__ZONE_NAME": "zoneA"}, "zoneA"),
    ({"__ZONE_MODE": "TRUE", "__ZONE_NAME": "z"}, "z"),
    ({"__ZONE_MODE": "yes", "__ZONE_NAME": "z"}, None),
    ({"__ZONE_MODE": "true", "__ZONE_NAME": "  "}, None),
    ({"__ZONE_NAME": "z"}, None),
], ids=["on", "case", "not-true", "blank-zone", "no-mode"])
def test_requested_zone(ext: dict[str, str], zone: str | None) -> None:
    assert requested_zone(ext.get) == zone


def test_zone_filter_keeps_own_zone_and_masterless_groups(table: RouteTable) -> None:
    register5(table, zone="ZoneA")
    register5(table, MASTER_B, 0, name="broker-b", zone="zoneB")
    register5(table, SLAVE_A, 1, name="broker-c", zone="zoneB")  # no master: kept everywhere
    route = table.pickup_route("t1")
    assert route is not None
    kept = filter_by_zone(route, "zonea")
    assert [b.broker_name for b in kept.broker_datas] == ["broker-a", "broker-c"]
    assert [q.broker_name for q in kept.queue_datas] == ["broker-a", "broker-c"]
    assert filter_by_zone(route, "zoneB").broker_datas[0].broker_name == "broker-b"
