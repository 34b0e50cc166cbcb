"""The four benchmarks. Each returns plain data: figures plus the ratio to its floor."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from nameserver.protocol.codes import RequestCode
from nameserver.protocol.command import request
from nameserver.protocol.compressed import decode_compressed

from ..client import NamesrvConnection
from .load import EchoServer, drive_routes, master_request, register_fleet, topics_body

Progress = Callable[[str], None]


def _median_time(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def _route_body_size(addr: str, topic: str) -> int:
    async with await NamesrvConnection.connect(addr) as conn:
        resp = await conn.call(request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
        if resp.code != 0:
            raise RuntimeError(f"{addr}: no route for {topic!r} (code {resp.code}); register brokers first or drop --no-setup")
        return len(resp.body)


async def _versus_echo(addr: str, topics: list[str], conns: int, inflight: int, requests: int,
                       say: Progress) -> dict[str, Any]:
    echo = EchoServer(await _route_body_size(addr, topics[0]))
    try:
        runs: dict[str, list[Any]] = {"echo": [], "namesrv": []}
        for round_ in range(2):  # interleaved, so machine noise hits both alike
            for name, target in (("echo", echo.addr), ("namesrv", addr)):
                say(f"route queries against {name}, round {round_ + 1}/2")
                runs[name].append(await drive_routes(target, topics, conns=conns, inflight=inflight,
                                                     requests=requests))
    finally:
        echo.close()
    best = {k: max(v, key=lambda t: t.rps) for k, v in runs.items()}
    return {"namesrv": best["namesrv"].to_obj(), "echo": best["echo"].to_obj(),
            "ratio": round(best["namesrv"].rps / best["echo"].rps, 3), "goal": ">= 0.7"}


async def bench_route(addr: str, *, topics: int, conns: int, inflight: int, requests: int, setup: bool,
                      say: Progress) -> dict[str, Any]:
    names = [f"bench_topic_{i:06d}" for i in range(topics)]
    held = []
    if setup:
        say(f"registering 2 brokers with {topics} topics")
        held = await register_fleet(addr, [("BenchCluster", f"bench-broker-{b}", f"127.0.0.1:{21000 + 2 * b}", names)
                                           for b in range(2)])
    try:
        result = await _versus_echo(addr, names, conns, inflight, requests, say)
    finally:
        for conn in held:
            await conn.close()
    return {"benchmark": "route", "topics": topics, "conns": conns, "inflight": inflight, **result}


async def bench_register(addr: str, *, topics: int, compressed: bool, repeat: int, say: Progress) -> dict[str, Any]:
    names = [f"bench_topic_{i:06d}" for i in range(topics)]
    say(f"registering a broker with {topics} topics, {repeat} times")
    samples = []
    conn = await NamesrvConnection.connect(addr, 60)
    try:
        for counter in range(1, repeat + 2):
            body = topics_body(names, counter=counter, compressed=compressed)  # a new DataVersion each time
            cmd = master_request("BenchCluster", "bench-register", "127.0.0.1:22000", body, compressed)
            start = time.perf_counter()
            resp = await conn.call(cmd, 60)
            if resp.code != 0:
                raise RuntimeError(f"{addr}: REGISTER_BROKER failed: {resp.code} {resp.remark}")
            if counter > 1:  # the first one creates the topics; measure the updates
                samples.append(time.perf_counter() - start)
    finally:
        await conn.close()
    parse = (lambda: decode_compressed(body)) if compressed else (lambda: json.loads(body))
    floor = _median_time(parse, repeat)
    took = statistics.median(samples)
    return {"benchmark": "register", "topics": topics, "compressed": compressed, "body_bytes": len(body),
            "register_ms": round(took * 1000, 2), "parse_alone_ms": round(floor * 1000, 2),
            "floor": "decompress + parse" if compressed else "json.loads",
            "ratio": round(took / floor, 2), "goal": "<= 3"}


def bench_memory(*, topics: int, brokers: int, say: Progress) -> dict[str, Any]:
    """Each figure in a fresh interpreter, so the resident size measures the registry alone."""
    def measure(mode: str) -> dict[str, int]:
        out = subprocess.run([sys.executable, "-m", "mqadmin.bench.memory", str(topics), str(brokers), mode],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    say(f"building a registry of {topics} topics x {brokers} brokers in a fresh process")
    alone = measure("registry")
    say("again through the server's JSON decode, in another fresh process")
    decoded = measure("decode")
    return {"benchmark": "memory", "topics": topics, "brokers": brokers,
            "registry_rss_bytes": alone["rss_bytes"], "msgpack_bytes": alone["msgpack_bytes"],
            "queue_layouts": alone["queue_layouts"],
            "ratio": round(alone["rss_bytes"] / alone["msgpack_bytes"], 2), "goal": "<= 2",
            "via_decode_rss_bytes": decoded["rss_bytes"],
            "via_decode_ratio": round(decoded["rss_bytes"] / decoded["msgpack_bytes"], 2)}


def rss(pid: int, field: str = "VmRSS") -> int:
    """Bytes of ``field`` (VmRSS: resident now, VmHWM: peak resident) of process ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for pid {pid}")


async def bench_fleet(addr: str, *, pid: int | None, conns: int, inflight: int, requests: int,
                      say: Progress) -> dict[str, Any]:
    """RocketMQ's own JMH route benchmark fleet: 4 clusters x 8 brokers, 10,000 topics per
    cluster (8 read / 8 write queues): registration, memory and route queries."""
    fleet = []
    all_topics: list[str] = []
    for c in range(4):
        topics = [f"c{c}_topic_{i:05d}" for i in range(10_000)]
        all_topics += topics
        fleet += [(f"FleetCluster{c}", f"fleet-c{c}-b{b}", f"127.0.0.1:{23000 + 16 * c + 2 * b}", topics)
                  for b in range(8)]
    gc.collect()
    rss_before = rss(pid) if pid else None
    say("registering 32 brokers x 10,000 topics")
    held = await register_fleet(addr, fleet)
    try:
        rss_after = rss(pid) if pid else None
        cluster, name, baddr, topics = fleet[0]
        bumped = [topics_body(topics, counter=n) for n in range(2, 7)]
        say("bumped re-registrations of one broker")
        samples = []
        for body in bumped:
            start = time.perf_counter()
            resp = await held[0].call(master_request(cluster, name, baddr, body), 60)
            samples.append(time.perf_counter() - start)
            if resp.code != 0:
                raise RuntimeError(f"{addr}: REGISTER_BROKER failed: {resp.code} {resp.remark}")
        took = statistics.median(samples)
        floor = _median_time(lambda: json.loads(bumped[0]), 5)
        routes = await _versus_echo(addr, all_topics, conns, inflight, requests, say)
    finally:
        for conn in held:
            await conn.close()
    return {
        "benchmark": "fleet", "brokers": 32, "topics": len(all_topics), "body_bytes": len(bumped[0]),
        "reregister_ms": round(took * 1000, 2), "json_loads_ms": round(floor * 1000, 2),
        "reregister_ratio": round(took / floor, 2), "reregister_goal": "<= 3, and < 31 ms (Java)",
        "rss_growth_mb": None if rss_before is None else round((rss_after - rss_before) / 2**20, 1),  # type: ignore[operator]
        "rss_goal": "<= 90 MB (Java grows ~90 MB)",
        "routes": routes,
    }


def start_local_server(tmp: str) -> tuple[subprocess.Popen[str], str]:
    """Our own name server as a child process, so its resident size can be read."""
    env = {**os.environ, "HOME": tmp}
    proc = subprocess.Popen([sys.executable, "-m", "mqadmin", "namesrv", "start", "--port", "0", "--listen",
                             "127.0.0.1", "--kv-config", os.path.join(tmp, "kv.json"), "--log-level", "WARNING"],
                            stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "namesrv.log"), "w"),
                            text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if "boot success" not in line:
        proc.kill()
        raise RuntimeError(f"local name server did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].replace("0.0.0.0", "127.0.0.1")


def run(coro: Any) -> Any:
    return asyncio.run(coro)
