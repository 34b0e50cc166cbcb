"""Prometheus metrics for the name server, served on ``/metrics`` when asked for.

Labels are low-cardinality by construction: request codes and results are Java's enum
names (unknown numbers collapse into ``OTHER``), removal reasons a fixed set. Gauges for
the registry read its sizes at scrape time instead of being kept up to date.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from ..protocol.codes import RequestCode, ResponseCode

if TYPE_CHECKING:
    from .app import NameServer

_KNOWN_CODES = {c.value: c.name for c in RequestCode}
_KNOWN_RESULTS = {c.value: c.name for c in ResponseCode}
_KV_CODES = {RequestCode.PUT_KV_CONFIG, RequestCode.DELETE_KV_CONFIG}


class _CacheHits(Collector):
    def __init__(self, server: NameServer) -> None:
        self.server = server

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily("rocketmq_namesrv_route_cache_hits", "Route queries answered from the encoded-body cache",
                                  value=self.server.processor.route_cache_hits)


class RouteLatency(Collector):
    """``rocketmq_namesrv_route_query_seconds``, a histogram that takes a run of route
    queries answered in one call (``observe_many``) as one update: prometheus_client's
    Histogram takes one observation at a time, each behind a lock, which cost more than
    answering the query. The loop thread writes; a scrape (the HTTP thread) reads plain
    ints and a float."""

    BUCKETS = (0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.0025, 0.01, 0.05)
    NAME = "rocketmq_namesrv_route_query_seconds"

    def __init__(self) -> None:
        self.counts = [0] * (len(self.BUCKETS) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.observe_many(1, seconds)

    def observe_many(self, count: int, seconds_each: float) -> None:
        """``count`` queries that took ``seconds_each`` each (a run's time, shared)."""
        self.counts[bisect_left(self.BUCKETS, seconds_each)] += count
        self.sum += seconds_each * count

    def collect(self) -> Iterator[HistogramMetricFamily]:
        counts, total = list(self.counts), self.sum
        cumulative, running = [], 0
        for bound, count in zip([*map(str, self.BUCKETS), "+Inf"], counts):
            running += count
            cumulative.append((bound, running))
        yield HistogramMetricFamily(self.NAME, "Time to answer GET_ROUTEINFO_BY_TOPIC inside the server",
                                    buckets=cumulative, sum_value=total)


class Metrics:
    def __init__(self, server: NameServer) -> None:
        self.registry = registry = CollectorRegistry()
        self.requests = Counter("rocketmq_namesrv_requests", "Requests by request code and response code",
                                ["code", "result"], registry=registry)
        self.route_latency = RouteLatency()
        registry.register(self.route_latency)
        self.registrations = Counter("rocketmq_namesrv_broker_registrations", "Successful REGISTER_BROKER requests",
                                     registry=registry)
        self.removals = Counter("rocketmq_namesrv_broker_removals", "Brokers removed, by reason",
                                ["reason"], registry=registry)
        self.kv_changes = Counter("rocketmq_namesrv_kv_changes", "KV config puts and deletes", registry=registry)
        self.config_changes = Counter("rocketmq_namesrv_config_changes", "Accepted UPDATE_NAMESRV_CONFIG requests",
                                      registry=registry)
        Gauge("rocketmq_namesrv_connections", "Open client and broker connections",
              registry=registry).set_function(lambda: len(server.connections))
        Gauge("rocketmq_namesrv_brokers", "Live broker addresses",
              registry=registry).set_function(lambda: len(server.routes.broker_live_table))
        Gauge("rocketmq_namesrv_topics", "Topics with a route",
              registry=registry).set_function(lambda: len(server.routes.topic_queue_table))
        registry.register(_CacheHits(server))
        self._children: dict[tuple[int, int], Counter] = {}

    def _child(self, code: int, result: int | None) -> Counter:
        """The requests counter of ``code`` answered ``result`` (None: one-way)."""
        child = self._children.get((code, -1 if result is None else result))
        if child is None:
            name = _KNOWN_CODES.get(code, "OTHER")
            outcome = "ONEWAY" if result is None else _KNOWN_RESULTS.get(result, "OTHER")
            child = self._children[(code, -1 if result is None else result)] = self.requests.labels(name, outcome)
        return child

    def observe(self, code: int, result: int | None) -> None:
        """Count one handled request; ``result`` None means a one-way request."""
        self._child(code, result).inc()
        if result == ResponseCode.SUCCESS:
            if code == RequestCode.REGISTER_BROKER:
                self.registrations.inc()
            elif code in _KV_CODES:
                self.kv_changes.inc()
            elif code == RequestCode.UPDATE_NAMESRV_CONFIG:
                self.config_changes.inc()
            elif code == RequestCode.UNREGISTER_BROKER:
                self.removals.labels("unregistered").inc()

    def observe_routes(self, found: int, not_found: int, seconds: float) -> None:
        """Count a run of route queries answered in one call (``RouteAnswers.run``):
        ``found`` routes and ``not_found`` TOPIC_NOT_EXIST answers in ``seconds`` in all,
        each taking its share of that time."""
        count = found + not_found
        if not count:
            return
        if found:
            self._child(RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.SUCCESS).inc(found)
        if not_found:
            self._child(RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.TOPIC_NOT_EXIST).inc(not_found)
        self.route_latency.observe_many(count, seconds / count)

    def serve(self, host: str, port: int) -> int:
        """Start the HTTP endpoint in a thread; returns the real port (0 picks one)."""
        http_server, _thread = start_http_server(port, addr=host, registry=self.registry)
        return int(http_server.server_address[1])
