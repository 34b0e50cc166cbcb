"""Order-free forms of what a name server answered, and the content hash built on them.

Two answers mean the same to clients when they hold the same items in any order: clients
sort queue and broker lists before comparing routes (spec 8.2) and Java maps come out in
hash order. So every list and map becomes a sorted tuple here, and each route is kept as
the compact JSON of that tuple (its *key*). Comparing a topic across servers is then one
bytes equality, and only topics that fail it are decoded and examined field by field.
Bytes rather than tuples because this runs for every topic of every server: 10,000
topics x 5 servers of live tuples keep the cyclic GC busy (about half the time), bytes
are not tracked by it and they cache their hash for the memoised steps downstream.

Canonical rows (JSON arrays in keys and in the hashed document):

* QueueData  -> ``[brokerName, perm, readQueueNums, writeQueueNums, topicSysFlag]``
* BrokerData -> ``[brokerName, cluster, [[brokerId, addr], ...]]`` (ids ascending)
* route      -> ``[[QueueData rows], [BrokerData rows], [[brokerAddr, [filter servers]], ...],
  orderTopicConf or null]``, every list sorted; no route (TOPIC_NOT_EXIST) -> ``null``
* cluster    -> ``[[BrokerData rows keyed by brokerAddrTable key], [[cluster, [brokerNames]], ...]]``
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

import orjson

from nameserver.protocol.bodies import BrokerData, ClusterInfo, TopicRouteData

from .model import ServerView

QueueRow = tuple[str, int, int, int, int]
BrokerRow = tuple[str, str, tuple[tuple[int, str], ...]]
RouteCanon = tuple[tuple[QueueRow, ...], tuple[BrokerRow, ...], tuple[tuple[str, tuple[str, ...]], ...], str | None]
ClusterCanon = tuple[tuple[BrokerRow, ...], tuple[tuple[str, tuple[str, ...]], ...]]


def _broker_row(name: str, broker: BrokerData) -> BrokerRow:
    addrs = broker.broker_addrs
    return (name, broker.cluster, tuple(sorted(addrs.items())) if len(addrs) > 1 else tuple(addrs.items()))


def canonical_route(route: TopicRouteData | None) -> RouteCanon | None:
    """The route as sorted tuples; None stays None (the server has no route)."""
    if route is None:
        return None
    # This runs for every topic of every server: list comprehensions and in-place sorts
    # of the usual one- or two-item lists are several times cheaper than sorted(genexpr).
    qds = [(q.broker_name, q.perm, q.read_queue_nums, q.write_queue_nums, q.topic_sys_flag) for q in route.queue_datas]
    qds.sort()
    bds = [_broker_row(b.broker_name, b) for b in route.broker_datas]
    bds.sort()
    fst = route.filter_server_table
    filters = tuple(sorted((k, tuple(sorted(v))) for k, v in fst.items())) if fst else ()
    return (tuple(qds), tuple(bds), filters, route.order_topic_conf)


def route_key(route: TopicRouteData | None) -> bytes | None:
    """Compact JSON of ``canonical_route(route)``: equal exactly when the canonical
    routes are equal. None for no route."""
    return None if route is None else orjson.dumps(canonical_route(route))


def route_from_key(key: bytes | None) -> RouteCanon | None:
    """Inverse of ``route_key`` (JSON arrays back to tuples)."""
    if key is None:
        return None
    qds, bds, filters, conf = orjson.loads(key)
    return (
        tuple((str(n), int(p), int(r), int(w), int(f)) for n, p, r, w, f in qds),
        tuple(_broker_row_from_json(b) for b in bds),
        tuple((str(addr), tuple(str(x) for x in servers)) for addr, servers in filters),
        None if conf is None else str(conf),
    )


def _broker_row_from_json(row: Any) -> BrokerRow:
    name, cluster, addrs = row
    return (str(name), str(cluster), tuple((int(i), str(a)) for i, a in addrs))


def canonical_cluster(info: ClusterInfo | None) -> ClusterCanon | None:
    """Cluster info as sorted tuples. Cluster member lists are sets, as in Java."""
    if info is None:
        return None
    brokers = tuple(sorted(_broker_row(name, b) for name, b in info.broker_addr_table.items()))
    clusters = tuple(sorted((c, tuple(sorted(set(names)))) for c, names in info.cluster_addr_table.items()))
    return (brokers, clusters)


@dataclass(frozen=True, slots=True)
class CanonicalView:
    """A ServerView reduced to canonical forms, built once and shared by comparison,
    hashing, summaries and impact. ``routes`` maps each topic asked to its route key;
    ``topic_list`` is a set: its order and duplicates carry nothing."""

    addr: str
    cluster: ClusterCanon | None
    topic_list: frozenset[str] | None
    routes: Mapping[str, bytes | None]
    kv: Mapping[str, Mapping[str, str]]
    config: Mapping[str, str] | None


def canonicalize(view: ServerView) -> CanonicalView:
    # Routes are immutable and a collector may hand the same TopicRouteData object to
    # every topic whose answer had the same bytes (mqadmin/collect.py does): compute each
    # object's key once. Keyed by id(), which is stable while ``view`` holds the objects.
    keys: dict[int, bytes | None] = {}
    routes: dict[str, bytes | None] = {}
    for topic, route in view.topics.items():
        ident = id(route)
        if ident in keys:
            routes[topic] = keys[ident]
        else:
            routes[topic] = keys[ident] = route_key(route)
    return CanonicalView(
        addr=view.addr,
        cluster=canonical_cluster(view.cluster_info),
        topic_list=None if view.topic_list is None else frozenset(view.topic_list),
        routes=routes,
        kv=view.kv,
        config=view.config,
    )


def hash_canonical(canon: CanonicalView) -> str:
    """sha256 (hex) of the canonical route content, the UTF-8 bytes of
    ``json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False)`` for
    ``doc = {"clusterInfo": cluster|null, "routes": [[topic, route|null], ...],
    "topicList": [topic, ...]|null}`` with routes and the topic list sorted by topic.
    Built from the route keys (orjson writes exactly that JSON) instead of re-encoding.

    Only route content is hashed: the cluster info (106), the topic list (206) and the
    routes (105) of the topics asked. KV and config are left out: config legitimately
    differs per server (ports, paths) and KV has its own findings; a KV difference that
    reaches clients (ORDER_TOPIC_CONFIG) shows up in the routes' orderTopicConf anyway.
    """
    dumps = orjson.dumps
    routes = b",".join(
        b"[" + dumps(topic) + b"," + (key if key is not None else b"null") + b"]"
        for topic, key in sorted(canon.routes.items())
    )
    topic_list = None if canon.topic_list is None else sorted(canon.topic_list)
    text = (
        b'{"clusterInfo":' + dumps(canon.cluster) + b',"routes":[' + routes
        + b'],"topicList":' + dumps(topic_list) + b"}"
    )
    return hashlib.sha256(text).hexdigest()


def content_hash(view: ServerView) -> str:
    """Digest of ``view``'s route content: equal for two views exactly when their cluster
    info, topic lists and routes of the same topics are equal up to list and map order.
    A topic asked of one server and not of the other makes the digests differ."""
    return hash_canonical(canonicalize(view))
