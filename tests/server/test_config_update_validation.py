"""UPDATE_NAMESRV_CONFIG (318) takes only values the server itself would start with.

An accepted ``maxConnections=-1`` made the server refuse every connection, admin tool
included, and the persisted bad values stopped the next start: a restart could not fix
it either. So an update is checked with the start-up rules, refused whole (nothing
applied, nothing written) and the remark says which key, which value, which rule.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.registry.config import parse_properties
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register

StartNamesrv = Callable[..., NameServerProcess]

#: body, remark the server must answer with (key, bad value and rule)
REFUSED = [
    (b"maxConnections=-1\n", "maxConnections: must be 0 (no limit) or a positive number of connections, not -1"),
    (b"brokerChannelExpiredTime=-1\n", "brokerChannelExpiredTime: must be a positive number of milliseconds, not -1"),
    (b"scanNotActiveBrokerInterval=-5\n",
     "scanNotActiveBrokerInterval: must be a positive number of milliseconds, not -5"),
    (b"listenPort=99999\n", "listenPort: 99999 is not a TCP port (0-65535)"),
    (b"maxConnections=abc\n", "maxConnections: 'abc' is not a whole number"),
    # all or nothing: the good item of a request with a bad one is not applied either
    (b"orderMessageEnable=true\nmaxConnections=-1\n",
     "maxConnections: must be 0 (no limit) or a positive number of connections, not -1"),
]


def _config(client: RawClient) -> dict[str, str]:
    return parse_properties(client.call(request(R.GET_NAMESRV_CONFIG)).body.decode("utf-8"))


def _update(client: RawClient, body: bytes) -> RemotingCommand:
    return client.call(request(R.UPDATE_NAMESRV_CONFIG, body=body))


def _mqadmin(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "MQADMIN_CONFIG": str(home / "absent-profiles.yaml")}
    env.pop("NAMESRV_ADDR", None)
    return subprocess.run([sys.executable, "-m", "mqadmin", *args], capture_output=True, text=True, timeout=60,
                          env=env)


@pytest.mark.parametrize("body, remark", REFUSED, ids=[
    "maxConnections-negative", "brokerChannelExpiredTime-negative", "scan-interval-negative",
    "listenPort-out-of-range", "not-a-number", "good-and-bad-together",
])
def test_invalid_update_is_refused_and_changes_nothing(namesrv: NameServerProcess, body: bytes, remark: str) -> None:
    on_disk = namesrv.config_file.read_bytes()
    with RawClient(namesrv.addr) as c:
        before = _config(c)
        answer = _update(c, body)
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, remark)
        assert _config(c) == before
    assert namesrv.config_file.read_bytes() == on_disk
    # the server still takes new connections (maxConnections=-1 would refuse them all)
    with RawClient(namesrv.addr) as fresh:
        assert fresh.call(request(R.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS


def test_refused_expiry_time_keeps_brokers_registered(start_namesrv: StartNamesrv) -> None:
    """A broker registering after a refused ``brokerChannelExpiredTime=-1`` is not dropped
    by the next scans, as it was when the value was taken."""
    ns = start_namesrv({"scanNotActiveBrokerInterval": "100"})
    with RawClient(ns.addr) as admin, RawClient(ns.addr) as broker:
        assert _update(admin, b"brokerChannelExpiredTime=-1\n").code == ResponseCode.SYSTEM_ERROR
        assert broker.call(register("broker-a", "127.0.0.1:10911")).code == ResponseCode.SUCCESS
        time.sleep(0.5)
        cluster = admin.call(request(R.GET_BROKER_CLUSTER_INFO)).body
    assert b"127.0.0.1:10911" in cluster


def test_valid_update_after_a_refused_one_is_applied_and_saved(namesrv: NameServerProcess) -> None:
    with RawClient(namesrv.addr) as c:
        assert _update(c, b"maxConnections=-1\n").code == ResponseCode.SYSTEM_ERROR
        assert _update(c, b"maxConnections=50\norderMessageEnable=true\n").code == ResponseCode.SUCCESS
        assert (_config(c)["maxConnections"], _config(c)["orderMessageEnable"]) == ("50", "true")
    saved = parse_properties(namesrv.config_file.read_text())
    assert (saved["maxConnections"], saved["orderMessageEnable"]) == ("50", "true")


def test_black_list_still_answers_no_permission_first(namesrv: NameServerProcess) -> None:
    """A request with a black-listed key and a bad value keeps the Java answer for the key."""
    with RawClient(namesrv.addr) as c:
        answer = _update(c, b"kvConfigPath=/tmp/evil\nmaxConnections=-1\n")
    assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")


def test_admin_cli_prints_failed_with_the_remark(namesrv: NameServerProcess, tmp_path: Path) -> None:
    on_disk = namesrv.config_file.read_bytes()
    run = _mqadmin("updateNamesrvConfig", "-k", "maxConnections", "-v", "-1", "-n", namesrv.addr, home=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAILED (SYSTEM_ERROR)" in run.stdout and run.stdout.rstrip().endswith("0/1 name servers OK")
    assert run.stderr.splitlines() == [
        f"mqadmin: error: {namesrv.addr}: UPDATE_NAMESRV_CONFIG (318) for maxConnections: SYSTEM_ERROR (1): "
        "maxConnections: must be 0 (no limit) or a positive number of connections, not -1"
    ]
    assert namesrv.config_file.read_bytes() == on_disk
    # the file the server keeps still starts a server (-p checks it like a start, then exits)
    check = _mqadmin("namesrv", "start", "-c", str(namesrv.config_file), "-p", home=tmp_path)
    assert check.returncode == 0, check.stderr


def test_start_refuses_what_an_update_refuses(tmp_path: Path) -> None:
    """One set of rules: a -c file with maxConnections=-1 stops the start with the same words."""
    cfg = tmp_path / "ns.properties"
    cfg.write_text("maxConnections=-1\n")
    run = _mqadmin("namesrv", "start", "-c", str(cfg), "-p", home=tmp_path)
    assert run.returncode == 1
    assert run.stderr.strip() == (
        "mqadmin namesrv: maxConnections: must be 0 (no limit) or a positive number of connections, not -1"
    )
