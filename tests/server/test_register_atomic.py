"""Fleet-sized registrations against the real server: their bodies are parsed on a worker
thread (dispatch.OFF_LOOP_BODY_BYTES), or a re-registration's few changes found on the loop
(dispatch.QUICK_WALK), yet each is applied in one piece, answers stay in order on the
registering connection, and a bad big body is refused like a small one."""

from __future__ import annotations

import threading
import time

from mqnamesrv.protocol.bodies import TopicList, TopicRouteData
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.frame import encode
from mqnamesrv.protocol.register import register_request
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.kv import KVStore
from mqnamesrv.registry.routes import RouteTable
from mqnamesrv.server.dispatch import OFF_LOOP_BODY_BYTES, Processor, RegisterParts, RegisterWalk
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register

TOPICS = 10_000  # ~1.5 MB bodies, as a fleet broker sends
R_TOPIC_NOT_EXIST = ResponseCode.TOPIC_NOT_EXIST


def fleet_register(name: str, prefix: str, counter: int = 1, queues: int = 8) -> RemotingCommand:
    cmd = register(name, f"127.0.0.1:{20000 + ord(name[-1])}", topics={f"{prefix}_{i:05d}": queues
                                                                       for i in range(TOPICS)}, counter=counter)
    assert len(cmd.body) > OFF_LOOP_BODY_BYTES  # the worker-thread path, not the inline one
    return cmd


def test_a_client_polling_during_registrations_sees_each_one_whole(namesrv: NameServerProcess) -> None:
    """The topic list is one answer over the whole table: while brokers with 10,000 new
    topics each register, every list holds all of a registration's topics or none."""
    seen: list[int] = []
    stop = threading.Event()

    def poll() -> None:
        with RawClient(namesrv.addr, timeout=30) as client:
            while not stop.is_set():
                answer = client.call(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}))
                seen.append(len(TopicList.decode(answer.body).topics) if answer.code == 0 else 0)

    with RawClient(namesrv.addr, timeout=30) as broker:
        assert broker.call(fleet_register("broker-a", "a")).code == 0
        poller = threading.Thread(target=poll)
        poller.start()
        try:
            for name, prefix in (("broker-b", "b"), ("broker-c", "c"), ("broker-d", "d")):
                assert broker.call(fleet_register(name, prefix)).code == 0
        finally:
            stop.set()
            poller.join(30)
        # The poller's last answer may predate the last registration: ask once more.
        final = broker.call(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}))
    assert seen, "the poller got no answer"
    assert set(seen) <= {TOPICS, 2 * TOPICS, 3 * TOPICS, 4 * TOPICS}, sorted(set(seen))
    assert len(TopicList.decode(final.body).topics) == 4 * TOPICS


def asked_right_behind(broker: RawClient, reg: RemotingCommand, topic: str) -> RemotingCommand:
    """Send ``reg`` and a route query for ``topic`` in one write; both must be answered
    SUCCESS, in that order: the query's answer."""
    query = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    broker.send_bytes(encode(reg) + encode(query))
    first, second = broker.recv(), broker.recv()
    assert first is not None and second is not None
    assert (first.opaque, second.opaque) == (reg.opaque, query.opaque)
    assert first.code == 0 and second.code == 0
    return second


def test_answers_stay_in_order_behind_a_registration_parsed_off_the_loop(namesrv: NameServerProcess) -> None:
    """A route query pipelined right behind a big registration on the same connection is
    answered after it, and sees it."""
    with RawClient(namesrv.addr, timeout=30) as broker:
        answer = asked_right_behind(broker, fleet_register("broker-a", "a", queues=3), "a_09999")
        assert TopicRouteData.decode(answer.body).queue_datas[0].read_queue_nums == 3


def one_percent_renamed(prefix: str, counter: int, every: int = 100) -> dict[str, int]:
    return {f"{prefix}_{i:05d}" + (f"_r{counter}" if i % every == 0 else ""): 8 for i in range(TOPICS)}


def test_a_fleet_brokers_small_change_is_diffed_on_the_loop_and_the_rest_on_a_worker() -> None:
    """``decode_off_loop`` has a re-registration's blocks walked on the loop, a slice at a
    time (a ``RegisterWalk``): within ``QUICK_WALK`` (a fleet broker's 1%) it ends with the
    parts; a big change ends with the worker thread's job, and a first registration is
    the worker's from the start."""
    routes = RouteTable(clock=lambda: 1)
    processor = Processor(routes, KVStore(), NamesrvConfig())
    first = fleet_register("broker-a", "a")
    job = processor.decode_off_loop(first)
    assert callable(job)  # a first registration: nothing to walk yet
    assert processor.handle(first, "c", decoded=job()).code == 0  # type: ignore[union-attr]
    small = register("broker-a", "127.0.0.1:20097", topics=one_percent_renamed("a", 2), counter=2)
    walk = processor.decode_off_loop(small)
    assert isinstance(walk, RegisterWalk)
    parts = None
    while parts is None:  # a slice at a time, as the loop walks it
        parts = walk.step()
    assert isinstance(parts, RegisterParts) and parts.diff is not None
    assert sorted(parts.diff.changed) == [f"a_{i:05d}_r2" for i in range(0, TOPICS, 100)]
    assert processor.handle(small, "c", decoded=parts).code == 0  # type: ignore[union-attr]
    assert routes.topic_queue_table.get("a_00100_r2") is not None
    big = register("broker-a", "127.0.0.1:20097", topics=one_percent_renamed("a", 3, every=3), counter=3)
    walk = processor.decode_off_loop(big)
    assert isinstance(walk, RegisterWalk)
    ended = None
    while ended is None:
        ended = walk.step()
    assert callable(ended) and not isinstance(ended, RegisterParts)  # a third of the topics renamed: the worker's


def test_a_re_registration_diffed_on_the_loop_is_answered_before_the_query_behind_it(
        namesrv: NameServerProcess) -> None:
    """A 1% change found on the loop is applied at the loop's next turn: a route query
    pipelined right behind it on the same connection is answered after it, and sees it."""
    with RawClient(namesrv.addr, timeout=30) as broker:
        assert broker.call(fleet_register("broker-a", "a")).code == 0
        reg = register("broker-a", "127.0.0.1:20097", topics=one_percent_renamed("a", 2), counter=2)
        asked_right_behind(broker, reg, "a_09900_r2")
        # 4.9.8 keeps the topics a broker no longer reports
        assert broker.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a_09900"})).code == 0


def test_a_big_body_that_is_not_json_is_refused_and_the_connection_goes_on(namesrv: NameServerProcess) -> None:
    body = b"{" + b" " * OFF_LOOP_BODY_BYTES + b"not json"
    with RawClient(namesrv.addr, timeout=30) as broker:
        answer = broker.call(register_request("DefaultCluster", "broker-a", "127.0.0.1:10911", 0, body))
        assert answer.code != 0 and "not JSON" in (answer.remark or "")
        assert broker.call(register("broker-a")).code == 0


def test_a_100k_topic_first_registration_is_applied_in_slices_and_seen_whole(namesrv: NameServerProcess) -> None:
    """Its topics are applied a slice at a time (the log says how many slices) while
    other clients are answered, and published in one swap: a route query for its first
    topic and one for its last, pipelined so that they are answered back to back, find
    both or neither."""
    big = register("broker-z", "127.0.0.1:20001", topics={f"t{i:05d}": 8 for i in range(100_000)})
    pairs: list[tuple[int, int]] = []
    stop = threading.Event()

    def poll() -> None:
        with RawClient(namesrv.addr, timeout=60) as client:
            while not stop.is_set():
                first = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "t00000"})
                last = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "t99999"})
                client.send_bytes(encode(first) + encode(last))
                a, b = client.recv(), client.recv()
                assert a is not None and b is not None
                pairs.append((a.code, b.code))

    with RawClient(namesrv.addr, timeout=60) as broker:
        assert broker.call(fleet_register("broker-a", "a")).code == 0
        poller = threading.Thread(target=poll)
        poller.start()
        try:
            assert broker.call(big).code == 0
            answered = len(pairs)
            while len(pairs) < answered + 2 and poller.is_alive():  # answers made after the registration's
                time.sleep(0.01)
        finally:
            stop.set()
            poller.join(60)
    assert set(pairs) <= {(R_TOPIC_NOT_EXIST, R_TOPIC_NOT_EXIST), (0, 0)}, sorted(set(pairs))
    assert pairs[0] == (R_TOPIC_NOT_EXIST, R_TOPIC_NOT_EXIST) and pairs[-1] == (0, 0)
    slices = [line for line in namesrv.stderr().splitlines() if "100000 topics applied in" in line]
    assert len(slices) == 1 and int(slices[0].split()[-2]) >= 100_000 // 1024, slices
