"""brokerAllowList: only listed addresses may register, unregister or heartbeat (issue 17, item 11)."""

from __future__ import annotations

from typing import Callable

from nameserver.protocol.bodies import DataVersion
from nameserver.protocol.codes import RequestCode as R
from nameserver.protocol.codes import ResponseCode
from nameserver.protocol.command import request
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
