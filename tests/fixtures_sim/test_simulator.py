"""The simulated broker against real name-server processes: it registers, keeps its
connection, answers broker requests, unregisters on stop, and partitions, crashes and
heals have the effects a real broker's would."""

from __future__ import annotations

import socket
import threading
from typing import Callable, Iterator

import pytest

from mqadmin.fixture.broker_sim import BrokerConfig, SimulatedBroker
from mqnamesrv.protocol.bodies import TopicConfig, decode_kv_table
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, encode
from tests.nsprocess import NameServerProcess, RawClient
from tests.fixtures_sim.harness import LoopThread, listed, queues, wait_for

# Brokers register every 0.2 s; 1.5 s of silence leaves room for a busy test machine.
FAST_EXPIRY = {"scanNotActiveBrokerInterval": "50", "brokerChannelExpiredTime": "1500"}


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    lt = LoopThread()
    yield lt
    lt.close()


def make_broker(loop: LoopThread, addrs: list[str], name: str = "broker-a", **kw: object) -> SimulatedBroker:
    config = BrokerConfig(name=name, register_period=kw.pop("register_period", 0.2), request_timeout=2.0, **kw)  # type: ignore[arg-type]
    topics = [TopicConfig("order_topic", 4, 4)]
    return loop.call(lambda: SimulatedBroker(config, topics, addrs))


def test_registers_keeps_registering_and_routes(loop: LoopThread,
                                                start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv(FAST_EXPIRY)
    broker = make_broker(loop, [ns.addr])
    loop.run(broker.start())
    assert broker.status == {ns.addr: "registered"}
    assert listed(ns.addr) == {"broker-a": {0: broker.address}}
    q = queues(ns.addr, "order_topic")["broker-a"]
    assert (q.read_queue_nums, q.write_queue_nums, q.perm) == (4, 4, 6)
    # Four expiry periods later it is still there: the periodic registrations refresh it.
    assert not wait_for(lambda: listed(ns.addr) == {}, timeout=2.5)
    assert "broker expired" not in ns.stderr()
    loop.run(broker.stop())


def test_answers_admin_requests_on_its_address(loop: LoopThread, namesrv: NameServerProcess) -> None:
    broker = make_broker(loop, [namesrv.addr], register_period=30.0)
    loop.run(broker.start())
    with RawClient(broker.address) as admin:
        info = admin.call(request(R.GET_BROKER_RUNTIME_INFO))
        assert info.code == ResponseCode.SUCCESS and info.is_response
        assert decode_kv_table(info.body)["brokerVersionDesc"] == "V4_9_8"

        before = broker.data_version
        deleted = admin.call(request(R.DELETE_TOPIC_IN_BROKER, {"topic": "order_topic"}))
        assert deleted.code == ResponseCode.SUCCESS
        assert "order_topic" not in broker.topics and broker.data_version.counter == before.counter + 1

        unknown = admin.call(request(999))
        assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert unknown.remark == " request type 999 not supported"

        created = admin.call(request(R.UPDATE_AND_CREATE_TOPIC, {
            "topic": "new_topic", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6",
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}))
        assert created.code == ResponseCode.SUCCESS
    # Like Java's registerIncrementBrokerData: registered at once, not at the next period.
    assert wait_for(lambda: "broker-a" in queues(namesrv.addr, "new_topic"), timeout=3)
    loop.run(broker.stop())


def test_clean_stop_unregisters_before_closing(loop: LoopThread, namesrv: NameServerProcess) -> None:
    broker = make_broker(loop, [namesrv.addr])
    loop.run(broker.start())
    assert listed(namesrv.addr) != {}
    loop.run(broker.stop())
    assert listed(namesrv.addr) == {}
    assert "broker unregistered: broker-a" in namesrv.stderr()
    assert "its connection from" not in namesrv.stderr()


def test_crash_closes_connections_without_unregistering(loop: LoopThread, namesrv: NameServerProcess) -> None:
    broker = make_broker(loop, [namesrv.addr])
    loop.run(broker.start())
    loop.run(broker.crash())
    assert wait_for(lambda: listed(namesrv.addr) == {}, timeout=3)
    assert "broker unregistered" not in namesrv.stderr()
    assert wait_for(lambda: "its connection from" in namesrv.stderr(), timeout=3)
    # Restarted, it comes back on the same address.
    address = broker.address
    loop.run(broker.start())
    assert listed(namesrv.addr) == {"broker-a": {0: address}}
    loop.run(broker.stop())


def test_partition_expires_on_that_server_only_then_heals(
        loop: LoopThread, start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns1, ns2 = start_namesrv(FAST_EXPIRY), start_namesrv(FAST_EXPIRY)
    broker = make_broker(loop, [ns1.addr, ns2.addr])
    loop.run(broker.start())
    assert listed(ns2.addr) == {"broker-a": {0: broker.address}}
    loop.call(lambda: broker.partition([ns2.addr]))
    # Expired by time (the connection stayed open and silent), not removed by a close.
    assert wait_for(lambda: listed(ns2.addr) == {}, timeout=5)
    assert "broker expired: " + broker.address in ns2.stderr()
    assert listed(ns1.addr) == {"broker-a": {0: broker.address}}
    assert "broker expired" not in ns1.stderr()
    loop.call(lambda: broker.heal([ns2.addr]))
    assert wait_for(lambda: listed(ns2.addr) == {"broker-a": {0: broker.address}}, timeout=3)
    assert broker.status[ns2.addr] == "registered"
    loop.run(broker.stop())


def test_query_data_version_first_and_restarted_server(
        loop: LoopThread, start_namesrv: Callable[..., NameServerProcess]) -> None:
    """forceRegister false: unchanged rounds send only QUERY_DATA_VERSION (which keeps the
    broker alive), and a server that came back empty answers changed=true."""
    ns = start_namesrv(FAST_EXPIRY)
    broker = make_broker(loop, [ns.addr], force_register=False)
    loop.run(broker.start())
    assert not wait_for(lambda: listed(ns.addr) == {}, timeout=2.0)
    port = ns.port
    ns.stop()
    ns.extra_args = ["--port", str(port)]
    ns.start()
    assert ns.port == port and listed(ns.addr) in ({}, {"broker-a": {0: broker.address}})
    assert wait_for(lambda: listed(ns.addr) == {"broker-a": {0: broker.address}}, timeout=3)
    assert "broker-a" in queues(ns.addr, "order_topic")
    loop.run(broker.stop())


def test_5x_broker_heartbeats_and_brings_its_own_timeout(
        loop: LoopThread, start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"scanNotActiveBrokerInterval": "50"})  # server default: 120 s
    broker = make_broker(loop, [ns.addr], style="5.x", register_period=30.0, heartbeat_interval=0.1,
                         heartbeat_timeout_ms=1200)
    loop.run(broker.start())
    assert broker.data_version.state_version == 0
    # Registered once; the QUERY_DATA_VERSION heartbeats keep it past its 1.2 s timeout.
    assert not wait_for(lambda: listed(ns.addr) == {}, timeout=2.0)
    loop.call(lambda: broker.partition([ns.addr]))
    assert wait_for(lambda: listed(ns.addr) == {}, timeout=3)
    loop.run(broker.crash())


class FakeNamesrv:
    """A ten-line name server on a raw socket: it records the codes it receives, answers
    REGISTER_BROKER and (changed=false) QUERY_DATA_VERSION, and with ``ask`` sends the broker
    a GET_BROKER_RUNTIME_INFO on the same connection after the first registration."""

    def __init__(self, ask: bool = False) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.ask = ask
        self.codes: list[int] = []
        self.answers: list[RemotingCommand] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        conn.settimeout(5)
        decoder = FrameDecoder()
        with conn:
            while data := conn.recv(65536):
                decoder.feed(data)
                while (cmd := decoder.next_frame()) is not NEED_DATA:
                    assert isinstance(cmd, RemotingCommand)
                    if cmd.is_response:
                        self.answers.append(cmd)
                        continue
                    self.codes.append(cmd.code)
                    ext = {"changed": "false"} if cmd.code == R.QUERY_DATA_VERSION else {}
                    conn.sendall(encode(cmd.response(ResponseCode.SUCCESS, ext=ext)))
                    if self.ask and cmd.code == R.REGISTER_BROKER:
                        conn.sendall(encode(request(R.GET_BROKER_RUNTIME_INFO, opaque=77)))
                        self.ask = False


def test_answers_requests_on_the_registration_connection(loop: LoopThread) -> None:
    fake = FakeNamesrv(ask=True)
    broker = make_broker(loop, [fake.addr], register_period=30.0, listen=False, address="127.0.0.1:10911")
    loop.run(broker.start())
    assert wait_for(lambda: len(fake.answers) == 1, timeout=3)
    assert (fake.answers[0].opaque, fake.answers[0].code) == (77, ResponseCode.SUCCESS)
    assert "putTps" in decode_kv_table(fake.answers[0].body)
    loop.run(broker.crash())


def test_unchanged_rounds_send_only_query_data_version(loop: LoopThread) -> None:
    fake = FakeNamesrv()
    broker = make_broker(loop, [fake.addr], register_period=0.05, listen=False, address="127.0.0.1:10911",
                         force_register=False)
    loop.run(broker.start())
    assert wait_for(lambda: len(fake.codes) >= 4, timeout=3)
    loop.run(broker.stop())
    assert fake.codes[0] == R.REGISTER_BROKER and fake.codes[-1] == R.UNREGISTER_BROKER
    assert set(fake.codes[1:-1]) == {R.QUERY_DATA_VERSION}
