"""Bodies (spec section 5): DataVersion, RegisterBrokerBody (plain and compressed),
TopicRouteData in both dialects, ClusterInfo, TopicList and KVTable."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqnamesrv.protocol import bodies
from mqnamesrv.protocol.bodies import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicList,
    TopicRouteData,
    decode_kv_table,
    encode_kv_table,
    queue_shapes,
)
from mqnamesrv.protocol.compressed import decode_compressed, encode_compressed
from mqnamesrv.protocol.errors import BodyDecodeError, ProtocolError

# ================================================================ DataVersion ====


def test_data_version_example_from_spec() -> None:
    dv = DataVersion(counter=7, timestamp=1700000000123)
    assert dv.encode() == b'{"counter":7,"timestamp":1700000000123}'
    assert DataVersion.decode(b'{"counter":7,"timestamp":1700000000123}') == dv


def test_data_version_5x_state_version_round_trips() -> None:
    raw = b'{"counter":7,"stateVersion":0,"timestamp":1700000000123}'
    dv = DataVersion.decode(raw)
    assert dv == DataVersion(counter=7, timestamp=1700000000123, state_version=0)
    assert dv.encode() == raw


def test_data_version_lenient_input() -> None:
    assert DataVersion.decode(b'{"timestamp":"1700000000123","counter":"7","x":1}') == DataVersion(7, 1700000000123)
    assert DataVersion.decode(b"{}") == DataVersion(0, 0)


@pytest.mark.parametrize(
    "body", [b"", b"null", b"[1]", b"{", b'{"counter":"x"}', b'{"timestamp":[1]}'],
    ids=["empty", "null", "array", "truncated", "counter-text", "timestamp-list"],
)
def test_data_version_bad_body(body: bytes) -> None:
    with pytest.raises(BodyDecodeError):
        DataVersion.decode(body)


def test_body_decode_error_is_a_protocol_error() -> None:
    assert issubclass(BodyDecodeError, ProtocolError)


# ========================================================= RegisterBrokerBody ====

SPEC_REGISTER_BODY = (
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000123},'
    b'"topicConfigTable":{"order_topic":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",'
    b'"topicName":"order_topic","topicSysFlag":0,"writeQueueNums":4}}}}'
)
ORDER_TOPIC = TopicConfig(topic_name="order_topic", read_queue_nums=4, write_queue_nums=4, perm=6)
SPEC_REGISTER = RegisterBrokerBody(
    data_version=DataVersion(3, 1700000000123), topic_configs={"order_topic": ORDER_TOPIC}, filter_server_list=()
)
WRAPPER_ONLY = (
    b'{"dataVersion":{"counter":3,"timestamp":1700000000123},"topicConfigTable":{"order_topic":{"order":false,'
    b'"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"order_topic","topicSysFlag":0,'
    b'"writeQueueNums":4}}}'
)


def test_register_body_example_from_spec() -> None:
    assert SPEC_REGISTER.encode() == SPEC_REGISTER_BODY
    assert RegisterBrokerBody.decode(SPEC_REGISTER_BODY, 409) == SPEC_REGISTER


def test_register_body_version_37_is_the_first_with_the_envelope() -> None:
    assert RegisterBrokerBody.decode(SPEC_REGISTER_BODY, 37) == SPEC_REGISTER


@pytest.mark.parametrize("version", [0, 1, 36])
def test_register_body_before_v3_0_11_is_a_bare_wrapper(version: int) -> None:
    body = RegisterBrokerBody.decode(WRAPPER_ONLY, version)
    assert body == SPEC_REGISTER
    assert body.filter_server_list == ()


def test_register_body_version_decides_the_layout() -> None:
    # a bare wrapper read as a RegisterBrokerBody finds no topics, and the reverse
    assert RegisterBrokerBody.decode(WRAPPER_ONLY, 409).topic_configs == {}
    assert RegisterBrokerBody.decode(SPEC_REGISTER_BODY, 36).topic_configs == {}


@pytest.mark.parametrize("version", [0, 36, 37, 409])
def test_register_without_body_is_zero_topics_and_version_zero(version: int) -> None:
    body = RegisterBrokerBody.decode(b"", version)
    assert body == RegisterBrokerBody()
    assert body.data_version == DataVersion(counter=0, timestamp=0)
    assert dict(body.topic_configs) == {}
    assert tuple(body.filter_server_list) == ()


def test_register_body_keeps_topic_order_and_filter_servers() -> None:
    topics = {
        name: TopicConfig(topic_name=name, read_queue_nums=n, write_queue_nums=n, perm=7 if n == 1 else 6,
                          topic_sys_flag=n % 3, order=n == 8)
        for name, n in [("zeta", 1), ("alpha", 8), ("%RETRY%g", 2)]
    }
    rb = RegisterBrokerBody(DataVersion(9, 1700000000999), topics, ("10.0.0.9:30000", "10.0.0.9:30001"))
    raw = rb.encode()
    assert raw.startswith(b'{"filterServerList":["10.0.0.9:30000","10.0.0.9:30001"],"topicConfigSerializeWrapper":')
    back = RegisterBrokerBody.decode(raw, 409)
    assert back == rb
    assert list(back.topic_configs) == ["zeta", "alpha", "%RETRY%g"]
    assert back.encode() == raw


def test_topic_config_defaults_for_missing_fields() -> None:
    body = b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"t":{}}}}'
    rb = RegisterBrokerBody.decode(body, 409)
    assert rb.topic_configs["t"] == TopicConfig(
        topic_name="t", read_queue_nums=16, write_queue_nums=16, perm=6, topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0, order=False,
    )
    assert rb.data_version == DataVersion()


def test_register_body_ignores_5x_extras() -> None:
    body = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,'
        b'"timestamp":5},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":0},'
        b'"topicConfigTable":{"t":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,'
        b'"topicFilterType":"SINGLE_TAG","topicName":"t","topicSysFlag":0,"writeQueueNums":4}},'
        b'"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}'
    )
    rb = RegisterBrokerBody.decode(body, 479)
    assert rb.data_version == DataVersion(1, 5, state_version=0)
    assert rb.topic_configs == {"t": TopicConfig("t", 4, 4, 6)}


def test_register_body_non_ascii_topic_written_raw() -> None:
    rb = RegisterBrokerBody(DataVersion(1, 2), {"тема": TopicConfig("тема", 1, 1)}, ())
    raw = rb.encode()
    assert '"тема":{"order":false'.encode() in raw
    assert RegisterBrokerBody.decode(raw, 409) == rb


@pytest.mark.parametrize(
    "body",
    [
        b"not json", b"[]",
        b'{"topicConfigSerializeWrapper":[1]}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":[1]}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"t":[]}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"t":{"readQueueNums":"many"}}}}',
        b'{"topicConfigSerializeWrapper":{"dataVersion":[]}}',
        b'{"filterServerList":"a","topicConfigSerializeWrapper":{}}',
    ],
    ids=["not-json", "array", "wrapper-list", "table-list", "topic-list", "queue-nums-text", "dv-list",
         "filters-string"],
)
def test_register_body_bad_input(body: bytes) -> None:
    with pytest.raises(BodyDecodeError):
        RegisterBrokerBody.decode(body, 409)


def test_register_body_bad_input_is_refused_by_the_name_servers_decode_too() -> None:
    for body in (b"not json", b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"t":{"perm":"rw"}}}}',
                 b'{"filterServerList":"a","topicConfigSerializeWrapper":{}}'):
        with pytest.raises(BodyDecodeError):
            RegisterBrokerBody.decode_queues(body, 409)


@pytest.mark.parametrize(
    ("body", "version"),
    [
        (SPEC_REGISTER_BODY, 409), (SPEC_REGISTER_BODY, 36), (WRAPPER_ONLY, 0), (b"", 409),
        # the careful path: numbers as text, missing fields, a bool where a number goes
        (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"t":{"readQueueNums":"8","perm":true},'
         b'"u":{}}}}', 409),
        (b'{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":4},'
         b'"topicConfigTable":{"t":{"perm":6,"readQueueNums":2,"topicSysFlag":1,"writeQueueNums":3}}}}', 409),
    ],
    ids=["spec", "spec-v36", "wrapper-v0", "empty", "careful", "filters"],
)
def test_name_server_decode_keeps_what_the_full_decode_would(body: bytes, version: int) -> None:
    full = RegisterBrokerBody.decode(body, version)
    assert RegisterBrokerBody.decode_queues(body, version) == (
        full.data_version, queue_shapes(full.topic_configs), tuple(full.filter_server_list))


def test_registered_topic_is_the_configs_own_name_as_in_4_9_8() -> None:
    body = b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"key":{"topicName":"real","perm":6,' \
           b'"readQueueNums":1,"writeQueueNums":1,"topicSysFlag":0}}}}'
    assert RegisterBrokerBody.decode_queues(body, 409)[1] == {"real": (1, 1, 6, 0)}
    assert queue_shapes(RegisterBrokerBody.decode(body, 409).topic_configs) == {"real": (1, 1, 6, 0)}


# ================================================================ compressed ====

def _part(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def _record(dv: bytes, lines: list[bytes], filters: bytes | None = b"[]", count: int | None = None) -> bytes:
    out = _part(dv) + struct.pack(">i", len(lines) if count is None else count)
    out += b"".join(_part(line) for line in lines)
    if filters is not None:
        out += _part(filters)
    return out


DV = b'{"counter":2,"timestamp":1700000010000}'
LINES = [b"b_compressed_topic 2 2 6 SINGLE_TAG", b"order_topic 4 4 6 SINGLE_TAG", b"TBW102 8 8 7 MULTI_TAG"]
RECORD = _record(DV, LINES, b'["10.0.0.9:30000"]')
EXPECTED = RegisterBrokerBody(
    data_version=DataVersion(2, 1700000010000),
    topic_configs={
        "b_compressed_topic": TopicConfig("b_compressed_topic", 2, 2, 6),
        "order_topic": TopicConfig("order_topic", 4, 4, 6),
        "TBW102": TopicConfig("TBW102", 8, 8, 7, topic_filter_type="MULTI_TAG"),
    },
    filter_server_list=("10.0.0.9:30000",),
)


def test_compressed_layout() -> None:
    blob = encode_compressed(EXPECTED)
    assert blob[:2] == b"\x78\xda"  # zlib header, level 9
    assert zlib.decompress(blob) == RECORD
    assert blob == zlib.compress(RECORD, 9)


def test_compressed_round_trip_keeps_order() -> None:
    body = decode_compressed(zlib.compress(RECORD, 9))
    assert body == EXPECTED
    assert list(body.topic_configs) == ["b_compressed_topic", "order_topic", "TBW102"]


def test_compressed_any_zlib_level_decodes() -> None:
    assert decode_compressed(zlib.compress(RECORD, 1)) == EXPECTED


def test_compressed_loses_sys_flag_and_order() -> None:
    rb = RegisterBrokerBody(DataVersion(1, 1), {"t": TopicConfig("t", 4, 4, 6, topic_sys_flag=3, order=True)}, ())
    back = decode_compressed(encode_compressed(rb))
    assert back.topic_configs["t"] == TopicConfig("t", 4, 4, 6, topic_sys_flag=0, order=False)


def test_compressed_zero_topics() -> None:
    rb = decode_compressed(zlib.compress(_record(b'{"counter":0,"timestamp":0}', []), 9))
    assert rb == RegisterBrokerBody(DataVersion(0, 0), {}, ())


def test_compressed_six_part_line_of_5x_writers_is_accepted() -> None:
    record = _record(DV, [b"t 4 4 6 SINGLE_TAG {}"])
    assert decode_compressed(zlib.compress(record)).topic_configs == {"t": TopicConfig("t", 4, 4, 6)}


@pytest.mark.parametrize(
    "blob",
    [b"", b"not zlib", SPEC_REGISTER_BODY, b"\x78\xda\x00\x01\x02", zlib.compress(RECORD)[:20]],
    ids=["empty", "text", "plain-json-body", "bad-deflate", "stream-cut-in-half"],
)
def test_compressed_not_a_zlib_record(blob: bytes) -> None:
    with pytest.raises(BodyDecodeError):
        decode_compressed(blob)


_DV_END = 4 + len(DV)
_TOPICS_END = len(RECORD) - len(_part(b'["10.0.0.9:30000"]'))


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(0, id="nothing"),
        pytest.param(2, id="inside-data-version-length"),
        pytest.param(10, id="inside-data-version"),
        pytest.param(_DV_END, id="before-topic-count"),
        pytest.param(_DV_END + 3, id="inside-topic-count"),
        pytest.param(_DV_END + 4, id="before-first-topic"),
        pytest.param(_DV_END + 4 + 4 + 5, id="inside-topic-line"),
        pytest.param(_TOPICS_END, id="before-filter-servers"),
        pytest.param(_TOPICS_END + 2, id="inside-filter-servers-length"),
        pytest.param(len(RECORD) - 1, id="inside-filter-servers"),
    ],
)
def test_compressed_truncated_record(cut: int) -> None:
    """Java's decoder reads every part with readInt/readBytes and throws at end of
    data, filter-server list included (RegisterBrokerBody.decode, 4.9.8)."""
    with pytest.raises(BodyDecodeError):
        decode_compressed(zlib.compress(RECORD[:cut]))


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(_record(DV, [], count=-1), id="negative-topic-count"),
        pytest.param(_record(DV, LINES, count=4), id="count-beyond-topics"),
        pytest.param(struct.pack(">i", -5) + DV, id="negative-data-version-length"),
        pytest.param(_part(DV) + struct.pack(">ii", 1, -1), id="negative-topic-length"),
        pytest.param(_record(b"{nope", LINES), id="data-version-not-json"),
        pytest.param(_record(b"[]", LINES), id="data-version-not-object"),
        pytest.param(_record(DV, [b"t 4 4 6"]), id="four-part-line"),
        pytest.param(_record(DV, [b"t four 4 6 SINGLE_TAG"]), id="queue-nums-not-int"),
        pytest.param(_record(DV, [b"t\xff 4 4 6 SINGLE_TAG"]), id="line-not-utf8"),
        pytest.param(_record(DV, LINES, b'{"a":1}'), id="filters-not-array"),
    ],
)
def test_compressed_bad_record(record: bytes) -> None:
    with pytest.raises(BodyDecodeError):
        decode_compressed(zlib.compress(record))


# ============================================================ TopicRouteData ====

SPEC_ROUTE = TopicRouteData(
    queue_datas=(QueueData(broker_name="broker-a", read_queue_nums=4, write_queue_nums=4, perm=6),),
    broker_datas=(BrokerData(cluster="DefaultCluster", broker_name="broker-a",
                             broker_addrs={1: "10.0.0.2:10911", 0: "10.0.0.1:10911"}),),
)
SPEC_ROUTE_STANDARD = (
    b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,'
    b'"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
SPEC_ROUTE_DEFAULT = SPEC_ROUTE_STANDARD.replace(
    b'{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}', b'{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}'
)


def test_route_example_from_spec_in_both_dialects() -> None:
    assert SPEC_ROUTE.encode(standard=True) == SPEC_ROUTE_STANDARD
    assert SPEC_ROUTE.encode(standard=False) == SPEC_ROUTE_DEFAULT


@pytest.mark.parametrize("raw", [SPEC_ROUTE_STANDARD, SPEC_ROUTE_DEFAULT], ids=["standard-json", "fastjson-default"])
def test_route_decodes_both_dialects(raw: bytes) -> None:
    route = TopicRouteData.decode(raw)
    assert route == SPEC_ROUTE
    assert dict(route.broker_datas[0].broker_addrs) == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert route.order_topic_conf is None


def test_route_with_order_conf_and_filter_servers() -> None:
    route = TopicRouteData(
        queue_datas=SPEC_ROUTE.queue_datas,
        broker_datas=SPEC_ROUTE.broker_datas,
        filter_server_table={"10.0.0.2:10911": ("10.0.0.9:30001",), "10.0.0.1:10911": ("10.0.0.9:30000",)},
        order_topic_conf="broker-a:4;broker-b:4",
    )
    std = route.encode(standard=True)
    assert std == SPEC_ROUTE_STANDARD.replace(
        b'"filterServerTable":{}',
        b'"filterServerTable":{"10.0.0.1:10911":["10.0.0.9:30000"],"10.0.0.2:10911":["10.0.0.9:30001"]},'
        b'"orderTopicConf":"broker-a:4;broker-b:4"',
    )
    assert TopicRouteData.decode(std) == route
    assert TopicRouteData.decode(route.encode(standard=False)) == route


def test_route_read_only_queue_and_slave_only_group() -> None:
    route = TopicRouteData(
        queue_datas=(QueueData("broker-b", 8, 0, 4, topic_sys_flag=2),),
        broker_datas=(BrokerData("c", "broker-b", {2: "10.0.0.3:10911"}),),
    )
    raw = route.encode(standard=False)
    assert b'"brokerAddrs":{2:"10.0.0.3:10911"}' in raw
    assert b'{"brokerName":"broker-b","perm":4,"readQueueNums":8,"topicSysFlag":2,"writeQueueNums":0}' in raw
    assert TopicRouteData.decode(raw) == route


NON_ASCII_ROUTE = TopicRouteData(
    queue_datas=(QueueData("broker-ёж", 4, 4, 6),),
    broker_datas=(BrokerData("DC/1", "broker-ёж", {0: "10.0.0.1:10911"}),),
    order_topic_conf="broker-ёж:4",
)


def test_route_non_ascii_broker_name_default_mode_is_raw_utf8() -> None:
    assert NON_ASCII_ROUTE.encode(standard=False) == (
        '{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-ёж","cluster":"DC/1"}],'
        '"filterServerTable":{},"orderTopicConf":"broker-ёж:4","queueDatas":[{"brokerName":"broker-ёж",'
        '"perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    ).encode()


def test_route_non_ascii_broker_name_standard_mode_is_escaped_ascii() -> None:
    raw = NON_ASCII_ROUTE.encode(standard=True)
    assert raw == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"broker-\\u0451\\u0436",'
        b'"cluster":"DC\\/1"}],"filterServerTable":{},"orderTopicConf":"broker-\\u0451\\u0436:4",'
        b'"queueDatas":[{"brokerName":"broker-\\u0451\\u0436","perm":6,"readQueueNums":4,"topicSysFlag":0,'
        b'"writeQueueNums":4}]}'
    )
    assert raw.isascii()
    json.loads(raw)  # strict JSON


@pytest.mark.parametrize("standard", [True, False], ids=["standard-json", "fastjson-default"])
def test_route_non_ascii_round_trips(standard: bool) -> None:
    assert TopicRouteData.decode(NON_ASCII_ROUTE.encode(standard=standard)) == NON_ASCII_ROUTE


def test_route_broker_order_is_kept_and_addrs_sorted() -> None:
    route = TopicRouteData(
        queue_datas=(QueueData("b", 1, 1, 6), QueueData("a", 1, 1, 6)),
        broker_datas=(BrokerData("c", "b", {10: "x:2", 2: "x:1"}), BrokerData("c", "a", {0: "y:1"})),
    )
    std = route.encode(standard=True)
    assert std.index(b'"brokerName":"b"') < std.index(b'"brokerName":"a"')
    assert b'{"2":"x:1","10":"x:2"}' in std
    assert b'{2:"x:1",10:"x:2"}' in route.encode(standard=False)


@pytest.mark.parametrize(
    "body",
    [b"", b"[]", b'{"brokerDatas":[{"brokerAddrs":{"master":"x"}}]}', b'{"queueDatas":[1]}',
     b'{"brokerDatas":[{"brokerAddrs":["x"]}]}', b'{"filterServerTable":["x"]}', b'{"queueDatas":[{"perm":"rw"}]}'],
    ids=["empty", "array", "addr-key-not-id", "queue-not-object", "addrs-list", "filter-table-list", "perm-text"],
)
def test_route_bad_body(body: bytes) -> None:
    with pytest.raises(BodyDecodeError):
        TopicRouteData.decode(body)


def test_route_5x_fields_are_kept() -> None:
    raw = SPEC_ROUTE_STANDARD.replace(b'"cluster":"DefaultCluster"', b'"cluster":"DefaultCluster","enableActingMaster":false')
    raw = raw[:-1] + b',"topicQueueMappingByBroker":{}}'
    route = TopicRouteData.decode(raw)
    assert route.topic_queue_mapping_by_broker == {}
    assert {b.enable_acting_master for b in route.broker_datas} == {False}
    assert route.encode(standard=True) == raw


# =============================================================== ClusterInfo ====

def test_cluster_info_example_from_spec() -> None:
    raw = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    info = ClusterInfo(
        broker_addr_table={"broker-a": BrokerData("DefaultCluster", "broker-a", {0: "10.0.0.1:10911"})},
        cluster_addr_table={"DefaultCluster": ("broker-a",)},
    )
    assert info.encode() == raw
    assert ClusterInfo.decode(raw) == info


def test_cluster_info_is_always_fastjson_default() -> None:
    info = ClusterInfo(
        broker_addr_table={
            "broker-b": BrokerData("C/1", "broker-b", {0: "10.0.0.3:10911"}),
            "брокер": BrokerData("C/1", "брокер", {1: "10.0.0.2:10911", 0: "10.0.0.1:10911"}),
        },
        cluster_addr_table={"C/1": ("broker-b", "брокер")},
    )
    raw = info.encode()
    assert raw == (
        '{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"10.0.0.3:10911"},"brokerName":"broker-b","cluster":"C/1"},'
        '"брокер":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"брокер","cluster":"C/1"}},'
        '"clusterAddrTable":{"C/1":["broker-b","брокер"]}}'
    ).encode()
    assert ClusterInfo.decode(raw) == info


def test_cluster_info_empty() -> None:
    assert ClusterInfo({}, {}).encode() == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'
    assert ClusterInfo.decode(b"{}") == ClusterInfo({}, {})


# ========================================================= TopicList, KVTable ====

def test_topic_list_examples_from_spec() -> None:
    assert TopicList(["TBW102", "order_topic", "DefaultCluster", "broker-a"]).encode() == (
        b'{"topicList":["TBW102","order_topic","DefaultCluster","broker-a"]}'
    )
    with_addr = TopicList(["DefaultCluster", "broker-a"], broker_addr="10.0.0.1:10911")
    assert with_addr.encode() == b'{"brokerAddr":"10.0.0.1:10911","topicList":["DefaultCluster","broker-a"]}'
    assert TopicList.decode(with_addr.encode()) == TopicList(("DefaultCluster", "broker-a"), "10.0.0.1:10911")


def test_topic_list_empty_and_non_ascii() -> None:
    assert TopicList([]).encode() == b'{"topicList":[]}'
    assert TopicList.decode(b'{"topicList":[]}') == TopicList(())
    assert TopicList.decode(b"{}") == TopicList(())
    raw = TopicList(["%RETRY%группа", "a/b", "x\u2028"]).encode()
    assert raw == '{"topicList":["%RETRY%группа","a/b","x\\u2028"]}'.encode()
    assert TopicList.decode(raw).topics == ("%RETRY%группа", "a/b", "x\u2028")


def test_kv_table_example_from_spec() -> None:
    raw = b'{"table":{"order_topic":"broker-a:4;broker-b:4"}}'
    assert encode_kv_table({"order_topic": "broker-a:4;broker-b:4"}) == raw
    assert decode_kv_table(raw) == {"order_topic": "broker-a:4;broker-b:4"}


def test_kv_table_edges() -> None:
    assert encode_kv_table({}) == b'{"table":{}}'
    assert decode_kv_table(b'{"table":{}}') == {}
    assert decode_kv_table(b"{}") == {}
    assert decode_kv_table(b'{"table":{"a":"1","b":null,"c":2}}') == {"a": "1", "c": "2"}
    table = {"k1": "v1", "ключ": "знач/ение"}
    assert decode_kv_table(encode_kv_table(table)) == table


@pytest.mark.parametrize("body", [b"", b"[]", b'{"table":["a"]}', b"{"], ids=["empty", "array", "table-list", "truncated"])
def test_kv_table_bad_body(body: bytes) -> None:
    with pytest.raises(BodyDecodeError):
        decode_kv_table(body)


# ---- table_shapes: its C-loop path against the careful per-config path ----

_field_values = st.one_of(st.integers(-3, 20), st.booleans(), st.none(), st.sampled_from(["7", "x", ""]),
                          st.lists(st.integers(0, 2), max_size=1), st.floats(0, 4, allow_nan=False))
_table_names = st.text(alphabet="ab1", min_size=1, max_size=3)


@st.composite
def _configs(draw: st.DrawFn) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for name in draw(st.lists(_table_names, max_size=6, unique=True)):
        if draw(st.booleans()):  # what brokers send: every field an int, named after its key
            table[name] = {"readQueueNums": draw(st.integers(0, 16)), "writeQueueNums": draw(st.integers(0, 16)),
                           "perm": draw(st.integers(0, 7)), "topicSysFlag": draw(st.integers(0, 3)),
                           "topicName": name, "order": False, "topicFilterType": "SINGLE_TAG"}
        else:
            fields = ["readQueueNums", "writeQueueNums", "perm", "topicSysFlag"]
            # mostly ints, so that one odd thing at a time is tried too
            config = {f: draw(st.integers(0, 9)) if draw(st.integers(0, 4)) else draw(_field_values)
                      for f in fields if draw(st.integers(0, 7))}
            if draw(st.integers(0, 3)):
                config["topicName"] = draw(st.one_of(st.just(name), _table_names, st.none(), st.integers(0, 2)))
            table[name] = config if draw(st.integers(0, 6)) else draw(st.one_of(st.none(), st.integers(0, 1)))
    return table


@settings(max_examples=500, deadline=None, database=None)
@given(_configs())
def test_table_shapes_equals_the_careful_path_config_by_config(table: dict[str, Any]) -> None:
    """Whatever the configs hold (missing fields, bools, strings, lists, other names), the
    shapes are those of ``TopicConfig.from_obj`` config by config, or both refuse."""
    expected: dict[str, Any] | None = {}
    try:
        for name, raw in table.items():
            config = TopicConfig.from_obj(name, raw)
            expected[config.topic_name] = config.shape  # type: ignore[index]
    except BodyDecodeError:
        expected = None
    try:
        got: dict[str, Any] | None = bodies.table_shapes(table)
    except BodyDecodeError:
        got = None
    assert got == expected
    if got is not None and expected is not None:
        assert list(got) == list(expected)
