"""Registration against a plain reference model of Java 4.9.8's RouteInfoManager rules.

Any sequence of registrations (masters and slaves, bumped or repeated data versions,
topic lists that grow, shrink and change shape) and admin writes (wipe/add write perm,
delete topic, unregister) must leave our tables equal to what the model gives. The
requests go through ``Processor.handle`` as encoded bytes, so whatever shortcut the
registration path takes on the body (skipping an unchanged one, applying only what
changed) is held to the same rules as the full path.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.codes import PERM_READ, PERM_WRITE
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.register import register_body, register_request
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.kv import KVStore
from mqnamesrv.registry.routes import RouteTable, TopicsDiff
from mqnamesrv.server import dispatch
from mqnamesrv.server.dispatch import Processor, RegisterWalk

CLUSTER = "ModelCluster"
NAMES = ("broker-a", "broker-b")
TOPICS = tuple(f"t{i}" for i in range(6))
Shape = tuple[int, int, int, int]


def addr_of(name: str, slot: int) -> str:
    """Two addresses per group, so an address can re-register under another id (promotion)."""
    return f"10.0.{NAMES.index(name)}.{slot}:10911"


@dataclass
class Model:
    """Java 4.9.8 RouteInfoManager, as plainly as it reads (spec 4.4, 4.9-4.11)."""

    topics: dict[str, dict[str, Shape]] = field(default_factory=dict)  # topic -> broker name -> shape
    groups: dict[str, dict[int, str]] = field(default_factory=dict)    # broker name -> id -> addr
    live: dict[str, DataVersion] = field(default_factory=dict)         # addr -> last data version

    def register(self, name: str, addr: str, broker_id: int, version: DataVersion, topics: dict[str, Shape]) -> None:
        first = name not in self.groups
        addrs = self.groups.setdefault(name, {})
        for bid in [b for b, a in addrs.items() if a == addr and b != broker_id]:
            del addrs[bid]
        first = addrs.get(broker_id) is None or first
        addrs[broker_id] = addr
        if broker_id == 0:
            # isBrokerTopicConfigChanged || registerFirst: every reported topic is
            # (re)written; topics the broker stopped listing stay.
            if first or self.live.get(addr) != version:
                for t, shape in topics.items():
                    self.topics.setdefault(t, {})[name] = shape
        self.live[addr] = version

    def rewrite_perm(self, name: str, wipe: bool) -> None:
        for queues in self.topics.values():
            if name in queues:
                r, w, perm, flag = queues[name]
                queues[name] = (r, w, perm & ~PERM_WRITE if wipe else PERM_READ | PERM_WRITE, flag)

    def delete_topic(self, topic: str) -> None:
        self.topics.pop(topic, None)

    def unregister(self, name: str, addr: str, broker_id: int) -> None:
        self.live.pop(addr, None)
        addrs = self.groups.get(name)
        if addrs is None:
            return
        addrs.pop(broker_id, None)
        if not addrs:
            del self.groups[name]
            for t in list(self.topics):
                self.topics[t].pop(name, None)
                if not self.topics[t]:
                    del self.topics[t]


def ours(routes: RouteTable) -> tuple[Any, ...]:
    topics = {t: {n: (q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag) for n, q in queues.items()}
              for t, queues in routes.topic_queue_table.items()}
    groups = {n: dict(g.addrs) for n, g in routes.broker_addr_table.items()}
    live = {a: v.data_version for a, v in routes.broker_live_table.items()}
    return topics, groups, live


shapes = st.tuples(st.sampled_from([1, 4]), st.sampled_from([1, 4]), st.sampled_from([2, 4, 6]), st.sampled_from([0, 1]))
SIX: dict[str, Shape] = {t: (4, 4, 6, 0) for t in TOPICS[:4]}
BODIES = (SIX, {**SIX, "t1": (4, 4, 2, 0)}, {**SIX, "t4": (1, 1, 6, 1)}, {"t0": (4, 4, 6, 0)})
registrations = st.tuples(
    st.just("register"), st.sampled_from(NAMES[:1] * 3 + NAMES[1:]), st.sampled_from([1, 1, 1, 2]), st.sampled_from([0, 0, 0, 1]),
    st.integers(1, 3),  # few counters, so repeats of a stored data version are common
    # a few recurring bodies (a broker re-sends the same topics, or one changed) and random ones
    st.one_of(st.sampled_from(BODIES), st.sampled_from(BODIES), st.dictionaries(st.sampled_from(TOPICS), shapes, max_size=len(TOPICS))),
)
admin = st.one_of(
    st.tuples(st.just("wipe"), st.sampled_from(NAMES)),
    st.tuples(st.just("add"), st.sampled_from(NAMES)),
    st.tuples(st.just("delete"), st.sampled_from(TOPICS)),
    st.tuples(st.just("unregister"), st.sampled_from(NAMES), st.sampled_from([1, 2]), st.sampled_from([0, 1])),
)
operations = st.lists(st.one_of(registrations, registrations, admin), max_size=25)


def check(ops: list[tuple[Any, ...]], *, off_loop: bool = False, staging: bool = False) -> None:
    """Run ``ops`` through a Processor and the model, comparing after each. ``off_loop``:
    each registration's body is parsed and diffed as the server's worker thread does
    (``decode_off_loop``) *before* the next operation, and applied after it, as happens
    when another connection's request is served while the worker runs. ``staging``:
    then also applied to a copy of the table (``stage_register``), one topic of it before
    the next operation and the rest after, as the server does in slices."""
    model, routes = Model(), RouteTable()
    processor = Processor(routes, KVStore(), NamesrvConfig())
    pending: tuple[Any, ...] | None = None

    def apply(cmd: Any, conn: str, decoded: Any, model_step: Any, op: tuple[Any, ...], staged: Any = None) -> None:
        with staged or nullcontext():  # the caller holds a staging, as the server's connection does
            response = processor.handle(cmd, conn, decoded=decoded, staged=staged)
        model_step()
        assert response is not None and response.code == 0, (op, response)
        assert ours(routes) == (model.topics, model.groups, model.live), op

    for op in ops:
        kind = op[0]
        if kind == "register":
            _, name, slot, broker_id, counter, topics = op
            version = DataVersion(counter, 1_700_000_000_000 + counter)
            body = register_body(RegisterBrokerBody(version, {t: TopicConfig(t, s[0], s[1], s[2], topic_sys_flag=s[3])
                                                              for t, s in topics.items()}))
            cmd = register_request(CLUSTER, name, addr_of(name, slot), broker_id, body)
            # Defaults bind this step's values (evaluated now, on purpose).
            step: Any = lambda n=name, a=addr_of(name, slot), b=broker_id, v=version, t=topics: (  # noqa: B008, E731
                model.register(n, a, b, v, t))
        elif kind in ("wipe", "add"):
            cmd = request(R.WIPE_WRITE_PERM_OF_BROKER if kind == "wipe" else R.ADD_WRITE_PERM_OF_BROKER,
                          {"brokerName": op[1]})
            step = lambda n=op[1], w=kind == "wipe": model.rewrite_perm(n, w)  # noqa: E731
        elif kind == "delete":
            cmd = request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": op[1]})
            step = lambda t=op[1]: model.delete_topic(t)  # noqa: E731
        else:
            _, name, slot, broker_id = op
            cmd = request(R.UNREGISTER_BROKER, {"clusterName": CLUSTER, "brokerName": name,
                                                "brokerAddr": addr_of(name, slot), "brokerId": str(broker_id)})
            step = lambda n=name, a=addr_of(name, slot), b=broker_id: model.unregister(n, a, b)  # noqa: B008, E731
        job = processor.decode_off_loop(cmd) if off_loop and kind == "register" else None
        # (a re-registration walked on the loop comes as a RegisterWalk: its slices, run at once)
        decoded = None if job is None else job.run() if isinstance(job, RegisterWalk) else job()
        staged = processor.stage_register(cmd, decoded) if staging and job is not None else None
        if staged is not None:
            staged.step(1)
        if pending is not None and job is not None:
            apply(*pending)  # two registrations in a row: the first is answered first
            pending = None
        if job is not None:
            pending = (cmd, f"conn-{op[1]}", decoded, step, op, staged)
            continue
        apply(cmd, f"conn-{op[1]}", None, step, op)
        if pending is not None:
            apply(*pending)
            pending = None
    if pending is not None:
        apply(*pending)


@settings(max_examples=1000, deadline=None, database=None)
@given(operations)
def test_registration_and_admin_writes_match_java_498(ops: list[tuple[Any, ...]]) -> None:
    check(ops)


@settings(max_examples=500, deadline=None, database=None)
@given(operations)
def test_registrations_parsed_off_the_loop_match_java_498_too(ops: list[tuple[Any, ...]]) -> None:
    """The same, with every registration going the worker-thread way, however small."""
    threshold, dispatch.OFF_LOOP_BODY_BYTES = dispatch.OFF_LOOP_BODY_BYTES, 0
    try:
        check(ops, off_loop=True)
    finally:
        dispatch.OFF_LOOP_BODY_BYTES = threshold


@settings(max_examples=500, deadline=None, database=None)
@given(operations)
def test_registrations_applied_in_slices_match_java_498_too(ops: list[tuple[Any, ...]]) -> None:
    """The same again, every registration with a topic to apply staged on a copy of the
    table (as a 10^5-topic one is) while the next operation runs on the live table."""
    saved = dispatch.OFF_LOOP_BODY_BYTES, dispatch.STAGE_SLICE_TOPICS
    dispatch.OFF_LOOP_BODY_BYTES, dispatch.STAGE_SLICE_TOPICS = 0, 0
    try:
        check(ops, off_loop=True, staging=True)
    finally:
        dispatch.OFF_LOOP_BODY_BYTES, dispatch.STAGE_SLICE_TOPICS = saved


def test_bumped_version_restores_the_wiped_perm_and_a_same_version_keeps_the_wipe() -> None:
    """The cases the issue names, spelled out (the property test finds them too)."""
    six: dict[str, Shape] = {"t0": (4, 4, 6, 0), "t1": (4, 4, 6, 0)}
    check([("register", "broker-a", 1, 0, 1, six), ("wipe", "broker-a"),
           ("register", "broker-a", 1, 0, 1, six),      # same version: the wipe stays
           ("register", "broker-a", 1, 0, 2, six),      # bumped: perm 6 again
           ("register", "broker-a", 1, 0, 3, {"t0": (4, 4, 6, 0)}),  # t1 no longer listed: it stays
           ("wipe", "broker-a"), ("register", "broker-a", 1, 0, 3, six),
           ("delete", "t1"), ("register", "broker-a", 1, 0, 4, six),  # bumped: t1 is back
           ("unregister", "broker-a", 1, 0), ("register", "broker-a", 1, 0, 4, six)])


def test_the_model_would_catch_a_lost_wipe() -> None:
    """The comparison can fail: a table the model disagrees with is noticed."""
    model, routes = Model(), RouteTable()
    version = DataVersion(1, 1)
    routes.register_broker(CLUSTER, "broker-a", addr_of("broker-a", 1), 0, "ha", version, {"t0": (4, 4, 6, 0)}, ())
    model.register("broker-a", addr_of("broker-a", 1), 0, version, {"t0": (4, 4, 6, 0)})
    model.rewrite_perm("broker-a", wipe=True)
    assert ours(routes) != (model.topics, model.groups, model.live)


def test_topics_none_is_refused_unless_the_applied_body_is_recognised() -> None:
    routes = RouteTable()
    addr = addr_of("broker-a", 1)
    with pytest.raises(ValueError):
        routes.register_broker(CLUSTER, "broker-a", addr, 0, "ha", DataVersion(1, 1), None, None, topics_key=b"k")
    routes.register_broker(CLUSTER, "broker-a", addr, 0, "ha", DataVersion(1, 1), {"t0": (4, 4, 6, 0)}, (),
                           topics_key=b"k")
    assert routes.topics_applied("broker-a", addr, b"k")
    assert not routes.topics_applied("broker-a", addr, b"other")
    assert not routes.topics_applied("broker-a", addr_of("broker-a", 2), b"k")
    routes.register_broker(CLUSTER, "broker-a", addr, 0, "ha", DataVersion(2, 2), None, None, topics_key=b"k")
    assert routes.broker_live_table[addr].data_version == DataVersion(2, 2)
    routes.wipe_write_perm("broker-a")
    assert not routes.topics_applied("broker-a", addr, b"k")


def test_a_diff_worked_out_before_another_write_is_not_trusted() -> None:
    """A server diffs a body on a worker thread while the loop goes on: if the broker's
    queues were written meanwhile (here a wipe), the registration diffs again."""
    routes = RouteTable()
    addr, six = addr_of("broker-a", 1), {"t0": (4, 4, 6, 0), "t1": (4, 4, 6, 0)}
    routes.register_broker(CLUSTER, "broker-a", addr, 0, "ha", DataVersion(1, 1), six, ())
    stale = TopicsDiff.of(six, routes.applied_hashes("broker-a", addr))
    assert stale.changed == {}  # nothing changed against the application on record...
    routes.wipe_write_perm("broker-a")  # ...until the wipe
    routes.register_broker(CLUSTER, "broker-a", addr, 0, "ha", DataVersion(2, 2), six, (), topics_diff=stale)
    assert {t: q["broker-a"].perm for t, q in routes.topic_queue_table.items()} == {"t0": 6, "t1": 6}
    fresh = TopicsDiff.of({**six, "t1": (4, 4, 2, 0)}, routes.applied_hashes("broker-a", addr))
    assert list(fresh.changed) == ["t1"]
    routes.register_broker(CLUSTER, "broker-a", addr, 0, "ha", DataVersion(3, 3), {**six, "t1": (4, 4, 2, 0)}, (),
                           topics_diff=fresh)
    assert routes.topic_queue_table["t1"]["broker-a"].perm == 2


def test_a_wipe_between_the_diff_and_its_application_is_undone_by_the_bumped_registration() -> None:
    """Diffed off the loop against the last application (only t1 changed), applied after
    a wipe that rewrote every topic: all of them get the perm the broker sends, as in
    4.9.8, not only the changed one."""
    six: dict[str, Shape] = {"t0": (4, 4, 6, 0), "t1": (4, 4, 6, 0)}
    # Registrations of broker-b in between let each of broker-a's be applied before the
    # next is diffed; the third is diffed by pieces against the second's application.
    ops = [("register", "broker-a", 1, 0, 1, six), ("register", "broker-b", 1, 0, 1, six),
           ("register", "broker-a", 1, 0, 2, {**six, "t2": (1, 1, 6, 0)}), ("register", "broker-b", 1, 0, 2, six),
           ("register", "broker-a", 1, 0, 3, {**six, "t1": (2, 2, 6, 0), "t2": (1, 1, 6, 0)}), ("wipe", "broker-a")]
    threshold, dispatch.OFF_LOOP_BODY_BYTES = dispatch.OFF_LOOP_BODY_BYTES, 0
    try:
        check(ops, off_loop=True)
    finally:
        dispatch.OFF_LOOP_BODY_BYTES = threshold


def test_brokers_with_the_same_topics_share_one_hash_array_and_stay_apart() -> None:
    """A cluster's brokers usually list the same topics: their applications keep one
    array between them, and a change of one is still diffed against its own."""
    routes = RouteTable()
    topics = {f"t{i}": (8, 8, 6, 0) for i in range(500)}
    a, b = addr_of("broker-a", 1), addr_of("broker-b", 1)
    routes.register_broker(CLUSTER, "broker-a", a, 0, "ha", DataVersion(1, 1), topics, ())
    routes.register_broker(CLUSTER, "broker-b", b, 0, "ha", DataVersion(1, 1), dict(topics), ())
    shared = routes.applied_hashes("broker-a", a)
    assert shared is not None and routes.applied_hashes("broker-b", b) is shared
    changed = {**topics, "t7": (4, 4, 6, 0)}
    diff = TopicsDiff.of(changed, routes.applied_hashes("broker-b", b))
    assert list(diff.changed) == ["t7"]
    routes.register_broker(CLUSTER, "broker-b", b, 0, "ha", DataVersion(2, 2), changed, (), topics_diff=diff)
    assert routes.applied_hashes("broker-a", a) is shared and routes.applied_hashes("broker-b", b) is not shared
    assert routes.topic_queue_table["t7"]["broker-b"].read_queue_nums == 4
    assert routes.topic_queue_table["t7"]["broker-a"].read_queue_nums == 8
    back = TopicsDiff.of(topics, routes.applied_hashes("broker-b", b))  # b back to a's table: shared again
    routes.register_broker(CLUSTER, "broker-b", b, 0, "ha", DataVersion(3, 3), topics, (), topics_diff=back)
    assert routes.applied_hashes("broker-b", b) is shared
    assert routes.topic_queue_table["t7"]["broker-b"].read_queue_nums == 8
