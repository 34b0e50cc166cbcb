"""Wall time of ``mqadmin diff-namesrv`` over everything, as the topic count grows.

Starts ``--servers`` name-server processes, registers ``--brokers`` brokers with every
topic on each (connections kept open, as brokers keep theirs), makes the servers
disagree a little (a few topics with other queue counts on one server, a broker
missing from a few topics on another, an ORDER_TOPIC_CONFIG entry on a third), then
times, for each topic count:

* ``first``: the first in-process run after the brokers registered (the name servers
  build and cache each route body on its first query, so this one costs them more);
* ``collect``/``diff``/``render``: the phases in-process (collect_views, diff_views,
  the table renderer), best of the ``--repeat`` runs after the first;
* ``cli``: ``python -m mqadmin diff-namesrv -o json`` as a child process, end to end
  (interpreter start and imports included), median of ``--repeat`` - 1 runs: the
  figure the <= 5 s goal at 10,000 topics is about.

The machine's load average is printed before and after: the name servers and the
client share the cores with whatever else runs, and the wall times move with it.

CPU columns are the client's (user+sys of this process, or of the child for ``cli``)
and the name servers' together. Usage:

    python -m mqadmin.bench.diff_namesrv [--topics 1000,10000,50000] [--servers 5] [--brokers 4]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mqadmin.transport.collect import collect_views
from mqadmin.diff import diff_views
from mqadmin.render.diff import render_report
from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG, RequestCode, ResponseCode
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.compressed import encode_compressed
from tests.nsprocess import NameServerProcess, RawClient

QUEUES = 8
#: topics that differ on purpose: so many with other queue counts, so many missing a broker
DIFFERENT = 10


def register(ns: str, broker: int, topics: dict[str, int]) -> RawClient:
    body = encode_compressed(RegisterBrokerBody(
        DataVersion(1, 1), {t: TopicConfig(t, n, n) for t, n in topics.items()}))
    client = RawClient(ns, timeout=120)
    answer = client.call(request(RequestCode.REGISTER_BROKER, {
        "brokerId": "0", "clusterName": "BenchCluster", "brokerAddr": f"127.0.0.1:{20000 + broker}",
        "haServerAddr": f"127.0.0.1:{30000 + broker}", "brokerName": f"broker-{broker}", "compressed": "true",
    }, body))
    assert answer.code == ResponseCode.SUCCESS, answer
    return client


def populate(servers: list[NameServerProcess], topics: int, brokers: int) -> list[RawClient]:
    """Every broker on every server with every topic, except the planted differences."""
    names = [f"topic_{i:06d}" for i in range(topics)]
    jobs = []
    for s, ns in enumerate(servers):
        for b in range(brokers):
            table = dict.fromkeys(names, QUEUES)
            if s == 1 and b == 1:
                table.update(dict.fromkeys(names[:DIFFERENT], QUEUES // 2))
            if s == 2 and b == brokers - 1:
                for t in names[-DIFFERENT:]:
                    del table[t]
            jobs.append((ns.addr, b, table))
    with ThreadPoolExecutor(len(servers)) as pool:
        held = list(pool.map(lambda job: register(*job), jobs))
    if len(servers) > 3:
        with RawClient(servers[3].addr) as c:
            c.call(request(RequestCode.PUT_KV_CONFIG,
                           {"namespace": ORDER_TOPIC_CONFIG, "key": names[0], "value": "broker-0:8"}))
    return held


def cpu_of(pids: list[int]) -> float:
    """user+sys seconds of these processes so far (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / tick


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def in_process(addrs: list[str]) -> dict[str, Any]:
    t0, c0 = time.perf_counter(), own_cpu()
    views = asyncio.run(collect_views(addrs))
    t1 = time.perf_counter()
    report = diff_views(views)
    t2 = time.perf_counter()
    render_report(report, io.StringIO(), tty=False)
    t3 = time.perf_counter()
    assert all(v.ok and not v.failures for v in views), [v.failures or v.error for v in views]
    return {"collect": t1 - t0, "diff": t2 - t1, "render": t3 - t2, "total": t3 - t0, "cpu": own_cpu() - c0,
            "findings": len(report.findings)}


def cli(addrs: list[str]) -> dict[str, Any]:
    env = {**os.environ, "NAMESRV_ADDR": "", "MQADMIN_CONFIG": "/nonexistent"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    child = subprocess.run([sys.executable, "-m", "mqadmin", "diff-namesrv", "-n", ";".join(addrs), "-o", "json"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert child.returncode == 4, (child.returncode, child.stderr)
    return {"total": wall, "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime}


def measure(topics: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        with ThreadPoolExecutor(args.servers) as pool:
            servers = list(pool.map(lambda i: NameServerProcess(Path(tmp) / f"ns{i}").start(), range(args.servers)))
        held: list[RawClient] = []
        try:
            t0 = time.perf_counter()
            held = populate(servers, topics, args.brokers)
            setup = time.perf_counter() - t0
            addrs = [ns.addr for ns in servers]
            pids = [ns.proc.pid for ns in servers if ns.proc is not None]
            runs = []
            for _ in range(args.repeat):
                s0 = cpu_of(pids)
                run = in_process(addrs)
                run["server_cpu"] = cpu_of(pids) - s0
                runs.append(run)
            first, rest = runs[0], runs[1:] or runs
            best = min(rest, key=lambda r: r["total"])
            children = []
            for _ in range(args.repeat - 1 or 1):
                s0 = cpu_of(pids)
                child = cli(addrs)
                child["server_cpu"] = cpu_of(pids) - s0
                children.append(child)
            child = sorted(children, key=lambda r: r["total"])[len(children) // 2]  # the median run
        finally:
            for c in held:
                c.close()
            for ns in servers:
                ns.stop()
    return {"topics": topics, "setup": setup, "first": first, "best": best, "cli": child}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--topics", default="1000,10000", help="comma-separated topic counts (default 1000,10000)")
    p.add_argument("--servers", type=int, default=5)
    p.add_argument("--brokers", type=int, default=4)
    p.add_argument("--repeat", type=int, default=4, help="in-process runs per topic count (the first is cold)")
    args = p.parse_args()
    counts = [int(x) for x in args.topics.split(",") if x]
    load_before = f"{os.getloadavg()[0]:.2f}"
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.system()} {platform.release()}")
    print(f"setup: {args.servers} name servers x {args.brokers} brokers, {QUEUES} queues per topic, "
          f"{DIFFERENT} topics with other queue counts on one server and {DIFFERENT} missing a broker on another")
    print(f"{'topics':>8} {'routes':>8} {'first s':>8} {'collect s':>10} {'diff s':>7} {'render s':>9} "
          f"{'in-proc s':>10} {'cpu s':>6} {'ns cpu s':>9} {'cli wall s':>11} {'cli cpu s':>10} {'findings':>9}")
    results = []
    for n in counts:
        r = measure(n, args)
        results.append(r)
        b, c = r["best"], r["cli"]
        print(f"{n:>8,} {n * args.servers:>8,} {r['first']['total']:>8.2f} {b['collect']:>10.2f} {b['diff']:>7.2f} "
              f"{b['render']:>9.2f} {b['total']:>10.2f} {b['cpu']:>6.2f} {b['server_cpu']:>9.2f} {c['total']:>11.2f} "
              f"{c['cpu']:>10.2f} {b['findings']:>9,}", flush=True)
    print(f"load average before/after: {load_before} / {os.getloadavg()[0]:.2f}")
    for r in results:
        if r["topics"] == 10_000:
            wall = r["cli"]["total"]
            verdict = "meets" if wall <= 5.0 else "MISSES"
            print(f"goal: diff-namesrv over 10,000 topics x {args.servers} servers in <= 5 s wall: "
                  f"{wall:.2f} s, {verdict} it")


if __name__ == "__main__":
    main()
