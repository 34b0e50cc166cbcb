"""The simulator's requests on the wire: byte for byte what a 4.9.8 broker sent in the
golden captures (opaque aside), and the 5.x variant's shape."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from mqadmin.fixture.broker_sim import BrokerConfig, SimulatedBroker, java_table_order
from mqadmin.fixture.loader import load_fixture
from mqadmin.fixture.runner import broker_config
from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig, decode_kv_table
from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.compressed import decode_compressed
from mqnamesrv.protocol.frame import decode, encode
from tests.conftest import GOLDEN
from tests.fixtures_sim.harness import FIXTURES


def golden_request(folder: str) -> tuple[bytes, dict[str, object]]:
    raw = (GOLDEN / folder / "request.bin").read_bytes()
    meta = json.loads((GOLDEN / folder / "exchange.json").read_text())["request"]
    return raw, meta


def with_opaque(frame: bytes, opaque: int) -> bytes:
    """Frame with the header's opaque replaced (JSON header: ``"opaque":N``)."""
    cmd = decode(frame)
    return encode(cmd.with_opaque(opaque))


@pytest.mark.parametrize("order", ["capture-order", "reversed", "sorted"])
def test_register_request_matches_golden_01_byte_for_byte(order: str) -> None:
    raw, _ = golden_request("01-register-broker-a-master")
    captured = decode(raw)
    topics = list(RegisterBrokerBody.decode(captured.body, captured.version).topic_configs.values())
    if order == "reversed":
        topics.reverse()
    elif order == "sorted":
        topics.sort(key=lambda t: t.topic_name)
    broker = SimulatedBroker(
        BrokerConfig(cluster="DefaultCluster", name="broker-a", broker_id=0, address="127.0.0.1:10911",
                     ha_address="127.0.0.1:10912", system_topics=False, listen=False,
                     data_version=DataVersion(counter=1, timestamp=1_700_000_000_000)),
        topics,
    )
    ours = encode(broker.register_request(opaque=12345))
    # The topic table comes out in Java's ConcurrentHashMap order whatever the declaration order.
    assert with_opaque(ours, captured.opaque) == raw
    assert decode(ours).opaque == 12345


def test_compressed_register_request_matches_golden_04() -> None:
    raw, _ = golden_request("04-register-broker-b-master-compressed")
    captured = decode(raw)
    topics = list(decode_compressed(captured.body).topic_configs.values())
    broker = SimulatedBroker(
        BrokerConfig(name="broker-b", address="127.0.0.1:10915", compressed=True, system_topics=False,
                     listen=False, data_version=DataVersion(counter=2, timestamp=1_700_000_010_000)),
        reversed(topics),
    )
    assert with_opaque(encode(broker.register_request()), captured.opaque) == raw


def test_system_topics_are_those_of_a_default_broker() -> None:
    """With systemTopics on, broker-b of golden 04 needs only its own three topics declared."""
    raw, _ = golden_request("04-register-broker-b-master-compressed")
    captured = decode(raw)
    own = [TopicConfig("b_compressed_topic", 2, 2), TopicConfig("order_topic", 4, 4), TopicConfig("b_only_topic", 8, 8)]
    broker = SimulatedBroker(
        BrokerConfig(name="broker-b", address="127.0.0.1:10915", compressed=True, listen=False,
                     data_version=DataVersion(counter=2, timestamp=1_700_000_010_000)), own)
    assert with_opaque(encode(broker.register_request()), captured.opaque) == raw


def test_java_table_order_grows_like_concurrent_hash_map() -> None:
    names = [f"t{i}" for i in range(13)]
    assert sorted(java_table_order(names)) == sorted(names)
    assert java_table_order(["b", "a"]) == java_table_order(["b", "a"])  # deterministic


def test_unregister_and_query_data_version_requests() -> None:
    broker = SimulatedBroker(BrokerConfig(address="127.0.0.1:10911", listen=False,
                                          data_version=DataVersion(3, 1_700_000_000_123)))
    unreg = broker.unregister_request()
    assert unreg.code == RequestCode.UNREGISTER_BROKER and unreg.body == b""
    assert dict(unreg.ext or {}) == {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
                                     "clusterName": "DefaultCluster", "brokerId": "0"}
    query = broker.query_data_version_request()
    assert query.code == RequestCode.QUERY_DATA_VERSION
    assert query.body == b'{"counter":3,"timestamp":1700000000123}'


def test_5x_register_request() -> None:
    broker = SimulatedBroker(BrokerConfig(name="broker-c", address="127.0.0.1:10921", style="5.x",
                                          heartbeat_timeout_ms=10_000, listen=False,
                                          data_version=DataVersion(4, 1_700_000_000_000)),
                             [TopicConfig("orders", 4, 4)])
    cmd = broker.register_request()
    assert cmd.version == 479
    ext = dict(cmd.ext or {})
    assert ext["heartbeatTimeoutMillis"] == "10000" and ext["enableActingMaster"] == "false"
    assert ext["compressed"] == "false"
    assert int(ext["bodyCrc32"]) == zlib.crc32(cmd.body) & 0x7FFFFFFF
    obj = json.loads(cmd.body)
    wrapper = obj["topicConfigSerializeWrapper"]
    assert list(wrapper) == ["dataVersion", "mappingDataVersion", "topicConfigTable", "topicQueueMappingDetailMap",
                             "topicQueueMappingInfoMap"]
    assert wrapper["dataVersion"] == {"counter": 4, "stateVersion": 0, "timestamp": 1_700_000_000_000}
    assert list(wrapper["topicConfigTable"]["orders"])[0] == "attributes"
    # A default 5.x broker (no acting master) leaves the timeout to the server.
    default = SimulatedBroker(BrokerConfig(style="5.x", listen=False)).register_request()
    assert "heartbeatTimeoutMillis" not in (default.ext or {}) and (default.ext or {})["enableActingMaster"] == "false"
    # Our name server's decoder reads it, stateVersion included.
    body = RegisterBrokerBody.decode(cmd.body, cmd.version)
    assert body.data_version == DataVersion(4, 1_700_000_000_000, 0)
    assert set(body.topic_configs) == {"orders", "SELF_TEST_TOPIC", "TBW102", "DefaultCluster", "broker-c"}


def test_runtime_info_has_what_cluster_list_reads() -> None:
    broker = SimulatedBroker(BrokerConfig(listen=False))
    info = broker.runtime_info()
    for key in ("brokerVersionDesc", "putTps", "getTransferedTps", "pageCacheLockTimeMills",
                "earliestMessageTimeStamp", "commitLogDiskRatio", "msgPutTotalTodayNow",
                "msgPutTotalYesterdayMorning", "msgGetTotalTodayNow", "sendThreadPoolQueueHeadWaitTimeMills"):
        assert key in info
    assert info["brokerVersionDesc"] == "V4_9_8"
    float(info["putTps"].split()[0])
    assert 0 < float(info["commitLogDiskRatio"]) < 1


def test_large_fleet_bodies_are_sane() -> None:
    """32 brokers x ~2,500 topics each: bodies well under the 16 MiB frame, built quickly."""
    fx = load_fixture(FIXTURES / "large-fleet.yaml")
    assert len(fx.name_servers) == 3 and len(fx.brokers) == 32 and len({t.name for t in fx.topics}) == 10_000
    hosted = {g: len(fx.topics_of(g)) for g in fx.groups()}
    assert len(hosted) == 16 and set(hosted.values()) == {2500}
    for key in ("broker-a00/0", "broker-b07/1"):
        spec = fx.broker(key)
        broker = SimulatedBroker(broker_config(spec, 1.0), fx.topics_of(spec.name))
        frame = encode(broker.register_request())
        assert len(broker.topics) == 2504
        if spec.compressed:
            assert 1_000 < len(frame) < 200_000  # topic lines compress well
            assert len(decode_compressed(decode(frame).body).topic_configs) == 2504
        else:
            assert 200_000 < len(frame) < 2 * 1024 * 1024
            assert len(RegisterBrokerBody.decode(decode(frame).body, 479).topic_configs) == 2504
        assert struct.unpack(">I", frame[:4])[0] + 4 == len(frame)


def test_order_config_in_an_answer_sets_order_flags_and_bumps_the_version() -> None:
    broker = SimulatedBroker(BrokerConfig(listen=False, data_version=DataVersion(1, 1)),
                             [TopicConfig("order_topic", 4, 4), TopicConfig("plain", 4, 4, order=True)])
    broker._apply_order_config(b'{"table":{"order_topic":"broker-a:4"}}')
    assert broker.topics["order_topic"].order and not broker.topics["plain"].order
    assert broker.data_version.counter == 2
    body = RegisterBrokerBody.decode(broker.body(), 409)
    assert body.topic_configs["order_topic"].order
    assert decode_kv_table(b'{"table":{}}') == {}
