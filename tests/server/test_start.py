"""``mqadmin namesrv start`` as an operator runs it: boot line, -p, bad config, clean stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mqnamesrv.protocol.codes import RequestCode, ResponseCode
from mqnamesrv.protocol.command import request
from tests.nsprocess import BANNER_RE, NameServerProcess, RawClient


def run_cli(*args: str, home: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "mqadmin", "namesrv", "start", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_boot_line_names_the_real_port(namesrv: NameServerProcess) -> None:
    m = BANNER_RE.match(namesrv.banner)
    assert m and m.group(1) == "127.0.0.1" and int(m.group(2)) == namesrv.port > 0
    with RawClient(namesrv.addr) as c:
        assert c.call(request(RequestCode.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS


def test_print_config_items(tmp_path: Path) -> None:
    cfg = tmp_path / "ns.properties"
    cfg.write_text("listenPort=9877\norderMessageEnable=true\nmyCustomKey=abc\n")
    res = run_cli("-c", str(cfg), "-p", "--kv-config", str(tmp_path / "kv.json"), home=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = dict(line.split("=", 1) for line in res.stdout.splitlines())
    assert lines["listenPort"] == "9877"
    assert lines["orderMessageEnable"] == "true"
    assert lines["kvConfigPath"] == str(tmp_path / "kv.json")
    assert lines["configStorePath"] == str(cfg)
    assert lines["myCustomKey"] == "abc"
    assert lines["brokerChannelExpiredTime"] == "120000"
    assert lines["configBlackList"] == "configBlackList;configStorePath;kvConfigPath"


def test_command_line_overrides_file(tmp_path: Path) -> None:
    cfg = tmp_path / "ns.properties"
    cfg.write_text("listenPort=9877\n")
    res = run_cli("-c", str(cfg), "-p", "--port", "9999", home=tmp_path)
    assert "listenPort=9999" in res.stdout.splitlines()


@pytest.mark.parametrize(
    "content, args, message",
    [
        (None, ["-c", "{tmp}/missing.properties"], "config file {tmp}/missing.properties does not exist"),
        ("listenPort=98x6\n", ["-c", "{cfg}"], "listenPort: '98x6' is not a whole number"),
        ("scanNotActiveBrokerInterval=0\n", ["-c", "{cfg}"], "scanNotActiveBrokerInterval: must be a positive"),
        (None, ["--port", "70000"], "listenPort: 70000 is not a TCP port"),
    ],
    ids=["missing-file", "bad-number", "zero-interval", "port-out-of-range"],
)
def test_bad_config_is_one_clear_line(tmp_path: Path, content: str | None, args: list[str], message: str) -> None:
    cfg = tmp_path / "ns.properties"
    if content is not None:
        cfg.write_text(content)
    args = [a.format(tmp=tmp_path, cfg=cfg) for a in args]
    res = run_cli(*args, home=tmp_path)
    assert res.returncode == 1
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("mqadmin namesrv: ")
    assert message.format(tmp=tmp_path) in res.stderr
    assert "Traceback" not in res.stderr


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = run_cli("--listen", "127.0.0.1", "--port", str(port), "--kv-config", str(tmp_path / "kv.json"),
                      home=tmp_path)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1] == f"mqadmin namesrv: cannot listen on 127.0.0.1:{port}: " \
        "Address already in use"
    assert "Traceback" not in res.stderr


def test_metrics_port_in_use_is_named_as_such(tmp_path: Path) -> None:
    """The name-server port is free, the metrics one is not: the message names the
    metrics port, and a server that never started writes no (empty) route snapshot."""
    snapshot = tmp_path / "routes.snapshot"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = run_cli("--listen", "127.0.0.1", "--port", "0", "--metrics-port", str(port), "--route-snapshot",
                      str(snapshot), "--kv-config", str(tmp_path / "kv.json"), home=tmp_path)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1] == (
        f"mqadmin namesrv: cannot listen on 127.0.0.1:{port} (--metrics-port): Address already in use")
    assert not snapshot.exists()


def test_corrupt_kv_file_refuses_to_start_and_keeps_the_file(tmp_path: Path) -> None:
    kv = tmp_path / "kv.json"
    kv.write_text('{"configTable": {"ns": ')
    res = run_cli("--listen", "127.0.0.1", "--port", "0", "--kv-config", str(kv), home=tmp_path)
    assert res.returncode == 1
    assert f"KV config {kv} is corrupt" in res.stderr
    assert "Traceback" not in res.stderr
    assert kv.read_text() == '{"configTable": {"ns": '


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_cleanly(tmp_path: Path, sig: int) -> None:
    ns = NameServerProcess(tmp_path / "ns").start()
    with RawClient(ns.addr) as c:
        put = request(RequestCode.PUT_KV_CONFIG, {"namespace": "ns1", "key": "k", "value": "v"})
        assert c.call(put).code == ResponseCode.SUCCESS
    assert ns.stop(sig) == 0
    assert '"ns1":{"k":"v"}' in ns.kv_file.read_text()
    assert "Traceback" not in ns.stderr()
