"""``synth-history``: a plausible capture history, in the format ``snapshot`` writes.

The model follows the name server's rules (spec 6.2, 6.3) rather than drawing views at
random. Each broker group registers with every name server at start, 10 s later and then
every 30 s; a server lists a broker while its last registration that reached it is less
than 120 s old (removed at that server's next 5 s scan) and no unregister or connection
close has reached it since. Events, drawn from ``seed``:

* partition: one broker's registrations stop reaching one server for minutes; that
  server drops it when the entry expires and lists it again at the first registration
  after the partition heals;
* broker crash: ``kill`` closes its connections (every server drops it at once, except
  one it is partitioned from), ``host`` does not (every server drops it on expiry);
  restarted minutes later;
* broker restart: clean unregister, back within two minutes;
* name server restart: down for seconds, back empty, filled by the next registrations
  (up to 30 s); half of the restarts lose the ORDER_TOPIC_CONFIG entries until an
  operator puts them back;
* name server outage: unreachable for minutes (an error capture), then restarts;
* half-applied wipeWritePerm: a broker's write permission wiped on some servers only,
  until it is added back.

With ``operations`` (on for ``--fleet jmh``), also what operators do in a day, drawn from
a random stream of its own (the events above stay those of the seed):

* topics created (they appear on each server within a registration period, 0-30 s)
  and deleted (``deleteTopic`` reaches the servers one by one, within 10 s);
* a rolling restart of the name servers, one after the other two minutes apart, each
  down for seconds and back empty until the brokers' next registrations;
* a name-server partition: one server cut off from every broker for minutes, so it
  drops them all on expiry while it still answers ``snapshot``.

Captures are taken every ``every`` seconds; each file holds what ``collect_views`` would
have returned at that instant. Routes depend only on which brokers a server lists, so
the msgpack bytes of routes, topic lists and whole topic maps are cached and the files
assembled from them (msgpack maps concatenate), which keeps 24 hours of 10,000 topics
on 3 servers at about a minute of CPU.
"""

from __future__ import annotations

import bisect
import math
import os
import random
from dataclasses import dataclass, field
from datetime import datetime, UTC
from pathlib import Path
from typing import Callable, Iterator, Sequence

import msgpack

from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, QueueData, TopicRouteData
from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG

from .capture import capture_path, write_atomic
from .delta import DEFAULT_KEYFRAME_EVERY, DeltaEncoder, SplitCapture
from .schema import SCHEMA, VERSION, is_capture_name, round_dir_name
from .times import parse_time

EXPIRY_MS = 120_000
SCAN_MS = 5_000
PERIOD_MS = 30_000
FIRST_PERIODIC_MS = 10_000
DEFAULT_START = "2026-01-01T00:00:00+00:00"


@dataclass(frozen=True)
class SynthPlan:
    out: Path
    servers: int = 3
    brokers: int = 32
    topics: int = 10_000
    hours: float = 24.0
    every: float = 300.0
    seed: int = 1
    spread: int = 2
    clusters: int | None = None  # default: one per 16 broker groups
    start: str = DEFAULT_START
    events_per_day: float = 1.0  # scales every event rate
    operations: bool = False  # also topics created/deleted, a rolling restart, a name-server partition
    version: int = 2  # capture format: 2 (delta.py) or 1 (every route every round)
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY  # v2: rounds between keyframes


@dataclass
class Event:
    kind: str
    start_ms: int
    end_ms: int
    broker: int | None = None
    server: int | None = None
    servers: tuple[int, ...] = ()
    detail: str = ""
    topics: tuple[int, ...] = ()  # topic_create, topic_delete: the topics' layout indices


@dataclass
class _Fleet:
    """Event-derived state, queried per (server, broker, instant)."""

    start_ms: int
    end_ms: int
    n_servers: int
    n_brokers: int
    rng: random.Random
    events: list[Event] = field(default_factory=list)
    # broker -> sorted (start, end, stop kind) running intervals; stop kind: clean, kill, host, None (still running)
    running: dict[int, list[tuple[int, int, str | None]]] = field(default_factory=dict)
    ticks: dict[int, list[int]] = field(default_factory=dict)
    partitions: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    down: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # server -> unreachable intervals
    wiped: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    kv_lost: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    scan_phase: list[int] = field(default_factory=list)
    # topic -> server -> (visible from, visible until) of topics created or deleted in the history
    topic_life: dict[int, dict[int, tuple[int, int]]] = field(default_factory=dict)


def _within(intervals: Sequence[tuple[int, int]], t: int) -> bool:
    return any(a <= t < b for a, b in intervals)


def _draw_events(f: _Fleet, rate_scale: float) -> None:
    rng = f.rng
    days = (f.end_ms - f.start_ms) / 86_400_000
    span = f.end_ms - f.start_ms

    def count(per_day: float) -> int:
        lam = per_day * days * rate_scale
        # Poisson by inversion; lam is small
        n, p, u = 0, math.exp(-lam), rng.random()
        s = p
        while u > s and n < 10_000:
            n += 1
            p *= lam / n
            s += p
        return n

    def at() -> int:
        return f.start_ms + int(rng.random() * span)

    def minutes(lo: float, hi: float) -> int:
        return int(math.exp(rng.uniform(math.log(lo), math.log(hi))) * 60_000)

    for _ in range(count(0.15 * f.n_brokers)):
        b, s, t = rng.randrange(f.n_brokers), rng.randrange(f.n_servers), at()
        f.events.append(Event("partition", t, t + minutes(2, 60), broker=b, server=s))
    for _ in range(count(0.04 * f.n_brokers)):
        b, t = rng.randrange(f.n_brokers), at()
        f.events.append(Event("broker_crash", t, t + minutes(2, 20), broker=b, detail=rng.choice(("kill", "host"))))
    for _ in range(count(0.08 * f.n_brokers)):
        b, t = rng.randrange(f.n_brokers), at()
        f.events.append(Event("broker_restart", t, t + int(rng.uniform(30, 120) * 1000), broker=b, detail="clean"))
    for _ in range(count(0.3 * f.n_servers)):
        s, t = rng.randrange(f.n_servers), at()
        f.events.append(Event("namesrv_restart", t, t + int(rng.uniform(3, 20) * 1000), server=s,
                              detail="keep_kv" if rng.random() < 0.5 else "lose_kv"))
    for _ in range(count(0.25)):
        s, t = rng.randrange(f.n_servers), at()
        f.events.append(Event("namesrv_outage", t, t + minutes(3, 30), server=s, detail="lose_kv"))
    for _ in range(count(1.0)):
        b, t = rng.randrange(f.n_brokers), at()
        k = rng.randrange(1, max(2, f.n_servers))
        f.events.append(Event("perm_wipe_partial", t, t + minutes(10, 90), broker=b,
                              servers=tuple(sorted(rng.sample(range(f.n_servers), k)))))
    f.events.sort(key=lambda e: (e.start_ms, e.kind))


def _draw_operations(f: _Fleet, n_topics: int, rng: random.Random, rate_scale: float) -> None:
    """Operator actions (module docstring), from ``rng``: topics created and deleted in
    batches of 0.1% of the topics, one rolling restart a day, one name-server partition."""
    days = (f.end_ms - f.start_ms) / 86_400_000
    span = f.end_ms - f.start_ms
    per_day = max(1, round(days * rate_scale))
    batch = max(1, n_topics // 1000)
    taken: set[int] = set()
    for kind in ("topic_create", "topic_delete"):
        for _ in range(4 * per_day):
            t = f.start_ms + int(rng.random() * span)
            chosen = tuple(sorted(i for i in rng.sample(range(n_topics), min(batch, n_topics)) if i not in taken))
            taken.update(chosen)
            f.events.append(Event(kind, t, t + (30_000 if kind == "topic_create" else 10_000), topics=chosen))
    for _ in range(per_day):
        t = f.start_ms + int(rng.random() * span * 0.9)
        f.events.append(Event("namesrv_rolling_restart", t, t + 120_000 * f.n_servers, detail="keep_kv"))
        s = rng.randrange(f.n_servers)
        t = f.start_ms + int(rng.random() * span * 0.9)
        f.events.append(Event("namesrv_partition", t, t + int(rng.uniform(5, 20) * 60_000), server=s))
    f.events.sort(key=lambda e: (e.start_ms, e.kind))


def _build(f: _Fleet) -> None:
    """Turn events into intervals and registration ticks."""
    f.scan_phase = [f.rng.randrange(SCAN_MS) for _ in range(f.n_servers)]
    stops: dict[int, list[tuple[int, int, str]]] = {b: [] for b in range(f.n_brokers)}
    for e in f.events:
        if e.kind in ("broker_crash", "broker_restart"):
            assert e.broker is not None
            stops[e.broker].append((e.start_ms, e.end_ms, e.detail))
        elif e.kind == "partition":
            assert e.broker is not None and e.server is not None
            f.partitions.setdefault((e.broker, e.server), []).append((e.start_ms, e.end_ms))
        elif e.kind in ("namesrv_restart", "namesrv_outage"):
            assert e.server is not None
            f.down.setdefault(e.server, []).append((e.start_ms, e.end_ms))
            if e.detail == "lose_kv":
                f.kv_lost.setdefault(e.server, []).append((e.start_ms, e.end_ms + _restore_delay(f.rng)))
        elif e.kind == "perm_wipe_partial":
            assert e.broker is not None
            for s in e.servers:
                f.wiped.setdefault((e.broker, s), []).append((e.start_ms, e.end_ms))
        elif e.kind == "namesrv_partition":
            assert e.server is not None
            for b in range(f.n_brokers):
                f.partitions.setdefault((b, e.server), []).append((e.start_ms, e.end_ms))
        elif e.kind == "namesrv_rolling_restart":
            for s in range(f.n_servers):
                down = e.start_ms + s * 120_000
                f.down.setdefault(s, []).append((down, down + int(f.rng.uniform(3, 20) * 1000)))
        elif e.kind in ("topic_create", "topic_delete"):
            for topic in e.topics:
                life = f.topic_life.setdefault(topic, {})
                for s in range(f.n_servers):
                    at = e.start_ms + int(f.rng.random() * (e.end_ms - e.start_ms))
                    a, z = life.get(s, (-1, 2 ** 62))
                    life[s] = (at, z) if e.kind == "topic_create" else (a, at)
    for downs in f.down.values():
        downs.sort()
    for b in range(f.n_brokers):
        # Every broker has been up for a while when the history starts.
        begin = f.start_ms - EXPIRY_MS - f.rng.randrange(PERIOD_MS) - FIRST_PERIODIC_MS
        intervals: list[tuple[int, int, str | None]] = []
        for s_at, e_at, how in sorted(stops[b]):
            if s_at <= begin:
                continue
            intervals.append((begin, s_at, how))
            begin = e_at
        intervals.append((begin, f.end_ms + EXPIRY_MS, None))
        f.running[b] = intervals
        ticks: list[int] = []
        for a, z, _ in intervals:
            t = a
            ticks.append(t)
            t += FIRST_PERIODIC_MS
            while t < z:
                ticks.append(t)
                t += PERIOD_MS
        f.ticks[b] = ticks


def hidden_topics(f: _Fleet, s: int, t: int) -> frozenset[int]:
    """Topics that do not exist on server s at instant t (not created yet, or deleted)."""
    return frozenset(topic for topic, life in f.topic_life.items() if not life[s][0] <= t < life[s][1])


def _restore_delay(rng: random.Random) -> int:
    return int(rng.uniform(30, 120) * 60_000)


def _down_since(f: _Fleet, s: int, t: int) -> int | None:
    """Start of the latest restart of server s (the end of its last down interval) <= t."""
    ends = [z for a, z in f.down.get(s, ()) if z <= t]
    return max(ends) if ends else None


def listed(f: _Fleet, s: int, b: int, t: int) -> bool:
    """Whether server s lists broker b at instant t."""
    since = _down_since(f, s, t)
    ticks = f.ticks[b]
    i = bisect.bisect_right(ticks, t) - 1
    parts = f.partitions.get((b, s), ())
    last = None
    # Only registrations within the expiry window (plus a scan) can keep b listed.
    while i >= 0 and ticks[i] > t - EXPIRY_MS - SCAN_MS - PERIOD_MS:
        tau = ticks[i]
        if (since is None or tau >= since) and not _within(parts, tau) and not _within(f.down.get(s, ()), tau):
            last = tau
            break
        i -= 1
    if last is None:
        return False
    # Removal by unregister or connection close after that registration.
    for a, z, how in f.running[b]:
        if a <= last < z:
            if z <= t and how in ("clean", "kill") and not _within(parts, z):
                return False
            break
    # Expiry: removed at the server's first scan at or after last + EXPIRY.
    due = last + EXPIRY_MS
    phase = f.scan_phase[s]
    scan = due + ((phase - due) % SCAN_MS)
    return t < scan


# ------------------------------------------------------------------ layout ----


@dataclass(frozen=True)
class _Layout:
    servers: list[str]
    brokers: list[str]
    broker_cluster: list[str]
    masters: list[str]
    slaves: list[str]
    topics: list[str]
    topic_brokers: list[tuple[int, ...]]
    topic_queues: list[int]
    order_conf: dict[str, str]  # order topics: ORDER_TOPIC_CONFIG value


def _layout(plan: SynthPlan, rng: random.Random) -> _Layout:
    n_clusters = plan.clusters or max(1, plan.brokers // 16)
    servers = [f"10.0.0.{i + 1}:9876" for i in range(plan.servers)]
    brokers = [f"broker-{i:02d}" for i in range(plan.brokers)]
    cluster_names = [f"cluster-{chr(ord('a') + i)}" if i < 26 else f"cluster-{i}" for i in range(n_clusters)]
    broker_cluster = [cluster_names[i % n_clusters] for i in range(plan.brokers)]
    masters = [f"10.0.{1 + i // 200}.{1 + 2 * (i % 100)}:10911" for i in range(plan.brokers)]
    slaves = [f"10.0.{1 + i // 200}.{2 + 2 * (i % 100)}:10911" for i in range(plan.brokers)]
    groups = {c: [b for b in range(plan.brokers) if broker_cluster[b] == c] for c in cluster_names}
    topics, topic_brokers, topic_queues = [], [], []
    order_conf: dict[str, str] = {}
    for i in range(plan.topics):
        c = cluster_names[i % n_clusters]
        members = groups[c]
        spread = min(plan.spread, len(members))
        first = (i // n_clusters) % len(members)
        chosen = tuple(sorted(members[(first + j) % len(members)] for j in range(spread)))
        name = f"topic-{i:05d}"
        queues = rng.choices((8, 4, 16), weights=(8, 1, 1))[0]
        topics.append(name)
        topic_brokers.append(chosen)
        topic_queues.append(queues)
        if rng.random() < 0.01:
            order_conf[name] = ";".join(f"{brokers[b]}:{queues}" for b in chosen)
    # System topics, as brokers register them.
    for c in cluster_names:
        topics.append(c)
        topic_brokers.append(tuple(groups[c]))
        topic_queues.append(16)
    for b in range(plan.brokers):
        topics.append(brokers[b])
        topic_brokers.append((b,))
        topic_queues.append(1)
    for name, queues in (("TBW102", 8), ("SELF_TEST_TOPIC", 1)):
        topics.append(name)
        topic_brokers.append(tuple(range(plan.brokers)))
        topic_queues.append(queues)
    return _Layout(servers, brokers, broker_cluster, masters, slaves, topics, topic_brokers, topic_queues, order_conf)


# ------------------------------------------------------------------ writing ----


class _Packer:
    """msgpack fragments of one history, cached by what they depend on."""

    TOPICS_CACHE_BYTES = 256 << 20

    def __init__(self, layout: _Layout) -> None:
        self.layout = layout
        self.pk = msgpack.Packer(use_bin_type=True)
        self.route_cache: dict[tuple[object, ...], bytes] = {}
        self.topics_cache: dict[tuple[object, ...], bytes] = {}
        self.pairs_cache: dict[tuple[object, ...], list[tuple[str, bytes]]] = {}
        self.rows_cache: dict[tuple[object, ...], int] = {}
        self.list_cache: dict[tuple[frozenset[int], frozenset[int]], bytes] = {}
        self.cluster_cache: dict[frozenset[int], bytes] = {}
        self.broker_datas = [BrokerData(layout.broker_cluster[b], layout.brokers[b],
                                        {0: layout.masters[b], 1: layout.slaves[b]}) for b in range(len(layout.brokers))]
        self.topic_names = [self.pk.pack(t) for t in layout.topics]

    def route(self, t: int, present: tuple[int, ...], wiped: frozenset[int], conf: str | None) -> bytes:
        key = (self.layout.topic_brokers[t], self.layout.topic_queues[t], present,
               tuple(b for b in present if b in wiped), conf)
        packed = self.route_cache.get(key)
        if packed is None:
            if not present:
                packed = self.pk.pack(None)
            else:
                q = self.layout.topic_queues[t]
                route = TopicRouteData(
                    queue_datas=tuple(QueueData(self.layout.brokers[b], q, q, 4 if b in wiped else 6) for b in present),
                    broker_datas=tuple(self.broker_datas[b] for b in present),
                    order_topic_conf=conf,
                )
                packed = self.pk.pack(route.to_obj())
            self.route_cache[key] = packed
        return packed

    def topics(self, present: frozenset[int], wiped: frozenset[int], kv: bool, union: frozenset[int],
               hidden: frozenset[int] = frozenset(), nowhere: frozenset[int] = frozenset()) -> bytes:
        """The topics map of a server listing brokers ``present``: every topic some
        server lists (a broker in ``union``, not in ``nowhere``), no route for those
        ``hidden`` on this server."""
        key = (present, wiped, kv, union, hidden, nowhere)
        packed = self.topics_cache.get(key)
        if packed is None:
            # A topics map of 40,000 topics on 8 brokers is ~45 MB: bound the cache by size.
            if len(self.topics_cache) > 256 or sum(map(len, self.topics_cache.values())) > self.TOPICS_CACHE_BYTES:
                self.topics_cache.clear()
            pairs = self.topic_pairs(present, wiped, kv, union, hidden, nowhere)
            packed = self.pk.pack_map_header(len(pairs)) + b"".join(
                self.topic_names[t] + raw for t, (_, raw) in zip(self._asked(union, nowhere), pairs))
            self.topics_cache[key] = packed
        return packed

    def _asked(self, union: frozenset[int], nowhere: frozenset[int]) -> list[int]:
        return [t for t, brokers in enumerate(self.layout.topic_brokers)
                if t not in nowhere and any(b in union for b in brokers)]

    def topic_pairs(self, present: frozenset[int], wiped: frozenset[int], kv: bool, union: frozenset[int],
                    hidden: frozenset[int], nowhere: frozenset[int]) -> list[tuple[str, bytes]]:
        """(topic, packed route) of ``topics``, as delta.SplitCapture holds them; the
        packed routes are shared objects, so the v2 encoder hashes each once."""
        key = (present, wiped, kv, union, hidden, nowhere)
        pairs = self.pairs_cache.get(key)
        if pairs is None:
            if len(self.pairs_cache) > 64:
                self.pairs_cache.clear()
            lay = self.layout
            pairs = []
            for t in self._asked(union, nowhere):
                here = () if t in hidden else tuple(b for b in lay.topic_brokers[t] if b in present)
                conf = lay.order_conf.get(lay.topics[t]) if kv else None
                pairs.append((lay.topics[t], self.route(t, here, wiped, conf)))
            self.pairs_cache[key] = pairs
        return pairs

    def row_count(self, present: frozenset[int], union: frozenset[int], hidden: frozenset[int],
                  nowhere: frozenset[int]) -> int:
        """Rows of the routes table for one server's capture."""
        key = (present, union, hidden, nowhere)
        n = self.rows_cache.get(key)
        if n is None:
            if len(self.rows_cache) > 1024:
                self.rows_cache.clear()
            brokers = self.layout.topic_brokers
            n = self.rows_cache[key] = sum(1 if t in hidden else max(1, sum(1 for b in brokers[t] if b in present))
                                           for t in self._asked(union, nowhere))
        return n

    def topic_list(self, present: frozenset[int], hidden: frozenset[int] = frozenset()) -> bytes:
        packed = self.list_cache.get((present, hidden))
        if packed is None:
            if len(self.list_cache) > 256:
                self.list_cache.clear()
            names = [self.layout.topics[t] for t, bs in enumerate(self.layout.topic_brokers)
                     if t not in hidden and any(b in present for b in bs)]
            packed = self.list_cache[(present, hidden)] = self.pk.pack(names)
        return packed

    def cluster(self, present: frozenset[int]) -> bytes:
        packed = self.cluster_cache.get(present)
        if packed is None:
            lay = self.layout
            members: dict[str, list[str]] = {}
            for b in sorted(present):
                members.setdefault(lay.broker_cluster[b], []).append(lay.brokers[b])
            info = ClusterInfo({lay.brokers[b]: self.broker_datas[b] for b in sorted(present)}, members)
            packed = self.cluster_cache[present] = self.pk.pack(info.to_obj())
        return packed

    @staticmethod
    def _head(captured_ms: int, server: str, round_no: int, error: str | None) -> list[tuple[str, object]]:
        return [("schema", SCHEMA), ("version", VERSION), ("captured_ms", captured_ms), ("server", server),
                ("round", round_no), ("ok", error is None), ("error", error)]

    def split(self, *, captured_ms: int, server: str, round_no: int, error: str | None, latency: float | None,
              body: list[tuple[str, bytes]], topics: list[tuple[str, bytes]]) -> SplitCapture:
        """What ``capture`` would write, as the v2 encoder takes it (no 45 MB v1 file to
        build and split again)."""
        view: dict[str, object] = {"addr": server, "ok": error is None, "error": error, "latency_ms": latency}
        for k, packed in body:
            if k != "topics":
                view[k] = msgpack.unpackb(packed, raw=False, strict_map_key=False)
        return SplitCapture(dict(self._head(captured_ms, server, round_no, error)), view, topics)

    def capture(self, *, captured_ms: int, server: str, round_no: int, error: str | None, latency: float | None,
                body: list[tuple[str, bytes]]) -> bytes:
        """A whole file; ``body`` holds (view key, packed value) for the view's fields."""
        pk = self.pk
        head = self._head(captured_ms, server, round_no, error)
        out = [pk.pack_map_header(len(head) + 1)]
        for k, v in head:
            out.append(pk.pack(k))
            out.append(pk.pack(v))
        out.append(pk.pack("view"))
        view = [("addr", pk.pack(server)), ("ok", pk.pack(error is None)), ("error", pk.pack(error)),
                ("latency_ms", pk.pack(latency)), *body]
        out.append(pk.pack_map_header(len(view)))
        for k, packed in view:
            out.append(pk.pack(k))
            out.append(packed)
        return b"".join(out)


parse_start = parse_time  # --start takes what analyze --from takes


@dataclass
class SynthResult:
    rounds: int
    files: int
    route_rows: int  # rows the routes table will hold (servers that answered x topics x brokers)
    events: list[Event]
    bytes: int


def synthesize(plan: SynthPlan, progress: Callable[[int, int], None] | None = None) -> SynthResult:
    """Write the history under ``plan.out``; deterministic for a given plan."""
    rng = random.Random(plan.seed)
    layout = _layout(plan, rng)
    start = parse_start(plan.start)
    every_ms = int(plan.every * 1000)
    rounds = max(1, int(plan.hours * 3_600_000 // every_ms))
    fleet = _Fleet(start, start + rounds * every_ms, plan.servers, plan.brokers, rng)
    _draw_events(fleet, plan.events_per_day)
    if plan.operations:
        _draw_operations(fleet, plan.topics, random.Random(plan.seed * 7919 + 1), plan.events_per_day)
    _build(fleet)
    packer = _Packer(layout)
    kv_table = msgpack.packb(layout.order_conf)
    result = SynthResult(rounds, 0, 0, fleet.events, 0)
    encoder = DeltaEncoder(plan.keyframe_every) if plan.version == 2 else None
    for r in range(rounds):
        t = start + r * every_ms
        up = [s for s in range(plan.servers) if not _within(fleet.down.get(s, ()), t)]
        present = {s: frozenset(b for b in range(plan.brokers) if listed(fleet, s, b, t)) for s in up}
        union = frozenset().union(*present.values()) if present else frozenset()
        hidden = {s: hidden_topics(fleet, s, t) for s in up}
        nowhere = frozenset.intersection(*hidden.values()) if hidden else frozenset()
        for s in range(plan.servers):
            addr = layout.servers[s]
            pairs: list[tuple[str, bytes]] = []
            if s not in present:
                head = dict(captured_ms=t, server=addr, round_no=r, latency=None,
                            error=f"{addr}: GET_BROKER_CLUSTER_INFO (106): connection refused")
                body = [("cluster_info", packer.pk.pack(None)), ("topic_list", packer.pk.pack(None)),
                        ("topics", packer.pk.pack({})), ("kv", packer.pk.pack({})), ("config", packer.pk.pack(None)),
                        ("failures", packer.pk.pack([]))]
            else:
                wiped = frozenset(b for b in range(plan.brokers) if _within(fleet.wiped.get((b, s), ()), t))
                has_kv = not _within(fleet.kv_lost.get(s, ()), t)
                kv = packer.pk.pack_map_header(1) + packer.pk.pack(ORDER_TOPIC_CONFIG) + (
                    kv_table if has_kv else packer.pk.pack({}))
                which = (present[s], wiped, has_kv, union, hidden[s], nowhere)
                head = dict(captured_ms=t, server=addr, round_no=r, error=None, latency=round(rng.uniform(0.4, 3.0), 3))
                body = [("cluster_info", packer.cluster(present[s])),
                        ("topic_list", packer.topic_list(present[s], hidden[s])),
                        ("topics", b"" if encoder is not None else packer.topics(*which)), ("kv", kv),
                        ("config", packer.pk.pack(None)), ("failures", packer.pk.pack([]))]
                if encoder is not None:
                    pairs = packer.topic_pairs(*which)
                result.route_rows += packer.row_count(present[s], union, hidden[s], nowhere)
            if encoder is not None:
                data = encoder.encode_split(packer.split(**head, body=body, topics=pairs))  # type: ignore[arg-type]
            else:
                data = packer.capture(**head, body=body)  # type: ignore[arg-type]
            path = capture_path(plan.out, r, addr, plan.version)
            try:
                write_atomic(path, data, durable=False)
            except OSError:
                _drop_round(plan.out / round_dir_name(r))  # a round is written whole or not at all
                raise
            os.utime(path, (t / 1000 + 1, t / 1000 + 1))
            result.files += 1
            result.bytes += len(data)
        if progress is not None:
            progress(r + 1, rounds)
    return result


def _drop_round(directory: Path) -> None:
    """Remove what a failed round wrote (its files, then its directory if it empties)."""
    for path in directory.iterdir():
        if is_capture_name(path.name):
            path.unlink(missing_ok=True)
    try:
        directory.rmdir()
    except OSError:
        pass




def describe(events: Sequence[Event], layout_servers: int) -> Iterator[str]:
    """One line per event, for ``synth-history -v``."""
    for e in events:
        when = datetime.fromtimestamp(e.start_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        what = [e.kind]
        if e.broker is not None:
            what.append(f"broker-{e.broker:02d}")
        if e.server is not None:
            what.append(f"server {e.server + 1}")
        if e.servers:
            what.append("servers " + ",".join(str(s + 1) for s in e.servers))
        if e.detail:
            what.append(e.detail)
        if e.topics:
            what.append(f"{len(e.topics)} topics")
        yield f"{when} +{(e.end_ms - e.start_ms) / 60000:.1f} min: {' '.join(what)}"
