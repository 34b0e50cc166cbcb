"""``diff-namesrv --watch --metrics-port``: the watch as a Prometheus monitor.

apache/rocketmq#4807 asked for "a monitor that periodically compares each topic's
routing table across name servers"; the watch already does, and this module shows its
latest round to Prometheus (alert rules: deploy/prometheus/diff-namesrv-rules.yml).

Every figure is read from the last ``Round`` at scrape time; ages are measured then, so
a stuck watch shows growing ages rather than frozen ones. Label cardinality is bounded
on purpose: name servers are few, finding kinds a fixed set (every kind is exported,
0 when absent, so ``> 0`` alerts need no ``absent()``), and topics only the ``top`` worst
by client impact, with totals over all topics beside them.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..diff.model import Kind
from ..diff.watch import Round, finding_id

PREFIX = "mqadmin_diff"
#: every finding kind, so each has a series (0 when the last round had none)
KINDS = tuple(sorted(v for k, v in vars(Kind).items() if k.isupper() and isinstance(v, str)))
#: topics exported one by one (the worst by unassigned plus doubly-assigned queues)
DEFAULT_TOP = 10


class WatchMetrics(Collector):
    """The latest round, as Prometheus metric families; ``update`` after each round."""

    def __init__(self, top: int = DEFAULT_TOP, clock: Callable[[], float] = time.monotonic) -> None:
        self.top = top
        self.clock = clock  # the watch's own clock: Round.now and first-seen times are on it
        self.rounds = 0
        self._round: Round | None = None
        #: addr -> (content hash, when the server first gave it)
        self._hash_since: dict[str, tuple[str | None, float]] = {}
        self._lock = threading.Lock()  # scrapes come on the HTTP server's thread

    def update(self, rnd: Round) -> None:
        with self._lock:
            self.rounds += 1
            self._round = rnd
            for s in rnd.report.servers:
                if s.ok:
                    known = self._hash_since.get(s.addr)
                    if known is None or known[0] != s.content_hash:
                        self._hash_since[s.addr] = (s.content_hash, rnd.now)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            rnd, rounds, since = self._round, self.rounds, dict(self._hash_since)
        yield CounterMetricFamily(f"{PREFIX}_rounds", "Rounds compared since the watch started", value=rounds)
        if rnd is not None:
            yield from families(rnd, self.clock(), since, self.top)


def _gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=list(labels))


def families(rnd: Round, now: float, hash_since: dict[str, tuple[str | None, float]],
             top: int = DEFAULT_TOP) -> list[Metric]:
    """The metric families of one round seen at monotonic time ``now``."""
    out: list[Metric] = []
    status = _gauge("status", "Exit status of the last round: 0 agree, 3 partial, 4 differ, 1 error")
    status.add_metric([], int(rnd.status))
    age = _gauge("last_round_age_seconds", "Seconds since the last round's capture started")
    age.add_metric([], max(0.0, now - rnd.now))
    duration = _gauge("round_duration_seconds", "How long the last round's collection took")
    duration.add_metric([], rnd.elapsed_s)
    out += [status, age, duration]

    up = _gauge("namesrv_up", "1 when the name server answered the last round at all", ("namesrv",))
    answered = _gauge("namesrv_answered", "1 when the name server answered every question of the last round",
                      ("namesrv",))
    latency = _gauge("namesrv_latency_seconds", "The name server's latency in the last round", ("namesrv",))
    hash_age = _gauge("namesrv_content_hash_age_seconds",
                      "Seconds since the name server's route content hash last changed (a stuck or lagging view "
                      "keeps its hash while the others move)", ("namesrv",))
    failures = {v.addr: len(v.failures) for v in rnd.views}
    for s in rnd.report.servers:
        up.add_metric([s.addr], 1 if s.ok else 0)
        answered.add_metric([s.addr], 1 if s.ok and not failures.get(s.addr) else 0)
        if s.latency_ms is not None:
            latency.add_metric([s.addr], s.latency_ms / 1000)
        if s.addr in hash_since:
            hash_age.add_metric([s.addr], max(0.0, now - hash_since[s.addr][1]))
    out += [up, answered, latency, hash_age]

    by_kind = dict.fromkeys(KINDS, 0)
    for f in rnd.report.findings:
        by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
    differences = _gauge("differences", "Differences between the name servers in the last round, by kind", ("kind",))
    for kind, n in sorted(by_kind.items()):
        differences.add_metric([kind], n)
    unconfirmed = _gauge("unconfirmed_differences",
                         "Differences not seen only because every server of one side stopped answering")
    unconfirmed.add_metric([], len(rnd.unconfirmed))
    firsts = [rnd.first_seen[finding_id(f)][1] for f in rnd.report.findings]
    firsts += [rnd.first_seen[finding_id(f)][1] for f, _ in rnd.unconfirmed]
    oldest = _gauge("oldest_difference_age_seconds",
                    "Age of the oldest unresolved difference (0 when the name servers agree)")
    oldest.add_metric([], max(0.0, now - min(firsts)) if firsts else 0.0)
    out += [differences, unconfirmed, oldest]
    out += _topic_families(rnd, top)
    return out


def _topic_families(rnd: Round, top: int) -> list[Metric]:
    """Per topic for the ``top`` worst, totals for all: consumers' unassigned and
    doubly-assigned queues in the worst case (the impact diff-namesrv prints)."""
    impacts = [(i.topic, len(i.consumer.unassigned), len(i.consumer.doubly_assigned)) for i in rnd.report.impacts]
    worst = sorted((x for x in impacts if x[1] or x[2]), key=lambda x: (-(x[1] + x[2]), x[0]))[:top]
    unassigned = _gauge("topic_unassigned_queues",
                        f"Queues no consumer would own, for the {top} topics with the most unassigned plus "
                        "doubly-assigned queues", ("topic",))
    doubly = _gauge("topic_doubly_assigned_queues",
                    f"Queues two consumers would own, for the same {top} topics", ("topic",))
    for topic, u, d in worst:
        unassigned.add_metric([topic], u)
        doubly.add_metric([topic], d)
    totals: list[Any] = []
    for name, doc, value in (
        ("unassigned_queues", "Queues no consumer would own, summed over every topic", sum(x[1] for x in impacts)),
        ("doubly_assigned_queues", "Queues two consumers would own, summed over every topic",
         sum(x[2] for x in impacts)),
        ("topics_with_impact", "Topics whose consumers would miss or share queues", sum(1 for x in impacts
                                                                                          if x[1] or x[2])),
    ):
        g = _gauge(name, doc)
        g.add_metric([], value)
        totals.append(g)
    return [unassigned, doubly, *totals]


def serve(metrics: WatchMetrics, host: str, port: int) -> tuple[Any, int]:
    """Serve ``metrics`` on ``http://host:port/metrics`` from a daemon thread; returns
    (the server, to ``shutdown()``, and the port bound: 0 picks one). Raises OSError."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server, int(server.server_port)
