"""The chain pass: capture files in, *captures* rows, per-topic fact intervals and the
distinct routes out (``mapInArrow``; the Python half of the job's ingest).

A *chain* is what one reader must read in order: a v2 server's files from a keyframe to
the next (keyed and sorted by the job), or a single v1 file. A task reads its chains in
round order and keeps, per topic, the server's *facts* (route asked, the route by content
key, listed in the topic list, ORDER_TOPIC_CONFIG value). A v2 delta names the topics it
touched, so a round in which nothing changed costs a few dictionary lookups, not a pass
over every topic: the work grows with the changes, not with rounds x topics. Out come

* one *captures* row per file; its content hash and counts are recomputed only when the
  file changed what they cover;
* one FACT row per (server, topic, run of rounds with the same facts), closed where the
  facts change, where the server stops answering (not ok, unreadable, out of the
  ``--from``/``--to`` range) and at the chain's end (the job joins runs across chains);
* each distinct route once per task, as its flattened template rows (flatten.py), keyed
  by the blake2b of its raw msgpack (the v2 route hash; ``NO_ROUTE`` for none).

A file is unreadable when a small view field has the wrong type or a route its topics
name cannot be decoded; the reason names the field or the topic (flatten.check_parsed's
words), and that file's round goes on without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

import orjson
import pyarrow as pa

from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG

from ..diff import CanonicalView, ServerView, canonical_cluster, hash_canonical
from .delta import DeltaDecoder, read_header, route_digest
from .flatten import (CAPTURES, TEMPLATE, Templates, capture_row, parse, shape_problem, small_view, unreadable_row,
                      view_problem)
from .schema import SUFFIX_V2, CaptureFormatError, check_location, in_round_directory

#: Key of "no route" (TOPIC_NOT_EXIST, or a topic only listed or only in the KV).
NO_ROUTE = b""
FACT = pa.schema([
    ("server", pa.string()), ("topic", pa.string()), ("from_round", pa.int32()), ("to_round", pa.int32()),
    ("asked", pa.bool_()), ("route_key", pa.binary()), ("listed", pa.bool_()), ("order_conf_kv", pa.string()),
])
ROUTE = pa.schema([("route_key", pa.binary()), *TEMPLATE])
CHAIN_OUT = pa.schema([("capture", pa.struct(list(CAPTURES))), ("fact", pa.struct(list(FACT))),
                       ("route", pa.struct(list(ROUTE)))])
MTIME = pa.timestamp("us", tz="UTC")
#: v2 files keyed by chain (``server`` NUL ``keyframe``) and round from their header;
#: ``problem``: why the header cannot be read (the file is then a chain of its own).
KEYED = pa.schema([("path", pa.string()), ("modificationTime", MTIME), ("content", pa.binary()),
                   ("chain", pa.string()), ("round", pa.int64()), ("problem", pa.string())])

Fact = tuple[bool, bytes, bool | None, str | None]
_MOD = 1 << 128


def _mark(topic: str, key: bytes | None = b"") -> int:
    """128 bits from a topic and its raw route key (None: no route): two of Python's
    hashes, as the fingerprints it sums are only compared within one worker process."""
    return (hash((topic, key)) << 64) ^ (hash((key, topic)) & 0xFFFF_FFFF_FFFF_FFFF)
#: View fields that change every round, checked with the header at every file.
_PER_ROUND = frozenset({"latency_ms"})
#: View fields the content hash covers (besides the routes).
_HASHED = frozenset({"cluster_info", "topic_list", "kv", "config"})


def map_keys(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: each v2 file with its chain key and round, from its header only. A
    file whose header is unreadable, or that sits in another round's directory (a copy
    there would break its chain), is a chain of its own with its problem."""
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content")
        chains: list[str] = []
        rounds: list[int] = []
        problems: list[str | None] = []
        for i, path in enumerate(paths):
            try:
                header = read_header(contents[i].as_py())
                if in_round_directory(path):
                    check_location(path, header["round"])
            except CaptureFormatError as exc:
                chains.append(path)
                rounds.append(-1)
                problems.append(str(exc))
                continue
            chains.append(f"{header['server']}\0{header['keyframe']}")
            rounds.append(header["round"])
            problems.append(None)
        yield pa.RecordBatch.from_arrays(
            [batch.column("path"), batch.column("modificationTime").cast(MTIME), contents,
             pa.array(chains, pa.string()), pa.array(rounds, pa.int64()), pa.array(problems, pa.string())],
            schema=KEYED)


@dataclass
class _File:
    """One file as the chain state sees it after reading it."""

    path: str
    mtime: int | None
    header: Mapping[str, Any]
    view: Mapping[str, Any]
    topics: Mapping[str, bytes | None]  # topic -> raw route key, None: TOPIC_NOT_EXIST
    routes: Mapping[bytes, bytes]  # raw route key -> raw route
    touched: Iterable[str] | None  # topics whose facts may have changed; None: any
    view_keys: set[str] | None  # view fields it changed; None: any
    topics_changed: bool


@dataclass
class _State:
    """One server's chain being read: its facts and what was last emitted."""

    server: str
    facts: dict[str, Fact] = field(default_factory=dict)
    canon: dict[str, bytes | None] = field(default_factory=dict)  # asked topic -> canonical route key
    bad: dict[str, str] = field(default_factory=dict)  # topic -> why its route cannot be read
    listed_of: object = None  # the topic list ``listed`` was made from
    listed: set[str] | None = None
    listed_print: int | None = None  # fingerprint of ``listed``
    marks: dict[str, int] = field(default_factory=dict)  # asked topic -> _mark(topic, raw route key)
    routes_print: int = 0  # sum of ``marks``: fingerprint of what the content hash covers of the routes
    view_problem: str | None = None
    small: ServerView | None = None
    content_hash: str | None = None
    counts: tuple[int, int] = (0, 0)  # routes asked, present
    open: dict[str, tuple[int, Fact]] = field(default_factory=dict)  # topic -> (from round, fact)
    last_round: int | None = None  # round of the last file whose facts hold (None: closed)


class ChainReader:
    """Reads chains file by file (``read``) into CHAIN_OUT batches."""

    def __init__(self, from_ms: int | None, to_ms: int | None, templates: Templates | None = None) -> None:
        self.from_ms, self.to_ms = from_ms, to_ms
        self.templates = templates or Templates()
        self.decoder = DeltaDecoder()
        self.state: _State | None = None
        self.chain: str | None = None
        self.captures: list[dict[str, Any]] = []
        self.facts: dict[str, list[Any]] = {f.name: [] for f in FACT}
        self.routes: list[dict[str, Any]] = []
        self.emitted: set[bytes] = set()
        self.digests: dict[bytes, bytes] = {}
        self.hashes: dict[tuple[Any, ...], str] = {}  # content fingerprint -> content hash
        self.canon_of: dict[bytes, bytes | None] = {}  # raw route key -> canonical route key
        self._emit_route(NO_ROUTE, b"\xc0")

    # -------------------------------------------------------------- reading ----

    def read(self, chain: str, path: str, mtime: int | None, data: bytes, problem: str | None = None) -> None:
        """Read one file of ``chain`` (files of a chain in round order)."""
        if chain != self.chain:
            self.end_chain()
            self.chain = chain
        if not in_round_directory(path):
            return
        if problem is None:
            try:
                file = self._v2(path, mtime, data) if path.endswith(SUFFIX_V2) else self._v1(path, mtime, data)
            except CaptureFormatError as exc:
                problem = str(exc)
        if problem is not None:
            self._close()
            self.captures.append(unreadable_row(path, mtime, problem))
            return
        self._take(file)

    def end_chain(self) -> None:
        """Close every interval of the chain read so far."""
        self._close()
        self.state = None
        self.chain = None

    def _v1(self, path: str, mtime: int | None, data: bytes) -> _File:
        parsed = parse(data)
        check_location(path, int(parsed.header["round"]))
        topics: dict[str, bytes | None] = {}
        routes: dict[bytes, bytes] = {}
        for topic, raw in parsed.topics:
            if raw == b"\xc0":
                topics[topic] = None
                continue
            key = self.digests.get(raw)
            if key is None:
                if len(self.digests) > Templates.LIMIT:
                    self.digests.clear()
                key = self.digests[raw] = route_digest(raw)
            topics[topic] = key
            routes[key] = raw
        return _File(path, mtime, parsed.header, parsed.view, topics, routes, None, None, True)

    def _v2(self, path: str, mtime: int | None, data: bytes) -> _File:
        decoded = self.decoder.apply(data)
        chain = decoded.chain
        return _File(path, mtime, decoded.header, chain.view, chain.topics, chain.routes, decoded.touched,
                     decoded.view_keys, decoded.topics_changed)

    # ---------------------------------------------------------------- state ----

    def _take(self, file: _File) -> None:
        header = file.header
        server = str(header["server"])
        state = self.state
        if state is None or state.server != server:
            self._close()
            state = self.state = _State(server)
            file.touched, file.view_keys, file.topics_changed = None, None, True
        keys = file.view_keys
        if keys is None or keys - _PER_ROUND:
            # The topic list's items are checked only when it changed (it is long).
            checked = file.view if keys is None or "topic_list" in keys else {
                k: v for k, v in file.view.items() if k != "topic_list"}
            state.view_problem = shape_problem({}, checked)
            if state.view_problem is None:
                try:
                    state.small = small_view(header, file.view)
                except Exception:
                    state.small, state.view_problem = None, view_problem(file.view)
        problem = shape_problem(header, {"latency_ms": file.view.get("latency_ms")}) or state.view_problem
        if problem is not None:
            problem = f"unreadable capture: {problem}"
        else:
            self._update_facts(state, file)
            problem = next(iter(state.bad.values()), None)
        if problem is not None:
            self._close()
            self.captures.append(unreadable_row(file.path, file.mtime, problem))
            self.state = None  # the next file of the chain is read whole again
            return
        round_no, captured = int(header["round"]), int(header["captured_ms"])
        if not ((self.from_ms is None or captured >= self.from_ms) and (self.to_ms is None or captured < self.to_ms)):
            self._close()
            return
        ok = bool(header["ok"])
        if file.topics_changed or keys is None or state.content_hash is None:
            state.counts = (len(file.topics), sum(1 for k in file.topics.values() if k is not None))
        if ok and (file.topics_changed or keys is None or state.content_hash is None or keys & _HASHED):
            state.content_hash = self._content_hash(state)
        assert state.small is not None
        self.captures.append(capture_row(header, file.view, state.small, file.path, state.counts,
                                         state.content_hash if ok else None, state.listed))
        if not ok:
            self._close()
            return
        self._advance(state, file, round_no)

    def _update_facts(self, state: _State, file: _File) -> None:
        """Bring ``state.facts`` (and ``canon``, ``bad``) to ``file`` for the topics it touched."""
        view = file.view
        topic_list = view.get("topic_list")
        if topic_list is not state.listed_of:
            state.listed_of = topic_list
            state.listed = None if not isinstance(topic_list, list) else set(topic_list)
            state.listed_print = None if state.listed is None else sum(map(_mark, state.listed)) % _MOD
        order_ns = (view.get("kv") or {}).get(ORDER_TOPIC_CONFIG)
        order_ns = order_ns if isinstance(order_ns, dict) else {}
        touched: Iterable[str]
        if file.touched is None:
            state.facts, state.canon, state.bad, state.marks, state.routes_print = {}, {}, {}, {}, 0
            touched = dict.fromkeys([*file.topics, *(topic_list if isinstance(topic_list, list) else ()), *order_ns])
        else:
            touched = file.touched
        listed = state.listed
        for topic in touched:
            asked = topic in file.topics
            key = file.topics.get(topic)
            in_list = None if listed is None else topic in listed
            value = order_ns.get(topic)
            state.bad.pop(topic, None)
            state.canon.pop(topic, None)
            state.routes_print -= state.marks.pop(topic, 0)
            if not asked and not in_list and value is None:
                state.facts.pop(topic, None)
                continue
            if asked:
                state.canon[topic] = None
                mark = state.marks[topic] = _mark(topic, key)
                state.routes_print += mark
                if key is not None:
                    try:
                        if key in self.canon_of:
                            canon = self.canon_of[key]
                        else:
                            if len(self.canon_of) > Templates.LIMIT:
                                self.canon_of.clear()
                            canon = self.canon_of[key] = self.templates.get(file.routes[key]).key
                        state.canon[topic] = canon
                    except CaptureFormatError as exc:
                        state.bad[topic] = f"unreadable capture: route of topic {topic!r} {exc}"
                    except Exception as exc:
                        state.bad[topic] = f"unreadable capture: route of topic {topic!r}: {type(exc).__name__}: {exc}"
            state.facts[topic] = (asked, NO_ROUTE if key is None else key, in_list, value)

    def _content_hash(self, state: _State) -> str:
        """The ``diff-namesrv`` summary hash of the server's view as of its last file.

        Hashing 40,000 routes costs ~0.5 s, and the same content recurs (servers that
        agree, a keyframe that repeats the end of the chain before it), so the hash is
        remembered under a fingerprint of what it covers (128-bit sums over the topics,
        kept up to date topic by topic)."""
        sv = state.small
        assert sv is not None
        cluster = canonical_cluster(sv.cluster_info)
        fingerprint = (state.routes_print % _MOD, len(state.canon), state.listed_print, orjson.dumps(cluster))
        found = self.hashes.get(fingerprint)
        if found is None:
            if len(self.hashes) > 10_000:
                self.hashes.clear()
            canon = CanonicalView(state.server, cluster, None if state.listed is None else frozenset(state.listed),
                                  dict(state.canon), sv.kv, sv.config)
            found = self.hashes[fingerprint] = hash_canonical(canon)
        return found

    def _advance(self, state: _State, file: _File, round_no: int) -> None:
        """Close the intervals whose facts changed at ``round_no`` and open the new ones."""
        if state.last_round is None:
            state.open = {topic: (round_no, fact) for topic, fact in state.facts.items()}
            for fact in state.facts.values():
                self._need_route(fact[1], file.routes)
        else:
            topics = (dict.fromkeys([*state.open, *state.facts]) if file.touched is None
                      else file.touched)
            for topic in topics:
                new = state.facts.get(topic)
                current = state.open.get(topic)
                if current is not None and current[1] == new:
                    continue
                if current is not None:
                    self._emit_fact(state.server, topic, current[0], state.last_round, current[1])
                    del state.open[topic]
                if new is not None:
                    state.open[topic] = (round_no, new)
                    self._need_route(new[1], file.routes)
        state.last_round = round_no

    def _close(self) -> None:
        """Close every open interval of the current server at its last round."""
        state = self.state
        if state is None or state.last_round is None:
            return
        if state.open:
            # In bulk: a chain's end closes every topic's interval (40,000 on a fleet).
            cols = self.facts
            n = len(state.open)
            starts, facts = zip(*state.open.values())
            cols["server"].extend([state.server] * n)
            cols["topic"].extend(state.open)
            cols["from_round"].extend(starts)
            cols["to_round"].extend([state.last_round] * n)
            for name, values in zip(FACT.names[4:], zip(*facts)):
                cols[name].extend(values)
        state.open = {}
        state.last_round = None

    # -------------------------------------------------------------- output ----

    def _need_route(self, key: bytes, routes: Mapping[bytes, bytes]) -> None:
        if key not in self.emitted:
            self._emit_route(key, routes[key])

    def _emit_route(self, key: bytes, raw: bytes) -> None:
        self.emitted.add(key)
        entry = self.templates.get(raw)
        names = TEMPLATE.names
        for row in self.templates.rows[entry.first:entry.first + entry.count]:
            self.routes.append({"route_key": key, **dict(zip(names, row))})

    def _emit_fact(self, server: str, topic: str, start: int, end: int, fact: Fact) -> None:
        cols = self.facts
        for name, value in zip(FACT.names, (server, topic, start, end, *fact)):
            cols[name].append(value)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """What was read since the last call, as CHAIN_OUT batches."""
        if self.captures:
            yield _one_of("capture", pa.array(self.captures, CHAIN_OUT.field("capture").type))
            self.captures = []
        if self.facts["server"]:
            arrays = [pa.array(self.facts[f.name], f.type) for f in FACT]
            yield _one_of("fact", pa.StructArray.from_arrays(arrays, fields=list(FACT)))
            self.facts = {f.name: [] for f in FACT}
        if self.routes:
            yield _one_of("route", pa.array(self.routes, CHAIN_OUT.field("route").type))
            self.routes = []
        self.templates.trim()


def _one_of(name: str, values: pa.Array) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_arrays([values if f.name == name else pa.nulls(n, f.type) for f in CHAIN_OUT],
                                      schema=CHAIN_OUT)


def map_chains(from_ms: int | None, to_ms: int | None) -> Any:
    """The ``mapInArrow`` function of the chain pass: binaryFile rows (v1: each file a
    chain) or KEYED rows sorted by chain and round (v2) in, CHAIN_OUT out."""
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        reader = ChainReader(from_ms, to_ms)
        for batch in batches:
            paths = batch.column("path").to_pylist()
            names = batch.schema.names
            mtimes = batch.column("modificationTime").cast(pa.int64()).to_pylist()
            contents = batch.column("content")
            chains = batch.column("chain").to_pylist() if "chain" in names else paths
            problems = batch.column("problem").to_pylist() if "problem" in names else [None] * len(paths)
            for i, path in enumerate(paths):
                micros = mtimes[i]
                mtime = None if micros is None else int(micros) // 1000  # Spark sends microseconds
                reader.read(chains[i], path, mtime, contents[i].as_py(), problems[i])
            yield from reader.batches()
        reader.end_chain()
        yield from reader.batches()
    return run
