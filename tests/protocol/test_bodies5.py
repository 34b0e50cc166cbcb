"""5.x body fields: BrokerData's acting-master flag and zone, static-topic mappings in
registrations (plain and compressed) and routes. Expected bytes are Java 5.0.0's (from
tests/golden5) or follow its fastjson rules where 5.0.0 could not show them."""

from __future__ import annotations

import json
from dataclasses import replace
import struct
import zlib

import pytest

from mqnamesrv.protocol.bodies import BrokerData, RegisterBrokerBody, TopicQueueMappingInfo, TopicRouteData
from mqnamesrv.protocol.compressed import decode_compressed
from mqnamesrv.protocol.errors import BodyDecodeError
from mqnamesrv.protocol.frame import decode
from tests.server.test_golden5_replay import GOLDEN5

INFO = TopicQueueMappingInfo(topic="static_t", bname="broker5", total_queues=4, epoch=1795553231437,
                             curr_id_map={0: 0, 1: 1, 2: 2, 3: 3})


def _body(step: str, which: str = "response.bin") -> bytes:
    return decode((GOLDEN5 / step / which).read_bytes()).body


@pytest.mark.parametrize("step, standard", [("15-route-static", True), ("16-route-static-v0", False),
                                            ("08-route-acting-group", True), ("10-route-acting-group-v0", False)],
                         ids=["static-standard", "static-default", "acting-standard", "acting-default"])
def test_java5_routes_decode_and_encode_back_byte_for_byte(step: str, standard: bool) -> None:
    raw = _body(step)
    assert TopicRouteData.decode(raw).encode(standard=standard) == raw


def test_static_route_fields() -> None:
    route = TopicRouteData.decode(_body("15-route-static"))
    assert route.topic_queue_mapping_by_broker == {"broker5": INFO}
    (b,) = route.broker_datas
    assert (b.enable_acting_master, b.zone_name) == (True, "zoneA")


def test_registration_body_mappings() -> None:
    cmd = decode((GOLDEN5 / "14-register-static-topic" / "request.bin").read_bytes())
    _, shapes, _, mappings = RegisterBrokerBody.decode_queues_mapped(cmd.body, cmd.version)
    assert shapes == {"static_t": (4, 4, 6, 0)} and mappings == {"static_t": INFO}
    assert RegisterBrokerBody.decode(cmd.body, cmd.version).topic_queue_mapping_info == {"static_t": INFO}
    # 4.x bodies have none, and decode_queues keeps its 3-part answer.
    assert len(RegisterBrokerBody.decode_queues(cmd.body, cmd.version)) == 3


def test_compressed_5x_body_carries_mappings() -> None:
    info = (b'{"bname":"broker5","currIdMap":{0:0,1:1,2:2,3:3},"dirty":false,"epoch":1795553231437,'
            b'"scope":"__global__","topic":"static_t","totalQueues":4}')
    assert decode_compressed(_compressed_text([info])).topic_queue_mapping_info == {"static_t": INFO}
    assert decode_compressed(_compressed_text([])).topic_queue_mapping_info == {}
    assert decode_compressed(_compressed_text(None)).topic_queue_mapping_info == {}  # a 4.x body


def _compressed_text(mappings: list[bytes] | None) -> bytes:
    """A compressed body as 5.0.0's RegisterBrokerBody.encode(true) writes it: the 4.x
    parts (topic lines gain a sixth, the attributes JSON), then the mappings."""
    def part(data: bytes) -> bytes:
        return struct.pack(">i", len(data)) + data
    raw = part(b'{"counter":1,"stateVersion":0,"timestamp":5}') + struct.pack(">i", 1)
    raw += part(b"static_t 4 4 6 SINGLE_TAG {}") + part(b"[]")
    if mappings is not None:
        raw += struct.pack(">i", len(mappings)) + b"".join(part(m) for m in mappings)
    return zlib.compress(raw)


def test_compressed_mapping_that_is_not_json_is_a_clear_error() -> None:
    with pytest.raises(BodyDecodeError, match="compressed body"):
        decode_compressed(_compressed_text([b"{not json"]))


def test_broker_data_5x_fields_in_both_dialects() -> None:
    b = BrokerData("c", "b", {1: "x:1", 0: "x:0"}, False, "z/1")
    assert b._json(True) == '{"brokerAddrs":{"0":"x:0","1":"x:1"},"brokerName":"b","cluster":"c",' \
                            '"enableActingMaster":false,"zoneName":"z\\/1"}'
    assert b._json(False) == '{"brokerAddrs":{0:"x:0",1:"x:1"},"brokerName":"b","cluster":"c",' \
                             '"enableActingMaster":false,"zoneName":"z/1"}'
    assert b.member_group_json() == '{"brokerAddrs":{0:"x:0",1:"x:1"},"brokerName":"b","cluster":"c"}'
    assert BrokerData.from_obj(json.loads(b._json(True))) == b


def test_mapping_epoch_beyond_javascript_range_is_a_string_in_standard_json() -> None:
    """fastjson's BrowserCompatible writes longs outside +-(2^53-1) as strings."""
    big = TopicQueueMappingInfo(topic="t", bname="b", epoch=2**53, scope=None)
    assert '"epoch":"9007199254740992"' in big._json(True)
    assert '"epoch":9007199254740992' in big._json(False)
    assert '"scope"' not in big._json(True)  # null fields are left out, as fastjson does
    # Java's decode leaves an absent scope at its default
    assert TopicQueueMappingInfo.from_obj(json.loads(big._json(True))) == replace(big, scope="__global__")


@pytest.mark.parametrize("obj", [[], {"currIdMap": {"x": 1}}, {"currIdMap": []}, {"epoch": "soon"}],
                         ids=["array", "id-not-number", "idmap-array", "epoch-text"])
def test_bad_mapping_is_a_body_error(obj: object) -> None:
    with pytest.raises(BodyDecodeError):
        TopicQueueMappingInfo.from_obj(obj)
