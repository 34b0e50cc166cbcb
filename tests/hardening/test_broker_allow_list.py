"""brokerAllowList: only listed addresses may register, unregister or heartbeat (issue 17, item 11)."""

from __future__ import annotations

from typing import Callable

from mqnamesrv.protocol.bodies import DataVersion
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.register import register_request
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.kv import KVStore
from mqnamesrv.registry.routes import RouteTable
from mqnamesrv.server.dispatch import OFF_LOOP_BODY_BYTES, Processor
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register

IDENTITY = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "brokerId": "0"}


def test_unlisted_brokers_are_refused(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"brokerAllowList": "10.9.9.9;192.168.0.0/16"})
    with RawClient(ns.addr) as broker:
        for cmd in (register("broker-a"), request(R.UNREGISTER_BROKER, IDENTITY),
                    request(R.BROKER_HEARTBEAT, IDENTITY),
                    request(R.QUERY_DATA_VERSION, IDENTITY, DataVersion(1, 1).encode())):
            resp = broker.call(cmd)
            assert resp.code == ResponseCode.NO_PERMISSION, cmd.code
            assert resp.remark == f"{R(cmd.code).name} from 127.0.0.1 refused: not in brokerAllowList"
        assert broker.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic"})).code == 17
        # an admin may not widen it remotely
        widen = broker.call(request(R.UPDATE_NAMESRV_CONFIG, body=b"brokerAllowList=0.0.0.0/0\n"))
        assert widen.code == ResponseCode.NO_PERMISSION
    assert "not in brokerAllowList" in ns.stderr()


def test_listed_brokers_register(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"brokerAllowList": "127.0.0.0/8"})
    with RawClient(ns.addr) as broker:
        assert broker.call(register("broker-a")).code == 0
        assert broker.call(request(R.BROKER_HEARTBEAT, IDENTITY)).code == 0
        assert broker.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic"})).code == 0


def test_an_unlisted_broker_s_big_body_is_never_parsed() -> None:
    """The allowlist comes first: no worker-thread parse is even set up for a refused
    address (a stranger must not make the server parse 16 MB), while a listed one's is."""
    config = NamesrvConfig()
    config.commit(config.prepare({"brokerAllowList": "10.9.9.9"})[0])
    processor = Processor(RouteTable(), KVStore(), config)
    big = register("broker-a", topics={f"t{i:05d}": 8 for i in range(5000)})
    assert len(big.body) >= OFF_LOOP_BODY_BYTES
    assert processor.decode_off_loop(big, "127.0.0.1") is None
    assert processor.handle(big, "conn", "127.0.0.1").code == ResponseCode.NO_PERMISSION  # type: ignore[union-attr]
    assert processor.decode_off_loop(big, "10.9.9.9") is not None


def test_an_unlisted_broker_s_big_body_is_refused_by_the_server(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"brokerAllowList": "10.9.9.9"})
    body = b"{" + b" " * OFF_LOOP_BODY_BYTES + b"not json"
    with RawClient(ns.addr, timeout=30) as broker:
        resp = broker.call(register_request("DefaultCluster", "broker-a", "127.0.0.1:10911", 0, body))
        assert resp.code == ResponseCode.NO_PERMISSION and "not in brokerAllowList" in (resp.remark or "")
        assert broker.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "x"})).code == ResponseCode.TOPIC_NOT_EXIST
