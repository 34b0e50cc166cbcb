"""The bytes of each ``snapshot`` round's files, at a cost that follows what changed.

A round of the JMH fleet is 5 servers x 40,000 routes, and between two rounds almost
none of them changes. Going through the v1 capture (``ServerView.to_obj()`` of every
route, msgpack of the whole view, then ``split_capture`` to take it apart again for
the v2 encoder) costs seconds per server for every route, changed or not.

``SnapshotEncoder`` builds the split capture (``delta.SplitCapture``) straight from
the views instead. The route pump decodes each distinct route body once and, through
``RouteBodies`` kept from round to round, hands back the very TopicRouteData object of
the previous round for a body that did not change; this module keeps, per such
object, its packed form (``TopicRouteData.to_obj()`` as msgpack, the bytes a v1 file
holds for it). An unchanged route therefore costs a dictionary lookup: no decode, no
``to_obj``, no packing, and the delta encoder's hash cache finds the same bytes object
again. Only new or changed bodies are decoded and packed.

The files are byte for byte those of the v1 path (``encode_capture`` of
``capture_of(view)``, then ``DeltaEncoder.encode`` for v2): the split capture given to
the same ``DeltaEncoder.encode_split`` is exactly what ``split_capture`` would have
made of the v1 bytes (tests/snapshot/test_same_files.py runs both).

Memory: two rounds of distinct routes (the bodies, their objects, their packed forms),
and per server the delta encoder's previous round; nothing grows with the number of
rounds (``retained()`` counts it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import msgpack

from mqnamesrv.protocol.bodies import TopicRouteData

from ..diff import ServerView
from ..transport.route_pump import RouteBodies
from .delta import DEFAULT_KEYFRAME_EVERY, NIL, DeltaEncoder, SplitCapture
from .schema import SCHEMA, VERSION


@dataclass(frozen=True)
class Retained:
    """What a SnapshotEncoder holds between rounds, in counts (tests assert on them)."""

    servers: int  # servers with a previous round (v2)
    topics: int  # topic -> route hash entries over all servers (v2)
    stored: int  # route hashes the servers' chains hold since their keyframes (v2)
    hashes: int  # raw route -> hash cache of the delta encoder
    bodies: int  # distinct route bodies and their decoded routes (two rounds)
    packed: int  # decoded routes and their packed form (two rounds)


class SnapshotEncoder:
    """File bytes for each server's view, round after round, in format ``version``.

    Call ``next_round()`` before each round's collection, give that collection
    ``bodies`` (``collect_views(route_bodies=...)``), then ``encode`` each view.
    """

    def __init__(self, version: int = 2, keyframe_every: int = DEFAULT_KEYFRAME_EVERY) -> None:
        if version not in (1, 2):
            raise ValueError(f"capture format version must be 1 or 2, got {version}")
        self.version = version
        self.bodies = RouteBodies()
        self._delta = DeltaEncoder(keyframe_every) if version == 2 else None
        self._pk = msgpack.Packer(use_bin_type=True)
        # id(route) -> (route, packed): the route is held, so its id is not reused meanwhile
        self._packed: dict[int, tuple[TopicRouteData, bytes]] = {}
        self._packed_before: dict[int, tuple[TopicRouteData, bytes]] = {}

    def next_round(self) -> None:
        """A new round begins: what the last round did not use is dropped after it."""
        self.bodies.next_round()
        self._packed_before, self._packed = self._packed, {}
        if self._delta is not None:
            self._delta.next_round()

    def forget(self) -> None:
        """Start every server's next file with a keyframe (a file could not be written)."""
        if self._delta is not None:
            self._delta.forget()

    def encode(self, view: ServerView, *, captured_ms: int, round: int) -> bytes:
        """The file of ``view`` in this round."""
        split, keys = self.split(view, captured_ms=captured_ms, round=round)
        if self._delta is not None:
            return self._delta.encode_split(split, keep_source=False)
        return self._v1(split, keys)

    def split(self, view: ServerView, *, captured_ms: int, round: int) -> tuple[SplitCapture, list[str]]:
        """What ``split_capture(encode_capture(capture_of(view, ...)))`` returns, and the
        view's keys in file order (``topics`` included, for the v1 layout)."""
        small = replace(view, topics={}).to_obj()  # every view field the way to_obj writes it
        keys = list(small)
        del small["topics"]
        # Through msgpack and back: the values are then what a reader of the file gets
        # (lists, not tuples), as the delta encoder compares them with the next round's.
        fields = msgpack.unpackb(self._pk.pack(small), raw=False, strict_map_key=False)
        header = {"schema": SCHEMA, "version": VERSION, "captured_ms": captured_ms, "server": view.addr,
                  "round": round, "ok": view.ok, "error": view.error}
        packed = self._packed_route
        topics = [(topic, NIL if route is None else packed(route)) for topic, route in view.topics.items()]
        return SplitCapture(header, fields, topics), keys

    def _packed_route(self, route: TopicRouteData) -> bytes:
        entry = self._packed.get(id(route))
        if entry is None or entry[0] is not route:
            entry = self._packed_before.get(id(route))
            if entry is None or entry[0] is not route:
                entry = (route, self._pk.pack(route.to_obj()))
            self._packed[id(route)] = entry
        return entry[1]

    def _v1(self, split: SplitCapture, keys: list[str]) -> bytes:
        """The v1 file (schema.encode_capture's bytes), routes as packed already."""
        pk = self._pk
        parts = [pk.pack_map_header(len(split.header) + 1)]
        for key, value in split.header.items():
            parts += [pk.pack(key), pk.pack(value)]
        parts += [pk.pack("view"), pk.pack_map_header(len(keys))]
        for key in keys:
            parts.append(pk.pack(key))
            if key == "topics":
                parts.append(pk.pack_map_header(len(split.topics)))
                parts += [pk.pack(topic) + raw for topic, raw in split.topics]
            else:
                parts.append(pk.pack(split.view[key]))
        return b"".join(parts)

    def retained(self) -> Retained:
        delta: dict[str, Any] = self._delta.retained() if self._delta is not None else {}
        packed = len(self._packed) + sum(1 for k in self._packed_before if k not in self._packed)
        return Retained(servers=delta.get("servers", 0), topics=delta.get("topics", 0),
                        stored=delta.get("stored", 0), hashes=delta.get("hashes", 0), bodies=len(self.bodies),
                        packed=packed)
