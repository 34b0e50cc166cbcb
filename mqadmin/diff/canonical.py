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
* BrokerData -> ``[brokerName, cluster, [[brokerId, addr], ...]]`` (ids ascending), and for a
  group with 5.x fields ``[..., enableActingMaster, zoneName]`` (``true``/null, name/null)
* route      -> ``[[QueueData rows], [BrokerData rows], [[brokerAddr, [filter servers]], ...],
  orderTopicConf or null]``, every list sorted; a static topic (5.x) appends
  ``[[brokerName, scope, totalQueues, epoch, dirty, bname, [[logicId, physicalId], ...]], ...]``;
  no route (TOPIC_NOT_EXIST) -> ``null``
* cluster    -> ``[[BrokerData rows keyed by brokerAddrTable key], [[cluster, [brokerNames]], ...]]``

The 5.x parts are appended only when present, so a 4.x fleet's keys and content hashes
are what they were before 5.x fields existed. ``enableActingMaster`` false and absent are
one value (clients default it to false; Java 5 writes false for a 4.x broker, 4.9.8
nothing), and so are an empty and an absent mapping (clients test ``isEmpty``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

import orjson

from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, TopicRouteData

from .model import ServerView

QueueRow = tuple[str, int, int, int, int]
#: ``(name, cluster, addrs)``, or ``(name, cluster, addrs, acting, zone)`` for 5.x fields
BrokerRow = tuple[Any, ...]
#: ``(brokerName, scope, totalQueues, epoch, dirty, bname, ((logicId, physicalId), ...))``
MappingRow = tuple[str, str | None, int, int, bool, str | None, tuple[tuple[int, int], ...]]
#: ``(queues, brokers, filters, orderTopicConf)``, plus ``mappings`` for a static topic
RouteCanon = tuple[Any, ...]
ClusterCanon = tuple[tuple[BrokerRow, ...], tuple[tuple[str, tuple[str, ...]], ...]]


def _broker_row(name: str, broker: BrokerData) -> BrokerRow:
    addrs = broker.broker_addrs
    row = (name, broker.cluster, tuple(sorted(addrs.items())) if len(addrs) > 1 else tuple(addrs.items()))
    acting, zone = broker.enable_acting_master or None, broker.zone_name or None
    return row if acting is None and zone is None else (*row, acting, zone)


def broker_extras(row: BrokerRow) -> tuple[bool | None, str | None]:
    """A canonical BrokerData row's (enableActingMaster, zoneName): None, None for 4.x."""
    return (row[3], row[4]) if len(row) > 3 else (None, None)


def route_mappings(route: RouteCanon) -> tuple[MappingRow, ...]:
    """A canonical route's static-topic mapping rows; () for a topic without them."""
    return route[4] if len(route) > 4 else ()


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
    mapping = route.topic_queue_mapping_by_broker
    if mapping:
        rows = tuple(sorted((name, m.scope, m.total_queues, m.epoch, m.dirty, m.bname, tuple(sorted(m.curr_id_map.items())))
                            for name, m in mapping.items()))
        return (tuple(qds), tuple(bds), filters, route.order_topic_conf, rows)
    return (tuple(qds), tuple(bds), filters, route.order_topic_conf)


def route_key(route: TopicRouteData | None) -> bytes | None:
    """Compact JSON of ``canonical_route(route)``: equal exactly when the canonical
    routes are equal. None for no route."""
    return None if route is None else orjson.dumps(canonical_route(route))


def route_from_key(key: bytes | None) -> RouteCanon | None:
    """Inverse of ``route_key`` (JSON arrays back to tuples)."""
    if key is None:
        return None
    qds, bds, filters, conf, *mappings = orjson.loads(key)
    route = (
        tuple((str(n), int(p), int(r), int(w), int(f)) for n, p, r, w, f in qds),
        tuple(_broker_row_from_json(b) for b in bds),
        tuple((str(addr), tuple(str(x) for x in servers)) for addr, servers in filters),
        None if conf is None else str(conf),
    )
    if not mappings:
        return route
    return (*route, tuple((str(n), _opt(scope), int(total), int(epoch), bool(dirty), _opt(bname),
                           tuple((int(k), int(v)) for k, v in ids))
                          for n, scope, total, epoch, dirty, bname, ids in mappings[0]))


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def _broker_row_from_json(row: Any) -> BrokerRow:
    name, cluster, addrs, *extras = row
    base = (str(name), str(cluster), tuple((int(i), str(a)) for i, a in addrs))
    return base if not extras else (*base, extras[0] or None, _opt(extras[1]))


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
    # every topic whose answer had the same bytes (mqadmin/transport/collect.py does): compute each
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
