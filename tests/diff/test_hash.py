"""content_hash(): equal exactly when route content is equal, whatever the list and map order."""

from __future__ import annotations

import hashlib
import json

from mqadmin.diff import ServerView, content_hash, summarize
from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, QueueData, TopicRouteData
from tests.diff.views import ADDRS, CLUSTER, SLAVES, bd, qd, route, view

ORDER = "order_topic"


def test_hash_is_sha256_of_documented_canonical_json() -> None:
    v = ServerView(
        "A",
        cluster_info=ClusterInfo({"broker-a": BrokerData(CLUSTER, "broker-a", {0: "h:1"})}, {CLUSTER: ("broker-a",)}),
        topic_list=("t", "gone"),
        topics={"t": TopicRouteData((QueueData("broker-a", 4, 2, 6),), (BrokerData(CLUSTER, "broker-a", {0: "h:1"}),),
                                    {"h:1": ("f",)}, "broker-a:2"),
                "gone": None},
    )
    text = (
        '{"clusterInfo":[[["broker-a","DefaultCluster",[[0,"h:1"]]]],[["DefaultCluster",["broker-a"]]]],'
        '"routes":[["gone",null],["t",[[["broker-a",6,4,2,0]],[["broker-a","DefaultCluster",[[0,"h:1"]]]],'
        '[["h:1",["f"]]],"broker-a:2"]]],'
        '"topicList":["gone","t"]}'
    )
    assert content_hash(v) == hashlib.sha256(text.encode()).hexdigest()


def test_hash_ignores_list_and_map_order() -> None:
    a = view("A", {ORDER: route("broker-a", "broker-b"), "t2": None})
    shuffled = TopicRouteData(
        queue_datas=(qd("broker-b"), qd("broker-a")),
        broker_datas=(BrokerData(CLUSTER, "broker-b", {1: SLAVES["broker-b"], 0: ADDRS["broker-b"]}), bd("broker-a")),
    )
    b = ServerView(
        "B",
        cluster_info=ClusterInfo({"broker-b": bd("broker-b"), "broker-a": bd("broker-a")},
                                 {CLUSTER: ("broker-b", "broker-a", "broker-b")}),
        topic_list=(ORDER, ORDER),
        topics={"t2": None, ORDER: shuffled},
        kv={"ns": {"k": "other"}},  # KV, config, address and latency are not route content
        config={"listenPort": "1"},
        latency_ms=99.0,
    )
    assert content_hash(a) == content_hash(b)


def test_hash_changes_with_any_route_content() -> None:
    base = content_hash(view("A", {ORDER: route("broker-a", "broker-b")}))
    changed = [
        view("A", {ORDER: route("broker-a", "broker-b", perm=4)}),
        view("A", {ORDER: route("broker-a", "broker-b", queues=8)}),
        view("A", {ORDER: route("broker-a")}, topic_list=(ORDER,)),
        view("A", {ORDER: route("broker-a", "broker-b", order_conf="broker-a:4")}),
        view("A", {ORDER: route("broker-a", "broker-b")}, brokers=("broker-a",)),
        view("A", {ORDER: route("broker-a", "broker-b")}, topic_list=(ORDER, "t2")),
        view("A", {ORDER: route("broker-a", "broker-b"), "t2": None}, topic_list=(ORDER,)),
    ]
    hashes = [content_hash(v) for v in changed]
    assert base not in hashes
    assert len(set(hashes)) == len(hashes)


def test_no_route_differs_from_not_asked_and_from_empty_route() -> None:
    asked = content_hash(ServerView("A", topics={ORDER: None}))
    not_asked = content_hash(ServerView("A"))
    empty = content_hash(ServerView("A", topics={ORDER: TopicRouteData((), ())}))
    assert len({asked, not_asked, empty}) == 3


def test_summary_of_answering_and_failed_servers() -> None:
    a = view("A", {ORDER: route("broker-a", "broker-b"), "t2": None})
    s = summarize(a)
    assert (s.addr, s.ok, s.error, s.latency_ms, s.brokers, s.topics, s.routes) == ("A", True, None, 1.5, 2, 1, 1)
    assert s.content_hash == content_hash(a)
    failed = summarize(ServerView("B", error="connect timed out", latency_ms=3000.0))
    assert failed.to_obj() == {
        "addr": "B", "ok": False, "error": "connect timed out", "latency_ms": 3000.0,
        "brokers": None, "topics": None, "routes": 0, "content_hash": None,
    }


def test_hash_of_non_ascii_names_is_utf8_json() -> None:
    v = ServerView("A", topics={"订单": TopicRouteData((QueueData("bröker", 1, 1, 6),), ())})
    doc = {"clusterInfo": None, "routes": [["订单", [[["bröker", 6, 1, 1, 0]], [], [], None]]], "topicList": None}
    text = json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert content_hash(v) == hashlib.sha256(text.encode("utf-8")).hexdigest()
