"""``mqadmin bench`` runs against a real server and reports its ratios (small sizes here:
speed goals are for the benchmark runs recorded in the README, not for tests)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mqadmin.cli import app
from tests.nsprocess import NameServerProcess

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


def test_bench_register_compressed(namesrv: NameServerProcess) -> None:
    out = bench("register", "-n", namesrv.addr, "--topics", "300", "--compressed", "--repeat", "2")
    assert out["compressed"] is True and out["register_ms"] > 0 and out["parse_alone_ms"] > 0
    assert abs(out["ratio"] - out["register_ms"] / out["parse_alone_ms"]) < 0.05  # rounding of the ms figures


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
