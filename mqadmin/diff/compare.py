"""Compare what several name servers answered and list every difference as a Finding.

Why findings look the way they do:

* A server takes part in a comparison only if it answered that question (module
  docstring of model.py); a failed server is a summary line, not a difference.
* A broker absent from some views yields one BROKER_MISSING finding; its fields are then
  compared only among the servers that have it. Otherwise one lost registration would
  also show up as a perm, two queue-count and an address finding.
* brokerAddrs[0] absent on some servers is MASTER_MISSING rather than BROKER_ADDR because
  it changes client behaviour: producers skip a broker without a master (spec 8.3).
* 5.x fields are compared per broker like the others: ``enableActingMaster`` ("true" or
  absent; false and absent read the same to clients), ``zoneName`` (a server that lost it
  drops the group from zone-mode clients' routes whenever the group has a master) and
  the static-topic mapping (a server that lost it gives 5.x clients physical queues
  instead of logical ones; the impact analysis shows the diverging queue lists).
* KV keys of ORDER_TOPIC_CONFIG are topic names, so those findings carry the topic and
  are listed with the topic's route findings.

Findings are ordered by topic (cluster-wide ones first), broker (topic-wide ones first),
then kind in ``KINDS`` order; that is the grouping the CLI prints.
"""

from __future__ import annotations

import functools
from typing import Collection, Iterable, Mapping, Sequence, TypeVar

from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG

from .canonical import (
    BrokerRow, CanonicalView, ClusterCanon, MappingRow, RouteCanon, broker_extras, canonicalize, route_from_key,
    route_mappings,
)
from .model import KINDS, PRESENT, Finding, Kind, ServerView, Value

T = TypeVar("T")

# Field keys of a broker: (rank, brokerId). Rank orders the findings of one broker.
_PERM, _READ, _WRITE, _SYS_FLAG, _ADDR, _CLUSTER, _ACTING, _ZONE, _MAPPING = range(9)
_FIELDS: dict[int, tuple[str, str]] = {
    _PERM: (Kind.PERM, "perm"),
    _READ: (Kind.READ_QUEUE_NUMS, "readQueueNums"),
    _WRITE: (Kind.WRITE_QUEUE_NUMS, "writeQueueNums"),
    _SYS_FLAG: (Kind.TOPIC_SYS_FLAG, "topicSysFlag"),
    _CLUSTER: (Kind.BROKER_CLUSTER, "cluster"),
    _ACTING: (Kind.ACTING_MASTER, "enableActingMaster"),
    _ZONE: (Kind.ZONE_NAME, "zoneName"),
    _MAPPING: (Kind.QUEUE_MAPPING, "topicQueueMappingByBroker"),
}
BrokerFields = dict[tuple[int, int], str]
#: A finding without its topic: (kind, broker, subject, values).
Row = tuple[str, str | None, str, tuple[tuple[str, Value], ...]]
#: (server, route key) per server asked about one topic.
Answers = tuple[tuple[str, bytes | None], ...]
_KIND_RANK = {kind: rank for rank, kind in enumerate(KINDS)}


def compare(views: Iterable[ServerView], *, ignore_config: Collection[str] = ()) -> list[Finding]:
    """Every difference among the views that answered (``view.ok``), ordered for display.

    ``ignore_config`` names config keys that are expected to differ per server (e.g.
    listenPort, rocketmqHome). Raises ValueError when two views share an address.
    """
    views = list(views)
    check_unique(views)
    return compare_canonical([canonicalize(v) for v in views if v.ok], ignore_config=ignore_config)


def check_unique(views: Sequence[ServerView]) -> None:
    seen: set[str] = set()
    for view in views:
        if view.addr in seen:
            raise ValueError(f"name server {view.addr!r} is listed twice")
        seen.add(view.addr)


def compare_canonical(canons: Sequence[CanonicalView], *, ignore_config: Collection[str] = (),
                      differing: Sequence[tuple[str, Answers]] | None = None) -> list[Finding]:
    """``compare`` over views already canonicalized; ``differing`` is
    ``differing_routes(canons)`` when the caller has it already."""
    out: list[Finding] = []
    _compare_clusters(canons, out)
    _compare_topic_lists(canons, out)
    for topic, answers in differing_routes(canons) if differing is None else differing:
        out.extend(Finding(kind, topic, broker, subject, values)
                   for kind, broker, subject, values in _route_rows(answers))
    _compare_tables(canons, out, ignore_config)
    out.sort(key=_display_order)
    return out


def _display_order(f: Finding) -> tuple[bool, str, bool, str, int]:
    return (f.topic is not None, f.topic or "", f.broker is not None, f.broker or "", _KIND_RANK[f.kind])


def differing_routes(canons: Sequence[CanonicalView]) -> list[tuple[str, Answers]]:
    """Topics whose canonical routes are not all equal among the servers asked, with
    ``(server, route key)`` per server asked, sorted by topic. Topics asked of one
    server only cannot differ."""
    result = []
    for topic in _union(c.routes for c in canons):
        answers = tuple((c.addr, c.routes[topic]) for c in canons if topic in c.routes)
        if _differ(answers):
            result.append((topic, answers))
    return result


def _union(keys: Iterable[Iterable[str]]) -> list[str]:
    merged: set[str] = set()
    for k in keys:
        merged.update(k)
    return sorted(merged)


def _differ(pairs: Sequence[tuple[str, T]]) -> bool:
    if len(pairs) < 2:
        return False
    first = pairs[0][1]
    return any(value != first for _, value in pairs[1:])


def _presence(having: Iterable[tuple[str, bool]]) -> tuple[tuple[str, Value], ...]:
    return tuple((server, PRESENT if has else None) for server, has in having)


def _add_if_differs(out: list[Finding], kind: str, topic: str | None, subject: str,
                    values: Sequence[tuple[str, Value]]) -> None:
    if _differ(values):
        out.append(Finding(kind, topic, None, subject, tuple(values)))


# ------------------------------------------------------------ cluster info ----


def _group_fields(fields: BrokerFields, row: BrokerRow) -> None:
    """A BrokerData row's fields; the 5.x ones only where a server has them, so that a
    server that lost them shows the value "absent" against the others'."""
    fields[(_CLUSTER, 0)] = row[1]
    fields.update(((_ADDR, broker_id), addr) for broker_id, addr in row[2])
    acting, zone = broker_extras(row)
    if acting:
        fields[(_ACTING, 0)] = "true"
    if zone is not None:
        fields[(_ZONE, 0)] = zone


def _mapping_text(row: MappingRow) -> str:
    """One broker's static-topic mapping as one comparable value."""
    _, scope, total, epoch, dirty, bname, ids = row
    return (f"bname={bname} scope={scope} totalQueues={total} epoch={epoch}{' dirty' if dirty else ''} "
            f"ids={','.join(f'{k}:{v}' for k, v in ids)}")


def _cluster_brokers(canon: ClusterCanon) -> dict[str, BrokerFields]:
    brokers: dict[str, BrokerFields] = {}
    for row in canon[0]:
        _group_fields(brokers.setdefault(row[0], {}), row)
    return brokers


def _compare_clusters(canons: Sequence[CanonicalView], out: list[Finding]) -> None:
    answers = [(c.addr, c.cluster) for c in canons if c.cluster is not None]
    if not _differ(answers):
        return
    members = [(addr, dict(cluster[1])) for addr, cluster in answers if cluster is not None]
    for name in _union(m for _, m in members):
        values = [(addr, ",".join(m[name]) if name in m else None) for addr, m in members]
        _add_if_differs(out, Kind.CLUSTER_MEMBERS, None, name, values)
    rows = _broker_rows([(addr, _cluster_brokers(c)) for addr, c in answers if c is not None], "clusterInfo")
    out.extend(Finding(kind, None, broker, subject, values) for kind, broker, subject, values in rows)


# ------------------------------------------------------------------ topics ----


def _compare_topic_lists(canons: Sequence[CanonicalView], out: list[Finding]) -> None:
    lists = [(c.addr, c.topic_list) for c in canons if c.topic_list is not None]
    if not _differ(lists):
        return
    sets = [s for _, s in lists if s is not None]
    for topic in sorted(frozenset.union(*sets) - frozenset.intersection(*sets)):
        out.append(Finding(Kind.TOPIC_LIST_MISSING, topic, None, "topicList",
                           _presence((addr, topic in s) for addr, s in lists if s is not None)))


def _route_brokers(route: RouteCanon) -> dict[str, BrokerFields]:
    # A name server keys QueueData and BrokerData by broker name, so one row per broker;
    # should a route ever repeat one, the later row wins here (the hash still differs).
    brokers: dict[str, BrokerFields] = {}
    for name, perm, read, write, sys_flag in route[0]:
        brokers[name] = {
            (_PERM, 0): str(perm), (_READ, 0): str(read), (_WRITE, 0): str(write), (_SYS_FLAG, 0): str(sys_flag),
        }
    for row in route[1]:
        _group_fields(brokers.setdefault(row[0], {}), row)
    for mapping in route_mappings(route):
        brokers.setdefault(mapping[0], {})[(_MAPPING, 0)] = _mapping_text(mapping)
    return brokers


@functools.lru_cache(maxsize=4096)
def _route_rows(answers: Answers) -> tuple[Row, ...]:
    """The findings of one topic, without the topic. Memoised: a broker lost on one
    server makes thousands of topics differ in exactly the same way."""
    rows: list[Row] = []
    if any(key is None for _, key in answers):
        rows.append((Kind.ROUTE_MISSING, None, "route", _presence((a, key is not None) for a, key in answers)))
    present = [(addr, route) for addr, key in answers if (route := route_from_key(key)) is not None]
    if len(present) < 2:
        return tuple(rows)
    conf = [(a, r[3]) for a, r in present]
    if _differ(conf):
        rows.append((Kind.ORDER_TOPIC_CONF, None, "orderTopicConf", tuple(conf)))
    filters = [(addr, dict(r[2])) for addr, r in present]
    for broker_addr in _union(f for _, f in filters):
        values = tuple((a, ",".join(f[broker_addr]) if broker_addr in f else None) for a, f in filters)
        if _differ(values):
            rows.append((Kind.FILTER_SERVERS, None, broker_addr, values))
    rows.extend(_broker_rows([(addr, _route_brokers(r)) for addr, r in present], "route"))
    return tuple(rows)


def _broker_rows(views: Sequence[tuple[str, dict[str, BrokerFields]]], where: str) -> list[Row]:
    """Differences between the brokers of one route (or of the cluster info)."""
    rows: list[Row] = []
    for broker in _union(b for _, b in views):
        having = [(addr, brokers[broker]) for addr, brokers in views if broker in brokers]
        if len(having) < len(views):
            rows.append((Kind.BROKER_MISSING, broker, where, _presence((a, broker in b) for a, b in views)))
        if not _differ(having):
            continue
        keys: set[tuple[int, int]] = set()
        for _, fields in having:
            keys.update(fields)
        for rank, broker_id in sorted(keys):
            values = tuple((addr, fields.get((rank, broker_id))) for addr, fields in having)
            if not _differ(values):
                continue
            if rank == _ADDR:
                master_missing = broker_id == 0 and any(v is None for _, v in values)
                kind = Kind.MASTER_MISSING if master_missing else Kind.BROKER_ADDR
                subject = f"brokerAddrs[{broker_id}]"
            else:
                kind, subject = _FIELDS[rank]
            rows.append((kind, broker, subject, values))
    return rows


# --------------------------------------------------------------- KV, config ----


def _compare_table(kind: str, namespace: str | None, tables: Sequence[tuple[str, Mapping[str, str]]],
                   ignore: Collection[str], out: list[Finding]) -> None:
    if not _differ(tables):
        return
    for key in _union(t for _, t in tables):
        if key in ignore:
            continue
        values = [(addr, t.get(key)) for addr, t in tables]
        if namespace is None:
            _add_if_differs(out, kind, None, key, values)
        else:
            topic = key if namespace == ORDER_TOPIC_CONFIG else None
            _add_if_differs(out, kind, topic, f"{namespace}/{key}", values)


def _compare_tables(canons: Sequence[CanonicalView], out: list[Finding], ignore_config: Collection[str]) -> None:
    for namespace in _union(c.kv for c in canons):
        tables = [(c.addr, c.kv[namespace]) for c in canons if namespace in c.kv]
        _compare_table(Kind.KV_VALUE, namespace, tables, (), out)
    configs = [(c.addr, c.config) for c in canons if c.config is not None]
    _compare_table(Kind.CONFIG_VALUE, None, [(a, cfg) for a, cfg in configs if cfg is not None], ignore_config, out)
