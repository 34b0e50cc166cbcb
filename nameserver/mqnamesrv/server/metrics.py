"""Prometheus metrics for the name server, served on ``/metrics`` when asked for.

Labels are low-cardinality by construction: request codes and results are Java's enum
names (unknown numbers collapse into ``OTHER``), removal reasons a fixed set. Gauges for
the registry read its sizes at scrape time instead of being kept up to date.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily
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


class Metrics:
    def __init__(self, server: NameServer) -> None:
        self.registry = registry = CollectorRegistry()
        self.requests = Counter("rocketmq_namesrv_requests", "Requests by request code and response code",
                                ["code", "result"], registry=registry)
        self.route_latency = Histogram(
            "rocketmq_namesrv_route_query_seconds", "Time to answer GET_ROUTEINFO_BY_TOPIC inside the server",
            buckets=(0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.0025, 0.01, 0.05), registry=registry)
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

    def observe(self, code: int, result: int | None) -> None:
        """Count one handled request; ``result`` None means a one-way request."""
        child = self._children.get((code, -1 if result is None else result))
        if child is None:
            name = _KNOWN_CODES.get(code, "OTHER")
            outcome = "ONEWAY" if result is None else _KNOWN_RESULTS.get(result, "OTHER")
            child = self._children[(code, -1 if result is None else result)] = self.requests.labels(name, outcome)
        child.inc()
        if result == ResponseCode.SUCCESS:
            if code == RequestCode.REGISTER_BROKER:
                self.registrations.inc()
            elif code in _KV_CODES:
                self.kv_changes.inc()
            elif code == RequestCode.UPDATE_NAMESRV_CONFIG:
                self.config_changes.inc()
            elif code == RequestCode.UNREGISTER_BROKER:
                self.removals.labels("unregistered").inc()

    def serve(self, host: str, port: int) -> int:
        """Start the HTTP endpoint in a thread; returns the real port (0 picks one)."""
        http_server, _thread = start_http_server(port, addr=host, registry=self.registry)
        return int(http_server.server_address[1])
