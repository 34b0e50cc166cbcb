"""Ctrl-C while name servers are silent: ``mqadmin`` stops at once with one line and 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.fakes import ThreadedServer

ROOT = Path(__file__).resolve().parents[2]
#: seconds from SIGINT to exit; the requests' own timeout is far longer
BOUND = 5.0


@pytest.fixture
def silent() -> Iterator[list[ThreadedServer]]:
    """Two servers that accept and read requests but never answer."""
    servers = [ThreadedServer(lambda cmd: None).start() for _ in range(2)]
    yield servers
    for s in servers:
        s.stop()


def _default_sigint() -> None:
    # A child inherits an ignored SIGINT (pytest started in the background by a shell);
    # asyncio.run only turns SIGINT into a cancellation when it has Python's default handler.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("args,servers", [
    (["clusterList"], 1),
    (["updateKvConfig", "-s", "ns", "-k", "k", "-v", "v"], 2),
    (["diff-namesrv"], 2),
], ids=["read-one-server", "write-fan-out", "diff-namesrv"])
def test_sigint_exits_130_with_one_line(silent: list[ThreadedServer], args: list[str], servers: int) -> None:
    addrs = ";".join(s.addr for s in silent[:servers])
    env = {**os.environ, "NAMESRV_ADDR": "", "MQADMIN_CONFIG": "/nonexistent"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqadmin", *args, "-n", addrs, "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 15
        while not all(s.requests for s in silent[:servers]) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert all(s.requests for s in silent[:servers]), "mqadmin sent nothing"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=BOUND)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, err, out) == (130, "mqadmin: error: interrupted\n", ""), f"after {took:.1f} s"
