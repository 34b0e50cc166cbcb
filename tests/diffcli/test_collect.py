"""collect_views against misbehaving name servers (small real TCP peers) and real ones."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import replace
from typing import Any, Callable

import pytest

from mqadmin.transport.client import build_request
from mqadmin.transport.collect import collect_views
from mqadmin.diff import ServerView
from mqadmin.transport.route_pump import route_request_frame
from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, QueueData, TopicList, TopicRouteData
from mqnamesrv.protocol.codes import RequestCode, ResponseCode
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.frame import encode
from tests.cli.conftest import Run
from tests.cli.fakes import CLOSE, ThreadedServer, unused_addr
from tests.diffcli.conftest import Brokers

Cli = Callable[..., Run]
ROUTE = TopicRouteData((QueueData("broker-a", 4, 4, 6),), (BrokerData("DefaultCluster", "broker-a", {0: "h:1"}),))
CLUSTER = ClusterInfo({"broker-a": BrokerData("DefaultCluster", "broker-a", {0: "h:1"})}, {"DefaultCluster": ("broker-a",)})


@pytest.mark.parametrize("topic", ["order_topic", "%RETRY%group|x-1", "订单", 'quote"back\\slash/', "tab\there"],
                         ids=["plain", "retry-chars", "non-ascii", "json-escapes", "control-char"])
def test_route_frame_template_is_byte_identical_to_the_codec(topic: str) -> None:
    assert route_request_frame(topic, 123456) == encode(replace(build_request(105, {"topic": topic}), opaque=123456))


def fake_namesrv(routes: Callable[[RemotingCommand], object], topics: tuple[str, ...] = ("t1", "t2", "t3"),
                 cluster: Callable[[RemotingCommand], object] | None = None) -> Callable[[RemotingCommand], object]:
    """A responder: cluster info, topic list, an empty KV namespace, and ``routes`` for 105."""

    def respond(cmd: RemotingCommand) -> object:
        if cmd.code == RequestCode.GET_BROKER_CLUSTER_INFO:
            return cluster(cmd) if cluster else cmd.response(ResponseCode.SUCCESS, body=CLUSTER.encode())
        if cmd.code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
            return cmd.response(ResponseCode.SUCCESS, body=TopicList(topics).encode())
        if cmd.code == RequestCode.GET_KVLIST_BY_NAMESPACE:
            return cmd.response(ResponseCode.QUERY_NOT_FOUND, remark="no such namespace")
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return routes(cmd)
        return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED)

    return respond


def by_topic(cmd: RemotingCommand) -> object:
    topic = cmd.ext_get("topic")
    if topic == "t2":
        return cmd.response(ResponseCode.SYSTEM_ERROR, remark="disk on fire\nSee http://faq")
    if topic == "t3":
        return cmd.response(ResponseCode.TOPIC_NOT_EXIST, remark="No topic route info in name server for the topic")
    return cmd.response(ResponseCode.SUCCESS, body=ROUTE.encode(standard=True))


def collect(addrs: list[str], **kw: Any) -> list[ServerView]:
    return asyncio.run(collect_views(addrs, **kw))


def test_each_answer_kind_and_the_absence_rule(fake_server: Callable[..., ThreadedServer]) -> None:
    server = fake_server(fake_namesrv(by_topic, topics=("t1", "t2", "t3", "t4")))
    progress: list[tuple[str, int, int]] = []
    [view] = collect([server.addr], progress=lambda *a: progress.append(a))
    assert view.ok and view.cluster_info == CLUSTER and view.topic_list == ("t1", "t2", "t3", "t4")
    assert view.topics == {"t1": ROUTE, "t3": None, "t4": ROUTE}  # t2 failed: left out
    assert view.topics["t1"] is view.topics["t4"]  # equal bodies are decoded once
    assert view.kv == {"ORDER_TOPIC_CONFIG": {}}  # QUERY_NOT_FOUND: an empty namespace
    assert view.config is None
    assert view.failures == (f"{server.addr}: GET_ROUTEINFO_BY_TOPIC (105) for topic 't2': SYSTEM_ERROR (1): disk on fire",)
    assert view.latency_ms is not None and view.latency_ms > 0
    assert progress[0] == (server.addr, 0, 4) and progress[-1] == (server.addr, 4, 4)


def test_silent_server_is_given_up_after_the_timeout_with_bounded_pipelining(
        fake_server: Callable[..., ThreadedServer]) -> None:
    topics = tuple(f"t{i}" for i in range(20))
    server = fake_server(fake_namesrv(lambda cmd: None, topics=topics))
    start = time.monotonic()
    [view] = collect([server.addr], timeout=0.5, concurrency=5)
    assert 0.4 < time.monotonic() - start < 3
    assert view.ok and view.topics == {}
    assert view.failures == (
        f"{server.addr}: GET_ROUTEINFO_BY_TOPIC (105) for 20 of 20 topics (first 't0'): no answer within 0.5 s",)
    assert sum(c.code == RequestCode.GET_ROUTEINFO_BY_TOPIC for c in server.requests) == 5


def test_connection_closed_under_the_routes(fake_server: Callable[..., ThreadedServer]) -> None:
    server = fake_server(fake_namesrv(lambda cmd: CLOSE, topics=("t1", "t2")))
    [view] = collect([server.addr], timeout=2)
    assert view.ok and view.topics == {} and view.cluster_info == CLUSTER
    assert view.failures == (
        f"{server.addr}: GET_ROUTEINFO_BY_TOPIC (105) for 2 of 2 topics (first 't1'): connection closed by the server",)


def test_garbage_answer_closes_the_route_connection(fake_server: Callable[..., ThreadedServer]) -> None:
    server = fake_server(fake_namesrv(lambda cmd: b"\x00\x00\x00\x02\x00\x00", topics=("t1",)))
    [view] = collect([server.addr], timeout=2)
    assert view.ok and view.topics == {}
    [line] = view.failures
    assert "malformed answer: frame length 2 is shorter than the header-length word" in line


def test_cluster_info_refused_but_routes_answered(fake_server: Callable[..., ThreadedServer]) -> None:
    server = fake_server(fake_namesrv(by_topic, topics=("t1",),
                                      cluster=lambda cmd: cmd.response(ResponseCode.SYSTEM_BUSY, remark="busy")))
    [view] = collect([server.addr])
    assert view.ok and view.cluster_info is None and view.topics == {"t1": ROUTE}
    assert view.failures == (f"{server.addr}: GET_BROKER_CLUSTER_INFO (106): SYSTEM_BUSY (2): busy",)


def test_unreachable_and_silent_servers_get_an_error(fake_server: Callable[..., ThreadedServer]) -> None:
    silent = fake_server(lambda cmd: None)
    dead = unused_addr()
    views = collect([dead, silent.addr], timeout=0.3)
    assert [v.addr for v in views] == [dead, silent.addr]
    assert views[0].error == f"{dead}: GET_BROKER_CLUSTER_INFO (106): connection refused"
    assert views[1].error == f"{silent.addr}: GET_BROKER_CLUSTER_INFO (106): no answer within 0.3 s"
    assert views[1].latency_ms is not None and views[1].latency_ms >= 300
    assert "2 ServerViews" in repr(views)  # short: asyncio.run formats it (see transport/collect.py)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        collect(["127.0.0.1:1"], concurrency=0)
    with pytest.raises(ValueError, match="timeout"):
        collect(["127.0.0.1:1"], timeout=0)


def test_failed_requests_make_the_command_exit_3(cli: Cli, fake_server: Callable[..., ThreadedServer]) -> None:
    server = fake_server(fake_namesrv(by_topic, topics=("t1", "t2")))
    run = cli("diff-namesrv", "-n", server.addr)
    assert run.code == 3
    summary = next(line for line in run.out.splitlines() if line.startswith("A "))
    assert summary.split()[:3] == ["A", server.addr, "answered"]
    assert summary.split()[5:8] == ["1", "2", "1"]  # brokers, topics, routes (t2 failed)
    assert run.err_lines == [
        f"mqadmin: error: {server.addr}: GET_ROUTEINFO_BY_TOPIC (105) for topic 't2': SYSTEM_ERROR (1): disk on fire"]
    doc = cli("diff-namesrv", "-n", server.addr, "-o", "json").json()
    assert (doc["status"], doc["exit_status"]) == ("partial", 3)
    assert doc["servers"][0]["failures"] == [
        f"{server.addr}: GET_ROUTEINFO_BY_TOPIC (105) for topic 't2': SYSTEM_ERROR (1): disk on fire"]


def test_union_of_topic_lists_and_kv_and_config_on_real_servers(addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs[:1], "broker-a", "127.0.0.1:10911", {"only_on_a": 4})
    brokers(addrs[1:2], "broker-a", "127.0.0.1:10911", {"only_on_b": 4})
    views = collect(addrs, include_config=True, kv_namespaces=("ORDER_TOPIC_CONFIG", "NO_SUCH_NS"))
    assert [sorted(v.topics) for v in views] == [["only_on_a", "only_on_b"]] * 3
    assert [v.topics["only_on_a"] is None for v in views] == [False, True, True]
    assert [v.topic_list for v in views] == [("only_on_a",), ("only_on_b",), ()]
    assert all(v.kv == {"ORDER_TOPIC_CONFIG": {}, "NO_SUCH_NS": {}} for v in views)
    assert all(v.config and v.config["listenPort"] for v in views)
    assert all(not v.failures for v in views)
    topic_only = collect(addrs, topics=["only_on_b", "nowhere"], kv_namespaces=())
    assert [v.topics for v in topic_only][0] == {"only_on_b": None, "nowhere": None}
    assert [v.topic_list for v in topic_only] == [(), ("only_on_b",), ()]


def test_help_in_a_real_process() -> None:
    out = subprocess.run([sys.executable, "-m", "mqadmin", "diff-namesrv", "--help"], capture_output=True, text=True,
                         env={"COLUMNS": "120", "PATH": "/usr/bin"})
    assert out.returncode == 0
    assert "--consumers" in out.stdout and "--watch" in out.stdout and "Exit codes:" in out.stdout

