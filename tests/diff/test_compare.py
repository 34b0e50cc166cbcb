"""compare(): every difference between name-server views, grouped by topic and broker."""

from __future__ import annotations

import json

import pytest

from mqadmin.diff import PRESENT, Finding, Kind, ServerView, compare
from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, TopicRouteData
from tests.diff.views import ADDRS, CLUSTER, SLAVES, bd, qd, route, view, wiped, with_addrs

ORDER = "order_topic"


def summary(findings: list[Finding]) -> list[tuple[str, str | None, str | None, str, dict[str, str | None]]]:
    return [(f.kind, f.topic, f.broker, f.subject, dict(f.values)) for f in findings]


def test_agreeing_views_have_no_findings() -> None:
    shuffled = TopicRouteData(
        queue_datas=(qd("broker-b"), qd("broker-a")),
        broker_datas=(BrokerData(CLUSTER, "broker-b", {1: SLAVES["broker-b"], 0: ADDRS["broker-b"]}), bd("broker-a")),
    )
    a = view("A", {ORDER: route("broker-a", "broker-b"), "gone": None}, kv={"ns": {"k": "v"}}, config={"x": "1"})
    b = ServerView(
        "B",
        cluster_info=ClusterInfo({"broker-b": bd("broker-b"), "broker-a": bd("broker-a")},
                                 {CLUSTER: ("broker-b", "broker-a")}),
        topic_list=(ORDER, ORDER), topics={"gone": None, ORDER: shuffled}, kv={"ns": {"k": "v"}}, config={"x": "1"},
    )
    assert compare([a, b]) == []


def test_order_topic_broker_b_lost_on_one_server() -> None:
    a = view("A", {ORDER: route("broker-a", "broker-b")})
    b = view("B", {ORDER: route("broker-a")}, brokers=("broker-a",))
    assert summary(compare([a, b])) == [
        (Kind.CLUSTER_MEMBERS, None, None, CLUSTER, {"A": "broker-a,broker-b", "B": "broker-a"}),
        (Kind.BROKER_MISSING, None, "broker-b", "clusterInfo", {"A": PRESENT, "B": None}),
        (Kind.BROKER_MISSING, ORDER, "broker-b", "route", {"A": PRESENT, "B": None}),
    ]


def test_wiped_write_perm_on_one_server_names_that_server() -> None:
    full = route("broker-a", "broker-b")
    b = wiped("broker-b", "broker-a")
    findings = compare([view("A", {ORDER: full}), view("B", {ORDER: b}), view("C", {ORDER: full})])
    assert summary(findings) == [(Kind.PERM, ORDER, "broker-b", "perm", {"A": "6", "B": "4", "C": "6"})]
    assert findings[0].groups() == (("6", ("A", "C")), ("4", ("B",)))


def test_different_queue_counts() -> None:
    other = TopicRouteData(queue_datas=(qd("broker-a", 8, write=2),), broker_datas=(bd("broker-a"),))
    findings = compare([view("A", {ORDER: route("broker-a")}), view("B", {ORDER: other})])
    assert summary(findings) == [
        (Kind.READ_QUEUE_NUMS, ORDER, "broker-a", "readQueueNums", {"A": "4", "B": "8"}),
        (Kind.WRITE_QUEUE_NUMS, ORDER, "broker-a", "writeQueueNums", {"A": "4", "B": "2"}),
    ]


def test_missing_master_and_changed_slave_address() -> None:
    no_master = with_addrs("broker-a", {1: "10.9.9.9:10911"})
    findings = compare([view("A", {ORDER: route("broker-a")}), view("B", {ORDER: no_master})])
    assert summary(findings) == [
        (Kind.MASTER_MISSING, ORDER, "broker-a", "brokerAddrs[0]", {"A": ADDRS["broker-a"], "B": None}),
        (Kind.BROKER_ADDR, ORDER, "broker-a", "brokerAddrs[1]", {"A": SLAVES["broker-a"], "B": "10.9.9.9:10911"}),
    ]


def test_master_address_change_is_not_a_missing_master() -> None:
    moved = with_addrs("broker-a", {0: "10.9.9.9:10911", 1: SLAVES["broker-a"]})
    findings = compare([view("A", {ORDER: route("broker-a")}), view("B", {ORDER: moved})])
    assert summary(findings) == [
        (Kind.BROKER_ADDR, ORDER, "broker-a", "brokerAddrs[0]", {"A": ADDRS["broker-a"], "B": "10.9.9.9:10911"}),
    ]


def test_broker_data_without_queue_data_and_other_cluster() -> None:
    other_cluster = with_addrs("broker-a", {0: ADDRS["broker-a"], 1: SLAVES["broker-a"]}, "Other")
    odd = TopicRouteData((), other_cluster.broker_datas)
    findings = compare([view("A", {ORDER: route("broker-a")}), view("B", {ORDER: odd})])
    assert summary(findings) == [
        (Kind.PERM, ORDER, "broker-a", "perm", {"A": "6", "B": None}),
        (Kind.READ_QUEUE_NUMS, ORDER, "broker-a", "readQueueNums", {"A": "4", "B": None}),
        (Kind.WRITE_QUEUE_NUMS, ORDER, "broker-a", "writeQueueNums", {"A": "4", "B": None}),
        (Kind.TOPIC_SYS_FLAG, ORDER, "broker-a", "topicSysFlag", {"A": "0", "B": None}),
        (Kind.BROKER_CLUSTER, ORDER, "broker-a", "cluster", {"A": CLUSTER, "B": "Other"}),
    ]


def test_route_missing_on_one_server_and_topic_list() -> None:
    a = view("A", {ORDER: route("broker-a")})
    b = view("B", {ORDER: None})
    assert summary(compare([a, b])) == [
        (Kind.TOPIC_LIST_MISSING, ORDER, None, "topicList", {"A": PRESENT, "B": None}),
        (Kind.ROUTE_MISSING, ORDER, None, "route", {"A": PRESENT, "B": None}),
    ]


def test_unasked_topic_namespace_and_failed_parts_are_left_out() -> None:
    a = view("A", {ORDER: route("broker-a"), "t2": route("broker-b")}, kv={"ns": {"k": "1"}}, config={"x": "1"})
    b = ServerView("B", topics={ORDER: route("broker-a")})  # no cluster info, topic list, kv or config answers
    c = ServerView("C", error="connect timed out", topics={ORDER: None})
    assert compare([a, b, c]) == []


def test_order_topic_conf_and_filter_servers() -> None:
    r1 = TopicRouteData((qd("broker-a"),), (bd("broker-a"),), {ADDRS["broker-a"]: ("f1", "f2")}, "broker-a:4")
    r2 = TopicRouteData((qd("broker-a"),), (bd("broker-a"),), {ADDRS["broker-a"]: ("f2",)}, None)
    assert summary(compare([view("A", {ORDER: r1}), view("B", {ORDER: r2})])) == [
        (Kind.ORDER_TOPIC_CONF, ORDER, None, "orderTopicConf", {"A": "broker-a:4", "B": None}),
        (Kind.FILTER_SERVERS, ORDER, None, ADDRS["broker-a"], {"A": "f1,f2", "B": "f2"}),
    ]


def test_kv_differences_order_topic_config_carries_the_topic() -> None:
    a = view("A", {}, kv={"ORDER_TOPIC_CONFIG": {ORDER: "broker-a:4;broker-b:4"}, "ns": {"k": "1", "same": "x"}})
    b = view("B", {}, kv={"ORDER_TOPIC_CONFIG": {ORDER: "broker-a:4"}, "ns": {"same": "x"}, "only-b": {"k": "v"}})
    assert summary(compare([a, b])) == [
        (Kind.KV_VALUE, None, None, "ns/k", {"A": "1", "B": None}),
        (Kind.KV_VALUE, ORDER, None, f"ORDER_TOPIC_CONFIG/{ORDER}", {"A": "broker-a:4;broker-b:4", "B": "broker-a:4"}),
    ]


def test_config_differences_with_ignored_keys() -> None:
    a = view("A", {}, config={"listenPort": "9876", "orderMessageEnable": "true"})
    b = view("B", {}, config={"listenPort": "9877", "orderMessageEnable": "false"})
    assert summary(compare([a, b], ignore_config={"listenPort"})) == [
        (Kind.CONFIG_VALUE, None, None, "orderMessageEnable", {"A": "true", "B": "false"}),
    ]
    assert len(compare([a, b])) == 2


def test_cluster_info_differences() -> None:
    a = ServerView("A", cluster_info=ClusterInfo({"broker-a": bd("broker-a"), "broker-b": bd("broker-b")},
                                                 {CLUSTER: ("broker-a", "broker-b")}))
    b = ServerView(
        "B", cluster_info=ClusterInfo({"broker-a": bd("broker-a", 0)}, {CLUSTER: ("broker-a",), "Other": ()}),
    )
    assert summary(compare([a, b])) == [
        (Kind.CLUSTER_MEMBERS, None, None, CLUSTER, {"A": "broker-a,broker-b", "B": "broker-a"}),
        (Kind.CLUSTER_MEMBERS, None, None, "Other", {"A": None, "B": ""}),
        (Kind.BROKER_ADDR, None, "broker-a", "brokerAddrs[1]", {"A": SLAVES["broker-a"], "B": None}),
        (Kind.BROKER_MISSING, None, "broker-b", "clusterInfo", {"A": PRESENT, "B": None}),
    ]


def test_findings_are_grouped_by_topic_then_broker() -> None:
    a = view("A", {"t2": route("broker-a", "broker-b"), "t1": route("broker-a", "broker-b")},
             kv={"ORDER_TOPIC_CONFIG": {"t2": "x"}})
    b = view("B", {"t2": route("broker-a", perm=4), "t1": route("broker-a", "broker-b", queues=2)},
             kv={"ORDER_TOPIC_CONFIG": {}})
    assert [(f.topic, f.broker, f.kind) for f in compare([a, b])] == [
        ("t1", "broker-a", Kind.READ_QUEUE_NUMS), ("t1", "broker-a", Kind.WRITE_QUEUE_NUMS),
        ("t1", "broker-b", Kind.READ_QUEUE_NUMS), ("t1", "broker-b", Kind.WRITE_QUEUE_NUMS),
        ("t2", None, Kind.KV_VALUE),
        ("t2", "broker-a", Kind.PERM),
        ("t2", "broker-b", Kind.BROKER_MISSING),
    ]


def test_finding_json_schema() -> None:
    f = Finding(Kind.PERM, ORDER, "broker-b", "perm", (("A", "6"), ("B", "4"), ("C", "6")))
    obj = f.to_obj()
    assert json.loads(json.dumps(obj)) == obj
    assert obj == {
        "kind": "perm", "topic": ORDER, "broker": "broker-b", "subject": "perm",
        "values": {"A": "6", "B": "4", "C": "6"},
        "groups": [{"value": "6", "servers": ["A", "C"]}, {"value": "4", "servers": ["B"]}],
    }


def test_duplicate_server_is_an_error() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        compare([view("A", {}), view("A", {})])


def test_single_answering_server_has_nothing_to_compare() -> None:
    assert compare([view("A", {ORDER: route("broker-a")}), ServerView("B", error="refused")]) == []
    assert compare([]) == []

