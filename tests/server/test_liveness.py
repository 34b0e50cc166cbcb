"""Broker liveness in the real process, with short configured intervals instead of 120 s.

The exact 120 000 ms boundary is covered with a manual clock in tests/registry; here we
check that the process scans, expires, closes and cascades on its own."""

from __future__ import annotations

import time
from typing import Callable

from mqnamesrv.protocol.bodies import ClusterInfo
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register


def brokers(client: RawClient) -> dict[str, dict[int, str]]:
    info = ClusterInfo.decode(client.call(request(R.GET_BROKER_CLUSTER_INFO)).body)
    return {name: dict(b.broker_addrs) for name, b in info.broker_addr_table.items()}


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_silent_broker_expires_and_its_connection_is_closed(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"scanNotActiveBrokerInterval": "50", "brokerChannelExpiredTime": "400"})
    broker = RawClient(ns.addr)
    assert broker.call(register("broker-a")).code == 0
    with RawClient(ns.addr) as admin:
        assert brokers(admin) == {"broker-a": {0: "127.0.0.1:10911"}}
        assert wait_for(lambda: brokers(admin) == {})
        # As in Java, the expired broker's connection is closed by the server.
        assert broker.recv(timeout=5) is None
        assert "broker expired: 127.0.0.1:10911 (broker-a)" in ns.stderr()
        assert admin.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "order_topic"})).code == 17


def test_heartbeating_broker_stays(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"scanNotActiveBrokerInterval": "50", "brokerChannelExpiredTime": "600"})
    with RawClient(ns.addr) as broker, RawClient(ns.addr) as admin:
        for _ in range(8):  # 8 x 200 ms = 1.6 s, far past one timeout
            assert broker.call(register("broker-a")).code == 0
            time.sleep(0.2)
        assert brokers(admin) == {"broker-a": {0: "127.0.0.1:10911"}}


def test_broker_timeout_from_register_header(start_namesrv: Callable[..., NameServerProcess]) -> None:
    """5.x brokers send heartbeatTimeoutMillis; it overrides the server default."""
    ns = start_namesrv({"scanNotActiveBrokerInterval": "50"})
    broker = RawClient(ns.addr)
    assert broker.call(register("broker-a", extra_ext={"heartbeatTimeoutMillis": "300"})).code == 0
    with RawClient(ns.addr) as admin:
        assert wait_for(lambda: brokers(admin) == {})
    broker.close()


def test_closing_the_connection_removes_the_broker(namesrv: NameServerProcess) -> None:
    with RawClient(namesrv.addr) as admin:
        master = RawClient(namesrv.addr)
        slave = RawClient(namesrv.addr)
        assert master.call(register("broker-a", "127.0.0.1:10911")).code == 0
        assert slave.call(register("broker-a", "127.0.0.1:10921", broker_id=1)).code == 0
        slave.close()
        assert wait_for(lambda: brokers(admin) == {"broker-a": {0: "127.0.0.1:10911"}})
        master.close()
        assert wait_for(lambda: brokers(admin) == {})
        assert admin.call(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body == b'{"topicList":[]}'


def test_idle_connection_is_closed_and_its_broker_removed(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"scanNotActiveBrokerInterval": "50", "serverChannelMaxIdleTimeSeconds": "1"})
    broker = RawClient(ns.addr)
    assert broker.call(register("broker-a")).code == 0
    assert broker.recv(timeout=5) is None  # closed by the server after ~1 s of silence
    with RawClient(ns.addr) as admin:
        assert brokers(admin) == {}
    assert "closing idle connection" in ns.stderr()
