"""Processor.handle: every served request code, without sockets (spec 2.4, 3, 4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping

import pytest

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode, SerializeType
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.registry.clock import ManualClock
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.kv import KVStore
from mqnamesrv.registry.routes import RouteTable
from mqnamesrv.server.dispatch import Processor
from tests.registry.builders import (
    CLUSTER, MASTER_A, MASTER_B, SLAVE_A, TS, broker_ext, dv, ha_of, register_cmd, topic,
)

ORDER = "ORDER_TOPIC_CONFIG"
FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."

ROUTE_STANDARD = (
    b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
    b'"filterServerTable":{},'
    b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
ROUTE_DEFAULT = ROUTE_STANDARD.replace(b'{"0":', b"{0:")


def refuse(data: object) -> None:
    raise OSError(28, "No space left on device")


@dataclass
class Harness:
    """A processor over fresh state, recording what its persist callbacks were given."""

    persist_kv: Callable[[bytes], None] | None = None
    persist_config: Callable[[str], None] | None = None
    clock: ManualClock = field(default_factory=ManualClock)
    kv: KVStore = field(default_factory=KVStore)
    config: NamesrvConfig = field(default_factory=NamesrvConfig)
    saved_kv: list[bytes] = field(default_factory=list)
    saved_config: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.routes = RouteTable(clock=self.clock)
        self.processor = Processor(
            self.routes, self.kv, self.config,
            persist_kv=self.persist_kv or self.saved_kv.append,
            persist_config=self.persist_config or self.saved_config.append,
        )

    def handle(self, cmd: RemotingCommand, conn: Hashable = "client") -> RemotingCommand | None:
        return self.processor.handle(cmd, conn)

    def send(self, cmd: RemotingCommand, conn: Hashable = "client") -> RemotingCommand:
        response = self.processor.handle(cmd, conn)
        assert response is not None
        return response

    def call(
        self, code: int, ext: Mapping[str, str] | None = None, body: bytes = b"", *,
        version: int = 409, conn: Hashable = "client",
    ) -> RemotingCommand:
        return self.send(request(code, ext, body, version=version), conn)

    def ok(self, code: int, ext: Mapping[str, str] | None = None, body: bytes = b"", **kw: object) -> RemotingCommand:
        response = self.call(code, ext, body, **kw)  # type: ignore[arg-type]
        assert (response.code, response.remark) == (ResponseCode.SUCCESS, None)
        return response

    def route(self, topic_name: str = "order_topic", version: int = 409) -> bytes:
        return self.ok(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic_name}, version=version).body


@pytest.fixture
def h() -> Harness:
    return Harness()


@pytest.fixture
def loaded(h: Harness) -> Harness:
    """broker-a master on conn-a (order_topic, a_only), its slave on conn-s, broker-b master on conn-b."""
    assert h.send(register_cmd("broker-a", MASTER_A, 0, {"order_topic": 4, "a_only": 2}), "conn-a").code == 0
    assert h.send(register_cmd("broker-a", SLAVE_A, 1, {}), "conn-s").code == 0
    assert h.send(register_cmd("broker-b", MASTER_B, 0, {"order_topic": 4}), "conn-b").code == 0
    return h


# ------------------------------------------------------------------ envelope ----


def test_every_name_server_code_has_a_handler(h: Harness) -> None:
    assert sorted(h.processor.handlers) == [
        100, 101, 102, 103, 104, 105, 106, 205, 206, 216, 217, 219, 224, 304, 311, 312, 313, 318, 319, 322,
        327, 901, 904,
    ]


def test_response_envelope(h: Harness) -> None:
    cmd = request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None, version=399, language="GO", opaque=4242,
                  serialize_type=SerializeType.ROCKETMQ)
    response = h.send(cmd)
    assert response == RemotingCommand(
        code=0, language="JAVA", version=409, opaque=4242, flag=1, remark=None, ext=None,
        body=b'{"topicList":[]}', serialize_type=SerializeType.ROCKETMQ,
    )


def test_unknown_code_is_not_supported(h: Harness) -> None:
    response = h.call(9999, {"x": "y"})
    assert (response.code, response.remark, response.ext, response.body) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 9999 not supported", None, b"",
    )


def test_oneway_request_is_processed_without_a_response(h: Harness) -> None:
    assert h.handle(request(R.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}, oneway=True)) is None
    assert h.kv.get("ns", "k") == "v"
    assert h.handle(register_cmd(oneway=True), "conn-a") is None
    assert list(h.routes.cluster_info().broker_addr_table) == ["broker-a"]


def test_oneway_errors_and_unknown_codes_get_no_response(h: Harness) -> None:
    assert h.handle(request(9999, None, oneway=True)) is None
    assert h.handle(request(R.DELETE_KV_CONFIG, {}, oneway=True)) is None


def test_command_with_the_response_flag_is_ignored(h: Harness) -> None:
    cmd = request(R.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
    stray = RemotingCommand(code=cmd.code, opaque=cmd.opaque, flag=1, ext=cmd.ext)
    assert h.handle(stray) is None
    assert h.kv.table == {}
    assert h.saved_kv == []


# ---------------------------------------------------------- required fields ----

_BROKER = broker_ext("broker-a", MASTER_A, 0)
_DV_BODY = b'{"counter":1,"timestamp":1700000000001}'
_KV = {"namespace": "ns", "key": "k", "value": "v"}


def _req(code: int, ext: dict[str, str], missing: str, body: bytes = b"") -> object:
    return pytest.param(code, ext, missing, body, id=f"{int(code)}-{missing}")


REQUIRED = [
    *[_req(R.PUT_KV_CONFIG, _KV, key) for key in ("namespace", "key", "value")],
    *[_req(R.DELETE_KV_CONFIG, _KV, key) for key in ("namespace", "key")],
    *[_req(R.REGISTER_BROKER, {**_BROKER, "haServerAddr": "x:1"}, key)
      for key in ("clusterName", "brokerName", "brokerAddr", "brokerId", "haServerAddr")],
    *[_req(R.UNREGISTER_BROKER, _BROKER, key) for key in ("clusterName", "brokerName", "brokerAddr", "brokerId")],
    _req(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, "brokerName"),
    _req(R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, "brokerName"),
    _req(R.DELETE_TOPIC_IN_NAMESRV, {"topic": "t", "clusterName": CLUSTER}, "topic"),
    _req(R.REGISTER_TOPIC_IN_NAMESRV, {"topic": "t"}, "topic"),
    _req(R.GET_TOPICS_BY_CLUSTER, {"cluster": CLUSTER}, "cluster"),
    _req(R.QUERY_DATA_VERSION, _BROKER, "brokerAddr", _DV_BODY),
    *[_req(R.GET_BROKER_MEMBER_GROUP, {"clusterName": CLUSTER, "brokerName": "broker-a"}, key)
      for key in ("clusterName", "brokerName")],
    _req(R.BROKER_HEARTBEAT, _BROKER, "brokerAddr"),
]


@pytest.mark.parametrize(
    "code, key, remark",
    [(R.GET_KV_CONFIG, "namespace", "No config item, Namespace: null Key: k"),
     (R.GET_KV_CONFIG, "key", "No config item, Namespace: ns Key: null"),
     (R.GET_KVLIST_BY_NAMESPACE, "namespace", "No config item, Namespace: null")],
)
def test_reads_look_up_an_absent_key_as_null_like_4_9_8(h: Harness, code: int, key: str, remark: str) -> None:
    """4.9.8 does not enforce required fields of reads (golden 44/45): it looks up "null"."""
    response = h.call(code, {k: v for k, v in _KV.items() if k != key})
    assert (response.code, response.remark) == (ResponseCode.QUERY_NOT_FOUND, remark)


def test_route_with_ext_but_no_topic_is_topic_null_like_golden_45(h: Harness) -> None:
    response = h.call(R.GET_ROUTEINFO_BY_TOPIC, {"acceptStandardJsonOnly": "true"})
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert (response.remark or "").startswith("No topic route info in name server for the topic: null\n")


@pytest.mark.parametrize("code, ext, missing, body", REQUIRED)
def test_missing_required_field_is_a_system_error_naming_it(
    h: Harness, code: int, ext: dict[str, str], missing: str, body: bytes
) -> None:
    ext = {k: v for k, v in ext.items() if k != missing}
    response = h.call(code, ext, body)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert missing in (response.remark or "")
    assert (h.kv.table, h.routes.all_topics(), h.routes.cluster_info().broker_addr_table) == ({}, [], {})


@pytest.mark.parametrize("code", [R.REGISTER_BROKER, R.UNREGISTER_BROKER])
def test_broker_id_that_is_not_a_number(h: Harness, code: int) -> None:
    response = h.call(code, {**broker_ext("broker-a", MASTER_A, 0), "brokerId": "zero", "haServerAddr": "x:1"})
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "brokerId" in (response.remark or "")


# ------------------------------------------------------------------------ KV ----


def test_put_get_kv(h: Harness) -> None:
    put = h.ok(R.PUT_KV_CONFIG, {"namespace": ORDER, "key": "order_topic", "value": "broker-a:4;broker-b:4"})
    assert (put.ext, put.body) == (None, b"")
    assert h.saved_kv == [b'{"configTable":{"ORDER_TOPIC_CONFIG":{"order_topic":"broker-a:4;broker-b:4"}}}']

    got = h.ok(R.GET_KV_CONFIG, {"namespace": ORDER, "key": "order_topic"})
    assert (got.ext, got.body) == ({"value": "broker-a:4;broker-b:4"}, b"")


def test_get_kv_miss(h: Harness) -> None:
    response = h.call(R.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
    assert (response.code, response.remark, response.ext) == (
        ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: ns Key: k", {},
    )


def test_put_kv_without_ext_at_all(h: Harness) -> None:
    response = h.call(R.PUT_KV_CONFIG, None)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "namespace or key is null")
    assert h.saved_kv == []


def test_get_kv_without_ext_at_all_looks_up_null(h: Harness) -> None:
    response = h.call(R.GET_KV_CONFIG, None)
    assert (response.code, response.remark) == (
        ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: null Key: null",
    )


def test_kvlist_without_ext_at_all_looks_up_null(h: Harness) -> None:
    response = h.call(R.GET_KVLIST_BY_NAMESPACE, None)
    assert (response.code, response.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: null")


def test_delete_kv_keeps_the_namespace_and_always_rewrites(h: Harness) -> None:
    h.ok(R.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
    h.ok(R.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"})
    h.ok(R.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"})
    h.ok(R.DELETE_KV_CONFIG, {"namespace": "other", "key": "k"})
    assert h.saved_kv == [b'{"configTable":{"ns":{"k":"v"}}}'] + [b'{"configTable":{"ns":{}}}'] * 3

    assert h.call(R.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}).code == ResponseCode.QUERY_NOT_FOUND
    assert h.ok(R.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"}).body == b'{"table":{}}'


def test_kvlist_by_namespace(h: Harness) -> None:
    h.ok(R.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
    assert h.ok(R.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"}).body == b'{"table":{"k":"v"}}'
    miss = h.call(R.GET_KVLIST_BY_NAMESPACE, {"namespace": "none"})
    assert (miss.code, miss.remark, miss.body) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: none", b"")


def test_failed_kv_save_of_a_new_key_is_rolled_back() -> None:
    h = Harness(persist_kv=refuse)
    response = h.call(R.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "No space left on device" in (response.remark or "")
    assert h.call(R.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}).code == ResponseCode.QUERY_NOT_FOUND
    assert h.call(R.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"}).code == ResponseCode.QUERY_NOT_FOUND
    assert h.kv.table == {}


def test_failed_kv_save_of_an_overwrite_keeps_the_old_value() -> None:
    h = Harness(persist_kv=refuse)
    h.kv.put("ns", "k", "old")
    h.kv.put("ns", "other", "x")
    assert h.call(R.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "new"}).code == ResponseCode.SYSTEM_ERROR
    assert h.call(R.PUT_KV_CONFIG, {"namespace": "ns", "key": "k2", "value": "new"}).code == ResponseCode.SYSTEM_ERROR
    assert h.kv.table == {"ns": {"k": "old", "other": "x"}}
    assert h.ok(R.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}).ext == {"value": "old"}


def test_failed_kv_save_of_a_delete_keeps_the_value() -> None:
    h = Harness(persist_kv=refuse)
    h.kv.put("ns", "k", "v")
    assert h.call(R.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"}).code == ResponseCode.SYSTEM_ERROR
    assert h.ok(R.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}).ext == {"value": "v"}


# ------------------------------------------------------------------ register ----


def test_register_master_reply(h: Harness) -> None:
    response = h.send(register_cmd("broker-a", MASTER_A, 0), "conn-a")
    assert (response.code, response.remark, response.ext, response.body) == (0, None, {}, b"")
    assert h.route() == ROUTE_STANDARD


def test_register_slave_reply_names_its_master(loaded: Harness) -> None:
    response = loaded.send(register_cmd("broker-a", SLAVE_A, 1, {}), "conn-s")
    assert (response.code, response.ext) == (0, {"haServerAddr": ha_of(MASTER_A), "masterAddr": MASTER_A})


def test_register_slave_without_master_reply(h: Harness) -> None:
    assert h.send(register_cmd("broker-a", SLAVE_A, 1, {})).ext == {}


def test_register_reply_carries_the_order_topic_table(h: Harness) -> None:
    h.ok(R.PUT_KV_CONFIG, {"namespace": ORDER, "key": "order_topic", "value": "broker-a:4;broker-b:4"})
    h.ok(R.PUT_KV_CONFIG, {"namespace": "other", "key": "k", "value": "v"})
    response = h.send(register_cmd())
    assert (response.ext, response.body) == ({}, b'{"table":{"order_topic":"broker-a:4;broker-b:4"}}')

    h.ok(R.DELETE_KV_CONFIG, {"namespace": ORDER, "key": "order_topic"})
    assert h.send(register_cmd()).body == b'{"table":{}}'  # the emptied namespace still exists


def test_register_reply_without_order_topic_table_when_disabled(h: Harness) -> None:
    h.kv.put(ORDER, "order_topic", "broker-a:4")
    h.config.set("returnOrderTopicConfigToBroker", False)
    assert h.send(register_cmd()).body == b""


def test_register_crc_mismatch_registers_nothing(h: Harness) -> None:
    cmd = register_cmd(crc=12345)
    response = h.send(cmd)
    assert (response.code, response.remark, response.ext) == (ResponseCode.SYSTEM_ERROR, "crc32 not match", {})
    info = h.routes.cluster_info()
    assert (info.broker_addr_table, info.cluster_addr_table, h.routes.all_topics()) == ({}, {}, [])
    assert h.routes.broker_live_table == {}


def test_register_crc_zero_is_not_checked(h: Harness) -> None:
    assert h.send(register_cmd(crc=0)).code == 0
    assert h.routes.all_topics() == ["order_topic"]


def test_register_compressed_body(h: Harness) -> None:
    assert h.send(register_cmd(topics={"order_topic": 4, "c2": 2}, compressed=True)).code == 0
    assert h.routes.all_topics() == ["order_topic", "c2"]
    assert h.route() == ROUTE_STANDARD


def test_register_old_broker_sends_a_bare_wrapper(h: Harness) -> None:
    body = (
        b'{"dataVersion":{"counter":3,"timestamp":1700000000003},"topicConfigTable":{"old_topic":{"order":false,'
        b'"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"old_topic","topicSysFlag":0,'
        b'"writeQueueNums":4}}}'
    )
    assert h.send(register_cmd(body=body, version=36)).code == 0
    assert h.routes.all_topics() == ["old_topic"]
    assert h.routes.broker_live_table[MASTER_A].data_version == DataVersion(3, 1_700_000_000_003)


def test_register_version_0_body_is_a_bare_wrapper_too(h: Harness) -> None:
    wrapped = register_cmd(topics={"t": 1}).body
    assert h.send(register_cmd(body=wrapped, version=0)).code == 0
    assert h.routes.all_topics() == []  # the RegisterBrokerBody keys mean nothing to a wrapper reader


def test_register_without_body_is_zero_topics_at_version_zero(h: Harness) -> None:
    assert h.send(register_cmd(body=b"")).code == 0
    assert h.routes.all_topics() == []
    assert h.routes.broker_live_table[MASTER_A].data_version == DataVersion(0, 0)
    assert list(h.routes.cluster_info().broker_addr_table) == ["broker-a"]


def test_register_undecodable_body_registers_nothing(h: Harness) -> None:
    response = h.send(register_cmd(body=b"{not json"))
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert h.routes.cluster_info().broker_addr_table == {}


def test_register_filter_servers_reach_the_route(h: Harness) -> None:
    h.send(register_cmd(filters=["10.0.0.1:3000"]))
    assert h.route() == ROUTE_STANDARD.replace(
        b'"filterServerTable":{}', b'"filterServerTable":{"10.0.0.1:10911":["10.0.0.1:3000"]}')


def test_register_heartbeat_timeout(h: Harness) -> None:
    h.send(register_cmd(extra_ext={"heartbeatTimeoutMillis": "10000"}))
    h.send(register_cmd("broker-b", MASTER_B, 0))
    assert h.routes.broker_live_table[MASTER_A].timeout_ms == 10_000
    assert h.routes.broker_live_table[MASTER_B].timeout_ms == 120_000

    h.clock.advance(10_001)
    assert [r.broker_addr for r in h.routes.scan_not_active()] == [MASTER_A]


def test_register_remembers_the_connection(loaded: Harness) -> None:
    removals = loaded.routes.connection_closed("conn-a")
    assert [r.broker_addr for r in removals] == [MASTER_A]


# ---------------------------------------------------------------- unregister ----


def test_unregister(loaded: Harness) -> None:
    response = loaded.ok(R.UNREGISTER_BROKER, broker_ext("broker-a", SLAVE_A, 1))
    assert (response.ext, response.body) == (None, b"")
    assert loaded.routes.broker_member_group(CLUSTER, "broker-a").broker_addrs == {0: MASTER_A}

    loaded.ok(R.UNREGISTER_BROKER, broker_ext("broker-a", MASTER_A, 0))
    assert list(loaded.routes.cluster_info().broker_addr_table) == ["broker-b"]
    assert loaded.routes.all_topics() == ["order_topic"]

    loaded.ok(R.UNREGISTER_BROKER, broker_ext("broker-x", "192.0.2.1:1", 0))  # nothing matched: still SUCCESS


# ------------------------------------------------------------ data version ----


def test_query_data_version(loaded: Harness) -> None:
    ext = broker_ext("broker-a", MASTER_A, 0)
    same = loaded.ok(R.QUERY_DATA_VERSION, ext, dv(1).encode())
    assert (same.ext, same.body) == ({"changed": "false"}, b'{"counter":1,"timestamp":1700000000001}')

    changed = loaded.ok(R.QUERY_DATA_VERSION, ext, dv(2).encode())
    assert (changed.ext, changed.body) == ({"changed": "true"}, b'{"counter":1,"timestamp":1700000000001}')

    unknown = loaded.ok(R.QUERY_DATA_VERSION, broker_ext("broker-x", "192.0.2.1:1", 0), dv(1).encode())
    assert (unknown.ext, unknown.body) == ({"changed": "true"}, b"")


def test_query_data_version_refreshes_only_when_unchanged(loaded: Harness) -> None:
    ext = broker_ext("broker-a", MASTER_A, 0)
    loaded.clock.advance(100_000)
    loaded.ok(R.QUERY_DATA_VERSION, ext, dv(2).encode())
    assert loaded.routes.broker_live_table[MASTER_A].last_update_ms == TS
    loaded.ok(R.QUERY_DATA_VERSION, ext, dv(1).encode())
    assert loaded.routes.broker_live_table[MASTER_A].last_update_ms == TS + 100_000


def test_query_data_version_without_body(loaded: Harness) -> None:
    response = loaded.call(R.QUERY_DATA_VERSION, broker_ext("broker-a", MASTER_A, 0))
    assert response.code == ResponseCode.SYSTEM_ERROR


def test_broker_heartbeat(loaded: Harness) -> None:
    loaded.clock.advance(100_000)
    ext = {"clusterName": CLUSTER, "brokerName": "broker-a", "brokerAddr": MASTER_A}
    assert loaded.handle(request(R.BROKER_HEARTBEAT, ext, oneway=True)) is None
    assert loaded.routes.broker_live_table[MASTER_A].last_update_ms == TS + 100_000
    assert loaded.ok(R.BROKER_HEARTBEAT, {**ext, "brokerAddr": "192.0.2.1:1"}).body == b""


# ---------------------------------------------------------------------- routes ----


@pytest.mark.parametrize(
    "version, accept, expected",
    [
        pytest.param(409, None, ROUTE_STANDARD, id="v409"),
        pytest.param(401, None, ROUTE_STANDARD, id="v401"),
        pytest.param(400, None, ROUTE_DEFAULT, id="v400"),
        pytest.param(399, None, ROUTE_DEFAULT, id="old-client"),
        pytest.param(0, "true", ROUTE_STANDARD, id="v0-accept-standard"),
        pytest.param(0, "TRUE", ROUTE_STANDARD, id="v0-accept-standard-upper"),
        pytest.param(0, "false", ROUTE_DEFAULT, id="v0-no-accept"),
        pytest.param(399, "true", ROUTE_STANDARD, id="old-client-accept-standard"),
    ],
)
def test_route_dialect(h: Harness, version: int, accept: str | None, expected: bytes) -> None:
    h.send(register_cmd())
    ext = {"topic": "order_topic"} if accept is None else {"topic": "order_topic", "acceptStandardJsonOnly": accept}
    assert h.ok(R.GET_ROUTEINFO_BY_TOPIC, ext, version=version).body == expected


def test_route_miss(loaded: Harness) -> None:
    response = loaded.call(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "nope"})
    assert (response.code, response.remark, response.ext, response.body) == (
        ResponseCode.TOPIC_NOT_EXIST, "No topic route info in name server for the topic: nope" + FAQ, None, b"",
    )


def test_route_without_ext_looks_up_null(loaded: Harness) -> None:
    response = loaded.call(R.GET_ROUTEINFO_BY_TOPIC, None)
    assert (response.code, response.remark) == (
        ResponseCode.TOPIC_NOT_EXIST, "No topic route info in name server for the topic: null" + FAQ,
    )


def test_route_order_topic_conf_only_with_order_message_enable(h: Harness) -> None:
    h.send(register_cmd())
    h.ok(R.PUT_KV_CONFIG, {"namespace": ORDER, "key": "order_topic", "value": "broker-a:4"})
    assert h.route() == ROUTE_STANDARD

    h.ok(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
    with_conf = ROUTE_STANDARD.replace(b',"queueDatas"', b',"orderTopicConf":"broker-a:4","queueDatas"')
    assert h.route() == with_conf
    assert h.route(version=399) == with_conf.replace(b'{"0":', b"{0:")

    h.ok(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=false\n")
    assert h.route() == ROUTE_STANDARD


def test_route_of_a_topic_without_order_conf_has_none(h: Harness) -> None:
    h.config.set("orderMessageEnable", True)
    h.send(register_cmd())
    h.kv.put(ORDER, "other_topic", "broker-a:4")
    assert h.route() == ROUTE_STANDARD


def test_route_cache_serves_repeats_and_survives_heartbeats(h: Harness) -> None:
    h.send(register_cmd(), "conn-a")
    first = h.route()
    hits = h.processor.route_cache_hits
    h.send(register_cmd(), "conn-a")  # heartbeat: same DataVersion
    h.clock.advance(30_000)
    h.send(register_cmd(), "conn-a")
    assert h.route() == first
    assert h.processor.route_cache_hits == hits + 1


def test_topics_with_the_same_queues_share_one_cached_body(h: Harness) -> None:
    h.send(register_cmd(topics={"order_topic": 4, "twin": 4, "other": 2}))
    first = h.route("order_topic")
    hits = h.processor.route_cache_hits
    assert h.route("twin") == first  # a route body does not name its topic
    assert h.processor.route_cache_hits == hits + 1
    assert h.route("other") == first.replace(b"QueueNums\":4", b"QueueNums\":2")
    assert h.processor.route_cache_hits == hits + 1
    # one of the twins changes: the other keeps its route
    h.send(register_cmd(topics={"order_topic": 4, "twin": 8, "other": 2}, counter=2))
    assert h.route("order_topic") == first
    assert h.route("twin") == first.replace(b"QueueNums\":4", b"QueueNums\":8")


def test_twins_with_different_order_confs_get_their_own(h: Harness) -> None:
    h.config.set("orderMessageEnable", True)
    h.send(register_cmd(topics={"order_topic": 4, "twin": 4}))
    h.kv.put(ORDER, "twin", "broker-a:4")
    assert h.route("order_topic") == ROUTE_STANDARD
    assert h.route("twin") == ROUTE_STANDARD.replace(b',"queueDatas"', b',"orderTopicConf":"broker-a:4","queueDatas"')


def test_route_cache_dropped_after_wipe_and_add_perm(h: Harness) -> None:
    h.send(register_cmd())
    assert h.route() == ROUTE_STANDARD
    h.ok(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert h.route() == ROUTE_STANDARD.replace(b'"perm":6', b'"perm":4')
    h.ok(R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert h.route() == ROUTE_STANDARD


def test_route_cache_dropped_after_register_with_new_data_version(h: Harness) -> None:
    h.send(register_cmd(topics={"order_topic": 4}, counter=1))
    assert h.route() == ROUTE_STANDARD
    h.send(register_cmd(topics={"order_topic": 8}, counter=1))
    assert h.route() == ROUTE_STANDARD
    h.send(register_cmd(topics={"order_topic": 8}, counter=2))
    assert h.route() == ROUTE_STANDARD.replace(b'"readQueueNums":4', b'"readQueueNums":8').replace(
        b'"writeQueueNums":4', b'"writeQueueNums":8')


def test_route_cache_dropped_after_delete_topic(h: Harness) -> None:
    h.send(register_cmd())
    assert h.route() == ROUTE_STANDARD
    h.ok(R.DELETE_TOPIC_IN_NAMESRV, {"topic": "order_topic"})
    assert h.call(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic"}).code == ResponseCode.TOPIC_NOT_EXIST


def test_route_cache_dropped_after_slave_joins_and_connection_closes(h: Harness) -> None:
    h.send(register_cmd(), "conn-a")
    assert h.route() == ROUTE_STANDARD
    h.send(register_cmd("broker-a", SLAVE_A, 1, {}), "conn-s")
    assert h.route() == ROUTE_STANDARD.replace(b'"0":"10.0.0.1:10911"', b'"0":"10.0.0.1:10911","1":"10.0.0.2:10911"')
    h.routes.connection_closed("conn-s")
    assert h.route() == ROUTE_STANDARD


def test_route_cache_follows_order_topic_config_changes(h: Harness) -> None:
    h.config.set("orderMessageEnable", True)
    h.send(register_cmd())
    assert h.route() == ROUTE_STANDARD
    for value in ("broker-a:4", "broker-a:2"):
        h.ok(R.PUT_KV_CONFIG, {"namespace": ORDER, "key": "order_topic", "value": value})
        assert h.route() == ROUTE_STANDARD.replace(
            b',"queueDatas"', b',"orderTopicConf":"' + value.encode() + b'","queueDatas"')
    h.ok(R.DELETE_KV_CONFIG, {"namespace": ORDER, "key": "order_topic"})
    assert h.route() == ROUTE_STANDARD


# ------------------------------------------------------------ cluster, perms ----


def test_cluster_info_is_always_fastjson_default_dialect(h: Harness) -> None:
    h.send(register_cmd("broker-a", MASTER_A, 0))
    h.send(register_cmd("broker-a", SLAVE_A, 1))
    expected = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    assert h.ok(R.GET_BROKER_CLUSTER_INFO).body == expected
    assert h.ok(R.GET_BROKER_CLUSTER_INFO, {"acceptStandardJsonOnly": "true"}, version=479).body == expected


def test_cluster_info_of_empty_server(h: Harness) -> None:
    assert h.ok(R.GET_BROKER_CLUSTER_INFO).body == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'


def test_wipe_and_add_write_perm_counts(loaded: Harness) -> None:
    wipe = loaded.ok(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert (wipe.ext, wipe.body) == ({"wipeTopicCount": "2"}, b"")
    assert loaded.ok(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}).ext == {"wipeTopicCount": "2"}
    assert loaded.routes.topic_queue_table["order_topic"]["broker-b"].perm == 6

    add = loaded.ok(R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert (add.ext, add.body) == ({"addTopicCount": "2"}, b"")
    assert loaded.ok(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "nope"}).ext == {"wipeTopicCount": "0"}
    assert loaded.ok(R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "nope"}).ext == {"addTopicCount": "0"}


# --------------------------------------------------------------- topic lists ----


def test_all_topic_list(loaded: Harness) -> None:
    assert loaded.ok(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body == b'{"topicList":["order_topic","a_only"]}'


def test_topics_by_cluster(loaded: Harness) -> None:
    loaded.send(register_cmd("broker-c", "10.0.0.9:10911", 0, {"c_only": 1}, cluster="other"))
    assert loaded.ok(R.GET_TOPICS_BY_CLUSTER, {"cluster": CLUSTER}).body == b'{"topicList":["order_topic","a_only"]}'
    assert loaded.ok(R.GET_TOPICS_BY_CLUSTER, {"cluster": "other"}).body == b'{"topicList":["c_only"]}'
    assert loaded.ok(R.GET_TOPICS_BY_CLUSTER, {"cluster": "nope"}).body == b'{"topicList":[]}'


def test_system_topic_list(loaded: Harness) -> None:
    # Java HashSet/HashMap order, as in golden 13-system-topic-list.
    assert loaded.ok(R.GET_SYSTEM_TOPIC_LIST_FROM_NS).body == (
        b'{"brokerAddr":"10.0.0.3:10911","topicList":["broker-b","broker-a","DefaultCluster"]}'
    )


def test_system_topic_list_of_empty_server(h: Harness) -> None:
    assert h.ok(R.GET_SYSTEM_TOPIC_LIST_FROM_NS).body == b'{"topicList":[]}'


def test_unit_topic_lists(h: Harness) -> None:
    reg = RegisterBrokerBody(dv(1), {t.topic_name: t for t in [
        topic("plain"), topic("unit", sys_flag=1), topic("unit_sub", sys_flag=2), topic("both", sys_flag=3),
    ]})
    h.send(register_cmd(body=reg.encode()))
    assert h.ok(R.GET_UNIT_TOPIC_LIST).body == b'{"topicList":["unit","both"]}'
    assert h.ok(R.GET_HAS_UNIT_SUB_TOPIC_LIST).body == b'{"topicList":["unit_sub","both"]}'
    assert h.ok(R.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST).body == b'{"topicList":["unit_sub"]}'


# -------------------------------------------------------------- topic writes ----


def test_delete_topic_everywhere_or_in_one_cluster(loaded: Harness) -> None:
    loaded.send(register_cmd("broker-c", "10.0.0.9:10911", 0, {"order_topic": 2}, cluster="other"))
    response = loaded.ok(R.DELETE_TOPIC_IN_NAMESRV, {"topic": "order_topic", "clusterName": "other"})
    assert (response.ext, response.body) == (None, b"")
    assert sorted(loaded.routes.topic_queue_table["order_topic"]) == ["broker-a", "broker-b"]

    loaded.ok(R.DELETE_TOPIC_IN_NAMESRV, {"topic": "order_topic", "clusterName": ""})
    assert loaded.routes.all_topics() == ["a_only"]
    loaded.ok(R.DELETE_TOPIC_IN_NAMESRV, {"topic": "nope"})


def test_register_topic_in_namesrv(loaded: Harness) -> None:
    body = b'{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}'
    assert loaded.ok(R.REGISTER_TOPIC_IN_NAMESRV, {"topic": "new_t"}, body).body == b""
    qd = loaded.routes.topic_queue_table["new_t"]["broker-a"]
    assert (qd.read_queue_nums, qd.write_queue_nums, qd.perm) == (1, 1, 6)
    loaded.ok(R.REGISTER_TOPIC_IN_NAMESRV, {"topic": "empty"})
    assert "empty" not in loaded.routes.all_topics()


def test_broker_member_group(loaded: Harness) -> None:
    response = loaded.call(R.GET_BROKER_MEMBER_GROUP, {"clusterName": CLUSTER, "brokerName": "broker-a"})
    # Java 5 leaves its response factory's remark in place (captured from 5.0.0).
    assert (response.code, response.remark) == (ResponseCode.SUCCESS, "not set any response code")
    body = response.body
    assert body == (
        b'{"brokerMemberGroup":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}}'
    )
    unknown = loaded.call(R.GET_BROKER_MEMBER_GROUP, {"clusterName": "c", "brokerName": "broker-x"}).body
    assert unknown == b'{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"broker-x","cluster":"c"}}'


# -------------------------------------------------------------------- config ----


def test_update_config_applies_and_persists_the_whole_config(h: Harness) -> None:
    response = h.ok(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\nlistenPort=9877\nunknownKey=1\n")
    assert (response.ext, response.body) == (None, b"")
    assert (h.config["orderMessageEnable"], h.config["listenPort"]) == (True, 9877)
    assert h.config.extras == {}
    assert h.saved_config == [h.config.to_text()]
    assert "orderMessageEnable=true\n" in h.saved_config[0]
    assert "unknownKey" not in h.saved_config[0]


@pytest.mark.parametrize("body, remark", [
    (b"listenPort=abc\nserverWorkerThreads=4\n", "listenPort: 'abc' is not a whole number"),
    (b"serverWorkerThreads=4\nmaxConnections=-1\n",
     "maxConnections: must be 0 (no limit) or a positive number of connections, not -1"),
], ids=["unparsable", "out-of-range"])
def test_update_config_with_a_bad_value_applies_nothing(h: Harness, body: bytes, remark: str) -> None:
    """Unlike Java, which skips bad values: the start-up rules, all or nothing."""
    before = h.config.to_text()
    response = h.call(R.UPDATE_NAMESRV_CONFIG, body=body)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)
    assert h.config.to_text() == before
    assert h.saved_config == []


def test_update_config_without_body_changes_nothing(h: Harness) -> None:
    h.ok(R.UPDATE_NAMESRV_CONFIG)
    assert h.saved_config == []


@pytest.mark.parametrize("key", ["kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome"])
def test_update_config_black_listed_key_applies_nothing(h: Harness, key: str) -> None:
    before = h.config.to_text()
    response = h.call(R.UPDATE_NAMESRV_CONFIG, body=f"orderMessageEnable=true\n{key}=/tmp/evil\n".encode())
    assert (response.code, response.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    assert h.config.to_text() == before
    assert h.saved_config == []


def test_update_config_honours_the_configured_black_list(h: Harness) -> None:
    h.config.set("configBlackList", "configBlackList;configStorePath;kvConfigPath;listenPort")
    assert h.call(R.UPDATE_NAMESRV_CONFIG, body=b"listenPort=1\n").code == ResponseCode.NO_PERMISSION
    assert h.config["listenPort"] == 9876


@pytest.mark.parametrize("body", [b"k=\\uZZZZ\n", b"k=caf\xe9\n"], ids=["bad-escape", "not-utf8"])
def test_update_config_unparsable(h: Harness, body: bytes) -> None:
    response = h.call(R.UPDATE_NAMESRV_CONFIG, body=body)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "string2Properties error")
    assert h.saved_config == []


def test_update_config_save_failure_is_a_system_error() -> None:
    h = Harness(persist_config=refuse)
    response = h.call(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "No space left on device" in (response.remark or "")


def test_get_config(h: Harness) -> None:
    h.config.set("listenPort", 19876)
    body = h.ok(R.GET_NAMESRV_CONFIG).body
    assert body == h.config.to_text().encode()
    assert b"\nlistenPort=19876\n" in body

