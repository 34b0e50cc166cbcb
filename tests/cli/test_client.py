"""The async client: Java-identical requests, Java answers decoded, and an honest connection."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from mqadmin.transport.client import BrokerConnection, NamesrvConnection, build_request
from mqadmin.errors import BadResponse, NameServerError, QueryNotFound, TopicNotExist, Unreachable
from mqnamesrv.protocol.bodies import ClusterInfo, TopicRouteData
from mqnamesrv.protocol.codes import RequestCode, ResponseCode
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.frame import decode, encode
from tests.cli.fakes import CLOSE, ThreadedServer, unused_addr
from tests.nsprocess import NameServerProcess

GOLDEN = Path(__file__).parent.parent / "golden"

Call = Callable[[NamesrvConnection], Awaitable[Any]]

# (capture, what our client sends for it, what it must make of Java's answer)
GOLDEN_CASES: list[tuple[str, Call, Callable[[Any], bool]]] = [
    ("05-route-order-topic", lambda c: c.get_route("order_topic"),
     lambda r: isinstance(r, TopicRouteData) and {b.broker_name for b in r.broker_datas} == {"broker-a", "broker-b"}),
    ("10-broker-cluster-info", lambda c: c.get_cluster_info(),
     lambda r: isinstance(r, ClusterInfo) and r.broker_addr_table["broker-a"].broker_addrs[0] == "127.0.0.1:10911"),
    ("11-all-topic-list", lambda c: c.get_all_topics(), lambda r: "order_topic" in r),
    ("12-topics-by-cluster", lambda c: c.get_topics_by_cluster("DefaultCluster"), lambda r: "order_topic" in r),
    ("17-put-kv-config", lambda c: c.put_kv("test_ns", "k1", "v1"), lambda r: r is None),
    ("18-get-kv-config-hit", lambda c: c.get_kv("test_ns", "k1"), lambda r: r == "v1"),
    ("20-put-kv-order-topic-config", lambda c: c.put_kv("ORDER_TOPIC_CONFIG", "order_topic", "broker-a:4;broker-b:4"),
     lambda r: r is None),
    ("21-kvlist-by-namespace", lambda c: c.get_kvlist("ORDER_TOPIC_CONFIG"),
     lambda r: r == {"order_topic": "broker-a:4;broker-b:4"}),
    ("24-update-namesrv-config-allowed", lambda c: c.update_config({"orderMessageEnable": "true"}), lambda r: r is None),
    ("29-get-namesrv-config", lambda c: c.get_config(), lambda r: r["orderMessageEnable"] in ("true", "false")),
    ("30-wipe-write-perm-broker-b", lambda c: c.wipe_write_perm("broker-b"), lambda r: r == 7),
    ("32-add-write-perm-broker-b", lambda c: c.add_write_perm("broker-b"), lambda r: r == 7),
    ("35-delete-kv-config", lambda c: c.delete_kv("ORDER_TOPIC_CONFIG", "order_topic"), lambda r: r is None),
    ("38-delete-topic-in-namesrv", lambda c: c.delete_topic_in_namesrv("tmp_topic"), lambda r: r is None),
]


def _replay(name: str) -> tuple[bytes, RemotingCommand, ThreadedServer]:
    """A server answering with the Java capture's response (opaque adjusted)."""
    request_bytes = (GOLDEN / name / "request.bin").read_bytes()
    response = decode((GOLDEN / name / "response.bin").read_bytes())
    assert encode(decode(request_bytes)) == request_bytes  # the capture survives our codec
    server = ThreadedServer(lambda cmd: response.with_opaque(cmd.opaque)).start()
    return request_bytes, response, server


@pytest.mark.parametrize("name,call,check", GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_request_bytes_match_java_and_answer_decodes(name: str, call: Call, check: Callable[[Any], bool]) -> None:
    java_bytes, _, server = _replay(name)
    try:
        async def go() -> Any:
            async with await NamesrvConnection.connect(server.addr, 2.0) as conn:
                return await call(conn)

        result = asyncio.run(go())
    finally:
        server.stop()
    [sent] = server.requests
    java = decode(java_bytes)
    # Field by field first (clearer failures), then the whole frame, opaque aside.
    assert (sent.code, sent.language, sent.version, sent.flag, sent.serialize_type) == (
        java.code, java.language, java.version, java.flag, java.serialize_type)
    assert sent.ext == java.ext and sent.remark == java.remark and sent.body == java.body
    assert encode(sent) == encode(java.with_opaque(sent.opaque))
    assert check(result), result


@pytest.mark.parametrize("name,exc,text", [
    ("09-route-missing-topic", TopicNotExist,
     "GET_ROUTEINFO_BY_TOPIC (105) for topic 'no_such_topic': TOPIC_NOT_EXIST (17): "
     "No topic route info in name server for the topic: no_such_topic"),
    ("19-get-kv-config-miss", QueryNotFound,
     "GET_KV_CONFIG (101) for key test_ns/nope: QUERY_NOT_FOUND (22): No config item, Namespace: test_ns Key: nope"),
    ("27-update-namesrv-config-blocked-kvConfigPath", NameServerError,
     "UPDATE_NAMESRV_CONFIG (318) for kvConfigPath: NO_PERMISSION (16): Can not update config in black list."),
])
def test_java_error_answers_become_typed_errors(name: str, exc: type[NameServerError], text: str) -> None:
    _, response, server = _replay(name)
    calls: dict[str, Call] = {
        "09-route-missing-topic": lambda c: c.get_route("no_such_topic"),
        "19-get-kv-config-miss": lambda c: c.get_kv("test_ns", "nope"),
        "27-update-namesrv-config-blocked-kvConfigPath": lambda c: c.update_config({"kvConfigPath": "evil/kvConfig.json"}),
    }

    async def go() -> None:
        async with await NamesrvConnection.connect(server.addr, 2.0) as conn:
            await calls[name](conn)

    try:
        with pytest.raises(exc) as info:
            asyncio.run(go())
    finally:
        server.stop()
    assert str(info.value) == f"{server.addr}: {text}"
    assert info.value.code == response.code and info.value.remark == response.remark
    assert "\n" not in str(info.value)  # the FAQ line of the remark is not part of the message


def test_broker_and_cluster_delete_requests_are_java_shaped() -> None:
    topic = build_request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "t"})
    assert encode(topic).endswith(b'{"code":215,"extFields":{"topic":"t"},"flag":0,"language":"JAVA",'
                                  + f'"opaque":{topic.opaque},'.encode() + b'"serializeTypeCurrentRPC":"JSON","version":409}')
    # Java's HashMap puts clusterName before topic
    ns = build_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "t", "clusterName": "c"})
    assert list(ns.ext or {}) == ["clusterName", "topic"]


def test_pipelined_calls_on_one_connection_against_a_real_server(namesrv: NameServerProcess) -> None:
    async def go() -> list[Any]:
        async with await NamesrvConnection.connect(namesrv.addr, 5.0) as conn:
            await conn.put_kv("pipe", "k", "v")
            calls: list[Awaitable[Any]] = []
            for i in range(150):
                calls += [conn.get_kv("pipe", "k"), conn.get_all_topics(), conn.get_route(f"missing-{i}")]
            return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(go())
    assert results[0::3] == ["v"] * 150
    assert results[1::3] == [[]] * 150
    assert [str(r).endswith(f"for topic 'missing-{i}': TOPIC_NOT_EXIST (17): No topic route info in name "
                            f"server for the topic: missing-{i}") for i, r in enumerate(results[2::3])] == [True] * 150


def test_answers_out_of_order_are_matched_by_opaque() -> None:
    held: list[RemotingCommand] = []

    def reverse_pairs(cmd: RemotingCommand) -> bytes | None:
        held.append(cmd)
        if len(held) < 2:
            return None
        return b"".join(
            encode(c.response(ResponseCode.SUCCESS, ext={"value": c.ext_get("key") or ""})) for c in reversed(held)
        )

    server = ThreadedServer(reverse_pairs).start()
    try:
        async def go() -> list[str | None]:
            async with await BrokerConnection.connect(server.addr, 2.0) as conn:
                answers = await asyncio.gather(
                    conn.call(build_request(RequestCode.GET_KV_CONFIG, {"key": "1"})),
                    conn.call(build_request(RequestCode.GET_KV_CONFIG, {"key": "2"})),
                )
                return [a.ext_get("value") for a in answers]

        assert asyncio.run(go()) == ["1", "2"]
    finally:
        server.stop()


def test_timeout_names_server_and_request() -> None:
    server = ThreadedServer(lambda cmd: None).start()  # accepts, never answers
    try:
        async def go() -> None:
            async with await NamesrvConnection.connect(server.addr, 0.2) as conn:
                await conn.get_route("orders")

        with pytest.raises(Unreachable) as info:
            asyncio.run(go())
    finally:
        server.stop()
    assert info.value.kind == "timeout"
    assert str(info.value) == f"{server.addr}: GET_ROUTEINFO_BY_TOPIC (105) for topic 'orders': no answer within 0.2 s"


def test_close_fails_pending_calls_with_the_reason() -> None:
    server = ThreadedServer(lambda cmd: None).start()
    try:
        async def go() -> None:
            conn = await NamesrvConnection.connect(server.addr, 5.0)
            pending = asyncio.ensure_future(conn.get_all_topics())
            await asyncio.sleep(0.05)
            await conn.close()
            await pending

        with pytest.raises(Unreachable) as info:
            asyncio.run(go())
    finally:
        server.stop()
    assert info.value.kind == "closed"
    assert "GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)" in str(info.value)


def test_refused_connection() -> None:
    addr = unused_addr()

    async def go() -> None:
        await NamesrvConnection.connect(addr, 1.0)

    with pytest.raises(Unreachable) as info:
        asyncio.run(go())
    assert info.value.kind == "refused" and str(info.value) == f"{addr}: connection refused"


def test_peer_closing_mid_request_and_garbage_frames() -> None:
    closer = ThreadedServer(lambda cmd: CLOSE).start()
    garbage = ThreadedServer(lambda cmd: b"\x00\x00\x00\x02ab").start()
    try:
        async def go(addr: str) -> None:
            async with await NamesrvConnection.connect(addr, 2.0) as conn:
                await conn.get_cluster_info()

        with pytest.raises(Unreachable) as closed:
            asyncio.run(go(closer.addr))
        with pytest.raises(BadResponse) as bad:
            asyncio.run(go(garbage.addr))
    finally:
        closer.stop()
        garbage.stop()
    assert closed.value.kind == "closed"
    assert str(closed.value) == f"{closer.addr}: GET_BROKER_CLUSTER_INFO (106): connection closed by the server"
    assert bad.value.kind == "protocol" and str(bad.value).startswith(f"{garbage.addr}: GET_BROKER_CLUSTER_INFO (106): malformed answer")
