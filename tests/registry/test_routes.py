"""RouteTable: registration, removal cascades, reads and the generation counter (spec 4.4-4.10, 6)."""

from __future__ import annotations

from typing import Callable

import pytest

from mqnamesrv.protocol.bodies import BrokerData, DataVersion, QueueData, TopicRouteData
from mqnamesrv.registry.clock import ManualClock
from mqnamesrv.registry.routes import RegisterResult, Removal, RouteTable
from tests.registry.builders import CLUSTER, MASTER_A, MASTER_B, SLAVE_A, ha_of, register, topic


@pytest.fixture
def table() -> RouteTable:
    return RouteTable(clock=ManualClock())


def group_a(*addrs: tuple[int, str], cluster: str = CLUSTER) -> BrokerData:
    return BrokerData(cluster=cluster, broker_name="broker-a", broker_addrs=dict(addrs))


def qd(name: str = "broker-a", queues: int = 4, perm: int = 6, sys_flag: int = 0) -> QueueData:
    return QueueData(name, queues, queues, perm, sys_flag)


def route_of(table: RouteTable, topic_name: str) -> TopicRouteData:
    route = table.pickup_route(topic_name)
    assert route is not None
    return route


def fleet(table: RouteTable) -> None:
    """broker-a (master + slave) and broker-b (master); topics shared, a_only, b_only."""
    register(table, "broker-a", MASTER_A, 0, [topic("shared"), topic("a_only", 2)], conn="conn-a")
    register(table, "broker-a", SLAVE_A, 1, [topic("shared"), topic("a_only", 2)], conn="conn-s")
    register(table, "broker-b", MASTER_B, 0, [topic("shared", 8), topic("b_only")], conn="conn-b")


# ------------------------------------------------------------------ register ----


def test_first_master_registration_fills_every_table(table: RouteTable) -> None:
    result = register(table, topics=[topic("t1"), topic("t2", 8, perm=4, sys_flag=1)], conn="c1")

    assert result == RegisterResult()
    info = table.cluster_info()
    assert info.broker_addr_table == {"broker-a": group_a((0, MASTER_A))}
    assert info.cluster_addr_table == {CLUSTER: ("broker-a",)}
    assert table.all_topics() == ["t1", "t2"]
    assert table.pickup_route("t1") == TopicRouteData(
        queue_datas=(qd(),), broker_datas=(group_a((0, MASTER_A)),), filter_server_table={}
    )
    assert route_of(table, "t2").queue_datas == (QueueData("broker-a", 8, 8, 4, 1),)
    live = table.broker_live_table[MASTER_A]
    assert (live.last_update_ms, live.data_version, live.conn, live.ha_server_addr, live.timeout_ms) == (
        1_700_000_000_000, DataVersion(1, 1_700_000_000_001), "c1", "10.0.0.1:10912", 120_000,
    )


def test_unknown_topic_has_no_route(table: RouteTable) -> None:
    register(table, topics=[topic("t1")])
    assert table.pickup_route("nope") is None


def test_slave_learns_its_live_master(table: RouteTable) -> None:
    register(table, "broker-a", MASTER_A, 0)
    result = register(table, "broker-a", SLAVE_A, 1)
    assert result == RegisterResult(master_addr=MASTER_A, ha_server_addr=ha_of(MASTER_A))
    assert table.cluster_info().broker_addr_table["broker-a"] == group_a((0, MASTER_A), (1, SLAVE_A))


def test_slave_without_master_learns_nothing(table: RouteTable) -> None:
    assert register(table, "broker-a", SLAVE_A, 1) == RegisterResult()


def test_slave_promoted_to_master_leaves_no_stale_entry(table: RouteTable) -> None:
    fleet(table)
    table.unregister_broker(CLUSTER, "broker-a", MASTER_A, 0)
    assert table.cluster_info().broker_addr_table["broker-a"] == group_a((1, SLAVE_A))

    # The slave comes back as id 0 with the same address, and its own topic view.
    result = register(table, "broker-a", SLAVE_A, 0, [topic("shared", 2), topic("a_only", 2)], counter=5)

    assert result == RegisterResult()
    assert table.cluster_info().broker_addr_table["broker-a"] == group_a((0, SLAVE_A))
    # A new id 0 is a first registration, so its topics are written.
    assert table.topic_queue_table["shared"]["broker-a"] == qd(queues=2)


def test_existing_group_keeps_its_original_cluster(table: RouteTable) -> None:
    register(table, "broker-a", MASTER_A, 0, cluster="c1")
    register(table, "broker-a", SLAVE_A, 1, cluster="c2")

    info = table.cluster_info()
    assert info.broker_addr_table == {"broker-a": group_a((0, MASTER_A), (1, SLAVE_A), cluster="c1")}
    # The cluster set of the request is still updated (spec 4.4 step 3.1).
    assert info.cluster_addr_table == {"c1": ("broker-a",), "c2": ("broker-a",)}


def test_same_address_re_registered_under_a_new_id_replaces_it(table: RouteTable) -> None:
    register(table, "broker-a", SLAVE_A, 1)
    register(table, "broker-a", SLAVE_A, 2)
    assert table.cluster_info().broker_addr_table["broker-a"] == group_a((2, SLAVE_A))


def test_slaves_never_touch_topic_data(table: RouteTable) -> None:
    register(table, "broker-a", MASTER_A, 0, [topic("t1")])
    register(table, "broker-a", SLAVE_A, 1, [topic("t1", 8, perm=2), topic("slave_only")], counter=9)

    assert table.all_topics() == ["t1"]
    assert table.topic_queue_table["t1"] == {"broker-a": qd()}


def test_slave_only_group_registers_no_topics(table: RouteTable) -> None:
    register(table, "broker-a", SLAVE_A, 1, [topic("t1")])
    assert table.all_topics() == []
    assert table.cluster_info().broker_addr_table == {"broker-a": group_a((1, SLAVE_A))}


def test_topics_change_only_with_a_new_data_version(table: RouteTable) -> None:
    register(table, topics=[topic("t1", 4)], counter=1)

    register(table, topics=[topic("t1", 8)], counter=1)  # heartbeat: same DataVersion
    assert table.topic_queue_table["t1"] == {"broker-a": qd(queues=4)}

    register(table, topics=[topic("t1", 8)], counter=2)
    assert table.topic_queue_table["t1"] == {"broker-a": qd(queues=8)}


def test_topics_not_reported_any_more_are_kept(table: RouteTable) -> None:
    register(table, topics=[topic("t1"), topic("t2")], counter=1)
    register(table, topics=[topic("t1", 8)], counter=2)

    assert table.all_topics() == ["t1", "t2"]
    assert table.topic_queue_table["t2"] == {"broker-a": qd()}


def test_route_lists_every_group_of_the_topic(table: RouteTable) -> None:
    fleet(table)
    route = table.pickup_route("shared")
    assert route == TopicRouteData(
        queue_datas=(qd("broker-a"), qd("broker-b", 8)),
        broker_datas=(
            group_a((0, MASTER_A), (1, SLAVE_A)),
            BrokerData(cluster=CLUSTER, broker_name="broker-b", broker_addrs={0: MASTER_B}),
        ),
        filter_server_table={},
    )


def test_filter_servers_appear_in_routes_and_go_with_an_empty_list(table: RouteTable) -> None:
    register(table, topics=[topic("t1")], filters=["192.168.1.1:3000"])
    register(table, "broker-a", SLAVE_A, 1, filters=["192.168.1.2:3000"])
    assert route_of(table, "t1").filter_server_table == {
        MASTER_A: ["192.168.1.1:3000"], SLAVE_A: ["192.168.1.2:3000"],
    }

    register(table, "broker-a", SLAVE_A, 1, filters=None)  # pre-3.0.11 body: no list at all
    assert table.filter_server_table[SLAVE_A] == ["192.168.1.2:3000"]

    register(table, "broker-a", SLAVE_A, 1, filters=[])
    assert route_of(table, "t1").filter_server_table == {MASTER_A: ["192.168.1.1:3000"]}


# ---------------------------------------------------------------- unregister ----


def test_unregister_master_keeps_group_and_queues_while_a_slave_remains(table: RouteTable) -> None:
    fleet(table)
    table.unregister_broker(CLUSTER, "broker-a", MASTER_A, 0)

    assert MASTER_A not in table.broker_live_table
    route = route_of(table, "a_only")
    assert route.broker_datas == (group_a((1, SLAVE_A)),)
    assert route.queue_datas == (qd(queues=2),)
    assert sorted(table.cluster_info().cluster_addr_table[CLUSTER]) == ["broker-a", "broker-b"]


def test_unregister_cascade_drops_emptied_group_cluster_and_topics(table: RouteTable) -> None:
    fleet(table)
    table.unregister_broker(CLUSTER, "broker-a", MASTER_A, 0)
    table.unregister_broker(CLUSTER, "broker-a", SLAVE_A, 1)

    info = table.cluster_info()
    assert list(info.broker_addr_table) == ["broker-b"]
    assert info.cluster_addr_table == {CLUSTER: ("broker-b",)}
    assert table.all_topics() == ["shared", "b_only"]
    assert table.topic_queue_table["shared"] == {"broker-b": qd("broker-b", 8)}
    assert table.pickup_route("a_only") is None

    table.unregister_broker(CLUSTER, "broker-b", MASTER_B, 0)
    info = table.cluster_info()
    assert (info.broker_addr_table, info.cluster_addr_table, table.all_topics()) == ({}, {}, [])
    assert table.broker_live_table == {}


def test_unregister_removes_by_id_whatever_the_address(table: RouteTable) -> None:
    fleet(table)
    table.unregister_broker(CLUSTER, "broker-a", "192.0.2.1:1", 0)

    assert table.cluster_info().broker_addr_table["broker-a"] == group_a((1, SLAVE_A))
    # The live table is keyed by the address of the request, which matched nothing.
    assert MASTER_A in table.broker_live_table


def test_unregister_of_unknown_broker_changes_nothing(table: RouteTable) -> None:
    fleet(table)
    before = (table.cluster_info(), table.generation)
    table.unregister_broker(CLUSTER, "broker-x", "192.0.2.1:1", 0)
    table.unregister_broker(CLUSTER, "broker-a", "192.0.2.1:1", 7)
    assert (table.cluster_info(), table.generation) == before


# ------------------------------------------------------- connection closed ----


def test_connection_close_removes_every_broker_registered_on_it(table: RouteTable) -> None:
    register(table, "broker-a", MASTER_A, 0, [topic("shared"), topic("a_only")], conn="sim")
    register(table, "broker-a", SLAVE_A, 1, conn="sim")
    register(table, "broker-b", MASTER_B, 0, [topic("shared")], conn="conn-b")

    removals = table.connection_closed("sim")

    assert removals == [
        Removal(MASTER_A, "broker-a", "connection closed", "sim"),
        Removal(SLAVE_A, "broker-a", "connection closed", "sim"),
    ]
    info = table.cluster_info()
    assert list(info.broker_addr_table) == ["broker-b"]
    assert info.cluster_addr_table == {CLUSTER: ("broker-b",)}
    assert table.all_topics() == ["shared"]
    assert table.topic_queue_table["shared"] == {"broker-b": qd("broker-b")}
    assert sorted(table.broker_live_table) == [MASTER_B]
    assert table.connection_closed("sim") == []


def test_connection_close_of_a_master_keeps_the_slave(table: RouteTable) -> None:
    fleet(table)
    assert table.connection_closed("conn-a") == [Removal(MASTER_A, "broker-a", "connection closed", "conn-a")]
    assert table.cluster_info().broker_addr_table["broker-a"] == group_a((1, SLAVE_A))
    assert table.topic_queue_table["a_only"] == {"broker-a": qd(queues=2)}


def test_connection_that_registered_nothing_changes_nothing(table: RouteTable) -> None:
    fleet(table)
    generation = table.generation
    assert table.connection_closed("admin-client") == []
    assert table.generation == generation


def test_broker_that_moved_to_a_new_connection_survives_the_old_one_closing(table: RouteTable) -> None:
    register(table, conn="old")
    register(table, conn="new")
    assert table.connection_closed("old") == []
    assert list(table.cluster_info().broker_addr_table) == ["broker-a"]
    assert table.connection_closed("new") == [Removal(MASTER_A, "broker-a", "connection closed", "new")]


def test_channel_destroy_removes_the_group_from_the_first_cluster_only(table: RouteTable) -> None:
    # 4.9.8 onChannelDestroy stops at the first cluster set holding the name (spec 6.2 step 4).
    register(table, "broker-a", MASTER_A, 0, cluster="c1", conn="a")
    register(table, "broker-a", MASTER_A, 0, cluster="c2", conn="a")
    table.connection_closed("a")
    info = table.cluster_info()
    assert info.broker_addr_table == {}
    assert info.cluster_addr_table == {"c2": ("broker-a",)}


# -------------------------------------------------------------- delete topic ----


@pytest.fixture
def two_clusters(table: RouteTable) -> RouteTable:
    register(table, "broker-a", MASTER_A, 0, [topic("shared"), topic("a_only")], cluster="c1")
    register(table, "broker-b", MASTER_B, 0, [topic("shared"), topic("b_only")], cluster="c2")
    return table


def test_delete_topic_without_cluster_removes_it_entirely(two_clusters: RouteTable) -> None:
    two_clusters.delete_topic("shared")
    assert two_clusters.all_topics() == ["a_only", "b_only"]
    assert two_clusters.pickup_route("shared") is None


def test_delete_topic_with_empty_cluster_name_removes_it_entirely(two_clusters: RouteTable) -> None:
    two_clusters.delete_topic("shared", "")
    assert two_clusters.all_topics() == ["a_only", "b_only"]


def test_delete_topic_in_one_cluster_keeps_the_other_clusters_queues(two_clusters: RouteTable) -> None:
    two_clusters.delete_topic("shared", "c1")
    assert two_clusters.topic_queue_table["shared"] == {"broker-b": qd("broker-b")}

    two_clusters.delete_topic("shared", "c2")
    assert two_clusters.all_topics() == ["a_only", "b_only"]


def test_delete_topic_in_a_cluster_without_it_changes_nothing(two_clusters: RouteTable) -> None:
    generation = two_clusters.generation
    two_clusters.delete_topic("a_only", "c2")
    two_clusters.delete_topic("a_only", "no-such-cluster")
    two_clusters.delete_topic("no-such-topic", "c1")
    two_clusters.delete_topic("no-such-topic")
    assert two_clusters.all_topics() == ["shared", "a_only", "b_only"]
    assert two_clusters.generation == generation


def test_deleted_topic_returns_only_with_a_new_data_version(table: RouteTable) -> None:
    register(table, topics=[topic("t1")], counter=1)
    table.delete_topic("t1")
    register(table, topics=[topic("t1")], counter=1)
    assert table.all_topics() == []
    register(table, topics=[topic("t1")], counter=2)
    assert table.all_topics() == ["t1"]


# ----------------------------------------------------------------- perms ----


@pytest.fixture
def perms(table: RouteTable) -> RouteTable:
    register(table, "broker-a", MASTER_A, 0, [
        topic("rw", perm=6), topic("rwx", perm=7), topic("r", perm=4), topic("prw", perm=14),
    ])
    register(table, "broker-b", MASTER_B, 0, [topic("rw", perm=6), topic("b_only", perm=7)])
    return table


def perm_of(table: RouteTable, topic_name: str, broker: str = "broker-a") -> int:
    return table.topic_queue_table[topic_name][broker].perm


def test_wipe_write_perm_clears_only_the_write_bit(perms: RouteTable) -> None:
    assert perms.wipe_write_perm("broker-a") == 4
    assert [perm_of(perms, t) for t in ("rw", "rwx", "r", "prw")] == [4, 5, 4, 12]
    assert [perm_of(perms, "rw", "broker-b"), perm_of(perms, "b_only", "broker-b")] == [6, 7]


def test_wipe_counts_topics_visited_even_when_unchanged(perms: RouteTable) -> None:
    perms.wipe_write_perm("broker-a")
    generation = perms.generation
    assert perms.wipe_write_perm("broker-a") == 4
    assert perms.generation == generation


def test_add_write_perm_sets_exactly_read_write(perms: RouteTable) -> None:
    assert perms.add_write_perm("broker-a") == 4
    assert [perm_of(perms, t) for t in ("rw", "rwx", "r", "prw")] == [6, 6, 6, 6]
    assert perm_of(perms, "b_only", "broker-b") == 7


def test_perm_change_of_unknown_broker_counts_zero(perms: RouteTable) -> None:
    assert perms.wipe_write_perm("broker-x") == 0
    assert perms.add_write_perm("broker-x") == 0


def test_wiped_perm_survives_heartbeats_until_the_data_version_changes(table: RouteTable) -> None:
    register(table, topics=[topic("t1")], counter=1)
    table.wipe_write_perm("broker-a")
    register(table, topics=[topic("t1")], counter=1)
    assert perm_of(table, "t1") == 4
    register(table, topics=[topic("t1")], counter=2)
    assert perm_of(table, "t1") == 6


# ------------------------------------------------------------ topic lists ----


def test_all_topics_and_topics_by_cluster(two_clusters: RouteTable) -> None:
    assert two_clusters.all_topics() == ["shared", "a_only", "b_only"]
    assert two_clusters.topics_by_cluster("c1") == ["shared", "a_only"]
    assert two_clusters.topics_by_cluster("c2") == ["shared", "b_only"]
    assert two_clusters.topics_by_cluster("no-such-cluster") == []


def test_unit_topic_lists_look_at_the_first_queue_data_only(table: RouteTable) -> None:
    # broker-b registers first, and it also comes first in Java's HashMap order
    # ("broker-b" hashes to bucket 8, "broker-a" to 11), so both notions of "first" agree.
    register(table, "broker-b", MASTER_B, 0, [
        topic("plain"), topic("unit", sys_flag=1), topic("unit_sub", sys_flag=2), topic("unit_both", sys_flag=3),
        topic("first_plain"), topic("first_unit", sys_flag=1),
    ])
    register(table, "broker-a", MASTER_A, 0, [
        topic("first_plain", sys_flag=1), topic("first_unit", sys_flag=2),
    ])

    assert table.topics_by_sys_flag(True, None) == ["unit", "unit_both", "first_unit"]
    assert table.topics_by_sys_flag(None, True) == ["unit_sub", "unit_both"]
    assert table.topics_by_sys_flag(False, True) == ["unit_sub"]


def test_system_topics_are_cluster_and_broker_names_plus_one_address(table: RouteTable) -> None:
    assert table.system_topics() == ([], None)

    register(table, "broker-a", MASTER_A, 0, [topic("t1")])
    register(table, "broker-a", SLAVE_A, 1)
    register(table, "broker-b", MASTER_B, 0)
    register(table, "broker-c", "10.0.0.9:10911", 0, cluster="other")

    names, addr = table.system_topics()
    assert sorted(names) == ["DefaultCluster", "broker-a", "broker-b", "broker-c", "other"]
    # Java reports the first group in HashMap order: "broker-b" (bucket 8) comes before
    # "broker-a" (11), although broker-a registered first (as in golden 13-system-topic-list).
    assert addr == MASTER_B


def test_system_topics_name_the_smallest_id_of_the_first_group(table: RouteTable) -> None:
    register(table, "broker-a", SLAVE_A, 2)
    register(table, "broker-a", "10.0.0.7:10911", 1)
    assert table.system_topics() == (["broker-a", "DefaultCluster"], "10.0.0.7:10911")


# --------------------------------------------------------- 5.x additions ----


def test_register_topic_adds_or_replaces_queue_data_per_broker(two_clusters: RouteTable) -> None:
    two_clusters.register_topic("new", [qd("broker-a", 2), qd("broker-b", 1)])
    assert two_clusters.topic_queue_table["new"] == {"broker-a": qd("broker-a", 2), "broker-b": qd("broker-b", 1)}

    two_clusters.register_topic("shared", [qd("broker-b", 1, perm=4)])
    assert two_clusters.topic_queue_table["shared"] == {"broker-a": qd("broker-a"), "broker-b": qd("broker-b", 1, 4)}


def test_register_topic_on_an_existing_topic_stops_at_the_first_unknown_broker(two_clusters: RouteTable) -> None:
    two_clusters.register_topic("shared", [qd("broker-a", 2), qd("broker-x"), qd("broker-b", 1)])
    assert two_clusters.topic_queue_table["shared"] == {"broker-a": qd("broker-a", 2), "broker-b": qd("broker-b")}


def test_register_topic_with_unknown_first_broker_creates_nothing(two_clusters: RouteTable) -> None:
    generation = two_clusters.generation
    two_clusters.register_topic("never", [qd("broker-x"), qd("broker-a")])
    assert two_clusters.all_topics() == ["shared", "a_only", "b_only"]
    assert two_clusters.generation == generation


def test_register_topic_new_topic_with_a_later_unknown_broker_creates_nothing(two_clusters: RouteTable) -> None:
    two_clusters.register_topic("new", [qd("broker-a", 2), qd("broker-x")])
    assert two_clusters.all_topics() == ["shared", "a_only", "b_only"]


def test_broker_member_group(table: RouteTable) -> None:
    fleet(table)
    assert table.broker_member_group(CLUSTER, "broker-a") == group_a((0, MASTER_A), (1, SLAVE_A))
    assert table.broker_member_group("c9", "broker-x") == BrokerData(
        cluster="c9", broker_name="broker-x", broker_addrs={}
    )


def test_routes_hand_out_copies(table: RouteTable) -> None:
    register(table, topics=[topic("t1")])
    route = route_of(table, "t1")
    register(table, "broker-a", SLAVE_A, 1)
    assert route.broker_datas[0].broker_addrs == {0: MASTER_A}


# --------------------------------------------------------------- generation ----


def _moves(op: Callable[[RouteTable], object]) -> bool:
    table = RouteTable(clock=ManualClock())
    fleet(table)
    before = table.generation
    op(table)
    return table.generation != before


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(lambda t: register(t, "broker-c", "10.0.0.9:1", 0), id="new-group"),
        pytest.param(lambda t: register(t, "broker-a", "10.0.0.9:1", 2), id="new-slave"),
        pytest.param(lambda t: register(t, "broker-a", MASTER_A, 0, cluster="c2"), id="group-joins-cluster"),
        pytest.param(lambda t: register(t, topics=[topic("shared", 3)], counter=2), id="new-version-new-queues"),
        pytest.param(lambda t: register(t, topics=[topic("fresh")], counter=2), id="new-version-new-topic"),
        pytest.param(lambda t: register(t, "broker-a", SLAVE_A, 1, filters=["fs:1"]), id="filter-servers"),
        pytest.param(lambda t: t.unregister_broker(CLUSTER, "broker-a", SLAVE_A, 1), id="unregister"),
        pytest.param(lambda t: t.connection_closed("conn-b"), id="connection-closed"),
        pytest.param(lambda t: t.delete_topic("a_only"), id="delete-topic"),
        pytest.param(lambda t: t.delete_topic("shared", CLUSTER), id="delete-topic-in-cluster"),
        pytest.param(lambda t: t.wipe_write_perm("broker-a"), id="wipe"),
        pytest.param(lambda t: t.register_topic("fresh", [qd()]), id="register-topic"),
    ],
)
def test_generation_moves_when_route_visible_state_changes(op: Callable[[RouteTable], object]) -> None:
    assert _moves(op)


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(lambda t: register(t, "broker-a", MASTER_A, 0, [topic("shared"), topic("a_only", 2)],
                                        conn="conn-a"), id="heartbeat"),
        pytest.param(lambda t: register(t, "broker-a", MASTER_A, 0, [topic("shared", 99)], conn="conn-a"),
                     id="heartbeat-with-other-topics"),
        pytest.param(lambda t: register(t, "broker-a", MASTER_A, 0, [topic("shared"), topic("a_only", 2)],
                                        counter=2, conn="conn-x"), id="new-version-same-topics-new-conn"),
        pytest.param(lambda t: register(t, "broker-a", SLAVE_A, 1, [topic("zzz")], counter=7), id="slave-heartbeat"),
        pytest.param(lambda t: t.query_data_version(MASTER_A, DataVersion(1, 1_700_000_000_001)), id="query-version"),
        pytest.param(lambda t: t.heartbeat(MASTER_A), id="heartbeat-5x"),
        pytest.param(lambda t: t.add_write_perm("broker-a"), id="add-perm-already-rw"),
        pytest.param(lambda t: t.wipe_write_perm("broker-x"), id="wipe-unknown"),
        pytest.param(lambda t: t.scan_not_active(), id="scan-nothing-expired"),
        pytest.param(lambda t: t.register_topic("shared", [qd("broker-a")]), id="register-topic-same"),
    ],
)
def test_generation_stays_when_nothing_visible_changes(op: Callable[[RouteTable], object]) -> None:
    assert not _moves(op)


def test_import_state_is_all_or_nothing(table: RouteTable) -> None:
    fleet(table)
    before = table.export_state()
    broken = {**before, "live": {"1.1.1.1:1": ["not-a-number", 0, None, "x", 1]}}
    with pytest.raises(ValueError):
        table.import_state(broken)
    assert table.export_state() == before
    table.import_state(before)
    assert table.export_state() == before
