"""Two name servers on one host never share a file (issue 17, item 2): a second server
on a KV, config or snapshot path in use refuses to start, naming the path and the other
process; leftover temporary files are cleaned up at start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.test_start import run_cli


def test_second_server_on_default_paths_refuses_to_start(tmp_path: Path) -> None:
    first = NameServerProcess(tmp_path / "a", {"kvConfigPath": str(tmp_path / "shared" / "kvConfig.json")}).start()
    try:
        assert first.proc is not None
        res = run_cli("--port", "0", "--listen", "127.0.0.1", "--kv-config", str(tmp_path / "shared" / "kvConfig.json"),
                      home=tmp_path / "b")
        assert res.returncode == 1
        assert res.stderr.strip() == (
            f"mqadmin namesrv: KV config {tmp_path}/shared/kvConfig.json is in use by another name server "
            f"(pid {first.proc.pid}); give each server its own --kv-config (kvConfigPath)")
        with RawClient(first.addr) as c:  # the first one is untouched
            assert c.call(request(R.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"})).code == 0
    finally:
        first.stop()


def test_default_home_paths_are_locked(tmp_path: Path) -> None:
    """Without -c and --kv-config both servers would use ~/namesrv/kvConfig.json and
    ~/namesrv/namesrv.properties: the second refuses."""
    env_home = tmp_path / "home"
    args = ["--port", "0", "--listen", "127.0.0.1"]
    first = subprocess.Popen([sys.executable, "-m", "mqadmin", "namesrv", "start", *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "HOME": str(env_home)})
    try:
        assert first.stdout is not None
        assert "boot success" in first.stdout.readline()
        res = run_cli(*args, home=env_home)
        assert res.returncode == 1
        assert f"{env_home}/namesrv/kvConfig.json is in use by another name server (pid {first.pid})" in res.stderr
        res = run_cli(*args, "--kv-config", str(tmp_path / "own-kv.json"), home=env_home)
        assert res.returncode == 1  # its own KV file, but the same default config file
        assert (f"config file {env_home}/namesrv/namesrv.properties is in use by another name server "
                f"(pid {first.pid})") in res.stderr
    finally:
        first.terminate()
        first.wait(10)


def test_same_config_file_refuses_and_a_stopped_server_frees_its_paths(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns").start()
    res = run_cli("-c", str(ns.config_file), "--port", "0", "--kv-config", str(tmp_path / "other-kv.json"),
                  home=tmp_path)
    assert res.returncode == 1 and f"config file {ns.config_file} is in use" in res.stderr
    ns.stop()
    ns.start()  # the lock went with the process
    ns.stop()


def test_leftover_temporary_files_are_removed_at_start(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns")
    ns.workdir.mkdir(parents=True)
    leftovers = [ns.workdir / "kvConfig.json.tmp", ns.workdir / "kvConfig.json.tmp.x1y2z3",
                 ns.workdir / "namesrv.properties.tmp.abc"]
    for path in leftovers:
        path.write_bytes(b"half a write")
    keep = ns.workdir / "kvConfig.json.tmpnotes"  # not one of ours
    keep.write_bytes(b"mine")
    ns.start()
    try:
        assert [p for p in leftovers if p.exists()] == []
        assert keep.exists()
        with RawClient(ns.addr) as c:
            assert c.call(request(R.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"})).code == 0
        assert sorted(p.name for p in ns.workdir.glob("kvConfig.json*")) == [
            "kvConfig.json", "kvConfig.json.lock", "kvConfig.json.tmpnotes"]
    finally:
        ns.stop()
    assert "removed leftover temporary file" in ns.stderr()
