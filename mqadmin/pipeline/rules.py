"""The diff module applied to one topic's rows: the Python half of the divergence table.

The per-topic pass of the Spark job (topics.py) rebuilds, for a topic and a run of rounds
in which nothing it reads changes, the part of each server's view that concerns that
topic (its route, from its route's rows; whether it is in the topic list; its
ORDER_TOPIC_CONFIG entry) and calls ``mqadmin.diff.diff_views`` on those views. A finding
of ``diff_views`` over the whole views concerns one topic or none (cluster info, other KV
namespaces, config), and restricting every view to one topic leaves exactly that topic's
findings and impact: so the job's answer for a topic is by construction
``diff-namesrv``'s, which the parity test checks. Cluster-wide findings come from a
second call per round over the cluster info and the other namespaces.

Calling ``diff_views`` where every server holds the same route, list membership and KV
value would be wasted (it finds nothing): the per-topic pass compares those first and
calls it for the others only.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import orjson
import pyarrow as pa

from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, QueueData, TopicRouteData
from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG

from ..diff import DiffReport, Kind, ServerView, diff_views, queue_label
from ..diff.rules import differing_servers
from .flatten import mapping_from_json

FINDING = pa.struct([
    ("kind", pa.string()), ("broker", pa.string()), ("subject", pa.string()),
    ("values", pa.list_(pa.struct([("server", pa.string()), ("value", pa.string())]))),
])
#: The outcome of one comparison of a topic (or, topic null, of the cluster-wide parts);
#: topics.py adds the rounds it holds for.
OUTCOME = pa.schema([
    ("round", pa.int32()), ("topic", pa.string()), ("agree", pa.bool_()),
    ("differing", pa.list_(pa.string())), ("kinds", pa.list_(pa.string())), ("findings", pa.list_(FINDING)),
    ("brokers", pa.list_(pa.string())), ("clusters", pa.list_(pa.string())),
    ("affects_clients", pa.bool_()), ("unassigned", pa.int32()), ("doubly_assigned", pa.int32()),
    ("unassigned_queues", pa.list_(pa.string())), ("doubly_assigned_queues", pa.list_(pa.string())),
    ("key_hash_breaks", pa.bool_()), ("impact_json", pa.string()),
])

#: Cause classes of an inconsistency, strongest first; a window's cause is the
#: strongest class among the kinds it showed.
CAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("topic_missing", (Kind.ROUTE_MISSING,)),
    ("broker_missing", (Kind.BROKER_MISSING,)),
    ("master_missing", (Kind.MASTER_MISSING,)),
    ("perm", (Kind.PERM,)),
    ("queue_config", (Kind.READ_QUEUE_NUMS, Kind.WRITE_QUEUE_NUMS, Kind.TOPIC_SYS_FLAG)),
    # A lost or different static-topic mapping changes the queues 5.x clients use, as
    # queue counts do for every client; below them, as it concerns 5.x clients only.
    ("queue_mapping", (Kind.QUEUE_MAPPING,)),
    ("order_conf", (Kind.ORDER_TOPIC_CONF, Kind.KV_VALUE)),
    # enableActingMaster and zoneName are what BrokerData says about the group, as its
    # cluster is: they matter to clients only when a master is lost or in zone mode.
    ("addresses", (Kind.BROKER_ADDR, Kind.BROKER_CLUSTER, Kind.FILTER_SERVERS, Kind.CLUSTER_MEMBERS,
                   Kind.ACTING_MASTER, Kind.ZONE_NAME)),
    ("topic_list", (Kind.TOPIC_LIST_MISSING,)),
    ("config", (Kind.CONFIG_VALUE,)),
)
CAUSE_OF_KIND = {kind: cause for cause, kinds in CAUSES for kind in kinds}


# -------------------------------------------------------------- rebuild views ----


def route_from_rows(rows: Sequence[Mapping[str, Any]]) -> TopicRouteData:
    """The route one server gave, from its rows (sorted by broker_seq), 5.x fields
    included: without them servers that differ only there would have different route
    hashes and no finding."""
    first = rows[0]
    mappings = {r["broker"]: mapping_from_json(r["topic_queue_mapping"])
                for r in rows if r["topic_queue_mapping"] is not None}
    return TopicRouteData(
        queue_datas=tuple(QueueData(r["broker"], r["read_queue_nums"], r["write_queue_nums"], r["perm"],
                                    r["topic_sys_flag"]) for r in rows if r["has_queue_data"]),
        broker_datas=tuple(_broker_data(r["broker"], r) for r in rows if r["has_broker_data"]),
        filter_server_table={k: tuple(v or ()) for k, v in (first["filter_servers"] or ())},
        order_topic_conf=first["order_topic_conf"],
        topic_queue_mapping_by_broker=mappings or None,
    )


def _broker_data(name: str, row: Mapping[str, Any]) -> BrokerData:
    """A BrokerData from a routes row or a captures row's cluster_brokers entry (the
    same columns: cluster, broker_addrs and the 5.x enable_acting_master, zone_name)."""
    return BrokerData(row["cluster"], name, dict(row["broker_addrs"] or ()),
                      enable_acting_master=row["enable_acting_master"], zone_name=row["zone_name"])


def topic_views(topic: str, servers: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
                ) -> list[ServerView]:
    """Each answering server's view restricted to ``topic``, in ``servers`` order.

    ``servers``: one ``{server, has_topic_list, has_order_ns}`` per server that answered
    in the round; ``rows``: the routes rows of that topic in the round. A server without
    rows was not asked the route and does not list the topic.
    """
    by_server: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_server.setdefault(row["server"], []).append(row)
    views = []
    for info in servers:
        server = info["server"]
        mine = sorted(by_server.get(server, ()), key=lambda r: r["broker_seq"])
        first = mine[0] if mine else None
        routes: dict[str, TopicRouteData | None] = {}
        if first is not None and first["asked"]:
            routes[topic] = route_from_rows(mine) if first["has_route"] else None
        topic_list = None
        if info["has_topic_list"]:
            topic_list = (topic,) if first is not None and first["listed"] else ()
        kv: dict[str, dict[str, str]] = {}
        if info["has_order_ns"]:
            value = None if first is None else first["order_conf_kv"]
            kv[ORDER_TOPIC_CONFIG] = {} if value is None else {topic: value}
        views.append(ServerView(server, topic_list=topic_list, topics=routes, kv=kv))
    return views


def cluster_views(captures: Sequence[Mapping[str, Any]]) -> list[ServerView]:
    """Each server's view of one round without its topics (cluster info, KV namespaces
    other than ORDER_TOPIC_CONFIG, config), from captures rows."""
    views = []
    for c in captures:
        if not c["ok"]:
            views.append(ServerView(c["server"], error=c["error"] or "no answer"))
            continue
        info = None
        if c["has_cluster_info"]:
            info = ClusterInfo(
                {b["broker"]: _broker_data(b["broker_name"], b) for b in c["cluster_brokers"] or ()},
                {k: tuple(v or ()) for k, v in c["cluster_members"] or ()},
            )
        kv = {ns: dict(table or ()) for ns, table in c["kv"] or () if ns != ORDER_TOPIC_CONFIG}
        config = None if c["config"] is None else dict(c["config"])
        views.append(ServerView(c["server"], cluster_info=info, kv=kv, config=config))
    return views


# ----------------------------------------------------------------- outcomes ----


def outcome(round_no: int, topic: str | None, report: DiffReport, clusters: Iterable[str]) -> dict[str, Any]:
    """One OUTCOME row from a report restricted to ``topic`` (None: cluster-wide)."""
    findings = [f for f in report.findings if f.topic == topic]
    impact = next((i for i in report.impacts if i.topic == topic), None) if topic is not None else None
    kinds = []
    for f in findings:
        if f.kind not in kinds:
            kinds.append(f.kind)
    row: dict[str, Any] = {
        "round": round_no, "topic": topic, "agree": not findings,
        "differing": differing_servers(findings), "kinds": kinds,
        "findings": [{"kind": f.kind, "broker": f.broker, "subject": f.subject,
                      "values": [{"server": s, "value": v} for s, v in f.values]} for f in findings],
        "brokers": sorted({f.broker for f in findings if f.broker is not None}),
        "clusters": sorted(set(clusters)) if findings else [],
        "affects_clients": impact is not None, "unassigned": 0, "doubly_assigned": 0,
        "unassigned_queues": [], "doubly_assigned_queues": [], "key_hash_breaks": False, "impact_json": None,
    }
    if impact is not None:
        row.update(
            unassigned=len(impact.consumer.unassigned), doubly_assigned=len(impact.consumer.doubly_assigned),
            unassigned_queues=[queue_label(q) for q in impact.consumer.unassigned],
            doubly_assigned_queues=[queue_label(q) for q in impact.consumer.doubly_assigned],
            key_hash_breaks=impact.producer.key_hash_breaks, impact_json=orjson.dumps(impact.to_obj()).decode(),
        )
    return row


def topic_outcome(group: Mapping[str, Any], consumers: int, strategy: str) -> dict[str, Any]:
    """OUTCOME of one topic's comparison: ``{round, topic, servers, rows}`` (``round``:
    any round the comparison holds for; it is only passed through)."""
    topic = group["topic"]
    servers = sorted(group["servers"], key=lambda s: s["server"])
    views = topic_views(topic, servers, group["rows"])
    report = diff_views(views, consumers=consumers, strategy=strategy)
    clusters = {r["cluster"] for r in group["rows"] if r["cluster"] is not None}
    return outcome(group["round"], topic, report, clusters)


def cluster_outcome(group: Mapping[str, Any], consumers: int, strategy: str) -> dict[str, Any]:
    """OUTCOME of one round's cluster-wide comparison: ``{round, captures}``."""
    captures = sorted(group["captures"], key=lambda c: c["server"])
    views = cluster_views(captures)
    report = diff_views(views, consumers=consumers, strategy=strategy)
    named = {f.broker for f in report.findings if f.broker is not None}
    clusters = {f.subject for f in report.findings if f.kind == Kind.CLUSTER_MEMBERS}
    for c in captures:
        for b in c["cluster_brokers"] or ():
            if b["broker"] in named:
                clusters.add(b["cluster"])
    return outcome(group["round"], None, report, clusters)
