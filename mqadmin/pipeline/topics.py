"""The per-topic pass: a topic's fact intervals on every server in, its merged *fact*
intervals (the routes table's), its *divergence* segments, its *windows* and its share of
the summary out (``mapInArrow`` over the chains' fact intervals, shuffled by topic; the
Python half of the job after ingest).

The chains' intervals of one server and topic are joined where one continues the other
(same facts, the round right after, the same UTC date) and cut at midnight first: a v1
history makes an interval per file, so this is the pass's one per-row loop, done as the
rows are read.

Between two *change points* of a topic (a bound of one of its intervals on any server,
or a round where the set of answering servers or their ``has_topic_list`` /
``has_order_ns`` changes) nothing the diff reads of that topic changes, so each such
segment is compared once: where every answering server has the same facts (route by
canonical hash, asked, listed, ORDER_TOPIC_CONFIG value) the diff finds nothing and no
call is made; elsewhere each server's view of the topic is rebuilt from its route's rows
and given to the diff module (rules.topic_outcome), so the answer is ``diff-namesrv``'s.
Adjacent segments with the same outcome are one divergence row. The work grows with the
topic's changes, never with the number of rounds.

Windows are islands of consecutive disagreeing rounds, bridged across an agreement that
only the silence of one side explains: the sides are every group of the findings of the
island's last segment, and the rule is ``mqadmin.diff.rules.silent_side``, the watcher's.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..diff.rules import silent_side
from . import rules

#: One answering server of a round: (server, has_topic_list, has_order_ns).
Answer = tuple[str, bool, bool]
DIVERGENCE = pa.schema([
    ("scope", pa.string()), ("topic", pa.string()),
    ("from_seq", pa.int32()), ("to_seq", pa.int32()), ("from_round", pa.int32()), ("to_round", pa.int32()),
    ("valid_from_ms", pa.int64()), ("valid_to_ms", pa.int64()), ("rounds", pa.int32()), ("interval_ms", pa.int64()),
    ("servers", pa.list_(pa.string())),
    *[f for f in rules.OUTCOME if f.name not in ("round", "topic")],
    ("consumers", pa.int32()),
])
SPAN = pa.struct([("start_ms", pa.int64()), ("end_ms", pa.int64())])
WINDOW = pa.schema([
    ("topic", pa.string()), ("start_ms", pa.int64()), ("end_ms", pa.int64()), ("open", pa.bool_()),
    ("duration_s", pa.float64()), ("rounds", pa.int64()), ("unknown_s", pa.float64()),
    ("unknown_spans", pa.list_(SPAN)), ("servers", pa.list_(pa.string())), ("kinds", pa.list_(pa.string())),
    ("brokers", pa.list_(pa.string())), ("clusters", pa.list_(pa.string())), ("max_unassigned", pa.int32()),
    ("max_doubly_assigned", pa.int32()), ("unassigned_queue_minutes", pa.float64()),
    ("doubly_assigned_queue_minutes", pa.float64()), ("affected_consumer_minutes", pa.float64()),
    ("key_hash_breaks", pa.bool_()),
])
#: Changes of the per-(cluster, round) disagreement counts at a round: +at a segment's
#: first round, - at the round after its last (summed up by tables.summary).
SWEEP = pa.schema([("cluster", pa.string()), ("seq", pa.int32()), ("topics", pa.int64()),
                   ("unassigned", pa.int64()), ("doubly", pa.int64()), ("consumers_hit", pa.int64())])
#: A merged fact interval with its bounds as rounds and times (the routes table's head).
FACT = pa.schema([
    ("server", pa.string()), ("topic", pa.string()), ("from_seq", pa.int32()), ("to_seq", pa.int32()),
    ("from_round", pa.int32()), ("to_round", pa.int32()), ("valid_from_ms", pa.int64()), ("valid_to_ms", pa.int64()),
    ("asked", pa.bool_()), ("route_key", pa.binary()), ("listed", pa.bool_()), ("order_conf_kv", pa.string()),
])
TOPIC_OUT = pa.schema([("divergence", pa.struct(list(DIVERGENCE))), ("window", pa.struct(list(WINDOW))),
                       ("sweep", pa.struct(list(SWEEP))), ("fact", pa.struct(list(FACT)))])
NO_CLUSTER = "-"


@dataclass
class Timeline:
    """The rounds in time order (``seq`` 1, 2, ...: index ``seq - 1``) and who answered
    in each: small, built on the driver from the captures and shipped with the function."""

    rounds: list[int]
    times: list[int]
    intervals: list[int]
    answering: list[tuple[Answer, ...]]
    #: seqs where the answering servers or their flags change, or a UTC date starts: rows
    #: never span midnight, so that a run over some dates rewrites exactly their rows
    changes: list[int] = field(init=False)
    _elapsed: list[int] = field(init=False)
    _answered: dict[str, list[int]] = field(init=False)  # server -> seqs it answered
    #: index seq - 1: the last seq of that round's UTC date
    day_last: list[int] = field(init=False)

    def __post_init__(self) -> None:
        days = [self.day(i + 1) for i in range(len(self.times))]
        self.changes = [i + 1 for i in range(len(self.answering))
                        if i == 0 or self.answering[i] != self.answering[i - 1] or days[i] != days[i - 1]]
        self.day_last = list(range(1, len(days) + 1))
        for i in range(len(days) - 2, -1, -1):
            if days[i] == days[i + 1]:
                self.day_last[i] = self.day_last[i + 1]
        self._elapsed = [0, *accumulate(self.intervals)]
        self._answered = {}
        for i, answers in enumerate(self.answering):
            for server, _, _ in answers:
                self._answered.setdefault(server, []).append(i + 1)

    def __len__(self) -> int:
        return len(self.rounds)

    def day(self, seq: int) -> int:
        """The UTC date of round ``seq``, as days since the epoch."""
        return self.times[seq - 1] // 86_400_000

    def time(self, seq: int) -> int | None:
        return self.times[seq - 1] if 1 <= seq <= len(self.times) else None

    def span_ms(self, first: int, last: int) -> int:
        """Sum of the intervals of rounds ``first`` to ``last``: the time they stand for."""
        return self._elapsed[last] - self._elapsed[first - 1]

    def cut(self, first: int, last: int) -> list[tuple[int, int]]:
        """Rounds ``first`` to ``last`` cut at midnight: the runs of them that share a UTC date."""
        pieces = []
        end = self.day_last[first - 1]
        while end < last:
            pieces.append((first, end))
            first = end + 1
            end = self.day_last[first - 1]
        pieces.append((first, last))
        return pieces

    def same_day(self, a: int, b: int) -> bool:
        return self.day_last[a - 1] == self.day_last[b - 1]

    def answered_in(self, seq: int) -> set[str]:
        """Servers that answered in round ``seq``."""
        return {server for server, _, _ in self.answering[seq - 1]}

    def bounds(self, first: int, last: int) -> dict[str, Any]:
        """The interval columns of rows that hold from ``first`` to ``last``."""
        return {"from_seq": first, "to_seq": last, "from_round": self.rounds[first - 1],
                "to_round": self.rounds[last - 1], "valid_from_ms": self.times[first - 1],
                "valid_to_ms": self.time(last + 1), "rounds": last - first + 1,
                "interval_ms": self.span_ms(first, last)}


@dataclass
class Interval:
    """A server's facts about a topic from round ``first`` to ``last`` (seqs)."""

    server: str
    first: int
    last: int
    asked: bool
    route_key: bytes
    listed: bool | None
    order_conf_kv: str | None

    def fact(self, canonical: Mapping[bytes, bytes | None]) -> tuple[Any, ...]:
        return (self.asked, canonical[self.route_key], self.listed, self.order_conf_kv)

    def continued_by(self, server: str, first: int, facts: tuple[Any, ...], timeline: Timeline) -> bool:
        """Whether an interval of ``server`` from round ``first`` with the raw ``facts``
        (asked, route key, listed, ORDER_TOPIC_CONFIG value) is this one going on."""
        return (first == self.last + 1 and server == self.server and timeline.same_day(self.last, first)
                and facts == (self.asked, self.route_key, self.listed, self.order_conf_kv))


@dataclass
class Segment:
    """Rounds ``first`` to ``last`` of one topic (or of the cluster-wide comparison) with
    one outcome."""

    first: int
    last: int
    servers: tuple[str, ...]
    outcome: dict[str, Any]  # rules.OUTCOME without round

    day: int  # UTC date of its rounds (days since the epoch)

    def joins(self, other: Segment) -> bool:
        return (other.first == self.last + 1 and other.day == self.day and other.servers == self.servers
                and other.outcome == self.outcome)


def _agree() -> dict[str, Any]:
    return {"agree": True, "differing": [], "kinds": [], "findings": [], "brokers": [], "clusters": [],
            "affects_clients": False, "unassigned": 0, "doubly_assigned": 0, "unassigned_queues": [],
            "doubly_assigned_queues": [], "key_hash_breaks": False, "impact_json": None}


class TopicJudge:
    """Segments, windows and summary sweep of one topic at a time."""

    def __init__(self, timeline: Timeline, routes: Mapping[bytes, Sequence[Mapping[str, Any]]], consumers: int,
                 strategy: str) -> None:
        self.timeline, self.routes = timeline, routes
        self.consumers, self.strategy = consumers, strategy
        self.canonical = {key: rows[0]["route_hash"] for key, rows in routes.items()}
        self.sweep: dict[tuple[str, int], list[int]] = {}

    def segments(self, topic: str, intervals: Sequence[Interval]) -> list[Segment]:
        """The topic's segments in time order, adjacent ones with the same outcome merged."""
        tl = self.timeline
        by_server: dict[str, list[Interval]] = {}
        for iv in sorted(intervals, key=lambda iv: (iv.server, iv.first)):
            by_server.setdefault(iv.server, []).append(iv)
        low = min(iv.first for iv in intervals)
        high = max(iv.last for iv in intervals)
        points = {iv.first for iv in intervals} | {iv.last + 1 for iv in intervals}
        points.update(tl.changes[bisect.bisect_right(tl.changes, low):bisect.bisect_right(tl.changes, high)])
        cuts = sorted(points)
        out: list[Segment] = []
        cursor = {server: 0 for server in by_server}
        for start, end in zip(cuts, cuts[1:]):
            answers = tl.answering[start - 1]
            covering: list[tuple[Answer, Interval | None]] = []
            for answer in answers:
                mine = by_server.get(answer[0])
                found = None
                if mine:
                    i = cursor[answer[0]]
                    while i < len(mine) and mine[i].last < start:
                        i += 1
                    cursor[answer[0]] = i
                    if i < len(mine) and mine[i].first <= start:
                        found = mine[i]
                covering.append((answer, found))
            if all(iv is None for _, iv in covering):
                continue
            facts = [None if iv is None else iv.fact(self.canonical) for _, iv in covering]
            if facts[0] is not None and facts.count(facts[0]) == len(facts):
                outcome = _agree()
            else:
                outcome = self._outcome(topic, start, covering)
            segment = Segment(start, end - 1, tuple(a[0] for a in answers), outcome, tl.day(start))
            if out and out[-1].joins(segment):
                out[-1].last = segment.last
            else:
                out.append(segment)
        return out

    def _outcome(self, topic: str, seq: int, covering: Sequence[tuple[Answer, Interval | None]]) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        for (server, _, _), iv in covering:
            if iv is None:
                continue
            head = {"server": server, "asked": iv.asked, "listed": iv.listed, "order_conf_kv": iv.order_conf_kv}
            rows.extend(head | dict(r) for r in self.routes[iv.route_key])
        servers = [{"server": s, "has_topic_list": lst, "has_order_ns": ns} for (s, lst, ns), _ in covering]
        outcome = rules.topic_outcome({"round": seq, "topic": topic, "servers": servers, "rows": rows},
                                      self.consumers, self.strategy)
        del outcome["round"], outcome["topic"]
        return outcome

    def divergence_row(self, scope: str, topic: str | None, seg: Segment) -> dict[str, Any]:
        return {"scope": scope, "topic": topic, **self.timeline.bounds(seg.first, seg.last),
                "servers": list(seg.servers), **seg.outcome, "consumers": self.consumers}

    def windows(self, topic: str, segments: Sequence[Segment]) -> list[dict[str, Any]]:
        """The topic's windows (SCHEMA.md): islands of disagreeing rounds, bridged where
        in every round of the agreement between, a side of the last disagreement was silent."""
        tl = self.timeline
        bad = [s for s in segments if not s.outcome["agree"]]
        islands: list[list[Segment]] = []
        for seg in bad:
            if islands and islands[-1][-1].last + 1 == seg.first:
                islands[-1].append(seg)
            else:
                islands.append([seg])
        windows: list[list[list[Segment]]] = []
        spans: list[list[dict[str, int]]] = []
        for island in islands:
            if windows:
                before = windows[-1][-1][-1]
                gap = (before.last + 1, island[0].first - 1)
                groups = [g for f in before.outcome["findings"] for g in _groups(f)]
                # Asked round by round, as the watcher asks it: the sides may fall silent in turn.
                if all(silent_side(groups, tl.answered_in(seq)) for seq in range(gap[0], gap[1] + 1)):
                    windows[-1].append(island)
                    spans[-1].append({"start_ms": tl.times[gap[0] - 1], "end_ms": tl.times[gap[1]]})
                    continue
            windows.append([island])
            spans.append([])
        return [self._window(topic, [s for isl in w for s in isl], sp) for w, sp in zip(windows, spans)]

    def _window(self, topic: str, segs: Sequence[Segment], spans: list[dict[str, int]]) -> dict[str, Any]:
        tl = self.timeline
        start_ms = tl.times[segs[0].first - 1]
        next_ms = tl.time(segs[-1].last + 1)
        end_ms = tl.times[segs[-1].last - 1] if next_ms is None else next_ms
        unassigned_ms = doubly_ms = consumer_ms = 0
        for s in segs:
            span = tl.span_ms(s.first, s.last)
            o = s.outcome
            unassigned_ms += o["unassigned"] * span
            doubly_ms += o["doubly_assigned"] * span
            if o["unassigned"] + o["doubly_assigned"] > 0:
                consumer_ms += self.consumers * span

        def union(name: str) -> list[str]:
            return sorted({x for s in segs for x in s.outcome[name]})

        return {
            "topic": topic, "start_ms": start_ms, "end_ms": end_ms, "open": next_ms is None,
            "duration_s": (end_ms - start_ms) / 1000, "rounds": sum(s.last - s.first + 1 for s in segs),
            "unknown_s": sum(sp["end_ms"] - sp["start_ms"] for sp in spans) / 1000,
            "unknown_spans": sorted(spans, key=lambda sp: (sp["start_ms"], sp["end_ms"])),
            "servers": union("differing"), "kinds": union("kinds"), "brokers": union("brokers"),
            "clusters": union("clusters"), "max_unassigned": max(s.outcome["unassigned"] for s in segs),
            "max_doubly_assigned": max(s.outcome["doubly_assigned"] for s in segs),
            "unassigned_queue_minutes": unassigned_ms / 60000, "doubly_assigned_queue_minutes": doubly_ms / 60000,
            "affected_consumer_minutes": consumer_ms / 60000,
            "key_hash_breaks": any(s.outcome["key_hash_breaks"] for s in segs),
        }

    def add_sweep(self, segments: Iterable[Segment]) -> None:
        """Count the disagreeing segments into the per-(cluster, round) sweep."""
        n = len(self.timeline)
        for s in segments:
            o = s.outcome
            if o["agree"]:
                continue
            hit = self.consumers if o["unassigned"] + o["doubly_assigned"] > 0 else 0
            change = (1, o["unassigned"], o["doubly_assigned"], hit)
            for cluster in o["clusters"] or [NO_CLUSTER]:
                for seq, sign in ((s.first, 1), (s.last + 1, -1)):
                    if seq > n:
                        continue
                    acc = self.sweep.setdefault((cluster, seq), [0, 0, 0, 0])
                    for i, v in enumerate(change):
                        acc[i] += sign * v

    def sweep_rows(self) -> list[dict[str, Any]]:
        rows = [{"cluster": c, "seq": seq, "topics": t, "unassigned": u, "doubly": d, "consumers_hit": h}
                for (c, seq), (t, u, d, h) in self.sweep.items() if (t, u, d, h) != (0, 0, 0, 0)]
        self.sweep = {}
        return rows


def _groups(finding: Mapping[str, Any]) -> list[tuple[Any, tuple[str, ...]]]:
    """Finding.groups() of a finding as the divergence table holds it."""
    seen: dict[Any, list[str]] = {}
    for v in finding["values"]:
        seen.setdefault(v["value"], []).append(v["server"])
    return [(value, tuple(servers)) for value, servers in seen.items()]


def _batch(name: str, values: pa.Array) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([values if f.name == name else pa.nulls(len(values), f.type)
                                       for f in TOPIC_OUT], schema=TOPIC_OUT)


def _rows(name: str, rows: list[dict[str, Any]]) -> pa.RecordBatch:
    return _batch(name, pa.array(rows, TOPIC_OUT.field(name).type))


class _Facts:
    """The merged fact intervals, column by column (FACT), until a batch is full."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.cols: list[list[Any]] = [[] for _ in FACT]

    def add(self, topic: str, intervals: Iterable[Interval]) -> None:
        tl, c = self.timeline, self.cols
        for iv in intervals:
            for i, value in enumerate((iv.server, topic, iv.first, iv.last, tl.rounds[iv.first - 1],
                                       tl.rounds[iv.last - 1], tl.times[iv.first - 1], tl.time(iv.last + 1),
                                       iv.asked, iv.route_key, iv.listed, iv.order_conf_kv)):
                c[i].append(value)

    def __len__(self) -> int:
        return len(self.cols[0])

    def batch(self) -> pa.RecordBatch:
        values = pa.StructArray.from_arrays([pa.array(col, f.type) for col, f in zip(self.cols, FACT)], fields=list(FACT))
        self.cols = [[] for _ in FACT]
        return _batch("fact", values)


_FACT_COLUMNS = ("topic", "server", "from_seq", "to_seq", "asked", "route_key", "listed", "order_conf_kv")


def merged(batches: Iterable[pa.RecordBatch], timeline: Timeline) -> Iterator[tuple[str, Interval]]:
    """The chains' fact intervals (_FACT_COLUMNS, sorted by topic, server and from_seq)
    cut at midnight and joined where one continues the other (Interval.continued_by), as
    (topic, interval) in the same order.

    A v1 history has an interval per file (rounds x servers x topics), most of them
    continuing the one before: the rule is applied to whole batches with Arrow and numpy,
    and only the intervals that start a run become Python objects. An interval yielded
    last may still grow with the next batch's first rows (its topic is not done)."""
    day_last = np.asarray(timeline.day_last, dtype=np.int64)
    last: tuple[str, Interval] | None = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        cols = [batch.column(n) for n in _FACT_COLUMNS]
        first, to = (c.to_numpy(zero_copy_only=False).astype(np.int64) for c in cols[2:4])
        if (day_last[first - 1] < to).any():
            cols, first, to = _cut(cols, first, to, timeline)
        n = len(first)
        go_on = np.zeros(n, dtype=bool)  # row i continues row i - 1
        if n > 1:
            go_on[1:] = (first[1:] == to[:-1] + 1) & (day_last[first[1:] - 1] == day_last[to[:-1] - 1])
            for c in (cols[0], cols[1], *cols[4:]):
                go_on[1:] &= _same(c.slice(1), c.slice(0, n - 1))
        if last is not None:
            row = [c[0].as_py() for c in cols]
            go_on[0] = row[0] == last[0] and last[1].continued_by(row[1], int(first[0]), (*row[4:],), timeline)
        starts = np.flatnonzero(~go_on)
        ends = np.append(starts[1:], n) - 1
        if last is not None and go_on[0]:
            last[1].last = int(to[starts[0] - 1] if len(starts) else to[n - 1])
        if not len(starts):
            continue
        take = pa.array(starts)
        topics, servers, asked, keys, listed, kv = (cols[i].take(take).to_pylist() for i in (0, 1, 4, 5, 6, 7))
        for i, (f, t) in enumerate(zip(first[starts].tolist(), to[ends].tolist())):
            last = topics[i], Interval(servers[i], f, t, asked[i], keys[i], listed[i], kv[i])
            yield last


def _same(a: pa.Array, b: pa.Array) -> Any:
    """Row by row, ``a`` equals ``b``, two nulls counting as equal (Spark's ``<=>``)."""
    equal = pc.fill_null(pc.equal(a, b), False)
    return pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b))).to_numpy(zero_copy_only=False)


def _cut(cols: list[pa.Array], first: Any, to: Any, timeline: Timeline) -> tuple[list[pa.Array], Any, Any]:
    """The rows of ``cols`` cut at midnight (Timeline.cut), pieces in order."""
    pieces = [timeline.cut(f, t) for f, t in zip(first.tolist(), to.tolist())]
    rows = np.repeat(np.arange(len(pieces)), [len(p) for p in pieces])
    bounds = np.array([b for p in pieces for b in p], dtype=np.int64).reshape(-1, 2)
    take = pa.array(rows)
    return [c.take(take) for c in cols], bounds[:, 0], bounds[:, 1]


def map_topics(timeline: Timeline, routes: Mapping[bytes, Sequence[Mapping[str, Any]]], consumers: int,
               strategy: str) -> Any:
    """The ``mapInArrow`` function of the per-topic pass: the chains' fact intervals
    (server, topic, from_seq, to_seq, asked, route_key, listed, order_conf_kv) sorted by
    topic, server and from_seq in, TOPIC_OUT out."""
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        judge = TopicJudge(timeline, routes, consumers, strategy)
        current: str | None = None
        intervals: list[Interval] = []
        divergence: list[dict[str, Any]] = []
        windows: list[dict[str, Any]] = []
        facts = _Facts(timeline)

        def finish() -> None:
            assert current is not None
            facts.add(current, intervals)
            segments = judge.segments(current, intervals)
            divergence.extend(judge.divergence_row("topic", current, s) for s in segments)
            windows.extend(judge.windows(current, segments))
            judge.add_sweep(segments)

        for topic, interval in merged(batches, timeline):
            if topic != current:
                if current is not None:
                    finish()
                    if len(divergence) >= 4096:
                        yield _rows("divergence", divergence)
                        divergence = []
                    if len(facts) >= 4096:
                        yield facts.batch()
                current, intervals = topic, []
            intervals.append(interval)
        if current is not None:
            finish()
        for name, rows in (("divergence", divergence), ("window", windows), ("sweep", judge.sweep_rows())):
            if rows:
                yield _rows(name, rows)
        if len(facts):
            yield facts.batch()
    return run


def map_cluster(timeline: Timeline, consumers: int, strategy: str) -> Any:
    """The ``mapInArrow`` function of the cluster-wide comparison: the readable captures
    rows in one partition (a row per file: few); DIVERGENCE rows of scope ``cluster``
    out, adjacent rounds with the same outcome merged. Rounds are put in time order here,
    from the timeline, rather than by a join and a sort in Spark."""
    seq_of = {r: i + 1 for i, r in enumerate(timeline.rounds)}

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        judge = TopicJudge(timeline, {}, consumers, strategy)
        segments: list[Segment] = []
        current: int | None = None
        captures: list[dict[str, Any]] = []
        rows = [row for batch in batches for row in batch.to_pylist() if row["round"] in seq_of]
        for row in rows:
            row["seq"] = seq_of[row["round"]]
        rows.sort(key=lambda row: (row["seq"], row["server"] is not None, row["server"] or ""))

        def finish() -> None:
            assert current is not None
            outcome = rules.cluster_outcome({"round": current, "captures": captures}, consumers, strategy)
            del outcome["round"], outcome["topic"]
            names = tuple(a[0] for a in timeline.answering[current - 1])
            segment = Segment(current, current, names, outcome, timeline.day(current))
            if segments and segments[-1].joins(segment):
                segments[-1].last = current
            else:
                segments.append(segment)

        for row in rows:
            if row["seq"] != current:
                if current is not None:
                    finish()
                current, captures = row["seq"], []
            captures.append(row)
        if current is not None:
            finish()
        rows = [judge.divergence_row("cluster", None, s) for s in segments]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=DIVERGENCE)
    return run
