"""Capture files to Arrow rows: the Python half of the Spark job's ingest (``mapInArrow``).

Two outputs per file: one *captures* row (who answered, cluster info, KV, content hash)
and the *routes* rows (one per server, topic and broker). The routes are the bulk, so
this avoids building a ServerView: the topics map is walked with msgpack's streaming
Unpacker, each route is kept as its raw msgpack bytes, and each distinct route is
decoded, canonicalized and flattened once per worker. Identical routes (every topic on
the same brokers with the same queue counts) are byte-identical in a file, because the
writer serializes ``TopicRouteData.to_obj()``, so a 10,000-topic file typically holds a
few hundred distinct routes. Output rows are then assembled by Arrow ``take`` from those
per-route templates, never value by value in Python.

The route hash is blake2b-128 of ``canonical.route_key``: two servers' routes of a topic
have the same hash exactly when the diff module would call them equal.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

import msgpack
import numpy as np
import pyarrow as pa

from nameserver.protocol.bodies import BrokerData, QueueData, TopicRouteData
from nameserver.protocol.codes import ORDER_TOPIC_CONFIG

from ..diff import CanonicalView, ServerView, canonical_cluster, hash_canonical, route_key
from .schema import CaptureFormatError, check_header, check_location

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
])
_TEMPLATE_FIELDS = [f for f in ROUTES if f.name not in ("round", "capture_ms", "server", "topic", "asked", "listed",
                                                        "order_conf_kv")]
TEMPLATE = pa.schema(_TEMPLATE_FIELDS)

CLUSTER_BROKER = pa.struct([("broker", pa.string()), ("broker_name", pa.string()), ("cluster", pa.string()),
                            ("broker_addrs", ADDRS)])
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
    up = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1024))
    up.feed(data)
    header: dict[str, Any] = {}
    view: dict[str, Any] = {}
    topics: list[tuple[str, bytes]] = []
    has_view = False
    for _ in range(up.read_map_header()):
        key = up.unpack()
        if key != "view":
            header[key] = up.unpack()
            continue
        has_view = True
        for _ in range(up.read_map_header()):
            vkey = up.unpack()
            if vkey != "topics":
                view[vkey] = up.unpack()
                continue
            for _ in range(up.read_map_header()):
                topic = up.unpack()
                start = up.tell()
                up.skip()
                topics.append((str(topic), data[start:up.tell()]))
    check_header(header)
    if not has_view:
        raise CaptureFormatError("capture field 'view' is missing")
    return Parsed(header, view, topics)


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
        self._table: pa.Table | None = None
        self._reset()

    def _reset(self) -> None:
        self.rows.clear()
        self.routes.clear()
        self._table = None
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
        obj = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        route = None if obj is None else ServerView.from_obj({"addr": "", "topics": {"": obj}}).topics[""]
        key = route_key(route)
        rows = route_rows(route, key)
        entry = RouteTemplate(key, len(self.rows), len(rows))
        self.rows.extend(rows)
        self.routes[raw] = entry
        self._table = None
        return entry

    def table(self) -> pa.Table:
        if self._table is None:
            columns = list(zip(*self.rows))
            self._table = pa.table([pa.array(col, type=f.type) for col, f in zip(columns, TEMPLATE)], schema=TEMPLATE)
        return self._table


def route_hash(key: bytes | None) -> bytes | None:
    return None if key is None else hashlib.blake2b(key, digest_size=16).digest()


def route_rows(route: TopicRouteData | None, key: bytes | None) -> list[tuple[Any, ...]]:
    """The template rows of one route, in TEMPLATE's column order (has_route, route_hash,
    order_topic_conf, filter_servers, broker_seq, broker, cluster, has_queue_data, perm,
    read_queue_nums, write_queue_nums, topic_sys_flag, has_broker_data, broker_addrs,
    master_addr): one per broker name
    (QueueData and BrokerData of that name side by side), or one row without a broker
    for no route (or a route naming no broker). A name repeated in a list gives one row
    per repetition, so the rows hold exactly what the route held."""
    if route is None:
        return [(False, None, None, {}, 0, None, None, False, None, None, None, None, False, None, None)]
    digest = route_hash(key)
    conf = route.order_topic_conf
    filters = {k: list(v) for k, v in route.filter_server_table.items()}
    queues: dict[str, list[QueueData]] = {}
    brokers: dict[str, list[BrokerData]] = {}
    for qd in route.queue_datas:
        queues.setdefault(qd.broker_name, []).append(qd)
    for bd in route.broker_datas:
        brokers.setdefault(bd.broker_name, []).append(bd)
    rows: list[tuple[Any, ...]] = []
    for name in sorted(queues.keys() | brokers.keys()):
        qs, bs = queues.get(name, []), brokers.get(name, [])
        for i in range(max(len(qs), len(bs))):
            q: QueueData | None = qs[i] if i < len(qs) else None
            b: BrokerData | None = bs[i] if i < len(bs) else None
            addrs = None if b is None else sorted(b.broker_addrs.items())
            rows.append((
                True, digest, conf, filters, len(rows), name, None if b is None else b.cluster,
                q is not None, None if q is None else q.perm, None if q is None else q.read_queue_nums,
                None if q is None else q.write_queue_nums, None if q is None else q.topic_sys_flag,
                b is not None, addrs, None if b is None else b.broker_addrs.get(0),
            ))
    if not rows:
        rows.append((True, digest, conf, filters, 0, None, None, False, None, None, None, None, False, None, None))
    return rows


# ------------------------------------------------------------------ batches ----

_templates: Templates | None = None


def shared_templates() -> Templates:
    global _templates
    if _templates is None:
        _templates = Templates()
    return _templates


def in_range(captured_ms: int, from_ms: int | None, to_ms: int | None) -> bool:
    return (from_ms is None or captured_ms >= from_ms) and (to_ms is None or captured_ms < to_ms)


def routes_batch(parsed: Parsed, templates: Templates | None = None) -> pa.RecordBatch | None:
    """The routes rows of one capture; None when the server did not answer."""
    header, view = parsed.header, parsed.view
    if not header["ok"]:
        return None
    templates = templates or shared_templates()
    templates.trim()
    topic_list = view.get("topic_list")
    listed_set = None if topic_list is None else set(topic_list)
    order_ns = (view.get("kv") or {}).get(ORDER_TOPIC_CONFIG)
    names = [topic for topic, _ in parsed.topics]
    entries = [templates.get(raw) for _, raw in parsed.topics]
    asked_n = len(names)
    names.extend(extra_topics(names, topic_list, listed_set, order_ns))
    if not names:
        return None
    # Row i of the batch is template row first[t] + (i - offset[t]) of its topic t;
    # topics only listed or only in the KV take template row 0 (no route).
    first = np.zeros(len(names), np.int64)
    count = np.ones(len(names), np.int64)
    first[:asked_n] = [e.first for e in entries]
    count[:asked_n] = [e.count for e in entries]
    offset = np.cumsum(count) - count
    row_topic = np.repeat(np.arange(len(names), dtype=np.int32), count)
    row_template = np.arange(int(count.sum()), dtype=np.int64) + np.repeat(first - offset, count)
    asked = np.zeros(len(names), np.bool_)
    asked[:asked_n] = True
    listed = [None] * len(names) if listed_set is None else [t in listed_set for t in names]
    kv_values = [None] * len(names) if not order_ns else [order_ns.get(t) for t in names]
    per_topic = pa.table({
        "topic": pa.array(names, pa.string()), "asked": pa.array(asked, pa.bool_()),
        "listed": pa.array(listed, pa.bool_()), "order_conf_kv": pa.array(kv_values, pa.string()),
    }).take(pa.array(row_topic))
    per_route = templates.table().take(pa.array(row_template))
    n = len(row_template)
    columns = {
        "round": pa.repeat(pa.scalar(int(header["round"]), pa.int32()), n),
        "capture_ms": pa.repeat(pa.scalar(int(header["captured_ms"]), pa.int64()), n),
        "server": pa.repeat(pa.scalar(str(header["server"]), pa.string()), n),
    }
    arrays = []
    for f in ROUTES:
        if f.name in columns:
            arrays.append(columns[f.name])
        elif f.name in per_topic.column_names:
            arrays.append(per_topic.column(f.name).combine_chunks())
        else:
            arrays.append(per_route.column(f.name).combine_chunks())
    return pa.RecordBatch.from_arrays(arrays, schema=ROUTES)


def extra_topics(asked: Iterable[str], topic_list: Iterable[str] | None, listed_set: set[str] | None,
                 order_ns: Mapping[str, str] | None) -> list[str]:
    """Topics with routes rows although their route was not asked: in the topic list, or
    in ORDER_TOPIC_CONFIG (and not listed), each once, in that order."""
    seen = set(asked)
    extra = [t for t in (topic_list or ()) if t not in seen]
    extra.extend(k for k in (order_ns or {}) if k not in seen and (listed_set is None or k not in listed_set))
    return [str(t) for t in dict.fromkeys(extra)]


def capture_row(parsed: Parsed, path: str, templates: Templates | None = None,
                entries: Mapping[str, RouteTemplate] | None = None, known_hash: str | None = None) -> dict[str, Any]:
    """The captures row of one file (a dict in CAPTURES's field order). ``entries``: the
    templates of its routes by topic, and ``known_hash`` its content hash, when the
    caller has them already."""
    header, view = parsed.header, parsed.view
    if entries is None:
        templates = templates or shared_templates()
        templates.trim()
        entries = {topic: templates.get(raw) for topic, raw in parsed.topics}
    ci, tl = view.get("cluster_info"), view.get("topic_list")
    sv = ServerView.from_obj({k: v for k, v in view.items() if k != "topics"} | {"addr": header["server"]})
    routes = {topic: entry.key for topic, entry in entries.items()}
    content_hash = None
    if header["ok"] and known_hash is not None:
        content_hash = known_hash
    elif header["ok"]:
        canon = CanonicalView(header["server"], canonical_cluster(sv.cluster_info),
                              None if sv.topic_list is None else frozenset(sv.topic_list), routes, sv.kv, sv.config)
        content_hash = hash_canonical(canon)
    brokers = None
    members = None
    if sv.cluster_info is not None:
        brokers = [{"broker": name, "broker_name": b.broker_name, "cluster": b.cluster,
                    "broker_addrs": sorted(b.broker_addrs.items())}
                   for name, b in sorted(sv.cluster_info.broker_addr_table.items())]
        members = [(c, list(ms)) for c, ms in sorted(sv.cluster_info.cluster_addr_table.items())]
    return {
        "round": int(header["round"]), "capture_ms": int(header["captured_ms"]), "server": str(header["server"]),
        "path": path, "ok": bool(header["ok"]), "error": header.get("error"), "unreadable": False,
        "latency_ms": view.get("latency_ms"), "failures": [str(x) for x in view.get("failures") or ()],
        "content_hash": content_hash, "has_cluster_info": ci is not None, "cluster_brokers": brokers,
        "cluster_members": members, "has_topic_list": tl is not None,
        "topics_listed": None if tl is None else len(set(tl)), "routes_asked": len(routes),
        "routes_present": sum(1 for key in routes.values() if key is not None),
        "kv": [(ns, sorted(table.items())) for ns, table in sorted(sv.kv.items())],
        "config": None if sv.config is None else sorted(sv.config.items()),
    }


def unreadable_row(path: str, mtime_ms: int | None, problem: str) -> dict[str, Any]:
    """A captures row for a file that could not be read: round and server from its path,
    time from its modification time."""
    parts = path.rstrip("/").split("/")
    name = parts[-1][: -len(".msgpack")] if parts[-1].endswith(".msgpack") else parts[-1]
    round_no = int(parts[-2]) if len(parts) > 1 and parts[-2].isdigit() else -1
    return {f.name: None for f in CAPTURES} | {
        "round": round_no, "capture_ms": mtime_ms, "server": name.replace("_", ":"), "path": path, "ok": False,
        "error": problem, "unreadable": True, "failures": [], "has_cluster_info": False, "has_topic_list": False,
        "routes_asked": 0, "routes_present": 0,
    }


def parse_files(batches: Iterable[pa.RecordBatch], from_ms: int | None, to_ms: int | None,
                with_captures: bool) -> Iterator[tuple[str, int | None, Parsed | str]]:
    """(path, mtime ms, Parsed or problem) for each file of ``binaryFile`` batches
    whose capture time is in the range."""
    for batch in batches:
        paths = batch.column("path").to_pylist()
        names = batch.schema.names
        mtimes = (batch.column("modificationTime").cast(pa.int64()).to_pylist() if "modificationTime" in names
                  else [None] * len(paths))
        contents = batch.column("content")
        for i, path in enumerate(paths):
            data = contents[i].as_py()
            micros = mtimes[i]
            mtime = None if micros is None else int(micros) // 1000  # Spark sends microseconds
            try:
                parsed = parse(data)
                check_location(path, int(parsed.header["round"]))
            except CaptureFormatError as exc:
                if with_captures:
                    yield path, mtime, str(exc)
                continue
            if in_range(int(parsed.header["captured_ms"]), from_ms, to_ms):
                yield path, mtime, parsed


def map_routes(from_ms: int | None, to_ms: int | None) -> Any:
    """The ``mapInArrow`` function of the routes pass (binaryFile batches in, ROUTES out)."""
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _, _, parsed in parse_files(batches, from_ms, to_ms, with_captures=False):
            assert isinstance(parsed, Parsed)
            batch = routes_batch(parsed)
            if batch is not None and batch.num_rows:
                yield batch
    return run
