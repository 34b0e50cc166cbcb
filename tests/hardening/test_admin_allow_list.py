"""adminAllowList: admin writes only from listed clients; reads and brokers unaffected."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register
from tests.server.test_start import run_cli

WRITES = [
    (R.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"}, b""),
    (R.DELETE_KV_CONFIG, {"namespace": "n", "key": "k"}, b""),
    (R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, b""),
    (R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, b""),
    (R.DELETE_TOPIC_IN_NAMESRV, {"topic": "order_topic"}, b""),
    (R.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=true\n"),
]


def test_writes_from_unlisted_clients_are_refused(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"adminAllowList": "10.9.9.9;192.168.0.0/16"})
    with RawClient(ns.addr) as broker, RawClient(ns.addr) as admin:
        assert broker.call(register("broker-a")).code == 0  # brokers are not admins
        for code, ext, body in WRITES:
            resp = admin.call(request(code, ext, body))
            assert resp.code == 16, code
            assert resp.remark == f"{R(code).name} from 127.0.0.1 refused: not in adminAllowList"
        assert admin.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic"})).code == 0
        assert admin.call(request(R.GET_KV_CONFIG, {"namespace": "n", "key": "k"})).code == 22
    assert "not in adminAllowList" in ns.stderr()


def test_listed_network_may_write_but_not_widen_the_list(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"adminAllowList": "127.0.0.0/8"})
    with RawClient(ns.addr) as admin:
        assert admin.call(request(R.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"})).code == 0
        widen = admin.call(request(R.UPDATE_NAMESRV_CONFIG, body=b"adminAllowList=0.0.0.0/0\n"))
        assert (widen.code, widen.remark) == (16, "Can not update config in black list.")


def test_bad_allow_list_stops_the_start(tmp_path: Path) -> None:
    cfg = tmp_path / "ns.properties"
    cfg.write_text("adminAllowList=10.0.0.1;not-an-ip\n")
    res = run_cli("-c", str(cfg), "--port", "0", "--kv-config", str(tmp_path / "kv.json"), home=tmp_path)
    assert res.returncode == 1
    assert "adminAllowList: 'not-an-ip' is not an IP address or network" in res.stderr
