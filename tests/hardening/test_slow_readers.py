"""Clients that send and never read (issue 17, item 8): a connection whose unsent
answers passed ``writeBufferLimit`` gets no more answers built, and its further requests
stay unread, so the server's memory stays bounded and other clients keep their latency."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Callable

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import encode
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register

ATTACKERS = 20
REQUESTS = 10_000
BROKERS = 48  # the route of "big" lists them all: about 10 KB per answer


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def _flood(addr: str, payload: bytes, deadline: float) -> socket.socket:
    """Send ``payload`` without ever reading, as far as the server takes it by ``deadline``."""
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setblocking(False)
    view = memoryview(payload)
    while view and time.monotonic() < deadline:
        try:
            view = view[sock.send(view):]
        except BlockingIOError:
            time.sleep(0.005)
    return sock


def test_clients_that_never_read_cost_bounded_memory(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"serverChannelMaxIdleTimeSeconds": "600"})
    assert ns.proc is not None
    brokers = [RawClient(ns.addr) for _ in range(BROKERS)]
    try:
        for i, b in enumerate(brokers):
            assert b.call(register(f"broker-{i:03d}", f"127.0.0.1:{20000 + i}", topics={"big": 8})).code == 0
        with RawClient(ns.addr) as good:
            size = len(good.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "big"})).body)
            assert size > 8_000
            time.sleep(0.2)
            before = _rss_kb(ns.proc.pid)
            payload = b"".join(encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "big"}, opaque=i))
                               for i in range(REQUESTS))
            deadline = time.monotonic() + 4
            attackers = [_flood(ns.addr, payload, deadline) for _ in range(ATTACKERS)]
            try:
                time.sleep(max(0.0, deadline - time.monotonic()))
                worst = 0.0
                for _ in range(20):  # a client that reads keeps being served promptly
                    started = time.monotonic()
                    assert good.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "big"})).code == 0
                    worst = max(worst, time.monotonic() - started)
                growth_mb = (_rss_kb(ns.proc.pid, "VmHWM") - before) / 1024
                assert growth_mb < 100, f"resident size grew {growth_mb:.0f} MB"
                assert worst < 2.0, f"a reading client waited {worst:.2f} s"
                # What a slow reader sent is answered once it reads: nothing was dropped.
                first = attackers[0]
                first.setblocking(True)
                first.settimeout(10)
                got = first.recv(65536)
                assert got
            finally:
                for sock in attackers:
                    sock.close()
    finally:
        for b in brokers:
            b.close()
    assert "Traceback" not in ns.stderr()


def test_a_paused_client_gets_every_answer_once_it_reads(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"writeBufferLimit": "65536"})
    count = 3000
    payload = b"".join(encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": f"t{i}"}, opaque=i)) for i in range(count))
    with RawClient(ns.addr, timeout=10) as c:
        sock = _flood(ns.addr, payload, time.monotonic() + 2)  # fills its limit many times over
        sock.close()
        c.send_bytes(payload)
        opaques: list[int] = []
        while len(opaques) < count:
            answer = c.recv()
            assert answer is not None and answer.code == 17
            opaques.append(answer.opaque)
        assert opaques == list(range(count))
