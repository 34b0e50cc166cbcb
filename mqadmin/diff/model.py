"""Plain data in and out of the diff: what each name server answered, and what differs.

Everything here is a frozen dataclass of str/int/float/bool/tuples (inputs also hold the
protocol's own route models), so the CLI and the Spark job can build, pickle and compare
the same objects. ``to_obj()`` gives the JSON-ready form whose field names are the
documented, stable schema; renderers and the Spark job read that form, never the
attributes, so renaming an attribute does not change the output.

Absence rule, used everywhere: a *missing key* (a topic not in ``ServerView.topics``, a
namespace not in ``kv``, ``topic_list``/``cluster_info``/``config`` set to None) means
"not asked, or the question failed", and that server is left out of that one comparison.
An answer that says "nothing here" is a value: ``topics[t] = None`` is TOPIC_NOT_EXIST,
``kv[ns] = {}`` is an empty namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, QueueData, TopicQueueMappingInfo, TopicRouteData

from .impact_model import TopicImpact

#: The value a server holds for a compared item; None = the item is absent there.
Value = str | None

#: The value of presence findings (route, broker, topic-list entry) where the item exists.
PRESENT = "present"


class Kind:
    """Finding kinds: the ``kind`` field of the JSON schema. Never rename a value."""

    CLUSTER_MEMBERS = "cluster_members"  # clusterAddrTable: brokers listed under a cluster
    TOPIC_LIST_MISSING = "topic_list_missing"  # topic absent from some servers' topic list (206)
    ROUTE_MISSING = "route_missing"  # TOPIC_NOT_EXIST on some servers
    ORDER_TOPIC_CONF = "order_topic_conf"  # route's orderTopicConf
    FILTER_SERVERS = "filter_servers"  # route's filterServerTable entry for one broker address
    BROKER_MISSING = "broker_missing"  # broker absent from a route (or, topic None, the cluster info)
    MASTER_MISSING = "master_missing"  # brokerAddrs lacks id 0 on some servers
    PERM = "perm"
    READ_QUEUE_NUMS = "read_queue_nums"
    WRITE_QUEUE_NUMS = "write_queue_nums"
    TOPIC_SYS_FLAG = "topic_sys_flag"
    BROKER_ADDR = "broker_addr"  # brokerAddrs[id] differs (or is absent), id != 0 or all have a master
    BROKER_CLUSTER = "broker_cluster"  # BrokerData.cluster
    ACTING_MASTER = "enable_acting_master"  # 5.x BrokerData.enableActingMaster ("true" or absent)
    ZONE_NAME = "zone_name"  # 5.x BrokerData.zoneName: zone-mode clients' routes are filtered by it
    QUEUE_MAPPING = "topic_queue_mapping"  # 5.x route's topicQueueMappingByBroker entry of one broker
    KV_VALUE = "kv_value"
    CONFIG_VALUE = "config_value"


#: Every kind, in the order findings of one topic/broker are reported.
KINDS: tuple[str, ...] = (
    Kind.CLUSTER_MEMBERS, Kind.TOPIC_LIST_MISSING, Kind.ROUTE_MISSING, Kind.ORDER_TOPIC_CONF,
    Kind.FILTER_SERVERS, Kind.BROKER_MISSING, Kind.MASTER_MISSING, Kind.PERM, Kind.READ_QUEUE_NUMS,
    Kind.WRITE_QUEUE_NUMS, Kind.TOPIC_SYS_FLAG, Kind.BROKER_ADDR, Kind.BROKER_CLUSTER,
    Kind.ACTING_MASTER, Kind.ZONE_NAME, Kind.QUEUE_MAPPING, Kind.KV_VALUE, Kind.CONFIG_VALUE,
)


# ------------------------------------------------------------------- input ----


@dataclass(frozen=True, slots=True)
class ServerView:
    """Everything one name server answered during one capture.

    ``error`` set means the server did not answer at all (unreachable, every request
    failed): it is listed in the summary and left out of every comparison. Partial
    failures are expressed by the absence rule of this module instead, and
    ``failures`` says what they were: one line per failed question (or group of
    failed route requests), so that a caller can tell "not asked" from "asked and
    lost" and report the server as partly failed.
    """

    addr: str
    error: str | None = None
    latency_ms: float | None = None
    cluster_info: ClusterInfo | None = None
    topic_list: tuple[str, ...] | None = None
    topics: Mapping[str, TopicRouteData | None] = field(default_factory=dict)
    kv: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    config: Mapping[str, str] | None = None
    failures: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_obj(self) -> dict[str, Any]:
        """JSON-ready form (routes and cluster info in the wire's own field names)."""
        return {
            "addr": self.addr,
            "ok": self.ok,
            "error": self.error,
            "latency_ms": self.latency_ms,
            "cluster_info": None if self.cluster_info is None else self.cluster_info.to_obj(),
            "topic_list": None if self.topic_list is None else list(self.topic_list),
            "topics": {t: None if r is None else r.to_obj() for t, r in self.topics.items()},
            "kv": {ns: dict(table) for ns, table in self.kv.items()},
            "config": None if self.config is None else dict(self.config),
            "failures": list(self.failures),
        }

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> ServerView:
        """Inverse of ``to_obj`` (the Spark job stores views this way)."""
        ci, tl, cfg = obj.get("cluster_info"), obj.get("topic_list"), obj.get("config")
        return cls(
            addr=str(obj["addr"]),
            error=obj.get("error"),
            latency_ms=obj.get("latency_ms"),
            cluster_info=None if ci is None else _cluster_from_obj(ci),
            topic_list=None if tl is None else tuple(str(t) for t in tl),
            topics={str(t): None if r is None else _route_from_obj(r) for t, r in (obj.get("topics") or {}).items()},
            kv={str(ns): {str(k): str(v) for k, v in table.items()} for ns, table in (obj.get("kv") or {}).items()},
            config=None if cfg is None else {str(k): str(v) for k, v in cfg.items()},
            failures=tuple(str(x) for x in obj.get("failures") or ()),
        )


def _route_from_obj(obj: Mapping[str, Any]) -> TopicRouteData:
    otc, tqm = obj.get("orderTopicConf"), obj.get("topicQueueMappingByBroker")
    return TopicRouteData(
        queue_datas=tuple(QueueData.from_obj(q) for q in obj.get("queueDatas") or ()),
        broker_datas=tuple(BrokerData.from_obj(b) for b in obj.get("brokerDatas") or ()),
        filter_server_table={str(k): tuple(v or ()) for k, v in (obj.get("filterServerTable") or {}).items()},
        order_topic_conf=None if otc is None else str(otc),
        topic_queue_mapping_by_broker=None if tqm is None else {
            str(k): TopicQueueMappingInfo.from_obj(v) for k, v in tqm.items()},
    )


def _cluster_from_obj(obj: Mapping[str, Any]) -> ClusterInfo:
    return ClusterInfo(
        broker_addr_table={str(k): BrokerData.from_obj(v) for k, v in (obj.get("brokerAddrTable") or {}).items()},
        cluster_addr_table={
            str(k): tuple(str(x) for x in v or ()) for k, v in (obj.get("clusterAddrTable") or {}).items()
        },
    )


# ----------------------------------------------------------------- findings ----


@dataclass(frozen=True, slots=True)
class Finding:
    """One item on which the answering servers disagree.

    ``values`` has one ``(server, value)`` pair per server that took part, in input
    order. For field kinds (perm, queue counts, addresses...) only servers that have the
    broker/route take part; servers lacking it are named by the BROKER_MISSING or
    ROUTE_MISSING finding instead, so one lost registration is one finding, not ten.
    Numbers are decimal strings (perm "6", queue count "4") so that every value has one
    type in the JSON schema and in Spark.
    """

    kind: str
    topic: str | None
    broker: str | None
    subject: str
    values: tuple[tuple[str, Value], ...]

    def groups(self) -> tuple[tuple[Value, tuple[str, ...]], ...]:
        """``(value, servers)`` per distinct value, in order of first appearance."""
        seen: dict[Value, list[str]] = {}
        for server, value in self.values:
            seen.setdefault(value, []).append(server)
        return tuple((value, tuple(servers)) for value, servers in seen.items())

    def to_obj(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "topic": self.topic,
            "broker": self.broker,
            "subject": self.subject,
            "values": dict(self.values),
            "groups": [{"value": v, "servers": list(s)} for v, s in self.groups()],
        }


@dataclass(frozen=True, slots=True)
class ServerSummary:
    """One line of the per-server table. Counts are None when that question failed."""

    addr: str
    ok: bool
    error: str | None
    latency_ms: float | None
    brokers: int | None  # brokers in the cluster info
    topics: int | None  # topics in the topic list
    routes: int  # topics asked that have a route on this server
    content_hash: str | None  # None when the server did not answer

    def to_obj(self) -> dict[str, Any]:
        return {
            "addr": self.addr, "ok": self.ok, "error": self.error, "latency_ms": self.latency_ms,
            "brokers": self.brokers, "topics": self.topics, "routes": self.routes,
            "content_hash": self.content_hash,
        }


# ------------------------------------------------------------------- report ----

#: Bumped when a field of the JSON schema changes meaning or disappears.
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class DiffReport:
    servers: tuple[ServerSummary, ...]
    findings: tuple[Finding, ...]
    impacts: tuple[TopicImpact, ...]

    @property
    def agree(self) -> bool:
        return not self.findings

    def to_obj(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "servers": [s.to_obj() for s in self.servers],
            "findings": [f.to_obj() for f in self.findings],
            "impacts": [i.to_obj() for i in self.impacts],
        }
