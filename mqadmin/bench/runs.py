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
from typing import Any, Awaitable, Callable

from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.compressed import decode_compressed

from ..transport.client import NamesrvConnection
from .load import EchoServer, distinct_topics_asked, drive_routes, master_request, register_fleet, topics_body

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


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _fleet() -> list[tuple[str, str, str, list[str]]]:
    """RocketMQ's JMH route benchmark fleet: 4 clusters x 8 brokers, each broker of a
    cluster with the cluster's 10,000 topics (8 read / 8 write queues)."""
    fleet = []
    for c in range(4):
        topics = [f"c{c}_topic_{i:05d}" for i in range(10_000)]
        fleet += [(f"FleetCluster{c}", f"fleet-c{c}-b{b}", f"127.0.0.1:{23000 + 16 * c + 2 * b}", topics)
                  for b in range(8)]
    return fleet


def _one_percent_changed(topics: list[str], n: int) -> list[str]:
    """``topics`` with every hundredth replaced by a topic new in round ``n``."""
    return [f"{t}_r{n}" if i % 100 == n % 100 else t for i, t in enumerate(topics)]


async def _timed_registrations(conn: NamesrvConnection, addr: str, cluster: str, name: str, baddr: str,
                               bodies: list[bytes]) -> float:
    """Median seconds per registration, client side (send to answer), one after another."""
    samples = []
    for body in bodies:
        start = time.perf_counter()
        resp = await conn.call(master_request(cluster, name, baddr, body), 60)
        samples.append(time.perf_counter() - start)
        if resp.code != 0:
            raise RuntimeError(f"{addr}: REGISTER_BROKER failed: {resp.code} {resp.remark}")
    return statistics.median(samples)


async def _churn(conn: NamesrvConnection, addr: str, broker: tuple[str, str, str, list[str]], rounds: int,
                 until: asyncio.Event) -> None:
    """One 10k-topic broker re-registering back to back, each time bumped with 1% changed."""
    cluster, name, baddr, topics = broker
    bodies = [topics_body(_one_percent_changed(topics, n), counter=1000 + n) for n in range(rounds)]
    n = 0
    while not until.is_set():
        await _timed_registrations(conn, addr, cluster, name, baddr, [bodies[n % rounds]])
        n += 1


async def _fleet_figures(addr: str, pid: int | None, *, conns: int, inflight: int, requests: int, repeat: int,
                         settle: float, say: Progress,
                         floor: Callable[[int], Awaitable[None]] | None = None) -> dict[str, Any]:
    """Every fleet figure of one name server (``pid`` None: no memory or CPU figures).
    Memory growth is read as the last registration is answered and again ``settle``
    seconds later: what the server holds for the fleet once its periodic work ran
    (ours gives the parse's freed heap back then), which is the figure compared.
    ``floor``, if given (called with the route body's size), is measured right before
    the route CPU passes and right after them: this machine's speed drifts by up to 1.6x
    within minutes, so a floor taken apart from the passes it divides can be off by as much."""
    fleet = _fleet()
    all_topics = sorted({t for *_, topics in fleet for t in topics})
    gc.collect()
    rss_before = rss(pid) if pid else None
    say(f"{addr}: registering 32 brokers x 10,000 topics")
    held = await register_fleet(addr, fleet)
    try:
        rss_at_once = rss(pid) if pid else None
        if pid and settle:
            say(f"{addr}: {settle:g} s for the server to settle")
            await asyncio.sleep(settle)
        rss_after = rss(pid) if pid else None
        route_bytes = await _route_body_size(addr, all_topics[0])
        cluster, name, baddr, topics = fleet[0]
        say(f"{addr}: first registrations of new 10k-topic brokers")
        first = []
        for i in range(repeat):
            conn = await NamesrvConnection.connect(addr, 60)
            held.append(conn)
            first.append(await _timed_registrations(conn, addr, cluster, *_joining(i),
                                                    [topics_body(topics)]))
        # The first broker of a new cluster: topics no broker registered yet (the joining
        # brokers above find their topics there already).
        say(f"{addr}: first registrations of the first broker of new clusters")
        first_alone = []
        for i in range(repeat):
            conn = await NamesrvConnection.connect(addr, 60)
            held.append(conn)
            first_alone.append(await _timed_registrations(
                conn, addr, f"FleetNewCluster{i}", f"fleet-alone-{i}", f"127.0.0.1:{25000 + 2 * i}",
                [topics_body([f"n{i}_{topic}" for topic in topics])]))
        say(f"{addr}: bumped re-registrations, topics unchanged and 1% changed")
        unchanged = await _timed_registrations(held[0], addr, cluster, name, baddr,
                                               [topics_body(topics, counter=n) for n in range(2, 2 + repeat)])
        changed = await _timed_registrations(held[0], addr, cluster, name, baddr, [
            topics_body(_one_percent_changed(topics, n), counter=n) for n in range(100, 100 + repeat)])
        if floor is not None:
            say("the protocol echo, before the route CPU passes")
            await floor(route_bytes)
        say(f"{addr}: route queries, quiet")
        cpu = _cpu_seconds(pid) if pid else None
        quiet = await drive_routes(addr, all_topics, conns=conns, inflight=inflight, requests=requests)
        cpu_per_request = None if cpu is None else (_cpu_seconds(pid) - cpu) / quiet.requests  # type: ignore[arg-type]
        # The same queries again, nothing changed meanwhile: what clients polling every 30 s
        # cost between two changes (the first pass answered each topic for the first time).
        cpu = _cpu_seconds(pid) if pid else None
        again = await drive_routes(addr, all_topics, conns=conns, inflight=inflight, requests=requests)
        cpu_again = None if cpu is None else (_cpu_seconds(pid) - cpu) / again.requests  # type: ignore[arg-type]
        if floor is not None:
            say("the protocol echo, after the route CPU passes")
            await floor(route_bytes)
        say(f"{addr}: the loop's longest stall while one broker re-registers back to back")
        until = asyncio.Event()
        churn = asyncio.ensure_future(_churn(held[1], addr, fleet[1], repeat, until))
        stall = await _probe_stall_for(addr, until, seconds=3.0)
        await churn
        say(f"{addr}: route queries under that churn")
        until = asyncio.Event()
        churn = asyncio.ensure_future(_churn(held[1], addr, fleet[1], repeat, until))
        try:
            busy = await drive_routes(addr, all_topics, conns=conns, inflight=inflight, requests=requests)
        finally:
            until.set()
            await churn
        say(f"{addr}: the loop's longest stall while admin requests walk every topic")
        admin, admin_stall = await _admin_walks(addr, fleet, (cluster, *_joining(0)))
    finally:
        for conn in held:
            await conn.close()
    ms = lambda s: round(s * 1000, 2)  # noqa: E731
    return {
        "route_body_bytes": route_bytes, "register_first_ms": ms(statistics.median(first)),
        "register_first_new_cluster_ms": ms(statistics.median(first_alone)), "reregister_unchanged_ms": ms(unchanged),
        "reregister_1pct_changed_ms": ms(changed),
        "route_quiet": quiet.to_obj(), "route_under_churn": busy.to_obj(), "longest_stall_ms": ms(stall),
        "admin_ms": admin, "longest_stall_admin_ms": ms(admin_stall),
        "route_cpu_us_per_request": None if cpu_per_request is None else round(cpu_per_request * 1e6, 1),
        "route_cpu_us_per_request_again": None if cpu_again is None else round(cpu_again * 1e6, 1),
        # the first pass's share of queries that are a topic's first (its answer built, not reused)
        "route_first_pass_first_queries": round(distinct_topics_asked(all_topics, conns=conns, requests=requests)
                                                / quiet.requests, 3),
        "rss_growth_mb": None if rss_before is None else round((rss_after - rss_before) / 2**20, 1),  # type: ignore[operator]
        "rss_growth_at_once_mb": None if rss_before is None else round((rss_at_once - rss_before) / 2**20, 1),  # type: ignore[operator]
    }


def _joining(i: int) -> tuple[str, str]:
    """The name and address of the i-th broker joining a fleet cluster (``_fleet_figures``)."""
    return f"fleet-new-{i}", f"127.0.0.1:{24000 + 2 * i}"


async def _admin_walks(addr: str, fleet: list[tuple[str, str, str, list[str]]],
                       leaving: tuple[str, str, str]) -> tuple[dict[str, Any], float]:
    """The requests that walk every topic, one after another with the stall probe running:
    each one's time client side in ms (or the code it was refused with), and the longest
    a lone route query waited meanwhile, in seconds (issue #19: no request waits behind
    another for more than ~10 ms). The broker whose write perm is wiped and restored is
    one the churn does not use; the one unregistered, ``leaving`` (cluster, name,
    address), is one nothing after this stage uses."""
    cluster, wiped = fleet[2][0], fleet[2][1]
    asks = [
        ("topic_list", request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {})),
        ("topics_by_cluster", request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster})),
        ("wipe_write_perm", request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": wiped})),
        ("add_write_perm", request(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": wiped})),
        ("unregister_broker", request(RequestCode.UNREGISTER_BROKER, {
            "clusterName": leaving[0], "brokerName": leaving[1], "brokerAddr": leaving[2], "brokerId": "0"})),
    ]
    times: dict[str, Any] = {}

    async def walk() -> None:
        await asyncio.sleep(0.3)  # the probe asking a while first: its worst so far is the floor
        async with await NamesrvConnection.connect(addr, 60) as conn:
            for name, cmd in asks:
                start = time.perf_counter()
                resp = await conn.call(cmd, 60)
                times[name] = round((time.perf_counter() - start) * 1000, 2) if resp.code == 0 else f"code {resp.code}"
        await asyncio.sleep(0.1)

    return times, await _probe_stall_while(addr, walk)


async def _probe_stall_for(addr: str, until: asyncio.Event, seconds: float) -> float:
    """The longest a lone, cheap request waited for its answer over ``seconds``, then sets
    ``until`` (``_probe_stall_while``)."""
    async def wait() -> None:
        try:
            await asyncio.sleep(seconds)
        finally:
            until.set()
    return await _probe_stall_while(addr, wait)


async def _probe_stall_while(addr: str, during: Callable[[], Awaitable[None]]) -> float:
    """The longest a lone, cheap request waited for its answer while ``during()`` ran. On
    an otherwise idle connection, from a process of its own (so the load generator's own
    pauses do not count), that is how long the server's loop was held."""
    probe = subprocess.Popen([sys.executable, "-m", "mqadmin.bench.probe", addr, "c0_topic_00000"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert probe.stdin is not None and probe.stdout is not None
    try:
        await asyncio.to_thread(probe.stdout.readline)  # "ready"
        await during()
    finally:
        probe.stdin.close()
    out = await asyncio.to_thread(probe.stdout.read)
    probe.wait(10)
    return float(out.split()[-1])


async def _echo_run(echo: EchoServer, topics: list[str], conns: int, inflight: int, requests: int) -> dict[str, Any]:
    cpu = _cpu_seconds(echo.proc.pid)
    run = await drive_routes(echo.addr, topics, conns=conns, inflight=inflight, requests=requests)
    return {**run.to_obj(), "cpu_us_per_request": round((_cpu_seconds(echo.proc.pid) - cpu) / run.requests * 1e6, 1)}


async def _echo_floor(body_size: int, topics: list[str], conns: int, inflight: int, requests: int,
                      protocol: bool = False) -> dict[str, Any]:
    echo = EchoServer(body_size, protocol)
    try:
        return await _echo_run(echo, topics, conns, inflight, requests)
    finally:
        echo.close()


def _ratio(ours: Any, theirs: Any) -> float | None:
    return None if not ours or not theirs else round(ours / theirs, 3)


async def bench_fleet(addr: str, *, pid: int | None, conns: int, inflight: int, requests: int, repeat: int = 5,
                      vs: str | None = None, vs_pid: int | None = None, settle: float = 6.0,
                      say: Progress) -> dict[str, Any]:
    """The fleet, on ``addr`` and (``vs``) on another name server, figure by figure, with
    ours/theirs ratios and the echo floor for route CPU. The goals are issue #19's."""
    some = [f"c0_topic_{i:05d}" for i in range(10_000)]
    # The plain echo's cost is its system calls alone; the protocol echo also parses each
    # header and answers with its opaque, the least any name server does per request. It
    # runs right before and right after our route CPU passes, and the mean is the floor.
    protocol: list[EchoServer] = []  # started at the first run, when the route body's size is known
    floor_runs: list[dict[str, Any]] = []

    async def floor(body_size: int) -> None:
        if not protocol:
            protocol.append(EchoServer(body_size, protocol=True))
        floor_runs.append(await _echo_run(protocol[0], some, conns, inflight, requests))

    try:
        ours = await _fleet_figures(addr, pid, conns=conns, inflight=inflight, requests=requests, repeat=repeat,
                                    settle=settle, say=say, floor=floor)
    finally:
        for echo_server in protocol:
            echo_server.close()
    protocol_echo = {**floor_runs[-1], "cpu_us_per_request": round(statistics.mean(
        run["cpu_us_per_request"] for run in floor_runs), 2),
        "cpu_us_per_request_runs": [run["cpu_us_per_request"] for run in floor_runs]}
    say("echo floor")
    echo = await _echo_floor(ours["route_body_bytes"], some, conns, inflight, requests)
    result: dict[str, Any] = {"benchmark": "fleet", "brokers": 32, "topics": 40_000,
                              "body_bytes": len(topics_body(_fleet()[0][3])), "ours": ours, "echo": echo,
                              "protocol_echo": protocol_echo,
                              "route_cpu_vs_echo": _ratio(ours["route_cpu_us_per_request"],
                                                          echo["cpu_us_per_request"]),
                              "route_cpu_vs_protocol_echo": _ratio(ours["route_cpu_us_per_request"],
                                                                   protocol_echo["cpu_us_per_request"]),
                              "route_cpu_again_vs_protocol_echo": _ratio(ours["route_cpu_us_per_request_again"],
                                                                         protocol_echo["cpu_us_per_request"]),
                              "goals": {"route_cpu_vs_protocol_echo": "<= 1.2", "longest_stall_ms": "<= ~10",
                                        "longest_stall_admin_ms": "<= ~10"}}
    if vs is not None:
        theirs = await _fleet_figures(vs, vs_pid, conns=conns, inflight=inflight, requests=requests, repeat=repeat,
                                      settle=settle, say=say)
        result["vs"] = {"addr": vs, **theirs}
        result["ratios"] = {
            "register_first": _ratio(ours["register_first_ms"], theirs["register_first_ms"]),
            "register_first_new_cluster": _ratio(ours["register_first_new_cluster_ms"],
                                                 theirs["register_first_new_cluster_ms"]),
            "reregister_unchanged": _ratio(ours["reregister_unchanged_ms"], theirs["reregister_unchanged_ms"]),
            "reregister_1pct_changed": _ratio(ours["reregister_1pct_changed_ms"], theirs["reregister_1pct_changed_ms"]),
            "route_p99_under_churn": _ratio(ours["route_under_churn"]["p99_ms"], theirs["route_under_churn"]["p99_ms"]),
            "longest_stall": _ratio(ours["longest_stall_ms"], theirs["longest_stall_ms"]),
            "longest_stall_admin": _ratio(ours["longest_stall_admin_ms"], theirs["longest_stall_admin_ms"]),
            "rss_growth": _ratio(ours["rss_growth_mb"], theirs["rss_growth_mb"]),
        }
        result["goals"].update({"register_first": "<= 1", "register_first_new_cluster": "<= 1",
                                "reregister_unchanged": "<= 0.25",
                                "reregister_1pct_changed": "<= 0.5", "route_p99_under_churn": "<= 0.5",
                                "rss_growth": "<= 0.1"})
    return result


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
