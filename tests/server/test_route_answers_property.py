"""Kept route answers against the plain path, after every kind of write.

A real name server runs in this process (its loop on a thread, clients on real sockets
to 127.0.0.1) with a clock the test steps, so that expiry is one of the writes. A seeded
random sequence of writes (every request code that changes state, a broker's connection
closing, expiry by the scan) goes to it; after each one every route query of a fixed pool
(topics x client dialects) is asked again, pipelined, and each answer, kept or not, must
be byte for byte what a fresh Processor (no kept answer, no cached body) answers over the
same registry, KV store and config. The pool is asked after every write, so every answer
the server keeps is checked at its next use: an answer kept past a write that changed it
fails here. Other tests check that answers are in fact kept, and kept past writes that
touch other topics.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicQueueMappingInfo
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import NEED_DATA, decode_payload, encode
from mqnamesrv.protocol.register import register_request
from mqnamesrv.registry.clock import ManualClock
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.route5 import ZONE_MODE, ZONE_NAME
from mqnamesrv.server.app import NameServer
from mqnamesrv.server.dispatch import Processor
from tests.nsprocess import RawClient

CLUSTERS = {"b1": "C1", "b2": "C1", "b3": "C2"}
TOPICS = ["t0", "t1", "t2", "t3", "t/\u00e9", "rmq_sys_SYNC_BROKER_MEMBER_b1"]
#: asked, never registered by anyone (or deleted): TOPIC_NOT_EXIST, kept too
POOL_TOPICS = [*TOPICS, "nope"]
#: client dialects: (version, extra ext fields)
DIALECTS: list[tuple[int, dict[str, str]]] = [
    (409, {}), (317, {}), (317, {"acceptStandardJsonOnly": "true"}),
    (409, {ZONE_MODE: "true", ZONE_NAME: "z1"}),
]


class InProcessServer:
    """A NameServer on a loop of its own thread, with a manual clock."""

    def __init__(self, workdir: Path) -> None:
        self.clock = ManualClock()
        config = NamesrvConfig()
        config.apply({"kvConfigPath": str(workdir / "kv.json"), "configStorePath": str(workdir / "ns.properties"),
                      "listenPort": "0", "bindAddress": "127.0.0.1", "scanNotActiveBrokerInterval": "3600000",
                      "serverChannelMaxIdleTimeSeconds": "3600"}, strict=True, keep_unknown=False)
        self.loop = asyncio.new_event_loop()
        self.server = NameServer(config, clock=self.clock)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.on_loop(self.server.start)
        self.addr = f"127.0.0.1:{self.server.port}"

    def on_loop(self, make: Callable[[], Any]) -> Any:
        """Run a coroutine function (or plain function) on the server's loop; wait for it."""
        async def call() -> Any:
            result = make()
            return await result if asyncio.iscoroutine(result) else result
        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(30)

    def plain_answer(self, payload: bytes) -> bytes:
        """What a Processor with nothing kept answers to ``payload`` over the live state."""
        def answer() -> bytes:
            fresh = Processor(self.server.routes, self.server.kv, self.server.config)
            try:
                response = fresh.handle(decode_payload(payload), None, "127.0.0.1")
                assert response is not None
                return encode(response)
            finally:
                fresh.close()
        return self.on_loop(answer)

    def stop(self) -> None:
        self.on_loop(self.server.stop)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def inproc(tmp_path: Path) -> Iterator[InProcessServer]:
    server = InProcessServer(tmp_path)
    yield server
    server.stop()


def raw_answers(client: RawClient, count: int) -> list[bytes]:
    """The next ``count`` answers as their raw frames (length field included)."""
    out: list[bytes] = []
    while len(out) < count:
        payload = client.decoder.next_payload()
        if payload is NEED_DATA:
            data = client.sock.recv(1 << 20)
            assert data, "the server closed the connection"
            client.decoder.feed(data)
            continue
        assert isinstance(payload, bytes)
        out.append((len(payload)).to_bytes(4, "big") + payload)
    return out


def route_queries(opaque: int) -> list[bytes]:
    return [encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic, **extra}, version=version,
                           opaque=opaque + i))
            for i, (topic, (version, extra)) in enumerate((t, d) for t in POOL_TOPICS for d in DIALECTS)]


def check_every_route(server: InProcessServer, client: RawClient, opaque: int) -> None:
    frames = route_queries(opaque)
    client.send_bytes(b"".join(frames))
    for frame, answer in zip(frames, raw_answers(client, len(frames))):
        expected = server.plain_answer(frame[4:])
        assert answer == expected, f"{decode_payload(frame[4:])}: kept {answer!r}, plain {expected!r}"


def register_body(topics: dict[str, tuple[int, int]], counter: int, filters: list[str],
                  mappings: dict[str, TopicQueueMappingInfo]) -> bytes:
    body = RegisterBrokerBody(DataVersion(counter, 1_700_000_000_000 + counter),
                              {t: TopicConfig(t, n, n, perm=perm) for t, (n, perm) in topics.items()}, filters).encode()
    if mappings:
        infos = json.dumps({t: m.to_obj() for t, m in mappings.items()}, separators=(",", ":"))
        body = body.replace(b'"topicConfigTable":', b'"topicQueueMappingInfoMap":' + infos.encode() + b',"topicConfigTable":')
    return body


def closed_by_peer(client: RawClient) -> bool:
    client.sock.setblocking(False)
    try:
        return client.sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    finally:
        client.sock.setblocking(True)


class Writer:
    """Random writes of every kind, over a few broker connections."""

    def __init__(self, server: InProcessServer, rng: random.Random) -> None:
        self.server, self.rng = server, rng
        self.conns: list[RawClient | None] = [None, None, None]
        self.admin = RawClient(server.addr)
        self.counter = 1
        self.filters: dict[tuple[str, int], list[str]] = {}
        self.group: dict[str, dict[str, str]] = {}
        self.last: dict[tuple[str, int], dict[str, tuple[int, int]]] = {}

    def conn(self) -> RawClient:
        i = self.rng.randrange(len(self.conns))
        client = self.conns[i]
        if client is None:
            client = self.conns[i] = RawClient(self.server.addr)
        return client

    def call(self, client: RawClient, cmd: Any) -> None:
        answer = client.call(cmd)
        assert answer.opaque == cmd.opaque

    def register(self) -> str:
        rng = self.rng
        name = rng.choice(list(CLUSTERS))
        broker_id = rng.choice([0, 0, 0, 1, 2])
        five = rng.random() < 0.6
        topics = {t: (rng.choice([1, 2, 4]), rng.choice([6, 6, 4, 2])) for t in rng.sample(TOPICS, rng.randint(0, 4))}
        if (name, broker_id) in self.last and rng.random() < 0.5:
            topics = self.last[name, broker_id]  # the same topics again: only the version (and mappings) move
        self.last[name, broker_id] = topics
        if rng.random() < 0.7:
            self.counter += 1
        mappings = {}
        if five and topics and rng.random() < 0.5:
            t = rng.choice(list(topics))
            mappings[t] = TopicQueueMappingInfo(topic=t, bname=name, total_queues=2, epoch=self.counter,
                                                curr_id_map={0: 0, 1: rng.randint(1, 3)})
        if (name, broker_id) not in self.filters or rng.random() < 0.2:  # filter servers change now and then
            self.filters[name, broker_id] = rng.choice([[], [], ["fs-1:1"], ["fs-2:2", "fs-3:3"]])
        filters = self.filters[name, broker_id]
        extra: dict[str, str] = {}
        if five:
            if name not in self.group or rng.random() < 0.2:  # a group's flag and zone change now and then
                self.group[name] = {"enableActingMaster": rng.choice(["true", "false"]), ZONE_NAME: rng.choice(["z1", "z2"])}
            extra.update(self.group[name])
        if rng.random() < 0.3:
            extra["heartbeatTimeoutMillis"] = str(rng.choice([1_000, 5_000]))
        addr = f"127.0.0.1:{10_000 + 10 * int(name[1]) + broker_id}"
        body = register_body(topics, self.counter, filters, mappings)
        self.call(self.conn(), register_request(CLUSTERS[name], name, addr, broker_id, body, extra=extra))
        return f"register {name}/{broker_id} five={five} {sorted(topics)} filters={filters} maps={list(mappings)}"

    def unregister(self) -> str:
        name = self.rng.choice(list(CLUSTERS))
        broker_id = self.rng.choice([0, 1])
        ext = {"clusterName": CLUSTERS[name], "brokerName": name, "brokerAddr": f"127.0.0.1:{10_000 + 10 * int(name[1]) + broker_id}",
               "brokerId": str(broker_id)}
        self.call(self.admin, request(R.UNREGISTER_BROKER, ext))
        return f"unregister {name}/{broker_id}"

    def perm(self) -> str:
        code = self.rng.choice([R.WIPE_WRITE_PERM_OF_BROKER, R.ADD_WRITE_PERM_OF_BROKER])
        name = self.rng.choice(list(CLUSTERS))
        self.call(self.admin, request(code, {"brokerName": name}))
        return f"perm {code} {name}"

    def delete_topic(self) -> str:
        ext = {"topic": self.rng.choice(TOPICS)}
        if self.rng.random() < 0.5:
            ext["clusterName"] = self.rng.choice(["C1", "C2"])
        self.call(self.admin, request(R.DELETE_TOPIC_IN_NAMESRV, ext))
        return f"delete {ext}"

    def register_topic(self) -> str:
        topic = self.rng.choice(TOPICS)
        queues = [{"brokerName": name, "perm": self.rng.choice([6, 4]), "readQueueNums": n, "topicSysFlag": 0,
                   "writeQueueNums": n} for name, n in ((self.rng.choice([*CLUSTERS, "bx"]), self.rng.randint(1, 3))
                                                       for _ in range(self.rng.randint(1, 2)))]
        body = json.dumps({"queueDatas": queues}).encode()
        self.call(self.admin, request(R.REGISTER_TOPIC_IN_NAMESRV, {"topic": topic}, body=body))
        return f"register topic {topic} {queues}"

    def kv(self) -> str:
        namespace = self.rng.choice(["ORDER_TOPIC_CONFIG", "ORDER_TOPIC_CONFIG", "OTHER"])
        key = self.rng.choice(POOL_TOPICS)
        if self.rng.random() < 0.6:
            value = f"b1:{self.rng.randint(1, 8)}"
            self.call(self.admin, request(R.PUT_KV_CONFIG, {"namespace": namespace, "key": key, "value": value}))
            return f"kv put {namespace}/{key}={value}"
        self.call(self.admin, request(R.DELETE_KV_CONFIG, {"namespace": namespace, "key": key}))
        return f"kv delete {namespace}/{key}"

    def config(self) -> str:
        item = self.rng.choice(["orderMessageEnable", "supportActingMaster"])
        value = self.rng.choice(["true", "false"])
        self.call(self.admin, request(R.UPDATE_NAMESRV_CONFIG, body=f"{item}={value}\n".encode()))
        return f"config {item}={value}"

    def expire(self) -> str:
        ms = self.rng.choice([2_000, 6_000, 130_000])
        self.server.clock.advance(ms)
        self.server.on_loop(self.server.server.scan_once)
        # The scan closes the connections of the brokers it drops: let them go here too.
        threading.Event().wait(0.05)
        for i, client in enumerate(self.conns):
            if client is not None and closed_by_peer(client):
                client.close()
                self.conns[i] = None
        return f"expire +{ms} ms"

    def close_connection(self) -> str:
        i = self.rng.randrange(len(self.conns))
        client = self.conns[i]
        if client is not None:
            client.close()
            self.conns[i] = None
            # the server sees the close on its loop: wait until it has
            for _ in range(200):
                if self.server.on_loop(lambda: len(self.server.server.connections)) <= self._open():
                    break
                threading.Event().wait(0.005)
        return f"close connection {i}"

    def _open(self) -> int:
        return 2 + sum(c is not None for c in self.conns)  # admin + the route client + brokers

    def liveness(self) -> str:
        name = self.rng.choice(list(CLUSTERS))
        addr = f"127.0.0.1:{10_000 + 10 * int(name[1])}"
        if self.rng.random() < 0.5:
            self.call(self.admin, request(R.BROKER_HEARTBEAT, {"brokerAddr": addr}))
        else:
            body = DataVersion(self.counter, 1_700_000_000_000 + self.counter).encode()
            self.call(self.admin, request(R.QUERY_DATA_VERSION, {"brokerAddr": addr}, body=body))
        return f"liveness {name}"

    def step(self) -> str:
        kinds = [self.register] * 6 + [self.unregister, self.perm, self.delete_topic, self.register_topic, self.kv,
                                       self.kv, self.config, self.expire, self.close_connection, self.liveness]
        return self.rng.choice(kinds)()

    def close(self) -> None:
        for client in self.conns:
            if client is not None:
                client.close()
        self.admin.close()


@pytest.mark.parametrize("seed", range(6))
def test_every_kept_answer_is_the_plain_answer_after_every_write(inproc: InProcessServer, seed: int) -> None:
    rng = random.Random(seed)
    writer = Writer(inproc, rng)
    done: list[str] = []
    try:
        with RawClient(inproc.addr) as client:
            check_every_route(inproc, client, 1)
            for n in range(120):
                done.append(writer.step())
                try:
                    check_every_route(inproc, client, 1000 * (n + 1))
                except AssertionError as exc:
                    raise AssertionError(f"after {done[-5:]}: {exc}") from None
        asked = 121 * len(POOL_TOPICS) * len(DIALECTS)
        assert inproc.server.processor.route_answers.misses < asked // 2, \
            "answers were seldom reused: the test checked little that was kept"
    finally:
        writer.close()


def test_a_write_drops_only_the_answers_it_can_change(inproc: InProcessServer) -> None:
    """Kept answers outlive writes to other topics and brokers: after a bumped
    re-registration that changes one topic, and a KV write for another, every other
    answer of the pool is still reused."""
    processor = inproc.server.processor
    with RawClient(inproc.addr) as broker, RawClient(inproc.addr) as client:
        topics = {t: (4, 6) for t in TOPICS[:4]}
        assert broker.call(register_request("C1", "b1", "127.0.0.1:10010", 0, register_body(topics, 1, [], {}))).code == 0
        assert broker.call(register_request("C2", "b3", "127.0.0.1:10030", 0,
                                            register_body({"t3": (2, 6)}, 1, [], {}))).code == 0
        check_every_route(inproc, client, 1)
        pool = len(POOL_TOPICS) * len(DIALECTS)

        def reused(opaque: int) -> int:
            """How many of the pool's queries were answered from a kept answer."""
            before = processor.route_answers.misses
            check_every_route(inproc, client, opaque)
            return pool - (processor.route_answers.misses - before)

        assert reused(1000) == pool  # nothing changed: all kept
        topics["t0"] = (8, 6)
        assert broker.call(register_request("C1", "b1", "127.0.0.1:10010", 0, register_body(topics, 2, [], {}))).code == 0
        assert reused(2000) == pool - len(DIALECTS)  # t0's answers only
        order = {"namespace": "ORDER_TOPIC_CONFIG", "key": "t1", "value": "b1:4"}
        assert broker.call(request(R.PUT_KV_CONFIG, order)).code == 0
        assert broker.call(request(R.PUT_KV_CONFIG, {**order, "namespace": "OTHER"})).code == 0
        assert reused(3000) == pool - len(DIALECTS)  # t1's
        # b3's group changes (a slave joins): t3 names b3, no other topic does
        assert broker.call(register_request("C2", "b3", "127.0.0.1:10031", 1,
                                            register_body({"t3": (2, 6)}, 1, [], {}))).code == 0
        assert reused(4000) == pool - len(DIALECTS)
        assert broker.call(request(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")).code == 0
        assert reused(5000) == 0  # a config change: all


def test_a_registration_applied_in_slices_drops_what_it_changed(inproc: InProcessServer) -> None:
    """A fleet-sized re-registration is parsed off the loop and applied in slices on a
    copy of the table, which then replaces the live one: the answers of the topics it
    changed go, the others stay, and every answer is still the plain one."""
    processor = inproc.server.processor
    names = [f"fleet_{i:05d}" for i in range(4000)]
    pool = names[2::200] + names[3::200]  # 40 topics: half change below, half do not
    with RawClient(inproc.addr, timeout=30) as broker, RawClient(inproc.addr) as client:
        # The second registration is diffed against the first's parse, the third against
        # the second's pieces (table_pieces), which finds the changed topics exactly.
        for counter in (1, 2):
            body = register_body({t: (8 if i or counter == 1 else 7, 6) for i, t in enumerate(names)}, counter, [], {})
            assert broker.call(register_request("C1", "b1", "127.0.0.1:10010", 0, body)).code == 0
        frames = [encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": t}, opaque=i)) for i, t in enumerate(pool)]

        def ask() -> int:
            """How many of the pool's queries were answered from a kept answer."""
            before = processor.route_answers.misses
            client.send_bytes(b"".join(frames))
            for frame, answer in zip(frames, raw_answers(client, len(frames))):
                assert answer == inproc.plain_answer(frame[4:])
            return len(frames) - (processor.route_answers.misses - before)

        ask()
        assert ask() == len(pool)
        # every even-numbered topic changes: 2,000, more than a slice (STAGE_SLICE_TOPICS)
        third = register_body({t: (4 if i % 2 == 0 else 8, 6) for i, t in enumerate(names)}, 3, [], {})
        assert broker.call(register_request("C1", "b1", "127.0.0.1:10010", 0, third)).code == 0
        assert ask() == len(pool) // 2


def test_a_big_topic_list_is_built_off_the_loop_and_answered_in_order(inproc: InProcessServer,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Past OFF_LOOP_TOPIC_LIST topics the whole topic list is built on a worker thread: the
    same bytes as built on the loop, and what the connection sent after it answered after it."""
    from mqnamesrv.server import dispatch

    body = RegisterBrokerBody(DataVersion(1, 1_700_000_000_000),
                              {f"t{i:03d}": TopicConfig(f"t{i:03d}", 4, 4, perm=6) for i in range(300)}, []).encode()
    with RawClient(inproc.addr) as broker, RawClient(inproc.addr) as client:
        assert broker.call(register_request("C1", "b1", "127.0.0.1:10911", 0, body)).code == 0
        listing = encode(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, opaque=1))
        expected = inproc.plain_answer(listing[4:])
        route = encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "t001"}, opaque=2))
        jobs: list[str] = []
        real = dispatch.Processor.decode_off_loop

        def counted(self: Processor, cmd: Any, client_host: Any = None) -> Any:
            job = real(self, cmd, client_host)
            if job is not None:
                jobs.append(f"{cmd.code}")
            return job

        monkeypatch.setattr(dispatch, "OFF_LOOP_TOPIC_LIST", 100)
        monkeypatch.setattr(dispatch.Processor, "decode_off_loop", counted)
        client.send_bytes(listing + route + listing)
        first, second, third = raw_answers(client, 3)
        assert jobs == [str(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)] * 2  # both built off the loop
        assert first == third == expected
        assert decode_payload(second[4:]).opaque == 2 and second == inproc.plain_answer(route[4:])
        monkeypatch.setattr(dispatch, "OFF_LOOP_TOPIC_LIST", 10**9)  # on the loop: the same bytes
        client.send_bytes(listing)
        assert raw_answers(client, 1) == [expected] and len(jobs) == 2
