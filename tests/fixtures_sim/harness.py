"""Helpers for the fixture tests: an event loop in a thread for the simulator, a
``mqadmin fixture up`` child process read line by line, and blocking queries of what
a name server holds (RawClient + the protocol's own body decoders)."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Coroutine, TypeVar

from mqnamesrv.protocol.bodies import ClusterInfo, QueueData, TopicRouteData, decode_kv_table
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import request
from mqadmin.fixture.link import cancel_all
from tests.nsprocess import RawClient

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class LoopThread:
    """An asyncio loop on a daemon thread, so tests stay synchronous and can block on RawClient."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], T]) -> T:
        async def wrapper() -> T:
            return fn()
        return self.run(wrapper())

    def close(self) -> None:
        async def drain() -> None:
            await cancel_all([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])
        try:
            self.run(drain(), 5)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop.close()


# ------------------------------------------------------------ queries ----

def listed(addr: str) -> dict[str, dict[int, str]]:
    """brokerName -> {id: addr} as the server's GET_BROKER_CLUSTER_INFO reports it."""
    with RawClient(addr, timeout=3) as client:
        info = ClusterInfo.decode(client.call(request(R.GET_BROKER_CLUSTER_INFO)).body)
    return {name: dict(b.broker_addrs) for name, b in info.broker_addr_table.items()}


def route(addr: str, topic: str) -> TopicRouteData | None:
    with RawClient(addr, timeout=3) as client:
        answer = client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    if answer.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
    return TopicRouteData.decode(answer.body)


def queues(addr: str, topic: str) -> dict[str, QueueData]:
    """brokerName -> QueueData of one topic ({} when the server has no route)."""
    data = route(addr, topic)
    return {} if data is None else {q.broker_name: q for q in data.queue_datas}


def kv_namespace(addr: str, namespace: str) -> dict[str, str] | None:
    with RawClient(addr, timeout=3) as client:
        answer = client.call(request(R.GET_KVLIST_BY_NAMESPACE, {"namespace": namespace}))
    return decode_kv_table(answer.body) if answer.code == ResponseCode.SUCCESS else None


# ------------------------------------------------------- fixture up ----

class FixtureProcess:
    """``python -m mqadmin fixture up FILE ...`` with its stdout read on a thread.

    It leads a process group of its own, which the name servers it runs as child
    processes (``run: process``) join: ``kill`` ends the whole group, so a failed test
    leaves no server behind holding its port."""

    def __init__(self, file: Path, *args: str, cwd: Path = ROOT) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mqadmin", "fixture", "up", str(file), *args],
            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.servers: dict[str, str] = {}
        self.brokers: dict[str, str] = {}

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def expect(self, pattern: str, timeout: float = 10.0) -> re.Match[str]:
        """Read lines until one matches ``pattern`` (re.search); fail with the output so far."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._queue.get(timeout=max(0.001, left)) if left > 0 else None
            except queue.Empty:
                line = None
            if line is None:
                if self.proc.poll() is not None:
                    self._queue.put(None)  # stays ended for the next expect()
                why = "output ended" if self.proc.poll() is not None else "timed out"
                raise AssertionError(f"{why} waiting for {pattern!r}; output:\n" + "\n".join(self.lines))
            self.lines.append(line)
            m = rx.search(line)
            if m:
                return m

    def expect_all(self, patterns: list[str], timeout: float = 10.0) -> list[re.Match[str]]:
        """Read lines until each pattern matched one (in any order); matches in pattern order."""
        found: dict[int, re.Match[str]] = {}
        deadline = time.monotonic() + timeout
        while len(found) < len(patterns):
            start = len(self.lines)
            either = "|".join(f"(?:{p})" for i, p in enumerate(patterns) if i not in found)
            self.expect(re.sub(r"\(\?P<\w+>", "(", either), max(0.001, deadline - time.monotonic()))
            for line in self.lines[start:]:
                for i, p in enumerate(patterns):
                    if i not in found and (m := re.search(p, line)):
                        found[i] = m
                        break
        return [found[i] for i in range(len(patterns))]

    def wait_ready(self, timeout: float = 15.0) -> str:
        """Until NAMESRV_ADDR=...; fills ``servers`` (name -> addr) and ``brokers`` (key -> addr)."""
        m = self.expect(r"^NAMESRV_ADDR=(\S+)$", timeout)
        for line in self.lines:
            if (s := re.match(r"^name server (\S+) (\S+) ", line)):
                self.servers[s.group(1)] = s.group(2)
            if (b := re.match(r"^broker (\S+) \S+ (\S+) ", line)):
                self.brokers[b.group(1)] = b.group(2)
        return m.group(1)

    def interrupt(self, timeout: float = 15.0) -> int:
        """Ctrl-C, then the exit status."""
        self.proc.send_signal(signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout: float = 15.0) -> int:
        rc = self.proc.wait(timeout)
        self._reader.join(5)
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.lines.append(line)
        return rc

    def kill(self) -> None:
        """SIGKILL to the whole group (its child name servers too), then reap ``fixture up``.
        Only while it is not reaped yet: until then its pid, so its group id, cannot have
        gone to another process (a test that waited for it has seen it stop its servers)."""
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
