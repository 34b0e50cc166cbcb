"""Shared pieces: a pipelined route-query driver and synthetic broker registrations."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial
from typing import Sequence

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.frame import encode
from mqnamesrv.protocol.register import register_body, register_request
from mqnamesrv.remoting import RemotingConnection

from ..transport.client import NamesrvConnection


class _OldestFirst(RemotingConnection):
    """The echo server's answers carry no opaque: each goes to the oldest request."""

    def unmatched_answer(self, cmd: RemotingCommand) -> None:
        if self._pending:
            self._pending.pop(next(iter(self._pending)))(cmd)


@dataclass(frozen=True)
class Throughput:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def to_obj(self) -> dict[str, float]:
        return {"requests": self.requests, "seconds": round(self.seconds, 3), "rps": round(self.rps, 1),
                "p50_ms": round(self.p50_ms, 3), "p99_ms": round(self.p99_ms, 3)}


#: where each connection of ``drive_routes`` starts in the topic list: connection i at i x this
CONN_OFFSET = 7919


def distinct_topics_asked(topics: Sequence[str], *, conns: int, requests: int) -> int:
    """How many different topics ``drive_routes`` asks for with these settings: on a server
    that keeps answers, the queries of a first pass that build one."""
    per_conn = max(requests // conns, 1)
    n = len(topics)
    if per_conn >= n:
        return n
    asked: set[int] = set()
    for i in range(conns):
        start = (i * CONN_OFFSET) % n
        asked.update(range(start, min(start + per_conn, n)))
        asked.update(range(0, max(start + per_conn - n, 0)))
    return len(asked)


async def drive_routes(addr: str, topics: Sequence[str], *, conns: int, inflight: int, requests: int) -> Throughput:
    """Send ``requests`` route queries over ``conns`` connections, ``inflight`` outstanding
    on each. Works against a name server or the echo server (whose answers carry no
    opaque: latency is then measured oldest-first)."""
    per_conn = max(requests // conns, 1)
    latencies: list[float] = []

    async def one(offset: int) -> int:
        conn = await _OldestFirst.connect(addr, 60.0)
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()
        issued = answered = got = 0

        def send(n: int) -> None:
            nonlocal issued
            frames = []
            for _ in range(min(n, per_conn - issued)):
                cmd = request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topics[(offset + issued) % len(topics)]})
                issued += 1
                conn.expect(cmd.opaque, partial(on_answer, time.perf_counter()))
                frames.append(encode(cmd))
            if frames:
                conn.write(b"".join(frames))

        def on_answer(sent: float, reply: RemotingCommand | Exception) -> None:
            nonlocal answered, got
            if isinstance(reply, Exception):
                if not finished.done():
                    finished.set_exception(ConnectionError(f"{addr} closed the connection: {reply}"))
                return
            latencies.append(time.perf_counter() - sent)
            answered += 1
            got += 1

        def refill() -> None:  # after each read: the answers' successors in one write
            nonlocal got
            if answered >= per_conn:
                if not finished.done():
                    finished.set_result(None)
                return
            n, got = got, 0
            send(n)

        conn.after_read = refill
        send(inflight)
        try:
            await finished
        finally:
            conn.shutdown()
        return answered

    start = time.perf_counter()
    done = sum(await asyncio.gather(*(one(i * CONN_OFFSET) for i in range(conns))))
    elapsed = time.perf_counter() - start
    latencies.sort()
    pick = lambda q: 1000 * latencies[min(int(len(latencies) * q), len(latencies) - 1)] if latencies else 0.0  # noqa: E731
    return Throughput(done, elapsed, pick(0.5), pick(0.99))


def topics_body(topics: Sequence[str], queues: int = 8, counter: int = 1, compressed: bool = False) -> bytes:
    """A master's registration body for ``topics``, each with ``queues`` queues."""
    body = RegisterBrokerBody(
        DataVersion(counter, 1_700_000_000_000 + counter),
        {t: TopicConfig(t, queues, queues) for t in topics},
    )
    return register_body(body, compressed=compressed)


def master_request(cluster: str, name: str, addr: str, body: bytes, compressed: bool = False) -> RemotingCommand:
    return register_request(cluster, name, addr, 0, body, compressed=compressed)


async def register_fleet(addr: str, fleet: Sequence[tuple[str, str, str, Sequence[str]]],
                         timeout: float = 60.0) -> list[NamesrvConnection]:
    """Register (cluster, broker, broker_addr, topics) tuples; returns the connections,
    which the caller keeps open: closing one unregisters its broker."""
    conns = []
    for cluster, name, baddr, topics in fleet:
        conn = await NamesrvConnection.connect(addr, timeout)
        resp = await conn.call(master_request(cluster, name, baddr, topics_body(topics)), timeout)
        if resp.code != 0:
            raise RuntimeError(f"{addr}: REGISTER_BROKER for {name} failed: {resp.code} {resp.remark}")
        conns.append(conn)
    return conns


class EchoServer:
    """The echo floor in a child process (so it gets a core of its own, like the server)."""

    def __init__(self, body_size: int, protocol: bool = False) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mqadmin.bench.echo", str(body_size),
                                      *(["protocol"] if protocol else [])], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.addr = f"127.0.0.1:{int(self.proc.stdout.readline())}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
