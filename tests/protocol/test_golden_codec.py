"""The codec against byte-exact captures from a real Java 4.9.8 name server.

Every folder of ``tests/golden`` is one exchange (README.md there). Each captured
frame is decoded whole, one byte at a time and with trailing bytes (h11's ``tr()``),
re-encoded to the identical bytes, and compared field by field with the decoded view
in ``exchange.json``. Known bodies are decoded with ``bodies.py`` and re-encoded:
byte-for-byte where Java's output does not depend on hash order (spec 5.1),
semantically otherwise.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable

import pytest

from mqnamesrv.protocol import bodies
from mqnamesrv.protocol.codes import RequestCode, SerializeType
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.compressed import decode_compressed, encode_compressed
from mqnamesrv.protocol.fastjson import lenient_loads
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, decode, encode

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
FOLDERS = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name[:2].isdigit())


@dataclass(frozen=True)
class Exchange:
    name: str
    info: dict[str, Any]
    request: bytes
    response: bytes | None

    def frames(self) -> list[tuple[str, bytes]]:
        out = [("request", self.request)]
        if self.response is not None:
            out.append(("response", self.response))
        return out


@cache
def load(name: str) -> Exchange:
    folder = GOLDEN / name
    response = folder / "response.bin"
    return Exchange(
        name=name,
        info=json.loads((folder / "exchange.json").read_text(encoding="utf-8")),
        request=(folder / "request.bin").read_bytes(),
        response=response.read_bytes() if response.exists() else None,
    )


def golden(names: list[str] = FOLDERS) -> Callable[[Any], Any]:
    return pytest.mark.parametrize("name", names, ids=names)


# ------------------------------------------------------------- the set itself ----

def test_every_indexed_exchange_is_present() -> None:
    index = json.loads((GOLDEN / "index.json").read_text(encoding="utf-8"))
    assert [entry["dir"] for entry in index] == FOLDERS
    assert len(FOLDERS) == 51
    for extra in ("README.md", "kvConfig.json", "kvConfig-after-put.json"):
        assert (GOLDEN / extra).is_file()


@golden()
def test_capture_layout_matches_exchange_json(name: str) -> None:
    ex = load(name)
    # response.bin is missing exactly when the server sent nothing (42 unknown code, 43 oneway).
    assert (ex.response is None) == (ex.info["response"] is None)
    for direction, raw in ex.frames():
        view = ex.info[direction]
        word = int.from_bytes(raw[4:8], "big")
        assert len(raw) == view["frame_bytes"]
        assert int.from_bytes(raw[:4], "big") == view["length_field"] == len(raw) - 4
        assert word == int(view["header_length_field_hex"], 16)
        assert word >> 24 == view["serialize_type_byte"]
        assert word & 0xFFFFFF == view["header_length"]
        assert len(raw) - 8 - view["header_length"] == view["body_length"]
        header = raw[8:8 + view["header_length"]]
        if view["serialization"] == "JSON":
            assert header == view["header_text"].encode("utf-8")
        else:
            assert header == bytes.fromhex(view["header_hex"])


# -------------------------------------------------- decoding, three ways (h11) ----

def _feed_whole(raw: bytes) -> RemotingCommand:
    dec = FrameDecoder()
    dec.feed(raw)
    cmd = dec.next_frame()
    assert isinstance(cmd, RemotingCommand)
    assert dec.buffered == 0
    assert dec.next_frame() is NEED_DATA
    return cmd


def _feed_bytewise(raw: bytes) -> RemotingCommand:
    dec = FrameDecoder()
    for i in range(len(raw)):
        assert dec.next_frame() is NEED_DATA, f"frame produced after only {i} bytes"
        dec.feed(raw[i:i + 1])
    cmd = dec.next_frame()
    assert isinstance(cmd, RemotingCommand)
    assert dec.buffered == 0
    return cmd


def _feed_with_trailing(raw: bytes, trailing: bytes) -> RemotingCommand:
    dec = FrameDecoder()
    dec.feed(raw + trailing)
    cmd = dec.next_frame()
    assert isinstance(cmd, RemotingCommand)
    # The start of the next frame must stay buffered, untouched.
    assert dec.buffered == len(trailing)
    assert dec.next_frame() is NEED_DATA
    assert dec.buffered == len(trailing)
    return cmd


@golden()
def test_decode_whole_frame(name: str) -> None:
    for _, raw in load(name).frames():
        assert _feed_whole(raw) == decode(raw)


@golden()
def test_decode_one_byte_at_a_time(name: str) -> None:
    for _, raw in load(name).frames():
        assert _feed_bytewise(raw) == decode(raw)


@golden()
def test_decode_leaves_trailing_bytes_buffered(name: str) -> None:
    for _, raw in load(name).frames():
        expected = decode(raw)
        for cut in (1, 4, 7, 8, len(raw) - 1):
            assert _feed_with_trailing(raw, raw[:cut]) == expected
        # and the buffered prefix completes into the next frame
        dec = FrameDecoder()
        dec.feed(raw + raw[:9])
        assert dec.next_frame() == expected
        dec.feed(raw[9:])
        assert dec.next_frame() == expected
        assert dec.buffered == 0


def test_pipelined_captures_decode_in_order() -> None:
    stream = b"".join(raw for name in FOLDERS for _, raw in load(name).frames())
    dec = FrameDecoder()
    dec.feed(stream)
    got = []
    while (cmd := dec.next_frame()) is not NEED_DATA:
        got.append(cmd)
    assert got == [decode(raw) for name in FOLDERS for _, raw in load(name).frames()]
    assert dec.buffered == 0


@golden()
def test_reencode_gives_identical_bytes(name: str) -> None:
    for direction, raw in load(name).frames():
        assert encode(decode(raw)) == raw, direction


# ------------------------------------------------- fields vs the decoded view ----

@golden()
def test_decoded_fields_match_exchange_json(name: str) -> None:
    ex = load(name)
    for direction, raw in ex.frames():
        view = ex.info[direction]
        header = view["header"]
        cmd = decode(raw)
        assert cmd.serialize_type == SerializeType[view["serialization"]]
        assert cmd.code == header["code"]
        assert cmd.flag == header["flag"]
        assert cmd.opaque == header["opaque"]
        assert cmd.version == header["version"]
        assert cmd.language == header["language"]
        assert cmd.remark == header.get("remark")
        # None (no extFields at all) and {} (empty map) are different on the wire.
        assert cmd.ext == header.get("extFields")
        if "extFields" in header and header["extFields"] is not None:
            assert cmd.ext is not None and list(cmd.ext) == list(header["extFields"])
        if "body_text" in view:
            assert cmd.body.decode("utf-8") == view["body_text"]
        elif "body_hex_prefix" in view:
            assert cmd.body.startswith(bytes.fromhex(view["body_hex_prefix"]))
        else:
            assert view["body"] is None
            assert cmd.body == b""
        assert len(cmd.body) == view["body_length"]
        assert cmd.is_response == (direction == "response")
        if direction == "request":
            assert cmd.code == ex.info["request_code"]
            assert cmd.is_oneway == (ex.info["rpc"] == "oneway")
        else:
            assert cmd.code == view["response_code"]


@golden([n for n in FOLDERS if load(n).response is not None])
def test_response_builder_reproduces_captured_response(name: str) -> None:
    """Java answers with a fresh command: opaque copied, flag 1, version 409, language
    JAVA and (4.9.8) the request's serialization. ``RemotingCommand.response`` must
    produce the captured bytes from the decoded request."""
    ex = load(name)
    assert ex.response is not None
    req, rsp = decode(ex.request), decode(ex.response)
    built = req.response(rsp.code, remark=rsp.remark, ext=rsp.ext, body=rsp.body)
    assert encode(built) == ex.response


@pytest.mark.parametrize(
    "name, kwargs",
    [
        pytest.param("05-route-order-topic", {"ext": {"topic": "order_topic"}}, id="05-route-order-topic"),
        pytest.param(
            "06-route-order-topic-old-client", {"ext": {"topic": "order_topic"}, "version": 399},
            id="06-route-order-topic-old-client",
        ),
        pytest.param(
            "08-route-order-topic-rocketmq",
            {"ext": {"topic": "order_topic"}, "serialize_type": SerializeType.ROCKETMQ},
            id="08-route-order-topic-rocketmq",
        ),
        pytest.param("10-broker-cluster-info", {}, id="10-broker-cluster-info"),
        pytest.param("44-route-no-ext-fields", {}, id="44-route-no-ext-fields"),
    ],
)
def test_request_builder_reproduces_java_client_bytes(name: str, kwargs: dict[str, Any]) -> None:
    ex = load(name)
    sent = decode(ex.request)
    built = request(sent.code, opaque=sent.opaque, **kwargs)
    assert encode(built) == ex.request


def test_request_builder_reproduces_oneway_register() -> None:
    ex = load("43-oneway-register-broker-a-slave")
    sent = decode(ex.request)
    assert sent.ext is not None
    built = request(RequestCode.REGISTER_BROKER, dict(sent.ext), sent.body, oneway=True, opaque=83)
    assert built.flag == 2
    assert encode(built) == ex.request


# -------------------------------------------------------------------- bodies ----

def _normalize(value: Any) -> Any:
    """Order-free view of parsed JSON: maps compare as maps, lists as multisets."""
    if isinstance(value, dict):
        return {str(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_normalize(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return value


def _same_json(a: bytes, b: bytes) -> bool:
    return _normalize(lenient_loads(a)) == _normalize(lenient_loads(b))


def _register_obj(body: bodies.RegisterBrokerBody) -> dict[str, Any]:
    return {
        "filterServerList": list(body.filter_server_list),
        "topicConfigSerializeWrapper": {
            "dataVersion": body.data_version.to_obj(),
            "topicConfigTable": {name: tc.to_obj() for name, tc in body.topic_configs.items()},
        },
    }


def _topic_list_obj(tl: bodies.TopicList) -> dict[str, Any]:
    obj: dict[str, Any] = {"topicList": list(tl.topics)}
    if tl.broker_addr is not None:
        obj["brokerAddr"] = tl.broker_addr
    return obj


@dataclass(frozen=True)
class BodyCase:
    decoded: Any
    as_obj: dict[str, Any]  # the decoded value as a JSON-shaped dict
    reencoded: bytes
    deterministic: bool  # Java's bytes do not depend on hash order (spec 5.1)


def _standard_route(req: RemotingCommand) -> bool:
    # spec 4.6: version >= V4_9_4 (401) or acceptStandardJsonOnly=true
    return req.version >= 401 or (req.ext_get("acceptStandardJsonOnly") or "").lower() == "true"


def _body_case(req: RemotingCommand, cmd: RemotingCommand, direction: str) -> BodyCase | None:
    code, body = req.code, cmd.body
    if not body:
        return None
    if direction == "request" and code == RequestCode.REGISTER_BROKER:
        if cmd.ext_get("compressed") == "true":
            rb = decode_compressed(body)
            # zlib level 9 of the same record is byte-identical (Java's Deflater is zlib too)
            return BodyCase(rb, _register_obj(rb), encode_compressed(rb), True)
        rb = bodies.RegisterBrokerBody.decode(body, cmd.version)
        # the name server's own decode keeps the same facts
        assert bodies.RegisterBrokerBody.decode_queues(body, cmd.version) == (
            rb.data_version, bodies.queue_shapes(rb.topic_configs), tuple(rb.filter_server_list))
        det = len(rb.topic_configs) <= 1 and len(rb.filter_server_list) <= 1
        return BodyCase(rb, _register_obj(rb), rb.encode(), det)
    if code == RequestCode.QUERY_DATA_VERSION:
        dv = bodies.DataVersion.decode(body)
        return BodyCase(dv, dv.to_obj(), dv.encode(), True)
    if direction != "response":
        return None
    if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
        std = _standard_route(req)
        route = bodies.TopicRouteData.decode(body)
        lists_single = len(route.queue_datas) <= 1 and len(route.broker_datas) <= 1
        maps_single = len(route.filter_server_table) <= 1 and all(
            len(b.broker_addrs) <= 1 for b in route.broker_datas
        )
        # standard mode sorts map keys, so only list order is Java's hash order
        det = lists_single and (std or maps_single)
        return BodyCase(route, route.to_obj(), route.encode(standard=std), det)
    if code == RequestCode.GET_BROKER_CLUSTER_INFO:
        ci = bodies.ClusterInfo.decode(body)
        det = (
            len(ci.broker_addr_table) <= 1
            and len(ci.cluster_addr_table) <= 1
            and all(len(v) <= 1 for v in ci.cluster_addr_table.values())
            and all(len(b.broker_addrs) <= 1 for b in ci.broker_addr_table.values())
        )
        return BodyCase(ci, ci.to_obj(), ci.encode(), det)
    if code in (
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, RequestCode.GET_TOPICS_BY_CLUSTER,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ):
        tl = bodies.TopicList.decode(body)
        return BodyCase(tl, _topic_list_obj(tl), tl.encode(), len(tl.topics) <= 1)
    if code in (RequestCode.GET_KVLIST_BY_NAMESPACE, RequestCode.REGISTER_BROKER):
        table = bodies.decode_kv_table(body)
        return BodyCase(table, {"table": table}, bodies.encode_kv_table(table), len(table) <= 1)
    return None


def _body_folders() -> list[str]:
    out = []
    for name in FOLDERS:
        ex = load(name)
        req = decode(ex.request)
        if any(_body_case(req, decode(raw), d) for d, raw in ex.frames()):
            out.append(name)
    return out


BODY_FOLDERS = _body_folders()
#: Text bodies no structure in bodies.py describes: UPDATE/GET_NAMESRV_CONFIG properties.
TEXT_BODY_CODES = {RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.GET_NAMESRV_CONFIG}


def test_every_nonempty_body_is_covered() -> None:
    for name in FOLDERS:
        ex = load(name)
        req = decode(ex.request)
        for direction, raw in ex.frames():
            cmd = decode(raw)
            if cmd.body and _body_case(req, cmd, direction) is None:
                assert req.code in TEXT_BODY_CODES, (name, direction)
    assert len(BODY_FOLDERS) == 29


@golden(BODY_FOLDERS)
def test_known_bodies_decode_and_reencode(name: str) -> None:
    ex = load(name)
    req = decode(ex.request)
    for direction, raw in ex.frames():
        cmd = decode(raw)
        case = _body_case(req, cmd, direction)
        if case is None:
            continue
        original = cmd.body
        if cmd.ext_get("compressed") != "true":
            # the decoder kept every field Java sent
            assert _normalize(case.as_obj) == _normalize(lenient_loads(original)), direction
        if case.deterministic:
            assert case.reencoded == original, direction
        else:
            assert _same_json(case.reencoded, original), direction
        # and what we wrote decodes to the same value
        again = _body_case(req, RemotingCommand(code=cmd.code, ext=cmd.ext, version=cmd.version,
                                                body=case.reencoded), direction)
        assert again is not None and again.decoded == case.decoded


@pytest.mark.parametrize(
    "name, standard",
    [
        ("05-route-order-topic", True),
        ("06-route-order-topic-old-client", False),
        ("07-route-order-topic-v0-accept-standard-json", True),
        ("08-route-order-topic-rocketmq", True),
        ("25-route-order-topic-with-orderconf", True),
        ("31-route-order-topic-after-wipe", True),
    ],
    ids=lambda v: v if isinstance(v, str) else ("standard-json" if v else "fastjson-default"),
)
def test_route_dialect_follows_request(name: str, standard: bool) -> None:
    ex = load(name)
    assert ex.response is not None
    req, rsp = decode(ex.request), decode(ex.response)
    assert _standard_route(req) is standard
    bare_keys = b'"brokerAddrs":{0:' in rsp.body
    assert bare_keys is not standard
    route = bodies.TopicRouteData.decode(rsp.body)
    addrs = {b.broker_name: dict(b.broker_addrs) for b in route.broker_datas}
    assert addrs == {
        "broker-a": {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"},
        "broker-b": {0: "127.0.0.1:10915"},
    }
    # Java sorts map keys in standard mode; HashMap order of small Long keys is ascending too.
    assert route.encode(standard=standard) == rsp.body


def test_cluster_info_is_fastjson_default_in_both_serializations() -> None:
    for name in ("10-broker-cluster-info", "41-broker-cluster-info-after-unregister",
                 "51-broker-cluster-info-rocketmq"):
        ex = load(name)
        assert ex.response is not None
        body = decode(ex.response).body
        assert b'"brokerAddrs":{0:"127.0.0.1:10911"' in body
        info = bodies.ClusterInfo.decode(body)
        assert info.broker_addr_table["broker-a"].broker_addrs[0] == "127.0.0.1:10911"
    one = bodies.ClusterInfo.decode(decode(load("51-broker-cluster-info-rocketmq").response or b"").body)
    assert one.encode() == (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )


# ----------------------------------------------------- compressed register (04) ----

def test_compressed_register_body_matches_field_by_field_decode() -> None:
    ex = load("04-register-broker-b-master-compressed")
    cmd = decode(ex.request)
    expect = ex.info["request"]["body_decoded"]
    assert cmd.ext_get("compressed") == "true"
    assert cmd.body[:2] == b"\x78\xda"  # zlib, best compression
    assert len(zlib.decompress(cmd.body)) == expect["inflated_length"]

    rb = decode_compressed(cmd.body)
    assert rb.data_version == bodies.DataVersion.decode(expect["dataVersion_json"].encode())
    assert rb.data_version == bodies.DataVersion(counter=2, timestamp=1700000010000)
    assert rb.data_version.encode() == expect["dataVersion_json"].encode()
    assert len(rb.topic_configs) == expect["topic_count"] == 7
    lines = [
        f"{tc.topic_name} {tc.read_queue_nums} {tc.write_queue_nums} {tc.perm} {tc.topic_filter_type}"
        for tc in rb.topic_configs.values()
    ]
    assert lines == expect["topic_config_strings"]
    assert rb.topic_configs["b_compressed_topic"] == bodies.TopicConfig(
        topic_name="b_compressed_topic", read_queue_nums=2, write_queue_nums=2, perm=6,
        topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False,
    )
    # b_only_topic is order=true in the plain registration (03); the text line loses it.
    plain = bodies.RegisterBrokerBody.decode(decode(load("03-register-broker-b-master-rocketmq").request).body, 409)
    assert plain.topic_configs["b_only_topic"].order is True
    assert rb.topic_configs["b_only_topic"].order is False
    assert list(rb.filter_server_list) == json.loads(expect["filterServerList_json"]) == []

    assert encode_compressed(rb) == cmd.body


def test_register_bodies_carry_their_crc() -> None:
    """bodyCrc32 = CRC32(body as sent) & 0x7FFFFFFF; the decoded body is that exact byte
    string, so a server can check it (48 carries a deliberately wrong value)."""
    for name in FOLDERS:
        cmd = decode(load(name).request)
        if cmd.code != RequestCode.REGISTER_BROKER:
            continue
        crc = str(zlib.crc32(cmd.body) & 0x7FFFFFFF)
        if name.startswith("48-"):
            assert cmd.ext_get("bodyCrc32") == "12345" != crc
        else:
            assert cmd.ext_get("bodyCrc32") == crc, name
