"""Wall time and memory of ``mqadmin snapshot`` rounds over the JMH fleet (issue #22).

Starts ``--servers`` of our name servers on 127.0.0.1, registers on each RocketMQ's JMH
route-benchmark fleet (4 clusters x 8 brokers, 40,000 topics; ``mqadmin bench fleet``'s
registration, connections held open as brokers hold theirs), then runs ``--rounds``
snapshot rounds back to back into a temporary directory, in this process, through the
``capture_round`` and ``SnapshotEncoder`` that ``snapshot`` runs. Before each round after
the first, one broker re-registers with another 1 % of its topics on 4 queues instead of 8
(200 routes change per server; ``--no-churn`` leaves the fleet alone).

It prints per round the wall time (round 0 is the keyframe, the others deltas), the
bytes written, and the resident size of this process after round 1 and round N; and,
as the floor, the route pump alone over the same servers and topics (every topic's
route from every server, no view, no file): the ratio steady round / pump says how
much a round costs beyond fetching the answers. Goals: a steady round of 5 x 40,000
well inside a minute (<= 15 s here), a keyframe round < 60 s.

    python -m mqadmin.bench.snapshot_history [--servers 5] [--rounds 6] [--format v2|v1] [--no-churn] [--old-path]

``--old-path`` also times, after each round, what the round's files cost the way
``snapshot`` made them before (``encode_capture`` of every view, then
``DeltaEncoder.encode`` re-splitting it), over the same views and not written: the
ratio old / new of that step is measured in one run.

The machine's load average is printed before and after: the name servers and this
client share the cores with whatever else runs, and wall times move with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mqadmin.bench.load import master_request, register_fleet
from mqadmin.bench.runs import _fleet
from mqadmin.pipeline.capture import SnapshotPlan, capture_round
from mqadmin.pipeline.delta import DeltaEncoder
from mqadmin.pipeline.schema import capture_of, encode_capture
from mqadmin.pipeline.snapshot_encoder import SnapshotEncoder
from mqadmin.transport.route_pump import RouteBodies, RoutePump
from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.register import register_body
from tests.nsprocess import NameServerProcess

#: No broker of the fleet expires, and no idle broker connection is closed (which would
#: unregister it), while the rounds run: there are no heartbeats here.
PROPERTIES = {"brokerChannelExpiredTime": "3600000", "serverChannelMaxIdleTimeSeconds": "3600"}


def rss() -> int:
    """Resident bytes of this process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_of(pids: list[int]) -> float:
    """user+sys seconds of these processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def pump_floor(addrs: list[str], topics: list[str]) -> float:
    """Seconds to fetch every topic's route from every server with the route pump alone."""
    start = time.perf_counter()

    async def one(addr: str) -> int:
        pump = await RoutePump.open(addr, timeout=30.0, concurrency=64, bodies=RouteBodies())
        try:
            pump.add(topics)
            pump.finish()
            await pump.wait()
            return len(pump.routes)
        finally:
            pump.close()

    answered = await asyncio.gather(*(one(a) for a in addrs))
    assert all(n == len(topics) for n in answered), answered
    return time.perf_counter() - start


async def bench(addrs: list[str], pids: list[int], args: argparse.Namespace, out: Path) -> dict[str, Any]:
    fleet = _fleet()
    topics = sorted({t for *_, names in fleet for t in names})
    t0 = time.perf_counter()
    held = [await register_fleet(addr, fleet) for addr in addrs]
    setup = time.perf_counter() - t0
    print(f"registered {len(fleet)} brokers x {len(topics):,} topics on {len(addrs)} name servers in {setup:.1f} s",
          flush=True)
    try:
        floors = [await pump_floor(addrs, topics) for _ in range(2)]
        rounds: list[dict[str, Any]] = []
        plan = SnapshotPlan(addrs, out, every=0.0, timeout=30.0, version=2 if args.format == "v2" else 1)
        encoder = SnapshotEncoder(plan.version, plan.keyframe_every)
        old = DeltaEncoder(plan.keyframe_every)  # --old-path: the previous encoding and the new one, not written
        shadow = SnapshotEncoder(plan.version, plan.keyframe_every)
        cluster, name, baddr, names = fleet[1]

        async def churn(n: int) -> None:
            """One broker re-registers with 1 % of its topics on 4 queues instead of 8."""
            body = register_body(RegisterBrokerBody(DataVersion(1000 + n, 1_700_000_000_000 + n), {
                t: TopicConfig(t, *((4, 4) if i % 100 == n % 100 else (8, 8))) for i, t in enumerate(names)}))
            for conns in held:
                await conns[1].call(master_request(cluster, name, baddr, body), 60)

        for n in range(args.rounds):
            if n and args.churn:
                await churn(n)
            before = disk(out) if out.exists() else 0
            start, cpu, ns_cpu = time.perf_counter(), own_cpu(), cpu_of(pids)
            views = await capture_round(plan, n, None, encoder)
            wall = time.perf_counter() - start
            cpu, ns_cpu = own_cpu() - cpu, cpu_of(pids) - ns_cpu
            assert all(v.ok and not v.failures for v in views), [v.error or v.failures for v in views]
            held_now = encoder.retained()
            rounds.append({"round": n, "wall_s": wall, "cpu_s": cpu, "servers_cpu_s": ns_cpu,
                           "bytes": disk(out) - before, "rss": rss()})
            print(f"round {n}: {wall:6.2f} s wall, {cpu:5.2f} s cpu here, {ns_cpu:5.2f} s cpu in the name servers, "
                  f"{rounds[-1]['bytes'] / 1e6:7.2f} MB written, rss {rounds[-1]['rss'] / 2**20:4.0f} MiB; held: "
                  f"{held_now.topics:,} topics, {held_now.bodies} bodies, {held_now.stored} stored routes", flush=True)
            if args.old_path:
                start = time.perf_counter()
                files = [encode_capture(capture_of(v, captured_ms=0, round=n)) for v in views]
                if plan.version == 2:
                    files = [old.encode(f) for f in files]
                old_s = time.perf_counter() - start
                shadow.next_round()
                start = time.perf_counter()
                files = [shadow.encode(v, captured_ms=0, round=n) for v in views]
                new_s = time.perf_counter() - start
                rounds[-1] |= {"old_encode_s": old_s, "new_encode_s": new_s}
                print(f"         encoding alone, same views: old path {old_s:.2f} s, new {new_s:.3f} s "
                      f"({old_s / new_s:.0f}x)", flush=True)
                del files
            del views
        floors.append(await pump_floor(addrs, topics))
        changed = []  # the floor of a round after a change: the name servers answer changed routes anew
        for k in range(2 if args.churn else 0):
            await churn(args.rounds + k)
            changed.append(await pump_floor(addrs, topics))
    finally:
        for conns in held:
            for conn in conns:
                await conn.close()
    return {"setup_s": setup, "pump_s": min(floors), "pump_after_change_s": min(changed, default=None),
            "rounds": rounds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--servers", type=int, default=5)
    p.add_argument("--rounds", type=int, default=6, help="snapshot rounds (the first is the keyframe)")
    p.add_argument("--format", choices=("v2", "v1"), default="v2")
    p.add_argument("--no-churn", dest="churn", action="store_false", help="no broker change between rounds")
    p.add_argument("--old-path", action="store_true", help="also time the previous encoding of each round's views")
    args = p.parse_args()
    load_before = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.system()} {platform.release()}; load average {load_before[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        with ThreadPoolExecutor(args.servers) as pool:
            servers = list(pool.map(lambda i: NameServerProcess(
                Path(tmp) / f"ns{i}", properties=dict(PROPERTIES)).start(),
                range(args.servers)))
        try:
            pids = [ns.proc.pid for ns in servers if ns.proc is not None]
            result = asyncio.run(bench([ns.addr for ns in servers], pids, args, Path(tmp) / "captures"))
        finally:
            for ns in servers:
                ns.stop()
    rounds = result["rounds"]
    pump = result["pump_s"]
    first = rounds[0]["wall_s"]
    steady = [r["wall_s"] for r in rounds[1:]] or [first]
    median = statistics.median(steady)
    after = result["pump_after_change_s"]
    print(f"route pump alone (floor): {pump:.2f} s for {args.servers} x 40,000 routes"
          + ("" if after is None else f"; {after:.2f} s right after the same kind of change as the rounds'"))
    print(f"keyframe round: {first:.2f} s ({first / pump:.1f} x pump); steady rounds: median {median:.2f} s, "
          f"max {max(steady):.2f} s ({median / (after or pump):.1f} x pump{'' if after is None else ' after a change'})")
    print(f"rss after round 1: {rounds[0]['rss'] / 2**20:.0f} MiB, after round {len(rounds)}: "
          f"{rounds[-1]['rss'] / 2**20:.0f} MiB")
    print(f"load average before/after: {load_before[0]:.2f} / {os.getloadavg()[0]:.2f}")
    ok = median <= 15.0 and first < 60.0
    print(f"goal: steady round <= 15 s and keyframe round < 60 s: {'meets' if ok else 'MISSES'} it")


if __name__ == "__main__":
    main()
