"""``mqadmin bench`` runs against a real server and reports its ratios (small sizes here:
speed goals are for the benchmark runs recorded in the README, not for tests)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Callable

from typer.testing import CliRunner

from mqadmin.bench.load import EchoServer, distinct_topics_asked, drive_routes, master_request, topics_body
from mqadmin.cli import app
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import encode
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.test_route_answers_property import InProcessServer

runner = CliRunner()


def bench(*args: str) -> dict:
    result = runner.invoke(app, ["bench", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_bench_route(namesrv: NameServerProcess) -> None:
    out = bench("route", "-n", namesrv.addr, "--topics", "50", "--requests", "2000", "--conns", "2")
    assert out["namesrv"]["requests"] == 2000 and out["echo"]["requests"] == 2000
    assert 0 < out["ratio"] == round(out["namesrv"]["rps"] / out["echo"]["rps"], 3)
    assert out["namesrv"]["p50_ms"] <= out["namesrv"]["p99_ms"]


def test_bench_route_no_setup_without_brokers_is_one_clear_error(namesrv: NameServerProcess) -> None:
    result = runner.invoke(app, ["bench", "route", "-n", namesrv.addr, "--no-setup", "--requests", "100"])
    assert result.exit_code == 1
    assert "no route for 'bench_topic_000000'" in result.output and "Traceback" not in result.output


def _ratio_of_rounded(ratio: float, numerator: float, denominator: float, places: int = 2) -> bool:
    """Whether ``ratio`` (rounded to 0.01) can be numerator / denominator before both were
    rounded to ``places`` decimals: the bounds widen as the denominator shrinks, so a
    fast parse cannot make a correct report look wrong."""
    half = 0.5 * 10 ** -places
    low = (numerator - half) / (denominator + half)
    high = (numerator + half) / (denominator - half) if denominator > half else float("inf")
    return low - 0.005 <= ratio <= high + 0.005


def test_ratio_of_rounded_figures() -> None:
    assert _ratio_of_rounded(24.6, 1.23, 0.05)            # 1.234 / 0.0502, each rounded
    assert _ratio_of_rounded(22.85, 1.23, 0.05)           # 1.2341 / 0.054, each rounded
    assert not _ratio_of_rounded(10.0, 1.23, 0.05)        # no rounding gets there
    assert not _ratio_of_rounded(2.0, 4.0, 1.0)


def test_bench_register_compressed(namesrv: NameServerProcess) -> None:
    out = bench("register", "-n", namesrv.addr, "--topics", "2000", "--compressed", "--repeat", "3")
    assert (out["topics"], out["compressed"], out["floor"]) == (2000, True, "decompress + parse")
    assert out["register_ms"] > 0 and out["parse_alone_ms"] > 0
    # The reported ratio is the one of its two figures (it is computed before they are rounded).
    assert _ratio_of_rounded(out["ratio"], out["register_ms"], out["parse_alone_ms"]), out
    # What was sent and timed is the compressed body (the last of 1 + 3 DataVersions).
    names = [f"bench_topic_{i:06d}" for i in range(2000)]
    assert out["body_bytes"] == len(topics_body(names, counter=4, compressed=True)) < len(topics_body(names, counter=4))


def test_bench_memory() -> None:
    out = bench("memory", "--topics", "5000", "--brokers", "2")
    assert out["msgpack_bytes"] > 5000 * 20
    assert out["registry_rss_bytes"] > 0 and out["ratio"] > 0 and out["via_decode_rss_bytes"] > 0
    assert out["queue_layouts"] == 1  # every topic has the same queues on the same brokers


def test_bench_slow_readers() -> None:
    out = bench("slow-readers", "--clients", "3", "--requests", "500", "--brokers", "4")
    assert (out["clients"], out["requests_each"], out["clients_x_write_limit_mb"]) == (3, 500, 3.0)
    assert abs(out["ratio"] - out["rss_growth_mb"] / 3.0) < 0.05  # rounding of the MB figure
    assert out["reader_p99_ms"] > 0 and out["reader_p99_quiet_ms"] > 0


def test_bench_churn() -> None:
    out = bench("churn", "--brokers", "50")
    assert out["brokers"] == 50 and out["rss_before_mb"] > 0
    assert abs(out["ratio"] - out["rss_after_mb"] / out["rss_before_mb"]) < 0.005


def test_bench_fleet_against_another_name_server(start_namesrv: Callable[..., NameServerProcess]) -> None:
    """Every figure of issue #19 for both servers, and ours/theirs ratios (here two of ours)."""
    ours, theirs = start_namesrv(name="ours"), start_namesrv(name="theirs")
    out = bench("fleet", "-n", ours.addr, "--vs", theirs.addr, "--vs-pid", str(theirs.proc.pid),  # type: ignore[union-attr]
                "--requests", "2000", "--repeat", "1", "--conns", "2", "--inflight", "4", "--settle", "0.2")
    for side in (out["ours"], out["vs"]):
        assert side["register_first_ms"] > 0 and side["register_first_new_cluster_ms"] > 0
        assert side["reregister_unchanged_ms"] > 0
        assert side["reregister_1pct_changed_ms"] > 0 and side["longest_stall_ms"] > 0
        assert side["route_quiet"]["requests"] == side["route_under_churn"]["requests"] == 2000
        # the requests that walk every topic, each answered, with the probe's longest wait
        assert set(side["admin_ms"]) == {"topic_list", "topics_by_cluster", "wipe_write_perm", "add_write_perm",
                                         "unregister_broker"}
        assert all(isinstance(ms, float) and ms > 0 for ms in side["admin_ms"].values()), side["admin_ms"]
        assert side["longest_stall_admin_ms"] > 0
    assert out["ours"]["rss_growth_mb"] is None  # -n: ours is not our child here
    assert out["vs"]["rss_growth_mb"] is not None and out["vs"]["rss_growth_at_once_mb"] is not None
    assert out["ours"]["rss_growth_at_once_mb"] is None
    # CPU a request, first pass and the same queries again: only where the process is known
    assert out["vs"]["route_cpu_us_per_request_again"] > 0 and out["ours"]["route_cpu_us_per_request_again"] is None
    assert set(out["ratios"]) >= {"register_first", "register_first_new_cluster", "reregister_unchanged",
                                  "reregister_1pct_changed",
                                  "route_p99_under_churn", "longest_stall", "longest_stall_admin"}
    assert out["ratios"]["register_first"] > 0
    assert out["protocol_echo"]["requests"] == 2000 and out["protocol_echo"]["cpu_us_per_request"] >= 0
    # the floor is taken right before and right after our route CPU passes, and averaged
    runs = out["protocol_echo"]["cpu_us_per_request_runs"]
    assert len(runs) == 2 and out["protocol_echo"]["cpu_us_per_request"] == round(sum(runs) / 2, 2)
    assert "floor_runs" not in out["ours"] and "floor_runs" not in out["vs"]


def test_the_protocol_echo_answers_each_request_with_its_own_opaque() -> None:
    """The CPU floor does a name server's least work per request: read the header, answer
    with its opaque (the plain echo answers with canned bytes)."""
    echo = EchoServer(100, protocol=True)
    try:
        with RawClient(echo.addr) as client:
            first, second = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}), request(R.GET_KV_CONFIG, {})
            client.send_bytes(encode(first) + encode(second))
            answers = [client.recv(), client.recv()]
        assert [a.opaque for a in answers if a is not None] == [first.opaque, second.opaque]
        assert all(a is not None and a.code == 0 and len(a.body) == 100 for a in answers)
    finally:
        echo.close()


def test_distinct_topics_asked_is_what_a_server_builds_answers_for(tmp_path: Path) -> None:
    """bench fleet reports the first pass's share of a topic's first queries from this
    count; a real server keeping answers misses exactly that many times."""
    server = InProcessServer(tmp_path)
    try:
        topics = [f"t{i:03d}" for i in range(97)]
        with RawClient(server.addr) as broker:
            assert broker.call(master_request("C", "b", "127.0.0.1:10911", topics_body(topics))).code == 0
        for conns, requests in ((4, 60), (3, 200), (5, 1000)):
            server.on_loop(server.server.processor.route_answers.clear)
            before = server.server.processor.route_answers.misses
            asyncio.run(drive_routes(server.addr, topics, conns=conns, inflight=2, requests=requests))
            built = server.server.processor.route_answers.misses - before
            assert built == distinct_topics_asked(topics, conns=conns, requests=requests)
    finally:
        server.stop()
