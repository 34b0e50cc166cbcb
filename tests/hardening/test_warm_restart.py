"""--route-snapshot: a restarted server serves the routes it had, at once."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import msgpack

from mqnamesrv.protocol.bodies import TopicRouteData
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register


def route(ns: NameServerProcess, topic: str = "order_topic") -> TopicRouteData | None:
    with RawClient(ns.addr) as c:
        resp = c.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    return TopicRouteData.decode(resp.body) if resp.code == 0 else None


def wait_file(path: Path) -> None:
    deadline = time.monotonic() + 5
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} not written"
        time.sleep(0.05)


def test_routes_are_served_right_after_a_crash(tmp_path: Path) -> None:
    snap = tmp_path / "routes.snapshot"
    ns = NameServerProcess(tmp_path / "ns", {"routeSnapshotInterval": "50", "scanNotActiveBrokerInterval": "100",
                                             "brokerChannelExpiredTime": "3000"},
                           ["--route-snapshot", str(snap)]).start()
    with RawClient(ns.addr) as broker:
        assert broker.call(register("broker-a", topics={"order_topic": 4, "t2": 2})).code == 0
        before = route(ns)
        wait_file(snap)
        time.sleep(0.2)
        assert ns.proc is not None
        ns.proc.send_signal(signal.SIGKILL)  # no shutdown hook: only the periodic snapshot counts
        ns.proc.wait()
    ns.start()
    after = route(ns)  # no broker has registered with the new process
    assert after is not None and before is not None
    assert after.queue_datas == before.queue_datas and after.broker_datas == before.broker_datas
    assert "warm restart: 2 topics, 1 brokers" in ns.stderr()
    # Nobody re-registers: the restored broker expires like any silent broker.
    deadline = time.monotonic() + 10
    while route(ns) is not None:
        assert time.monotonic() < deadline, "restored broker never expired"
        time.sleep(0.1)
    ns.stop()


def test_old_snapshot_is_not_served(tmp_path: Path) -> None:
    snap = tmp_path / "routes.snapshot"
    ns = NameServerProcess(tmp_path / "ns", {"routeSnapshotInterval": "50", "brokerChannelExpiredTime": "500"},
                           ["--route-snapshot", str(snap)]).start()
    with RawClient(ns.addr) as broker:
        assert broker.call(register("broker-a")).code == 0
        wait_file(snap)
        ns.stop()
    time.sleep(0.7)  # older than one expiry period: the brokers may be long gone
    ns.start()
    assert route(ns) is None
    assert "older than broker expiry" in ns.stderr()
    ns.stop()


def test_corrupt_snapshot_is_set_aside(tmp_path: Path) -> None:
    snap = tmp_path / "routes.snapshot"
    snap.write_bytes(msgpack.packb({"format": "mqadmin-route-snapshot", "version": 1,
                                    "written_ms": int(time.time() * 1000),
                                    "state": {"topics": {"t": [["b"]]}, "brokers": {}, "clusters": {}, "live": {},
                                              "filters": {}}}))
    ns = NameServerProcess(tmp_path / "ns", {}, ["--route-snapshot", str(snap)]).start()
    assert route(ns, "t") is None
    assert (tmp_path / "routes.snapshot.corrupt").exists()
    ns.stop()
    (tmp_path / "routes.snapshot").write_bytes(b"\xc1 not msgpack")
    ns.start()
    assert "is not msgpack" in ns.stderr()
    ns.stop()


def test_graceful_stop_keeps_the_brokers_it_disconnects(tmp_path: Path) -> None:
    """SIGTERM closes every broker connection; that is the server stopping, not the
    brokers dying, so the snapshot written at shutdown still holds them."""
    snap = tmp_path / "routes.snapshot"
    ns = NameServerProcess(tmp_path / "ns", {"routeSnapshotInterval": "60000"}, ["--route-snapshot", str(snap)]).start()
    with RawClient(ns.addr) as a, RawClient(ns.addr) as b:
        assert a.call(register("broker-a", "127.0.0.1:10911", topics={"order_topic": 4, "t2": 2})).code == 0
        assert b.call(register("broker-b", "127.0.0.1:10921", topics={"order_topic": 4})).code == 0
        before = route(ns)
        assert ns.stop() == 0  # brokers still connected: shutdown closes their connections
    ns.start()
    assert "warm restart: 2 topics, 2 brokers" in ns.stderr()
    after = route(ns)
    assert before is not None and after is not None
    assert after.queue_datas == before.queue_datas and after.broker_datas == before.broker_datas
    ns.stop()
