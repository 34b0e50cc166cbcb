"""Every served request code over a real socket, in both header serializations."""

from __future__ import annotations

from typing import Any

import pytest

from mqnamesrv.protocol.bodies import ClusterInfo, DataVersion, TopicList, TopicRouteData, decode_kv_table
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode, SerializeType
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import encode
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register

SERIALIZATIONS = [SerializeType.JSON, SerializeType.ROCKETMQ]


def _load(namesrv: NameServerProcess) -> Any:
    """A server holding broker-a (master + slave) and broker-b; connections kept open."""
    a = RawClient(namesrv.addr)
    b = RawClient(namesrv.addr)
    s = RawClient(namesrv.addr)
    assert a.call(register("broker-a", "127.0.0.1:10911", topics={"order_topic": 4, "a_only": 2})).code == 0
    assert s.call(register("broker-a", "127.0.0.1:10921", broker_id=1)).code == 0
    assert b.call(register("broker-b", "127.0.0.1:10915", topics={"order_topic": 4}, compressed=True)).code == 0
    client = RawClient(namesrv.addr)
    yield namesrv, client
    for c in (a, b, s, client):
        c.close()


@pytest.fixture
def loaded(namesrv: NameServerProcess) -> Any:
    yield from _load(namesrv)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One server for the code-by-code checks, whose answers do not depend on order."""
    ns = NameServerProcess(tmp_path_factory.mktemp("requests")).start()
    yield from _load(ns)
    ns.stop()


CASES: list[tuple[str, int, dict[str, str] | None, bytes, int]] = [
    ("put-kv", R.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}, b"", 0),
    ("get-kv-miss", R.GET_KV_CONFIG, {"namespace": "ns", "key": "nope"}, b"", 22),
    ("delete-kv", R.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"}, b"", 0),
    ("kvlist-miss", R.GET_KVLIST_BY_NAMESPACE, {"namespace": "none"}, b"", 22),
    ("unregister", R.UNREGISTER_BROKER,
     {"clusterName": "DefaultCluster", "brokerName": "broker-x", "brokerAddr": "1.1.1.1:1", "brokerId": "0"}, b"", 0),
    ("route", R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic"}, b"", 0),
    ("route-miss", R.GET_ROUTEINFO_BY_TOPIC, {"topic": "nope"}, b"", 17),
    ("cluster-info", R.GET_BROKER_CLUSTER_INFO, None, b"", 0),
    ("wipe", R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-b"}, b"", 0),
    ("add", R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-b"}, b"", 0),
    ("all-topics", R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None, b"", 0),
    ("delete-topic", R.DELETE_TOPIC_IN_NAMESRV, {"topic": "a_only"}, b"", 0),
    ("register-topic", R.REGISTER_TOPIC_IN_NAMESRV, {"topic": "new_t"},
     b'{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}', 0),
    ("topics-by-cluster", R.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}, b"", 0),
    ("system-topics", R.GET_SYSTEM_TOPIC_LIST_FROM_NS, None, b"", 0),
    ("unit", R.GET_UNIT_TOPIC_LIST, None, b"", 0),
    ("unit-sub", R.GET_HAS_UNIT_SUB_TOPIC_LIST, None, b"", 0),
    ("unit-sub-ununit", R.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, None, b"", 0),
    ("update-config", R.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=false\n", 0),
    ("update-config-blocked", R.UPDATE_NAMESRV_CONFIG, None, b"kvConfigPath=/etc/evil\n", 16),
    ("get-config", R.GET_NAMESRV_CONFIG, None, b"", 0),
    ("query-data-version", R.QUERY_DATA_VERSION,
     {"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "brokerId": "0"},
     b'{"counter":1,"timestamp":1700000000001}', 0),
    ("member-group", R.GET_BROKER_MEMBER_GROUP, {"clusterName": "DefaultCluster", "brokerName": "broker-a"}, b"", 0),
    ("heartbeat", R.BROKER_HEARTBEAT,
     {"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911"}, b"", 0),
    ("unknown-code", 9999, None, b"", 3),
]


@pytest.mark.parametrize("stype", SERIALIZATIONS, ids=lambda s: s.name)
@pytest.mark.parametrize("name, code, ext, body, want", CASES, ids=[c[0] for c in CASES])
def test_every_code_answers_in_the_request_serialization(
    shared: Any, stype: SerializeType, name: str, code: int, ext: dict[str, str] | None, body: bytes, want: int
) -> None:
    _, client = shared
    req = request(code, ext, body, serialize_type=stype)
    resp = client.call(req)
    assert (resp.code, resp.opaque, resp.flag, resp.serialize_type) == (want, req.opaque, 1, stype)
    assert resp.version == 409 and resp.language == "JAVA"


def test_register_answers(loaded: Any) -> None:
    ns, client = loaded
    with RawClient(ns.addr) as slave:
        resp = slave.call(register("broker-b", "127.0.0.1:10925", broker_id=1))
    assert resp.ext == {"haServerAddr": "127.0.0.1:10916", "masterAddr": "127.0.0.1:10915"}
    client.call(request(R.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "order_topic",
                                          "value": "broker-a:4;broker-b:4"}))
    with RawClient(ns.addr) as again:
        resp = again.call(register("broker-c", "127.0.0.1:10931"))
    assert resp.ext == {} and decode_kv_table(resp.body) == {"order_topic": "broker-a:4;broker-b:4"}


def test_route_and_cluster_contents(loaded: Any) -> None:
    _, client = loaded
    route = TopicRouteData.decode(client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic"})).body)
    assert sorted((q.broker_name, q.read_queue_nums, q.perm) for q in route.queue_datas) == [
        ("broker-a", 4, 6), ("broker-b", 4, 6)]
    assert {b.broker_name: dict(b.broker_addrs) for b in route.broker_datas} == {
        "broker-a": {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}, "broker-b": {0: "127.0.0.1:10915"}}
    info = ClusterInfo.decode(client.call(request(R.GET_BROKER_CLUSTER_INFO)).body)
    assert sorted(info.cluster_addr_table["DefaultCluster"]) == ["broker-a", "broker-b"]
    topics = TopicList.decode(client.call(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body).topics
    assert sorted(topics) == ["a_only", "order_topic"]


def test_route_dialect_follows_client_version(loaded: Any) -> None:
    _, client = loaded
    new = client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a_only"}, version=409)).body
    old = client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a_only"}, version=399)).body
    opted = client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a_only", "acceptStandardJsonOnly": "true"},
                                version=0)).body
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"}' in new
    assert b'"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}' in old
    assert opted == new


def test_compressed_register_and_wipe_counts(loaded: Any) -> None:
    _, client = loaded
    wiped = client.call(request(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-b"}))
    assert wiped.ext == {"wipeTopicCount": "1"}
    route = TopicRouteData.decode(client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic"})).body)
    assert {q.broker_name: q.perm for q in route.queue_datas} == {"broker-a": 6, "broker-b": 4}
    added = client.call(request(R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-b"}))
    assert added.ext == {"addTopicCount": "1"}


def test_query_data_version(loaded: Any) -> None:
    _, client = loaded
    ext = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "brokerId": "0"}
    same = client.call(request(R.QUERY_DATA_VERSION, ext, DataVersion(1, 1_700_000_000_001).encode()))
    changed = client.call(request(R.QUERY_DATA_VERSION, ext, DataVersion(2, 1_700_000_000_002).encode()))
    assert same.ext == {"changed": "false"} and changed.ext == {"changed": "true"}
    assert DataVersion.decode(changed.body) == DataVersion(1, 1_700_000_000_001)


def test_oneway_is_processed_and_not_answered(loaded: Any) -> None:
    _, client = loaded
    client.send(request(R.PUT_KV_CONFIG, {"namespace": "ow", "key": "k", "value": "v"}, oneway=True))
    resp = client.call(request(R.GET_KV_CONFIG, {"namespace": "ow", "key": "k"}))
    assert resp.code == ResponseCode.SUCCESS and resp.ext == {"value": "v"}


def test_ten_thousand_pipelined_requests_are_all_answered_by_opaque(loaded: Any) -> None:
    _, client = loaded
    reqs = [request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic" if i % 2 else "nope"}) for i in range(10_000)]
    client.send_bytes(b"".join(encode(r) for r in reqs))
    answers = {}
    for _ in reqs:
        resp = client.recv(timeout=10)
        assert resp is not None
        answers[resp.opaque] = resp.code
    assert answers == {r.opaque: (0 if i % 2 else 17) for i, r in enumerate(reqs)}


def test_unknown_ext_fields_are_ignored(loaded: Any) -> None:
    _, client = loaded
    resp = client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic", "AccessKey": "rocketmq2",
                                                          "Signature": "xyz"}))
    assert resp.code == 0
