"""What the server process logs about brokers and requests (issue #18)."""

from __future__ import annotations

import re
from typing import Callable

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register
from tests.server.test_liveness import brokers, wait_for


def test_expiry_line_states_the_brokers_own_timeout(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"scanNotActiveBrokerInterval": "50"})  # server default stays 120000 ms
    broker = RawClient(ns.addr)
    assert broker.call(register("broker-a", extra_ext={"heartbeatTimeoutMillis": "300"})).code == 0
    with RawClient(ns.addr) as admin:
        assert wait_for(lambda: brokers(admin) == {})
    assert wait_for(lambda: "broker expired" in ns.stderr())
    assert "broker expired: 127.0.0.1:10911 (broker-a), no registration or heartbeat for 300 ms" in ns.stderr()
    assert "120000 ms" not in ns.stderr()
    broker.close()


def test_debug_logs_one_line_per_request(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv(extra_args=["--log-level", "DEBUG"])
    with RawClient(ns.addr) as client:
        peer = "127.0.0.1:%d" % client.sock.getsockname()[1]
        assert client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "nope"})).code == 17
        client.send(request(R.REGISTER_BROKER, oneway=True))  # one-way: "no answer"
        assert client.call(request(R.GET_BROKER_CLUSTER_INFO)).code == 0
    lines = [line for line in ns.stderr().splitlines() if "request from" in line]
    pattern = r"DEBUG .*request from {peer}: {what} in \d+\.\d{{3}} ms$"
    assert re.search(pattern.format(peer=re.escape(peer), what=r"GET_ROUTEINFO_BY_TOPIC \(105\) -> TOPIC_NOT_EXIST \(17\)"),
                     lines[0])
    assert re.search(pattern.format(peer=re.escape(peer), what=r"REGISTER_BROKER \(103\) -> no answer"), lines[1])
    assert re.search(pattern.format(peer=re.escape(peer), what=r"GET_BROKER_CLUSTER_INFO \(106\) -> SUCCESS \(0\)"),
                     lines[2])


def test_info_level_logs_no_request_lines(namesrv: NameServerProcess) -> None:
    with RawClient(namesrv.addr) as client:
        assert client.call(request(R.GET_BROKER_CLUSTER_INFO)).code == 0
    assert "request from" not in namesrv.stderr()
