"""Benchmarks of the hardening goals of issue 17, against our own server (its resident
size is read from /proc): clients that never read, and broker churn. Each figure comes
with its ratio to a floor measured in the same run."""

from __future__ import annotations

import asyncio
import socket
import statistics
import time
from typing import Any, Callable

from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import encode

from ..transport.client import NamesrvConnection
from .load import master_request, topics_body
from .runs import rss

Progress = Callable[[str], None]
#: the server's default writeBufferLimit: what each silent client may cost at most
WRITE_LIMIT = 1024 * 1024


def _rss_mb(pid: int, field: str = "VmRSS") -> float:
    return rss(pid, field) / 2**20


async def _latencies(addr: str, topic: str, count: int) -> list[float]:
    async with await NamesrvConnection.connect(addr) as conn:
        out = []
        for _ in range(count):
            start = time.perf_counter()
            await conn.call(request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
            out.append((time.perf_counter() - start) * 1000)
    return out


def _p99(samples: list[float]) -> float:
    return round(statistics.quantiles(samples, n=100)[98], 2)


async def bench_slow_readers(addr: str, *, pid: int, clients: int, requests: int, brokers: int,
                             say: Progress) -> dict[str, Any]:
    """``clients`` connections each send ``requests`` route queries for a route of
    ``brokers`` brokers and never read. Figures: peak resident growth against
    clients x writeBufferLimit, and a reading client's p99 against the same run's p99
    before the attack."""
    say(f"registering {brokers} brokers of one topic")
    held = []
    for i in range(brokers):
        conn = await NamesrvConnection.connect(addr)
        await conn.call(master_request("BenchCluster", f"bench-broker-{i:03d}", f"10.0.{i // 250}.{i % 250}:10911",
                                       topics_body(["bench_big_route"])))
        held.append(conn)
    try:
        quiet = await _latencies(addr, "bench_big_route", 200)
        before = _rss_mb(pid)
        payload = b"".join(encode(request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "bench_big_route"}, opaque=i))
                           for i in range(requests))
        host, port = addr.rsplit(":", 1)
        say(f"{clients} clients send {requests} requests each and never read")
        socks = []
        for _ in range(clients):
            sock = socket.create_connection((host, int(port)))
            sock.setblocking(False)
            socks.append((sock, memoryview(payload)))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(view for _, view in socks):
            for n, (sock, view) in enumerate(socks):
                try:
                    socks[n] = (sock, view[sock.send(view):]) if view else (sock, view)
                except BlockingIOError:
                    pass
            await asyncio.sleep(0.005)
        attacked = await _latencies(addr, "bench_big_route", 200)
        growth = _rss_mb(pid, "VmHWM") - before
        for sock, _ in socks:
            sock.close()
    finally:
        for conn in held:
            await conn.close()
    bound = clients * WRITE_LIMIT / 2**20
    return {"benchmark": "slow-readers", "clients": clients, "requests_each": requests,
            "rss_growth_mb": round(growth, 1), "clients_x_write_limit_mb": round(bound, 1),
            "ratio": round(growth / bound, 2), "goal": "growth < 100 MB for 50 clients x 20,000 requests",
            "reader_p99_ms": _p99(attacked), "reader_p99_quiet_ms": _p99(quiet),
            "latency_ratio": round(_p99(attacked) / _p99(quiet), 2)}


async def bench_churn(addr: str, *, pid: int, brokers: int, say: Progress) -> dict[str, Any]:
    """``brokers`` brokers register (two topics each) and unregister, one after the
    other; figures: resident size after against before (goal: within a few MB)."""
    async with await NamesrvConnection.connect(addr) as conn:
        async def churn(first: int, count: int) -> None:
            for i in range(first, first + count):
                name, baddr = f"churn-{i}", f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}:10911"
                await conn.call(master_request("BenchCluster", name, baddr, topics_body([f"{name}-a", f"{name}-b"])))
                await conn.call(request(RequestCode.UNREGISTER_BROKER, {
                    "clusterName": "BenchCluster", "brokerName": name, "brokerAddr": baddr, "brokerId": "0"}))

        await churn(0, 200)  # first-use allocations are not growth
        await asyncio.sleep(0.5)  # a broker scan trims freed memory
        before = _rss_mb(pid)
        say(f"{brokers} brokers register and leave")
        start = time.perf_counter()
        await churn(1000, brokers)
        took = time.perf_counter() - start
        await asyncio.sleep(6)  # the next scans (every 5 s by default) trim what the bodies left
        after = _rss_mb(pid)
    return {"benchmark": "churn", "brokers": brokers, "seconds": round(took, 1),
            "rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1),
            "ratio": round(after / before, 3), "growth_mb": round(after - before, 1),
            "goal": "within a few MB"}
