"""UPDATE_NAMESRV_CONFIG cannot smuggle keys into the config file, and an update that
cannot be saved is not applied (issue 17, items 3 and 4)."""

from __future__ import annotations

import shutil
from pathlib import Path

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.registry.config import parse_properties
from tests.nsprocess import NameServerProcess, RawClient

INJECTION = "x\nadminAllowList=0.0.0.0/0\nkvConfigPath=/tmp/evil-kv.json\nbrokerAllowList=\n#"


def _config(ns: NameServerProcess) -> dict[str, str]:
    with RawClient(ns.addr) as c:
        resp = c.call(request(R.GET_NAMESRV_CONFIG))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return parse_properties(resp.body.decode("utf-8"))


def _update(ns: NameServerProcess, body: bytes) -> RemotingCommand:
    with RawClient(ns.addr) as c:
        return c.call(request(R.UPDATE_NAMESRV_CONFIG, body=body))


def test_escaped_line_break_stays_one_value_across_a_restart(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns", {"adminAllowList": "127.0.0.1", "brokerAllowList": "127.0.0.1"}).start()
    kv_path = str(ns.kv_file)
    # properties text: the \n escapes are backslash-n, decoded into real line breaks
    body = b"productEnvName=" + INJECTION.replace("\n", "\\n").encode() + b"\n"
    assert _update(ns, body).code == ResponseCode.SUCCESS
    assert _config(ns)["productEnvName"] == INJECTION
    ns.stop()
    ns.start(keep_config=True)  # the file as the update wrote it
    config = _config(ns)
    assert config["productEnvName"] == INJECTION
    assert (config["adminAllowList"], config["brokerAllowList"], config["kvConfigPath"]) == (
        "127.0.0.1", "127.0.0.1", kv_path)
    ns.stop()


def test_protected_keys_under_any_spelling_are_refused(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns", {"adminAllowList": "127.0.0.1"}).start()
    for body in (b"kvConfig\\u0050ath=/tmp/evil\n", b"  adminAllowList : 0.0.0.0/0\n", b"brokerAllowList\t\n",
                 b"x=1\\\n\nrouteSnapshotPath=/tmp/s\n"):
        resp = _update(ns, body)
        assert resp.code == ResponseCode.NO_PERMISSION, body
    assert _config(ns)["adminAllowList"] == "127.0.0.1"
    ns.stop()


def test_value_that_cannot_be_saved_changes_nothing(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns").start()
    resp = _update(ns, b"productEnvName=\\uD800\n")  # a lone surrogate: no UTF-8 file can hold it
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert _config(ns)["productEnvName"] == "center"  # GET still works, the value never went live
    ns.stop()


def test_save_failure_applies_nothing(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns").start()
    ns.config_file.unlink()
    ns.config_file.mkdir()  # the config file cannot be written any more
    resp = _update(ns, b"orderMessageEnable=true\n")
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "not saved, nothing changed" in (resp.remark or "")
    assert _config(ns)["orderMessageEnable"] == "false"
    ns.stop()
    shutil.rmtree(ns.config_file)
