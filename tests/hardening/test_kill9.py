"""A KV write acknowledged to a client survives kill -9 of the server at any moment."""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

import pytest

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import NameServerProcess, RawClient


@pytest.mark.parametrize("round_", range(3))
def test_acknowledged_kv_writes_survive_kill_9(tmp_path: Path, round_: int) -> None:
    ns = NameServerProcess(tmp_path / "ns").start()
    acked: dict[str, str] = {}
    stop = threading.Event()

    def writer() -> None:
        try:
            with RawClient(ns.addr) as c:
                i = 0
                while not stop.is_set():
                    key, value = f"k{i % 50}", f"v{i}"
                    resp = c.call(request(R.PUT_KV_CONFIG, {"namespace": "dur", "key": key, "value": value}))
                    if resp.code == 0:
                        acked[key] = value
                    i += 1
        except (OSError, AssertionError):
            pass  # the server died mid-request: that write was not acknowledged

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(random.Random(round_).uniform(0.3, 1.0))
    assert ns.proc is not None
    ns.proc.send_signal(signal.SIGKILL)
    ns.proc.wait()
    stop.set()
    t.join(10)
    assert acked, "no write was acknowledged before the kill"
    ns.start()
    with RawClient(ns.addr) as c:
        for key, value in acked.items():
            resp = c.call(request(R.GET_KV_CONFIG, {"namespace": "dur", "key": key}))
            # The last acknowledged value, or a newer one whose answer the kill swallowed.
            assert resp.code == 0
            assert int(resp.ext["value"][1:]) >= int(value[1:])  # type: ignore[index]
    ns.stop()
