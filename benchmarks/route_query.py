"""Route-query throughput of a name server, as a ratio to a framed echo server.

Both are driven by the same pipelined asyncio client in the same run, so the ratio says
how close the name server gets to the cost of merely receiving and answering a frame
on this machine. Usage:

    python benchmarks/route_query.py [--topics 1000] [--conns 8] [--inflight 64] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nameserver.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig  # noqa: E402
from nameserver.protocol.codes import RequestCode  # noqa: E402
from nameserver.protocol.command import request  # noqa: E402
from nameserver.protocol.frame import NEED_DATA, FrameDecoder, encode  # noqa: E402
from tests.nsprocess import NameServerProcess, RawClient  # noqa: E402

ECHO_SERVER = r'''
import asyncio, struct, sys
try:
    import uvloop
except ImportError:
    uvloop = None
RESP = None
class Echo(asyncio.Protocol):
    """Cuts frames like the name server and answers each with a frame of the same size
    as a typical route answer: the floor any name server implementation pays."""
    def connection_made(self, t): self.t = t; self.buf = bytearray()
    def data_received(self, data):
        buf = self.buf; buf += data; out = []
        while len(buf) >= 4:
            (n,) = struct.unpack_from(">I", buf)
            if len(buf) < 4 + n: break
            del buf[:4 + n]; out.append(RESP)
        if out: self.t.write(b"".join(out))
async def main():
    global RESP
    size = int(sys.argv[1])
    RESP = struct.pack(">II", 4 + size, size) + b"{" + b" " * (size - 2) + b"}"
    srv = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
(uvloop.run if uvloop else asyncio.run)(main())
'''


async def drive(port: int, topics: list[str], conns: int, inflight: int, seconds: float) -> tuple[int, list[float]]:
    """Keep ``inflight`` requests outstanding on each of ``conns`` connections."""
    deadline = time.perf_counter() + seconds
    latencies: list[float] = []
    done = 0

    async def one(idx: int) -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        dec = FrameDecoder()
        sent: dict[int, float] = {}
        i = idx

        def send(n: int) -> None:
            nonlocal i
            frames = []
            for _ in range(n):
                cmd = request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topics[i % len(topics)]})
                i += 1
                sent[cmd.opaque] = time.perf_counter()
                frames.append(encode(cmd))
            writer.write(b"".join(frames))

        send(inflight)
        while sent:
            data = await reader.read(1 << 16)
            if not data:
                raise RuntimeError("server closed the connection")
            dec.feed(data)
            answered = 0
            while (cmd := dec.next_frame()) is not NEED_DATA:
                t0 = sent.pop(cmd.opaque, None)  # type: ignore[union-attr]
                if t0 is None:  # the echo server's answers carry no opaque: take the oldest
                    t0 = sent.pop(next(iter(sent)))
                latencies.append(time.perf_counter() - t0)
                answered += 1
            done += answered
            if time.perf_counter() < deadline:
                send(answered)
        writer.close()

    await asyncio.gather(*(one(c * 7919) for c in range(conns)))
    return done, latencies


def measure(port: int, topics: list[str], args: argparse.Namespace) -> dict[str, float]:
    start = time.perf_counter()
    done, lat = asyncio.run(drive(port, topics, args.conns, args.inflight, args.seconds))
    elapsed = time.perf_counter() - start
    lat.sort()
    return {"rps": done / elapsed, "p50_ms": 1000 * lat[len(lat) // 2], "p99_ms": 1000 * lat[int(len(lat) * 0.99)]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--topics", type=int, default=1000)
    p.add_argument("--brokers", type=int, default=2)
    p.add_argument("--conns", type=int, default=8)
    p.add_argument("--inflight", type=int, default=64)
    p.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ns = NameServerProcess(Path(tmp) / "ns").start()
        topics = [f"topic_{i:05d}" for i in range(args.topics)]
        keep = []
        for b in range(args.brokers):
            body = RegisterBrokerBody(DataVersion(1, 1), {t: TopicConfig(t, 8, 8) for t in topics}).encode()
            c = RawClient(ns.addr)
            resp = c.call(request(RequestCode.REGISTER_BROKER, {
                "brokerId": "0", "clusterName": "BenchCluster", "brokerAddr": f"127.0.0.1:{20000 + b}",
                "haServerAddr": f"127.0.0.1:{30000 + b}", "brokerName": f"broker-{b}"}, body))
            assert resp.code == 0, resp
            keep.append(c)
        with RawClient(ns.addr) as c:
            size = len(c.call(request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topics[0]})).body)
        echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, str(size)], stdout=subprocess.PIPE, text=True)
        try:
            echo_port = int(echo.stdout.readline())  # type: ignore[union-attr]
            runs = {"echo": [], "namesrv": []}  # type: dict[str, list[dict[str, float]]]
            for _ in range(2):  # interleave, so machine noise hits both alike
                runs["echo"].append(measure(echo_port, topics, args))
                runs["namesrv"].append(measure(ns.port, topics, args))
        finally:
            echo.terminate()
            ns.stop()
            for c in keep:
                c.close()
    best = {k: max(v, key=lambda r: r["rps"]) for k, v in runs.items()}
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.system()} {platform.release()}")
    print(f"setup: {args.topics} topics x {args.brokers} brokers, route body {size} B, "
          f"{args.conns} connections x {args.inflight} in flight, {args.seconds:g} s per run, best of 2")
    print(f"{'server':<10}{'req/s':>12}{'p50 ms':>10}{'p99 ms':>10}")
    for name in ("echo", "namesrv"):
        r = best[name]
        print(f"{name:<10}{r['rps']:>12,.0f}{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}")
    print(f"ratio namesrv/echo: {best['namesrv']['rps'] / best['echo']['rps']:.2f}")


if __name__ == "__main__":
    main()
