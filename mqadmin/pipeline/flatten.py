"""Capture files to Arrow rows: the pieces of the chain pass (chains.py) that read a file.

A v1 file is split without building a ServerView (``parse``): the topics map is walked
with msgpack's streaming Unpacker and each route kept as its raw msgpack bytes. Each
distinct route is decoded, canonicalized and flattened once per worker
(``Templates``): identical routes are byte-identical, because the writer serializes
``TopicRouteData.to_obj()``, so a 10,000-topic fleet has a few hundred distinct routes,
and the routes table joins each fact interval with its route's template rows.

The route hash is blake2b-128 of ``canonical.route_key``: two servers' routes of a topic
have the same hash exactly when the diff module would call them equal.

``shape_problem`` and ``view_problem`` say what in a file's small view fields later steps
could not decode, so that a malformed file is a captures row with its reason, not a
worker crash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

import msgpack
import orjson
import pyarrow as pa

from mqnamesrv.protocol.bodies import BrokerData, QueueData, TopicQueueMappingInfo, TopicRouteData

from ..diff import ServerView, route_key
from .delta import split_capture
from .schema import CaptureFormatError, server_of_name

ADDRS = pa.map_(pa.int64(), pa.string())

ROUTES = pa.schema([
    ("round", pa.int32()), ("capture_ms", pa.int64()), ("server", pa.string()), ("topic", pa.string()),
    ("asked", pa.bool_()), ("has_route", pa.bool_()), ("listed", pa.bool_()), ("order_conf_kv", pa.string()),
    ("route_hash", pa.binary()), ("order_topic_conf", pa.string()),
    ("filter_servers", pa.map_(pa.string(), pa.list_(pa.string()))),
    ("broker_seq", pa.int32()), ("broker", pa.string()), ("cluster", pa.string()),
    ("has_queue_data", pa.bool_()), ("perm", pa.int32()), ("read_queue_nums", pa.int32()),
    ("write_queue_nums", pa.int32()), ("topic_sys_flag", pa.int32()),
    ("has_broker_data", pa.bool_()), ("broker_addrs", ADDRS), ("master_addr", pa.string()),
    # 5.x: the BrokerData's enableActingMaster and zoneName, and this broker's entry of the
    # route's topicQueueMappingByBroker (TopicQueueMappingInfo.to_obj() as JSON); null for 4.x.
    ("enable_acting_master", pa.bool_()), ("zone_name", pa.string()), ("topic_queue_mapping", pa.string()),
])
_TEMPLATE_FIELDS = [f for f in ROUTES if f.name not in ("round", "capture_ms", "server", "topic", "asked", "listed",
                                                        "order_conf_kv")]
TEMPLATE = pa.schema(_TEMPLATE_FIELDS)

CLUSTER_BROKER = pa.struct([("broker", pa.string()), ("broker_name", pa.string()), ("cluster", pa.string()),
                            ("broker_addrs", ADDRS), ("enable_acting_master", pa.bool_()),
                            ("zone_name", pa.string())])
CAPTURES = pa.schema([
    ("round", pa.int32()), ("capture_ms", pa.int64()), ("server", pa.string()), ("path", pa.string()),
    ("ok", pa.bool_()), ("error", pa.string()), ("unreadable", pa.bool_()), ("latency_ms", pa.float64()),
    ("failures", pa.list_(pa.string())), ("content_hash", pa.string()),
    ("has_cluster_info", pa.bool_()), ("cluster_brokers", pa.list_(CLUSTER_BROKER)),
    ("cluster_members", pa.map_(pa.string(), pa.list_(pa.string()))),
    ("has_topic_list", pa.bool_()), ("topics_listed", pa.int32()), ("routes_asked", pa.int32()),
    ("routes_present", pa.int32()), ("kv", pa.map_(pa.string(), pa.map_(pa.string(), pa.string()))),
    ("config", pa.map_(pa.string(), pa.string())),
])


@dataclass
class Parsed:
    """A capture file read without building its view: header and small fields decoded,
    each route kept as raw msgpack bytes (``b"\\xc0"`` is nil: TOPIC_NOT_EXIST)."""

    header: dict[str, Any]
    view: dict[str, Any]  # every view field except "topics"
    topics: list[tuple[str, bytes]]


def parse(data: bytes) -> Parsed:
    """Raises CaptureFormatError for anything that is not a readable capture."""
    try:
        return _parse(data)
    except CaptureFormatError:
        raise
    except (ValueError, TypeError, KeyError, msgpack.UnpackException) as exc:
        raise CaptureFormatError(f"unreadable capture: {type(exc).__name__}: {exc}") from None


def _parse(data: bytes) -> Parsed:
    split = split_capture(data)
    return Parsed(split.header, split.view, split.topics)


# ------------------------------------------------------------ route templates ----


@dataclass(frozen=True, slots=True)
class RouteTemplate:
    key: bytes | None  # canonical.route_key, None = no route
    first: int  # index of its first template row
    count: int


class Templates:
    """Distinct routes seen by this worker and their flattened rows; bounded, and
    cleared when full (it is only a cache)."""

    LIMIT = 200_000

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.routes: dict[bytes, RouteTemplate] = {}
        self._reset()

    def _reset(self) -> None:
        self.rows.clear()
        self.routes.clear()
        self.add(b"\xc0")  # nil: no route; template row 0

    def trim(self) -> None:
        """Forget everything when full; call between files only (indices handed out
        for the current file must stay valid)."""
        if len(self.rows) > self.LIMIT:
            self._reset()

    def get(self, raw: bytes) -> RouteTemplate:
        """The template of a route given as raw msgpack."""
        found = self.routes.get(raw)
        return self.add(raw) if found is None else found

    def add(self, raw: bytes) -> RouteTemplate:
        """Decode, canonicalize and flatten a route not seen yet. Raises (CaptureFormatError,
        or whatever decoding raised) and leaves the cache as it was when the route cannot
        be a template: a row Arrow cannot hold would make the batch of every later file of
        this worker fail."""
        obj = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        if obj is not None and not isinstance(obj, dict):
            raise CaptureFormatError("is not a map")
        route = None if obj is None else ServerView.from_obj({"addr": "", "topics": {"": obj}}).topics[""]
        problem = None if route is None else _route_problem(route)
        if problem is not None:
            raise CaptureFormatError(problem)
        key = route_key(route)
        rows = route_rows(route, key)
        entry = RouteTemplate(key, len(self.rows), len(rows))
        self.rows.extend(rows)
        self.routes[raw] = entry
        return entry


_INT32 = range(-2 ** 31, 2 ** 31)
_INT64 = range(-2 ** 63, 2 ** 63)


def _route_problem(route: TopicRouteData) -> str | None:
    """What in a decoded route TEMPLATE's columns cannot hold: ServerView.from_obj takes
    any integer, and keeps a filter server list's items as they are. Checked in Python
    because converting each new route's rows to Arrow costs five times its decoding."""
    for q in route.queue_datas:
        if not all(n in _INT32 for n in (q.perm, q.read_queue_nums, q.write_queue_nums, q.topic_sys_flag)):
            return f"has a queue number or perm out of range (broker {q.broker_name!r})"
    for b in route.broker_datas:
        if not all(i in _INT64 for i in b.broker_addrs):
            return f"has a broker id out of range (broker {b.broker_name!r})"
    for addr, servers in route.filter_server_table.items():
        if not all(isinstance(x, str) for x in servers):
            return f"has a filter server of {addr!r} that is not a string"
    return None


def route_hash(key: bytes | None) -> bytes | None:
    return None if key is None else hashlib.blake2b(key, digest_size=16).digest()


def route_rows(route: TopicRouteData | None, key: bytes | None) -> list[tuple[Any, ...]]:
    """The template rows of one route, in TEMPLATE's column order (has_route, route_hash,
    order_topic_conf, filter_servers, broker_seq, broker, cluster, has_queue_data, perm,
    read_queue_nums, write_queue_nums, topic_sys_flag, has_broker_data, broker_addrs,
    master_addr, enable_acting_master, zone_name, topic_queue_mapping): one per broker name
    (QueueData, BrokerData and static-topic mapping of that name side by side), or one row
    without a broker for no route (or a route naming no broker). A name repeated in a list
    gives one row per repetition, so the rows hold exactly what the route held; a mapping
    (one per name) sits on the name's first row, and a name only the mapping has gets a
    row of its own, as the diff compares it as a broker of the topic."""
    if route is None:
        return [(False, None, None, {}, 0, None, None, False, None, None, None, None, False, None, None,
                 None, None, None)]
    digest = route_hash(key)
    conf = route.order_topic_conf
    filters = {k: list(v) for k, v in route.filter_server_table.items()}
    queues: dict[str, list[QueueData]] = {}
    brokers: dict[str, list[BrokerData]] = {}
    for qd in route.queue_datas:
        queues.setdefault(qd.broker_name, []).append(qd)
    for bd in route.broker_datas:
        brokers.setdefault(bd.broker_name, []).append(bd)
    mappings = {name: mapping_json(info) for name, info in (route.topic_queue_mapping_by_broker or {}).items()}
    rows: list[tuple[Any, ...]] = []
    for name in sorted(queues.keys() | brokers.keys() | mappings.keys()):
        qs, bs = queues.get(name, []), brokers.get(name, [])
        for i in range(max(len(qs), len(bs), 1)):
            q: QueueData | None = qs[i] if i < len(qs) else None
            b: BrokerData | None = bs[i] if i < len(bs) else None
            addrs = None if b is None else sorted(b.broker_addrs.items())
            rows.append((
                True, digest, conf, filters, len(rows), name, None if b is None else b.cluster,
                q is not None, None if q is None else q.perm, None if q is None else q.read_queue_nums,
                None if q is None else q.write_queue_nums, None if q is None else q.topic_sys_flag,
                b is not None, addrs, None if b is None else b.broker_addrs.get(0),
                None if b is None else b.enable_acting_master, None if b is None else b.zone_name,
                mappings.get(name) if i == 0 else None,
            ))
    if not rows:
        rows.append((True, digest, conf, filters, 0, None, None, False, None, None, None, None, False, None, None,
                     None, None, None))
    return rows


def mapping_json(info: TopicQueueMappingInfo) -> str:
    """One broker's static-topic mapping as the routes table holds it: text, because its
    id map has a row per logical queue and its epoch is a long no other column needs."""
    return orjson.dumps(info.to_obj()).decode()


def mapping_from_json(text: str) -> TopicQueueMappingInfo:
    """Inverse of ``mapping_json``."""
    return TopicQueueMappingInfo.from_obj(orjson.loads(text))


def capture_row(header: Mapping[str, Any], view: Mapping[str, Any], sv: ServerView, path: str,
                counts: tuple[int, int], content_hash: str | None, listed: set[str] | None) -> dict[str, Any]:
    """The captures row of one readable file (a dict in CAPTURES's field order): ``sv``
    its small view (``small_view``), ``counts`` its routes asked and present, ``listed``
    the set of its topic list; the chain pass keeps them from file to file."""
    ci = view.get("cluster_info")
    brokers = None
    members = None
    if sv.cluster_info is not None:
        brokers = [{"broker": name, "broker_name": b.broker_name, "cluster": b.cluster,
                    "broker_addrs": sorted(b.broker_addrs.items()), "enable_acting_master": b.enable_acting_master,
                    "zone_name": b.zone_name}
                   for name, b in sorted(sv.cluster_info.broker_addr_table.items())]
        members = [(c, list(ms)) for c, ms in sorted(sv.cluster_info.cluster_addr_table.items())]
    return {
        "round": int(header["round"]), "capture_ms": int(header["captured_ms"]), "server": str(header["server"]),
        "path": path, "ok": bool(header["ok"]), "error": header.get("error"), "unreadable": False,
        "latency_ms": view.get("latency_ms"), "failures": [str(x) for x in view.get("failures") or ()],
        "content_hash": content_hash, "has_cluster_info": ci is not None, "cluster_brokers": brokers,
        "cluster_members": members, "has_topic_list": listed is not None,
        "topics_listed": None if listed is None else len(listed), "routes_asked": counts[0],
        "routes_present": counts[1],
        "kv": [(ns, sorted(table.items())) for ns, table in sorted(sv.kv.items())],
        "config": None if sv.config is None else sorted(sv.config.items()),
    }


def unreadable_row(path: str, time_ms: int | None, problem: str) -> dict[str, Any]:
    """A captures row for a file that could not be read: round and server from its path;
    ``time_ms``: its round's capture time if a readable file of the round gives it, else
    its modification time (per_round.round_batch chooses)."""
    parts = path.rstrip("/").split("/")
    name = server_of_name(parts[-1])
    round_no = int(parts[-2]) if len(parts) > 1 and parts[-2].isdigit() else -1
    return {f.name: None for f in CAPTURES} | {
        "round": round_no, "capture_ms": time_ms, "server": name.replace("_", ":"), "path": path, "ok": False,
        "error": problem, "unreadable": True, "failures": [], "has_cluster_info": False, "has_topic_list": False,
        "routes_asked": 0, "routes_present": 0,
    }


# ------------------------------------------------------------- readability ----


def small_view(header: Mapping[str, Any], view: Mapping[str, Any]) -> ServerView:
    """The capture's view without its routes and topic list, as the captures row needs
    it (the topic list is kept as a set by the chain pass)."""
    return ServerView.from_obj({k: v for k, v in view.items() if k != "topic_list"} | {"addr": header["server"]})


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _is_str_map(obj: Any) -> bool:
    return isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in obj.items())


def shape_problem(header: Mapping[str, Any], view: Mapping[str, Any]) -> str | None:
    """What is of the wrong type among the fields that go to Arrow or to the routes pass
    as they are (SCHEMA.md's types; nil is always allowed). ServerView.from_obj turns
    most values into strings without complaint, so a topic list that is one string
    would otherwise pass as a list of its characters."""
    error, latency = header.get("error"), view.get("latency_ms")
    if error is not None and not isinstance(error, str):
        return "capture field 'error' is not a string"
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))):
        return "view field 'latency_ms' is not a number"
    for key in ("cluster_info", "config", "kv"):
        if view.get(key) is not None and not isinstance(view[key], dict):
            return f"view field {key!r} is not a map"
    topic_list = view.get("topic_list")
    if topic_list is not None and not (isinstance(topic_list, list) and set(map(type, topic_list)) <= {str}):
        return "view field 'topic_list' is not a list of strings"
    for ns, table in (view.get("kv") or {}).items():
        if not _is_str_map(table):
            return f"view field 'kv': namespace {ns!r} is not a map of strings"
    if view.get("failures") is not None and not isinstance(view["failures"], list):
        return "view field 'failures' is not a list"
    return None


def view_problem(view: Mapping[str, Any]) -> str:
    """Which small view field ServerView.from_obj cannot decode (the slow path, for a
    file already known to be bad)."""
    for key, value in view.items():
        try:
            ServerView.from_obj({"addr": "", key: value})
        except Exception as exc:
            return f"view field {key!r}: {_describe(exc)}"
    return "view cannot be decoded"
