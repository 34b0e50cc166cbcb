"""The snapshot writer (snapshot_encoder.py) writes, round after round, exactly the bytes
of the v1 path it replaced: ``encode_capture(capture_of(view))``, then for v2
``DeltaEncoder.encode`` of those bytes."""

from __future__ import annotations

import asyncio
from typing import Callable, Sequence

import pytest

from mqadmin.diff import ServerView
from mqadmin.pipeline.capture import SnapshotPlan, capture_round, read_captures
from mqadmin.pipeline.delta import DeltaEncoder
from mqadmin.pipeline.schema import capture_of, decode_capture, encode_capture
from mqadmin.pipeline.snapshot_encoder import SnapshotEncoder
from mqadmin.transport.collect import collect_views
from mqadmin.transport.route_pump import RouteBodies
from mqnamesrv.protocol.bodies import TopicRouteData
from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG
from tests.nsprocess import NameServerProcess
from tests.pipeline.conftest import T0, hand_rounds
from tests.snapshot.fleet import Broker, delete_topics, put_kv

KEYFRAME_EVERY = 3


def old_files(rounds: Sequence[Sequence[ServerView]], version: int) -> list[list[bytes]]:
    """The files of the v1 path: every view through to_obj and msgpack, v2 re-split."""
    encoder = DeltaEncoder(KEYFRAME_EVERY)
    out = []
    for i, views in enumerate(rounds):
        v1 = [encode_capture(capture_of(v, captured_ms=T0 + i, round=i)) for v in views]
        out.append(v1 if version == 1 else [encoder.encode(data) for data in v1])
    return out


def new_files(rounds: Sequence[Sequence[ServerView]], version: int) -> list[list[bytes]]:
    encoder = SnapshotEncoder(version, KEYFRAME_EVERY)
    out = []
    for i, views in enumerate(rounds):
        encoder.next_round()
        out.append([encoder.encode(v, captured_ms=T0 + i, round=i) for v in views])
    return out


@pytest.mark.parametrize("version", [1, 2])
def test_hand_history_gives_the_same_bytes(version: int) -> None:
    """Lost broker, perm wipe, queue counts, KV namespaces appearing and emptying, a
    failed topic list, an unreachable server, keyframes every 3 rounds."""
    rounds = hand_rounds()
    old, new = old_files(rounds, version), new_files(rounds, version)
    assert len(new) == 9 and all(len(files) == 3 for files in new)
    assert new == old


def test_one_route_object_shared_by_many_topics_and_rounds_gives_the_same_bytes() -> None:
    """What the route pump hands over: the same TopicRouteData object for every topic
    with the same body, round after round, and None for TOPIC_NOT_EXIST."""
    rounds = hand_rounds()
    shared = rounds[0][0].topics["orders"]
    assert isinstance(shared, TopicRouteData)
    views = [[ServerView(v.addr, latency_ms=1.5, cluster_info=v.cluster_info, topic_list=tuple(f"t{n}" for n in range(50)),
                         topics={f"t{n}": (None if n % 7 == 0 else shared) for n in range(50 - i)},
                         kv={ORDER_TOPIC_CONFIG: {"t1": f"broker-a:{i}"}})
              for v in rounds[0]] for i in range(5)]
    assert new_files(views, 2) == old_files(views, 2)
    assert new_files(views, 1) == old_files(views, 1)


def test_route_bodies_are_decoded_once_and_kept_for_one_round() -> None:
    route = hand_rounds()[0][0].topics["orders"]
    assert route is not None
    body = route.encode(standard=True)
    bodies = RouteBodies()
    first = bodies.decode(body)
    assert first == route and bodies.decode(bytes(body)) is first and len(bodies) == 1
    bodies.next_round()
    assert bodies.decode(bytes(body)) is first  # seen the round before: the same object
    bodies.next_round()
    bodies.next_round()  # a round without it: dropped
    assert len(bodies) == 0 and bodies.decode(body) is not first


# ------------------------------------------------------------- real servers ----


def rounds_over_real_servers(a: str, b: str) -> list[list[ServerView]]:
    """Six rounds of two name servers, collected as snapshot collects them (one
    RouteBodies for every round), with a change before most rounds."""
    topics = [f"t{n:03d}" for n in range(60)]
    bodies = RouteBodies()
    b0, b1 = Broker("broker-0", 31000), Broker("broker-1", 31002)
    steps: list[Callable[[], object]] = [
        lambda: b0.register([a, b], topics),
        lambda: None,  # nothing changed
        # a second broker on a only (routes change there, new topics: b answers TOPIC_NOT_EXIST)
        # and an ORDER_TOPIC_CONFIG entry on b
        lambda: asyncio.gather(b1.register([a], topics[:10] + ["new_1", "new_2"]),
                               put_kv(b, ORDER_TOPIC_CONFIG, "t001", "broker-0:8")),
        lambda: delete_topics(a, ["t020", "t021"]),  # topic list change, a keyframe round
        lambda: b0.register([a, b], topics, queues=4),  # every route changes
        lambda: None,
    ]

    async def run() -> list[list[ServerView]]:
        rounds = []
        try:
            for step in steps:
                pending = step()
                if asyncio.iscoroutine(pending) or isinstance(pending, asyncio.Future):
                    await pending
                bodies.next_round()
                rounds.append(list(await collect_views([a, b], timeout=5.0, route_bodies=bodies)))
        finally:
            await b0.close()
            await b1.close()
        return rounds

    return asyncio.run(run())


@pytest.fixture(scope="module")
def real_rounds(tmp_path_factory: pytest.TempPathFactory) -> list[list[ServerView]]:
    base = tmp_path_factory.mktemp("snapshot-real")
    servers = [NameServerProcess(base / f"ns{i}").start() for i in range(2)]
    try:
        return rounds_over_real_servers(servers[0].addr, servers[1].addr)
    finally:
        for ns in servers:
            ns.stop()


def test_real_rounds_hold_the_planned_changes(real_rounds: list[list[ServerView]]) -> None:
    assert all(v.ok and not v.failures for views in real_rounds for v in views)
    a2, b2 = real_rounds[2]
    assert b2.topics["new_1"] is None and a2.topics["new_1"] is not None  # TOPIC_NOT_EXIST on b
    assert b2.kv[ORDER_TOPIC_CONFIG] == {"t001": "broker-0:8"} and a2.kv[ORDER_TOPIC_CONFIG] == {}
    a3 = real_rounds[3][0]
    assert a3.topic_list is not None and "t020" not in a3.topic_list and a3.topics["t020"] is None
    # an unchanged body comes back as the object of the round before
    assert real_rounds[1][0].topics["t050"] is real_rounds[0][0].topics["t050"]
    assert real_rounds[5][1].topics["t050"] is real_rounds[4][1].topics["t050"]
    assert real_rounds[4][1].topics["t050"] != real_rounds[3][1].topics["t050"]


@pytest.mark.parametrize("version", [1, 2])
def test_real_rounds_give_the_same_bytes(real_rounds: list[list[ServerView]], version: int) -> None:
    rounds = [*real_rounds, [real_rounds[-1][0], ServerView(real_rounds[-1][1].addr, error="refused")]]  # b silent
    assert new_files(rounds, version) == old_files(rounds, version)


def test_capture_round_writes_files_that_read_back_as_the_views(tmp_path_factory: pytest.TempPathFactory) -> None:
    """capture_round through one SnapshotEncoder: keyframe, then deltas that rebuild."""
    base = tmp_path_factory.mktemp("snapshot-round")
    ns = NameServerProcess(base / "ns").start()
    broker = Broker("broker-0", 31100)
    plan = SnapshotPlan([ns.addr], base / "out", timeout=5.0)
    encoder = SnapshotEncoder(2, keyframe_every=2)

    async def run() -> list[ServerView]:
        views = []
        try:
            for n in range(3):
                await broker.register([ns.addr], [f"t{i}" for i in range(20 + n)])
                views += await capture_round(plan, n, encoder=encoder)
        finally:
            await broker.close()
        return views

    try:
        views = asyncio.run(run())
    finally:
        ns.stop()
    captures = list(read_captures(base / "out"))
    assert [c.round for c in captures] == [0, 1, 2]
    assert [len(c.view["topics"]) for c in captures] == [20, 21, 22]
    assert [c.view for c in captures] == [decode_capture(encode_capture(capture_of(v, captured_ms=0, round=0))).view
                                          for v in views]
