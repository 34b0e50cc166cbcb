"""Ctrl-C while name servers are silent: ``mqadmin`` stops at once with one line and 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from mqnamesrv.protocol.codes import ResponseCode
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
    (["diff-namesrv"], 2),
], ids=["read-one-server", "diff-namesrv"])
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


def _interrupt_write(servers: list[ThreadedServer], *extra: str) -> tuple[int, str, str]:
    """``updateKvConfig`` to ``servers``, Ctrl-C once every server has its request and the
    ones that answer have answered; (exit status, stdout, stderr)."""
    return _interrupt(["updateKvConfig", "-s", "ns", "-k", "k", "-v", "v", "-n", ";".join(s.addr for s in servers),
                       *extra], lambda: all(s.requests for s in servers))


def _interrupt(args: list[str], sent: Callable[[], bool]) -> tuple[int, str, str]:
    """``mqadmin ARGS``, Ctrl-C once ``sent()`` and half a second more (answers that come
    back reach mqadmin); (exit status, stdout, stderr)."""
    env = {**os.environ, "NAMESRV_ADDR": "", "MQADMIN_CONFIG": "/nonexistent", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqadmin", *args, "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 15
        while not sent() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sent(), "mqadmin sent nothing"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=BOUND)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def test_interrupted_write_reports_every_server(silent: list[ThreadedServer]) -> None:
    """The good server holds the new value: the operator must see that, and which
    server may or may not have it."""
    good = ThreadedServer(lambda cmd: cmd.response(ResponseCode.SUCCESS)).start()
    try:
        code, out, err = _interrupt_write([good, silent[0]])
    finally:
        good.stop()
    assert code == 130
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("127.0.0.1:")}
    assert rows[good.addr][0] == "OK"
    assert rows[silent[0].addr][:4] == ["NO", "ANSWER", "YET", "-"]
    assert "1/2 name servers OK" in out
    assert err == (f"mqadmin: error: interrupted; no answer yet from {silent[0].addr}: "
                   "the write may or may not have been applied there\n")


def test_interrupted_write_as_json(silent: list[ThreadedServer]) -> None:
    code, out, err = _interrupt_write(silent, "-o", "json")
    doc = json.loads(out)
    assert (code, doc["status"], doc["exit_status"]) == (130, "interrupted", 130)
    assert [(s["addr"], s["ok"], s["answered"], s["error"]["type"]) for s in doc["steps"][0]["servers"]] == [
        (s.addr, False, False, "pending") for s in silent]
    assert err.startswith("mqadmin: error: interrupted; no answer yet from ")


def test_interrupted_delete_topic_reports_every_broker(silent: list[ThreadedServer], addrs: list[str]) -> None:
    """Ctrl-C while one master has not answered DELETE_TOPIC_IN_BROKER: the table says which
    broker deleted, which one may or may not have, and that the name servers were not told."""
    from tests.cli.conftest import kept_brokers
    from tests.cli.fakes import FakeBroker

    answering = FakeBroker().start()
    try:
        with kept_brokers() as reg:
            reg(addrs, "ci-a", answering.addr, {"ci_topic": 2}, cluster="CI1")
            reg(addrs, "ci-b", silent[0].addr, {"ci_topic": 2}, cluster="CI1")
            code, out, err = _interrupt(
                ["deleteTopic", "-t", "ci_topic", "-c", "CI1", "-n", ";".join(addrs)],
                lambda: bool(silent[0].requests and answering.deleted_topics()))
    finally:
        answering.stop()
    assert code == 130, err
    assert answering.deleted_topics() == ["ci_topic"]
    rows = {line.split()[1]: line.split()[2:] for line in out.splitlines() if line.startswith("ci-")}
    assert rows[answering.addr][0] == "OK" and rows[silent[0].addr][:3] == ["NO", "ANSWER", "YET"]
    assert "DELETE_TOPIC_IN_NAMESRV (216) not sent to 3 name servers: interrupted" in out
    assert err.splitlines() == ["mqadmin: error: DELETE_TOPIC_IN_NAMESRV (216) not sent: interrupted",
                                f"mqadmin: error: interrupted; no answer yet from {silent[0].addr}: the write may "
                                "or may not have been applied there"]
