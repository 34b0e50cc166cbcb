"""The simulated 5.x broker in slave-acting-master mode with a zone, against the real
server process: CI's stand-in for the Java 5.0.0 broker of tests/golden5."""

from __future__ import annotations

from typing import Callable, Iterator

import pytest

from mqadmin.fixture.broker_sim import BrokerConfig, SimulatedBroker
from mqnamesrv.protocol.bodies import TopicConfig, TopicRouteData
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import decode
from tests.fixtures_sim.harness import LoopThread, wait_for
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.test_golden5_replay import GOLDEN5


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    lt = LoopThread()
    yield lt
    lt.close()


def broker5(loop: LoopThread, addrs: list[str], broker_id: int = 0, **kw: object) -> SimulatedBroker:
    config = BrokerConfig(name="broker5", broker_id=broker_id, style="5.x", acting_master=True, zone="zoneA",
                          heartbeat_timeout_ms=800, heartbeat_interval=0.1, register_period=30.0,
                          request_timeout=2.0, **kw)  # type: ignore[arg-type]
    return loop.call(lambda: SimulatedBroker(config, [TopicConfig("orders", 4, 4, 6)], addrs))


def route(addr: str, topic: str = "orders", **ext: str) -> TopicRouteData | None:
    with RawClient(addr) as client:
        answer = client.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic, **ext}, version=413))
    return TopicRouteData.decode(answer.body) if answer.code == 0 else None


def test_requests_are_shaped_like_the_java_brokers() -> None:
    """Header keys in the order a 5.0.0 broker's HashMap wrote them (tests/golden5)."""
    sim = SimulatedBroker(BrokerConfig(name="broker5", address="127.0.0.1:20931", style="5.x", acting_master=True,
                                       zone="zoneA", heartbeat_timeout_ms=10_000, ha_address="127.0.0.1:20932"))
    java_register = decode((GOLDEN5 / "01-register-broker5-master" / "request.bin").read_bytes())
    ours = sim.register_request()
    assert list(ours.ext or {}) == list(java_register.ext or {})
    assert {k: v for k, v in (ours.ext or {}).items() if k != "bodyCrc32"} == \
        {k: v for k, v in (java_register.ext or {}).items() if k != "bodyCrc32"}
    java_heartbeat = decode((GOLDEN5 / "broker-heartbeat-904.bin").read_bytes())
    beat = sim.heartbeat_request()
    assert (beat.code, beat.flag, beat.ext) == (java_heartbeat.code, java_heartbeat.flag, java_heartbeat.ext)


def test_acting_master_group_with_zone(loop: LoopThread, start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"scanNotActiveBrokerInterval": "50"})
    master, slave = broker5(loop, [ns.addr]), broker5(loop, [ns.addr], broker_id=1)
    loop.run(master.start())
    loop.run(slave.start())
    got = route(ns.addr)
    assert got is not None
    (group,) = got.broker_datas
    assert (group.enable_acting_master, group.zone_name) == (True, "zoneA")
    assert dict(group.broker_addrs) == {0: master.address, 1: slave.address}
    # Heartbeats alone (no registration for 30 s) keep both past their 800 ms timeout,
    # and the slave learns its group from the name server.
    assert wait_for(lambda: slave.member_group == {0: master.address, 1: slave.address})
    assert not wait_for(lambda: "broker expired" in ns.stderr(), timeout=2.0)
    # A zone-mode client in another zone does not see a group that has a master.
    assert route(ns.addr, __ZONE_MODE="true", __ZONE_NAME="zoneB") == TopicRouteData((), ())

    # The master goes silent (a network partition): it expires on its own 800 ms, the
    # group turns read-only, zone-mode clients elsewhere may read from the slave.
    master.partition([ns.addr])
    assert wait_for(lambda: "broker expired" in ns.stderr())
    assert f"broker expired: {master.address} (broker5), no registration or heartbeat for 800 ms" in ns.stderr()
    after = route(ns.addr)
    assert after is not None and dict(after.broker_datas[0].broker_addrs) == {1: slave.address}
    assert after.queue_datas[0].perm == 4
    assert wait_for(lambda: slave.member_group == {1: slave.address})
    other_zone = route(ns.addr, __ZONE_MODE="true", __ZONE_NAME="zoneB")
    assert other_zone is not None and [b.broker_name for b in other_zone.broker_datas] == ["broker5"]
    loop.run(slave.stop())
    loop.run(master.crash())
