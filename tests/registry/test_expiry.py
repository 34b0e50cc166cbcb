"""Broker liveness with a manual clock: expiry, refreshes and the expiry cascade (spec 6.3)."""

from __future__ import annotations

import pytest

from mqnamesrv.registry.clock import ManualClock, system_clock
from mqnamesrv.registry.routes import Removal, RouteTable
from tests.registry.builders import CLUSTER, MASTER_A, MASTER_B, SLAVE_A, dv, register, topic


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def table(clock: ManualClock) -> RouteTable:
    return RouteTable(clock=clock)


def test_manual_clock_steps_by_hand() -> None:
    clock = ManualClock(start_ms=1_000)
    assert clock() == 1_000
    assert clock.advance(500) == 1_500
    assert clock() == 1_500


def test_system_clock_is_epoch_milliseconds() -> None:
    assert 1_600_000_000_000 < system_clock() < 4_000_000_000_000


def test_broker_expires_one_millisecond_after_the_timeout(table: RouteTable, clock: ManualClock) -> None:
    register(table, topics=[topic("t1")], conn="c1")

    clock.advance(120_000)  # lastUpdate + 120000 == now: still alive (the test is strictly "<")
    assert table.scan_not_active() == []
    assert table.pickup_route("t1") is not None

    clock.advance(1)
    assert table.scan_not_active() == [Removal(MASTER_A, "broker-a", "expired", "c1")]
    assert table.pickup_route("t1") is None
    assert table.cluster_info().broker_addr_table == {}
    assert table.cluster_info().cluster_addr_table == {}
    assert table.broker_live_table == {}
    assert table.scan_not_active() == []


def test_expired_broker_is_forgotten_by_its_connection(table: RouteTable, clock: ManualClock) -> None:
    register(table, conn="c1")
    clock.advance(120_001)
    table.scan_not_active()
    assert table.connection_closed("c1") == []


def test_per_broker_timeout(table: RouteTable, clock: ManualClock) -> None:
    register(table, "broker-a", MASTER_A, 0, timeout_ms=10_000)
    register(table, "broker-b", MASTER_B, 0)

    clock.advance(10_000)
    assert table.scan_not_active() == []
    clock.advance(1)
    assert table.scan_not_active() == [Removal(MASTER_A, "broker-a", "expired", None)]
    assert table.broker_live_table[MASTER_B].timeout_ms == 120_000


def test_default_timeout_comes_from_the_table(clock: ManualClock) -> None:
    table = RouteTable(clock=clock, default_timeout_ms=5_000)
    register(table)
    clock.advance(5_001)
    assert [r.broker_addr for r in table.scan_not_active()] == [MASTER_A]


def test_re_registration_refreshes(table: RouteTable, clock: ManualClock) -> None:
    register(table)
    clock.advance(100_000)
    register(table)
    clock.advance(100_000)
    assert table.scan_not_active() == []
    clock.advance(20_001)
    assert len(table.scan_not_active()) == 1


def test_query_data_version_refreshes_only_when_unchanged(table: RouteTable, clock: ManualClock) -> None:
    register(table, counter=1)

    clock.advance(100_000)
    assert table.query_data_version(MASTER_A, dv(1)) == (False, dv(1))
    clock.advance(100_000)
    assert table.scan_not_active() == []  # refreshed 100 s ago

    # A changed broker must register in full to stay alive (4.9.8).
    assert table.query_data_version(MASTER_A, dv(2)) == (True, dv(1))
    clock.advance(20_001)
    assert [r.broker_addr for r in table.scan_not_active()] == [MASTER_A]


def test_query_data_version_of_unknown_broker(table: RouteTable) -> None:
    assert table.query_data_version(MASTER_A, dv(1)) == (True, None)


def test_heartbeat_refreshes(table: RouteTable, clock: ManualClock) -> None:
    register(table)
    clock.advance(119_000)
    assert table.heartbeat(MASTER_A) is True
    clock.advance(119_000)
    assert table.scan_not_active() == []
    assert table.broker_live_table[MASTER_A].last_update_ms == 1_700_000_119_000


def test_heartbeat_of_unknown_broker(table: RouteTable) -> None:
    assert table.heartbeat(MASTER_A) is False
    assert table.broker_live_table == {}


def test_expiry_cascade_master_then_slave(table: RouteTable, clock: ManualClock) -> None:
    register(table, "broker-a", MASTER_A, 0, [topic("t1")], conn="m")
    register(table, "broker-a", SLAVE_A, 1, conn="s")
    register(table, "broker-b", MASTER_B, 0, [topic("t1")], conn="b")

    clock.advance(60_000)
    register(table, "broker-a", SLAVE_A, 1, conn="s")
    register(table, "broker-b", MASTER_B, 0, [topic("t1")], conn="b")
    clock.advance(60_001)

    assert table.scan_not_active() == [Removal(MASTER_A, "broker-a", "expired", "m")]
    assert table.broker_member_group(CLUSTER, "broker-a").broker_addrs == {1: SLAVE_A}
    assert set(table.topic_queue_table["t1"]) == {"broker-a", "broker-b"}

    register(table, "broker-b", MASTER_B, 0, [topic("t1")], conn="b")
    clock.advance(60_000)
    assert table.scan_not_active() == [Removal(SLAVE_A, "broker-a", "expired", "s")]
    assert list(table.cluster_info().broker_addr_table) == ["broker-b"]
    assert table.cluster_info().cluster_addr_table == {CLUSTER: ("broker-b",)}
    assert list(table.topic_queue_table["t1"]) == ["broker-b"]


def test_expired_master_that_returns_rewrites_its_topics(table: RouteTable, clock: ManualClock) -> None:
    register(table, "broker-a", MASTER_A, 0, [topic("t1")], counter=1)
    table.wipe_write_perm("broker-a")
    table.delete_topic("t1")
    clock.advance(120_001)
    table.scan_not_active()

    register(table, "broker-a", MASTER_A, 0, [topic("t1")], counter=1)  # same DataVersion, but first again
    assert table.topic_queue_table["t1"]["broker-a"].perm == 6
