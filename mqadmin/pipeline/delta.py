"""Capture format version 2: each file holds what changed since the server's previous file.

Pure: bytes in, bytes out, no I/O, no Spark (``snapshot`` runs without the pipeline
extra; executors decode with it). SCHEMA.md describes the fields.

A v1 capture repeats every route of every topic each round, although almost nothing
changes between two rounds. A v2 file of one server holds:

* a *keyframe* (every ``keyframe_every`` rounds, and the first file of a run): the whole
  view, with each topic naming its route by a content hash and each distinct route
  stored once under its hash;
* a *delta* (the other files): the view fields whose value changed, the topics whose
  route changed or that appeared or went, the topic list's removals and additions, and
  the routes whose hash the chain has not stored yet.

A file names its chain (``keyframe``: the round of the keyframe it builds on) and its
predecessor (``prev``), so a reader rebuilds a delta only from the file before it: a lost
or damaged file makes the rest of its chain unreadable, up to the next keyframe, and a
reader can start at any keyframe. Decoding yields the v1 capture the writer was given,
so every reader of v1 reads v2 through ``DeltaDecoder``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import msgpack

from .schema import SCHEMA, SUFFIX_V2, CaptureFormatError, check_header

#: ``version`` of a delta-coded capture file.
VERSION_V2 = 2
#: One keyframe an hour at one round a minute: a lost file costs at most an hour of that
#: server, and a keyframe of 40,000 topics is ~2 MB, 24 of them a day per server.
DEFAULT_KEYFRAME_EVERY = 60
#: blake2b digest size of a route's content hash: 128 bits, no collision among the
#: routes of any fleet.
HASH_BYTES = 16
#: Fields written before the body, in this order, so ``read_header`` stops early.
HEADER = ("schema", "version", "captured_ms", "server", "round", "ok", "error", "keyframe", "prev")
NIL = b"\xc0"


@dataclass
class SplitCapture:
    """A v1 capture read without decoding its routes: header and the view's small fields
    decoded, each topic's route kept as raw msgpack (``NIL``: TOPIC_NOT_EXIST)."""

    header: dict[str, Any]
    view: dict[str, Any]  # every view field except "topics", in file order
    topics: list[tuple[str, bytes]]


def split_capture(data: bytes) -> SplitCapture:
    """Split a v1 capture (schema.check_header is applied); raises CaptureFormatError
    for anything unreadable."""
    try:
        up = _unpacker(data)
        header: dict[str, Any] = {}
        view: dict[str, Any] | None = None
        topics: list[tuple[str, bytes]] = []
        for _ in range(up.read_map_header()):
            key = up.unpack()
            if key != "view":
                header[key] = up.unpack()
                continue
            view = {}
            for _ in range(up.read_map_header()):
                vkey = up.unpack()
                if vkey != "topics":
                    view[vkey] = up.unpack()
                    continue
                topics.extend((str(topic), raw) for topic, raw in _raw_map(up, data))
    except CaptureFormatError:
        raise
    except (ValueError, TypeError, KeyError, msgpack.UnpackException) as exc:
        raise CaptureFormatError(f"unreadable capture: {type(exc).__name__}: {exc}") from None
    check_header(header)
    if view is None:
        raise CaptureFormatError("capture field 'view' is missing")
    return SplitCapture(header, view, topics)


def _unpacker(data: bytes) -> msgpack.Unpacker:
    up = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1024))
    up.feed(data)
    return up


def _raw_map(up: msgpack.Unpacker, data: bytes) -> Iterator[tuple[Any, bytes]]:
    """(key, raw value bytes) of the map at the unpacker's position."""
    for _ in range(up.read_map_header()):
        key = up.unpack()
        start = up.tell()
        up.skip()
        yield key, data[start:up.tell()]


def route_digest(raw: bytes) -> bytes:
    """Content hash of a route as the writer serialized it (TopicRouteData.to_obj()
    packed: identical routes are identical bytes)."""
    return hashlib.blake2b(raw, digest_size=HASH_BYTES).digest()


# ------------------------------------------------------------------- writer ----


@dataclass
class _Chain:
    """What a server's previous file held: all a delta is computed against."""

    keyframe: int
    round: int
    view: dict[str, Any]  # small fields, topic_list included
    topics: dict[str, bytes | None]  # topic -> route hash, None: TOPIC_NOT_EXIST
    stored: set[bytes] = field(default_factory=set)  # hashes whose route the chain holds
    source: object = None  # the topics list it was made from (an identical one needs no hashing)


class DeltaEncoder:
    """Turns each server's v1 captures, given in round order, into v2 files.

    Memory: per server, only its previous file's content (topic -> hash and the hashes
    stored since its keyframe), plus a bounded cache of route hashes.
    """

    #: Distinct raw routes whose hash is remembered (the JMH fleet has a few hundred; a
    #: fleet route is ~1.3 kB, so the cache stays under ~25 MB).
    HASH_CACHE = 20_000

    def __init__(self, keyframe_every: int = DEFAULT_KEYFRAME_EVERY) -> None:
        if keyframe_every < 1:
            raise ValueError(f"keyframe interval must be at least 1 round, got {keyframe_every}")
        self.keyframe_every = keyframe_every
        self._chains: dict[str, _Chain] = {}
        self._hashes: dict[bytes, bytes] = {}
        self._hashes_before: dict[bytes, bytes] = {}  # next_round(): the hashes the round before used
        self._pk = msgpack.Packer(use_bin_type=True)

    def forget(self, server: str | None = None) -> None:
        """Start ``server``'s (every server's) next file with a keyframe: call it when a
        file could not be written, so that no delta builds on a file that is not there."""
        if server is None:
            self._chains.clear()
        else:
            self._chains.pop(server, None)

    def next_round(self) -> None:
        """A new round begins (``snapshot`` calls it): the route hashes the last round did
        not use are forgotten after this one, so the cache holds the routes of two
        rounds, whatever the fleet did before. Without it the cache is bounded by
        HASH_CACHE only."""
        self._hashes_before, self._hashes = self._hashes, {}

    def retained(self) -> dict[str, int]:
        """What is held between files, in counts: servers, topic -> hash entries, route
        hashes stored since the keyframes, cached hashes."""
        return {"servers": len(self._chains), "topics": sum(len(c.topics) for c in self._chains.values()),
                "stored": sum(len(c.stored) for c in self._chains.values()),
                "hashes": len(self._hashes) + sum(1 for raw in self._hashes_before if raw not in self._hashes)}

    def _digest(self, raw: bytes) -> bytes:
        found = self._hashes.get(raw)
        if found is None:
            if len(self._hashes) >= self.HASH_CACHE:
                self._hashes.clear()
            found = self._hashes_before.get(raw)
            if found is None:
                found = route_digest(raw)
            self._hashes[raw] = found
        return found

    def encode(self, v1: bytes) -> bytes:
        """The v2 file of a v1 capture; raises CaptureFormatError when ``v1`` is not one."""
        # A list split from bytes is never seen again: keeping it would only hold the
        # previous round's raw routes (~50 MB a server on the JMH fleet) in memory.
        return self.encode_split(split_capture(v1), keep_source=False)

    def encode_split(self, cap: SplitCapture, keep_source: bool = True) -> bytes:
        """The v2 file of a v1 capture already split (synth.py builds it so, sharing
        one topics list between rounds that have the same routes)."""
        server, round_no = cap.header["server"], cap.header["round"]
        prev = self._chains.get(server)
        keyframe = prev is None or round_no <= prev.round or round_no >= prev.keyframe + self.keyframe_every
        if not keyframe and prev is not None and cap.topics is prev.source:
            # The very list of the previous round (synth.py shares them): nothing to hash.
            body, _ = self._delta(cap, prev, prev.topics, {}, same_topics=True)
            chain = _Chain(prev.keyframe, round_no, cap.view, prev.topics, prev.stored, prev.source)
        else:
            topics, routes = self._hashed(cap)
            if keyframe or prev is None:
                body, stored = self._keyframe(cap, topics, routes), set(routes)
                chain = _Chain(round_no, round_no, cap.view, topics, stored, cap.topics if keep_source else None)
            else:
                body, new = self._delta(cap, prev, topics, routes)
                chain = _Chain(prev.keyframe, round_no, cap.view, topics, prev.stored | new,
                               cap.topics if keep_source else None)
        head = {k: cap.header.get(k) for k in HEADER[2:7]} | {
            "schema": SCHEMA, "version": VERSION_V2, "keyframe": chain.keyframe,
            "prev": None if prev is None or chain.keyframe == round_no else prev.round}
        self._chains[server] = chain
        pk = self._pk
        parts = [pk.pack_map_header(len(HEADER) + len(body))]
        for key in HEADER:
            parts += [pk.pack(key), pk.pack(head[key])]
        for key, packed in body:
            parts += [pk.pack(key), packed]
        return b"".join(parts)

    def _hashed(self, cap: SplitCapture) -> tuple[dict[str, bytes | None], dict[bytes, bytes]]:
        """topic -> route hash (None: no route), and hash -> route."""
        routes: dict[bytes, bytes] = {}
        topics: dict[str, bytes | None] = {}
        for topic, raw in cap.topics:
            if raw == NIL:
                topics[topic] = None
            else:
                digest = topics[topic] = self._digest(raw)
                routes.setdefault(digest, raw)
        return topics, routes

    def _keyframe(self, cap: SplitCapture, topics: Mapping[str, bytes | None], routes: Mapping[bytes, bytes]
                  ) -> list[tuple[str, bytes]]:
        pk = self._pk
        return [("view", pk.pack(cap.view)), ("topics", pk.pack(dict(topics))), ("routes", self._routes(routes))]

    def _delta(self, cap: SplitCapture, prev: _Chain, now: Mapping[str, bytes | None],
               routes: Mapping[bytes, bytes], same_topics: bool = False) -> tuple[list[tuple[str, bytes]], set[bytes]]:
        """The body of a delta, and the hashes of the routes it stores."""
        pk = self._pk
        body: list[tuple[str, bytes]] = []
        old_view = prev.view
        changed = {k: v for k, v in cap.view.items() if k != "topic_list" and (k not in old_view or old_view[k] != v)}
        unset = [k for k in old_view if k not in cap.view]
        if changed:
            body.append(("view", pk.pack(changed)))
        if unset:
            body.append(("view_unset", pk.pack(unset)))
        body.extend(_topic_list_change(old_view, cap.view, pk))
        if same_topics:
            return body, set()
        base: Mapping[str, bytes | None] = prev.topics
        if not now and prev.topics:
            body.append(("topics_reset", pk.pack(True)))  # a server that stopped answering: no 40,000 deletions
            base = {}
        else:
            gone = [t for t in prev.topics if t not in now]
            if gone:
                body.append(("topics_del", pk.pack(gone)))
        changed_topics = {t: h for t, h in now.items() if t not in base or base[t] != h}
        if changed_topics:
            body.append(("topics", pk.pack(changed_topics)))
        named = set(changed_topics.values())
        new = {h: raw for h, raw in routes.items() if h in named and h not in prev.stored}
        if new:
            body.append(("routes", self._routes(new)))
        return body, set(new)

    def _routes(self, routes: Mapping[bytes, bytes]) -> bytes:
        pk = self._pk
        return pk.pack_map_header(len(routes)) + b"".join(pk.pack(h) + raw for h, raw in routes.items())


def _topic_list_change(old: Mapping[str, Any], new: Mapping[str, Any], pk: msgpack.Packer) -> list[tuple[str, bytes]]:
    """The topic list as removals and additions when they rebuild it exactly (order
    included), else whole."""
    before, after = old.get("topic_list"), new.get("topic_list")
    if before == after and ("topic_list" in old) == ("topic_list" in new):
        return []
    if "topic_list" not in new:
        return []  # view_unset says it
    if isinstance(before, list) and isinstance(after, list):
        now = set(after)
        removed = [t for t in before if t not in now]
        kept = set(before) - set(removed)
        added = [t for t in after if t not in kept]
        gone = set(removed)
        if [t for t in before if t not in gone] + added == after:
            return [("topic_list_change", pk.pack({"del": removed, "add": added}))]
    return [("topic_list", pk.pack(after))]


# ------------------------------------------------------------------- reader ----


def read_header(data: bytes) -> dict[str, Any]:
    """The header fields of a v2 file (HEADER), without reading its body; raises
    CaptureFormatError when the file is not a v2 capture."""
    try:
        up = _unpacker(data)
        header: dict[str, Any] = {}
        for _ in range(min(up.read_map_header(), len(HEADER))):
            key = up.unpack()
            if key not in HEADER:
                break
            header[key] = up.unpack()
    except (ValueError, TypeError, KeyError, msgpack.UnpackException) as exc:
        raise CaptureFormatError(f"unreadable capture: {type(exc).__name__}: {exc}") from None
    _check_v2_header(header)
    return header


def _check_v2_header(header: Mapping[str, Any]) -> None:
    if header.get("version") != VERSION_V2:
        check_header(header)  # says "not a capture" or "newer version"
        raise CaptureFormatError(f"capture version {header.get('version')!r} in a {SUFFIX_V2} file (expected "
                                 f"{VERSION_V2})")
    check_header({**header, "version": 1})
    if not isinstance(header.get("keyframe"), int) or not (header.get("prev") is None or
                                                          isinstance(header.get("prev"), int)):
        raise CaptureFormatError("capture field 'keyframe' or 'prev' is missing or not an int")


class DeltaDecoder:
    """Rebuilds v1 captures from v2 files given in round order (any mix of servers and
    chains: each file is checked against the one before it of its server)."""

    def __init__(self) -> None:
        self._chains: dict[str, _ReadChain] = {}
        self._pk = msgpack.Packer(use_bin_type=True)

    def decode(self, data: bytes) -> bytes:
        """The v1 capture of a v2 file; raises CaptureFormatError (and forgets the
        server's chain: the files after a damaged one are unreadable up to a keyframe)."""
        state = self.apply(data)
        return self._v1(state.header, state.chain)

    def apply(self, data: bytes) -> Decoded:
        """Apply a v2 file to its server's chain and say what it changed, without
        building its v1 capture: the job's chain pass reads the chain's state and looks
        only at the topics a delta touched. Raises as ``decode``."""
        server = None
        try:
            up = _unpacker(data)
            n = up.read_map_header()
            fields: dict[str, Any] = {}
            raw: dict[str, bytes] = {}
            for _ in range(n):
                key = up.unpack()
                if key in ("routes",):
                    raw_routes = dict(_raw_map(up, data))
                    fields[key] = raw_routes
                elif key in HEADER:
                    fields[key] = up.unpack()
                else:
                    start = up.tell()
                    up.skip()
                    raw[key] = data[start:up.tell()]
            header = {k: fields.get(k) for k in HEADER}
            _check_v2_header(header)
            server = header["server"]
            chain, touched, view_keys = self._apply(header, fields.get("routes", {}), raw)
        except CaptureFormatError:
            if server is not None:
                self._chains.pop(server, None)
            raise
        except (ValueError, TypeError, KeyError, AttributeError, msgpack.UnpackException) as exc:
            if server is not None:
                self._chains.pop(server, None)
            raise CaptureFormatError(f"unreadable capture: {type(exc).__name__}: {exc}") from None
        return Decoded(header, chain, touched, view_keys, touched is None or bool(touched))

    def forget(self, server: str) -> None:
        """Drop ``server``'s chain: its next delta is unreadable (a reader found the file
        just applied unreadable for a reason of its own)."""
        self._chains.pop(server, None)

    def _apply(self, header: Mapping[str, Any], routes: Mapping[bytes, bytes], raw: Mapping[str, bytes]
               ) -> tuple[_ReadChain, set[str] | None, set[str] | None]:
        """The chain after the file, the topics whose route, listing or KV entry the file
        may have changed (None: any topic, as after a keyframe or a whole new list) and the
        view fields it changed (None: all)."""
        server, round_no, keyframe, prev_round = header["server"], header["round"], header["keyframe"], header["prev"]

        def obj(key: str, default: Any = None) -> Any:
            return default if key not in raw else msgpack.unpackb(raw[key], raw=False, strict_map_key=False)

        touched: set[str] | None = set()
        if keyframe == round_no:
            chain: _ReadChain = _ReadChain(keyframe, round_no, {}, {}, {})
            touched = None
        else:
            previous = self._chains.pop(server, None)  # whatever happens below, this chain is used up
            if previous is None or previous.keyframe != keyframe or previous.round != prev_round:
                raise CaptureFormatError(
                    f"delta of round {round_no} builds on round {prev_round} of {server}, which is missing or "
                    f"unreadable; this server's captures are readable again from its next keyframe")
            chain = previous
            chain.round = round_no
        for h, route in routes.items():
            if not isinstance(h, bytes):
                raise CaptureFormatError("a route hash is not bytes")
            chain.routes[h] = route
        view = obj("view", {})
        if not isinstance(view, dict):
            raise CaptureFormatError("capture field 'view' is not a map")
        chain.view.update(view)
        unset = obj("view_unset", [])
        for key in unset:
            chain.view.pop(key, None)
        view_keys: set[str] | None = None if keyframe == round_no else {*view, *unset}
        if view_keys is not None and ("topic_list" in raw or "topic_list_change" in raw):
            view_keys.add("topic_list")
        if "kv" in view or "kv" in unset or "topic_list" in unset or "topic_list" in raw:
            touched = None  # ORDER_TOPIC_CONFIG or the whole list: any topic
        change = obj("topic_list_change")
        if change is not None:
            gone = set(change["del"])
            chain.view["topic_list"] = [t for t in chain.view["topic_list"] if t not in gone] + list(change["add"])
            if touched is not None:
                touched.update(change["del"], change["add"])
        if "topic_list" in raw:
            chain.view["topic_list"] = obj("topic_list")
        if obj("topics_reset", False):
            if touched is not None:
                touched.update(chain.topics)
            chain.topics.clear()
        for topic in obj("topics_del", []):
            chain.topics.pop(topic, None)
            if touched is not None:
                touched.add(topic)
        topics = obj("topics", {})
        if not isinstance(topics, dict):
            raise CaptureFormatError("capture field 'topics' is not a map")
        for topic, h in topics.items():
            if h is not None and h not in chain.routes:
                raise CaptureFormatError(f"topic {topic!r} names a route hash the chain does not hold")
            chain.topics[str(topic)] = h
        if touched is not None:
            touched.update(map(str, topics))
        self._chains[server] = chain
        return chain, touched, view_keys

    def _v1(self, header: Mapping[str, Any], chain: _ReadChain) -> bytes:
        pk = self._pk
        head = {k: header[k] for k in HEADER[2:7]} | {"schema": SCHEMA, "version": 1}
        parts = [pk.pack_map_header(len(head) + 1)]
        for key in ("schema", "version", *HEADER[2:7]):
            parts += [pk.pack(key), pk.pack(head[key])]
        parts += [pk.pack("view"), pk.pack_map_header(len(chain.view) + 1)]
        for key, value in chain.view.items():
            parts += [pk.pack(key), pk.pack(value)]
        parts += [pk.pack("topics"), pk.pack_map_header(len(chain.topics))]
        for topic, h in chain.topics.items():
            parts += [pk.pack(topic), NIL if h is None else chain.routes[h]]
        return b"".join(parts)


@dataclass
class _ReadChain:
    """A server's chain as read so far: its view as of the last file applied."""

    keyframe: int
    round: int
    view: dict[str, Any]
    topics: dict[str, bytes | None]
    routes: dict[bytes, bytes]  # hash -> raw route, every route stored since the keyframe


@dataclass
class Decoded:
    """A v2 file applied to its chain (DeltaDecoder.apply)."""

    header: dict[str, Any]
    chain: _ReadChain  # the chain's state after the file (shared: read it before the next apply)
    touched: set[str] | None  # topics whose facts may have changed; None: any
    view_keys: set[str] | None  # view fields (cluster_info, topic_list, kv...) it changed; None: any
    topics_changed: bool  # a route or the set of topics changed
