"""Thousands of GET_ROUTEINFO_BY_TOPIC requests pipelined on one connection.

This is the hot path of ``collect_views``: 10,000 topics x 5 servers must be fetched
in a couple of seconds on two cores that the name servers share. A plain
``asyncio.gather(conn.get_route(t) for t in topics)`` on ``NamesrvConnection`` pays
per request a Task, a timer, a Future and a body decode, about 60 us on the client.
``RoutePump`` drives a connection of its own (the shared ``RemotingConnection``, whose
reader decodes answers with the codec's fast ``decode_reply``) and instead

* builds each request frame from a template (byte-identical to ``build_request``);
* keeps ``concurrency`` requests in flight, each answer handed to a plain callback
  (``RemotingConnection.expect``), and writes the requests the answers of one incoming
  chunk freed up in one ``write``;
* decodes each distinct body once: the route body does not name its topic, so every
  topic with the same brokers, perms and queue counts gets the same bytes, and the
  decoded TopicRouteData is immutable and can be shared (``RouteBodies``; kept from
  one ``snapshot`` round to the next, an unchanged body is not decoded again, and the
  same TopicRouteData object comes back for it);
* has one deadline per connection (silence for ``timeout`` seconds) instead of one
  timer per request.
"""

from __future__ import annotations

import asyncio
import re
import struct
from collections import Counter, deque
from dataclasses import replace
from typing import Any, Callable, Iterable

from mqnamesrv.protocol.bodies import TopicRouteData
from mqnamesrv.protocol.codes import RequestCode, ResponseCode
from mqnamesrv.protocol.command import RemotingCommand, next_opaque
from mqnamesrv.protocol.errors import ProtocolError
from mqnamesrv.protocol.fastjson import dumps_str
from mqnamesrv.protocol.frame import encode
from mqnamesrv.remoting import RemotingConnection, RemotingError

from .client import build_request, failure
from ..errors import BadResponse, NameServerError, request_label

_ROUTE = RequestCode.GET_ROUTEINFO_BY_TOPIC
_PREFIX = struct.Struct(">Ii")
# A RocketMQ topic name (Java's TopicValidator: [%|a-zA-Z0-9_-]) needs no JSON escapes.
_PLAIN_TOPIC = re.compile(r"[%|A-Za-z0-9_-]+")
# Progress is reported about every 1/_PROGRESS_STEPS of the routes (and at the end):
# often enough for a bar, rarely enough to cost nothing next to the requests.
_PROGRESS_STEPS = 200


def _route_template() -> tuple[bytes, bytes, bytes]:
    """The JSON header of ``build_request(105, {"topic": T})``, cut around T and the opaque."""
    mark = "\u0001"
    header = encode(replace(build_request(_ROUTE, {"topic": mark}), opaque=0))[_PREFIX.size:]
    head, tail = header.split(dumps_str(mark).encode())
    middle, end = tail.split(b'"opaque":0,')
    return head, middle + b'"opaque":', b"," + end


_HEAD, _MIDDLE, _END = _route_template()


def route_request_frame(topic: str, opaque: int) -> bytes:
    """``encode(build_request(105, {"topic": topic}))`` with ``opaque``, byte for byte."""
    name = topic.encode() if _PLAIN_TOPIC.fullmatch(topic) else dumps_str(topic).encode()[1:-1]
    header = b"".join((_HEAD, b'"', name, b'"', _MIDDLE, str(opaque).encode(), _END))
    return _PREFIX.pack(4 + len(header), len(header)) + header


class RouteBodies:
    """Distinct route bodies and their decoded TopicRouteData, shared by every server
    of a collection and, when the caller keeps it, by consecutive collections.

    Two generations: ``next_round()`` makes the bodies seen so far the previous
    round's, and drops those the round before did not see again, so what is held is
    bounded by the distinct bodies of two rounds, not by the number of rounds. A body
    seen again yields the very TopicRouteData object of the previous round, which
    callers may use as an identity key (``snapshot`` reuses the route's packed form
    and hash for it, mqadmin/pipeline/snapshot_encoder.py).
    """

    def __init__(self) -> None:
        self._now: dict[bytes, TopicRouteData] = {}
        self._before: dict[bytes, TopicRouteData] = {}

    def decode(self, body: bytes) -> TopicRouteData:
        """The route of ``body``; raises ProtocolError for a body that is not one."""
        route = self._now.get(body)
        if route is None:
            route = self._before.get(body)
            if route is None:
                route = TopicRouteData.decode(body)
            self._now[body] = route
        return route

    def next_round(self) -> None:
        self._before, self._now = self._now, {}

    def __len__(self) -> int:
        """Distinct bodies held (both generations)."""
        return len(self._now) + sum(1 for body in self._before if body not in self._now)


class RoutePump:
    """Routes of many topics from one name server, ``concurrency`` requests in flight.

    Topics may be added while it runs; ``finish()`` says no more will come and
    ``wait()`` returns once each topic has an answer or has failed. ``routes`` maps a
    topic to its TopicRouteData, or to None for TOPIC_NOT_EXIST; failed topics are
    left out and counted by reason (``failure_lines``).
    """

    def __init__(self, conn: RemotingConnection, *, concurrency: int, timeout: float,
                 bodies: RouteBodies, progress: Callable[[int, int], None] | None = None) -> None:
        self.addr = conn.addr
        self.concurrency = concurrency
        self.timeout = timeout
        self.bodies = bodies
        self.progress = progress
        self.routes: dict[str, TopicRouteData | None] = {}
        self.total = 0
        self._conn = conn
        self._queue: deque[str] = deque()
        self._seen: set[str] = set()
        self._inflight: dict[int, str] = {}  # opaque -> topic, in the order sent
        self._failed: Counter[str] = Counter()
        self._example: dict[str, str] = {}  # failure reason -> first topic that met it
        self._done = self._reported = 0
        self._more = True  # topics may still be added
        self._lost: str | None = None  # why the connection is unusable
        self._loop = asyncio.get_running_loop()
        self._last_answer = self._loop.time()
        self._finished = self._loop.create_future()
        conn.lost.add_done_callback(self._connection_lost)
        conn.after_read = self._refill

    @classmethod
    async def open(cls, addr: str, *, timeout: float, **kw: Any) -> RoutePump:
        """Connect; raises Unreachable like ``Connection.connect``."""
        try:
            conn = await RemotingConnection.connect(addr, timeout)
        except RemotingError as exc:
            raise failure(exc, None) from None
        return cls(conn, timeout=timeout, **kw)

    # ------------------------------------------------------------ caller side ----

    def add(self, topics: Iterable[str]) -> None:
        fresh = [t for t in topics if t not in self._seen]
        if not fresh:
            return
        self._seen.update(fresh)
        if not self._inflight:
            self._last_answer = self._loop.time()  # silence while we had nothing to ask is not the server's
        self._queue.extend(fresh)
        self.total += len(fresh)
        self._report(force=True)
        if self._lost is not None:
            self._abandon(self._lost)
        self._fill()

    def finish(self) -> None:
        """No more topics will be added."""
        self._more = False
        self._check_finished()

    async def wait(self) -> None:
        """Until every topic is answered or failed; gives up after ``timeout`` s of silence."""
        while not self._finished.done():
            remaining = self._last_answer + self.timeout - self._loop.time()
            if remaining <= 0:
                self._abandon(f"no answer within {self.timeout:g} s", kind="timeout")
                break
            await asyncio.wait((self._finished,), timeout=remaining)

    def close(self) -> None:
        self._conn.shutdown()

    def failure_lines(self) -> list[str]:
        """One line per failure reason, e.g. ``addr: GET_ROUTEINFO_BY_TOPIC (105) for 9800
        of 10000 topics (first 'orders'): no answer within 3 s``."""
        label = request_label(_ROUTE)
        return [
            f"{self.addr}: {label} for {count} of {self.total} topics (first {self._example[reason]!r}): {reason}"
            if count > 1 else f"{self.addr}: {label} for topic {self._example[reason]!r}: {reason}"
            for reason, count in self._failed.items()
        ]

    # ------------------------------------------------------- connection side ----

    def _connection_lost(self, _: object) -> None:
        error = self._conn.error
        self._abandon(failure(error, _ROUTE).reason if isinstance(error, RemotingError) else str(error))

    def _answer(self, reply: RemotingCommand | Exception) -> None:
        """The waiter of every request (one bound method, not a closure per request): an
        answer, or the error the connection closed with, which fails every request in flight."""
        if type(reply) is RemotingCommand:
            topic = self._inflight.pop(reply.opaque, None)
            if topic is None:
                return
            self._done += 1
            self._last_answer = self._loop.time()
            self._route(topic, reply)
        elif isinstance(reply, Exception):
            reason = failure(reply, _ROUTE).reason if isinstance(reply, RemotingError) else str(reply)
            lost = list(self._inflight.values())
            self._inflight.clear()
            for topic in lost:
                self._fail(topic, reason)
            self._done += len(lost)
            if self._lost is None:
                self._lost = reason
        self._report()

    def _route(self, topic: str, reply: RemotingCommand) -> None:
        code = reply.code
        if code == ResponseCode.SUCCESS:
            try:
                self.routes[topic] = self.bodies.decode(reply.body)
            except ProtocolError as exc:
                self._fail(topic, BadResponse(self.addr, _ROUTE, str(exc)).reason)
        elif code == ResponseCode.TOPIC_NOT_EXIST:
            self.routes[topic] = None
        else:
            self._fail(topic, NameServerError.for_code(code, addr=self.addr, request=_ROUTE, remark=reply.remark).reason)

    def _refill(self) -> None:
        """After each read: the answers' successors go out in one write."""
        if self._lost is not None:
            self._abandon(self._lost)
        self._fill()
        self._check_finished()

    def _fill(self) -> None:
        conn = self._conn
        if self._lost is not None or conn.closed:
            return
        frames = []
        queue, inflight, answer = self._queue, self._inflight, self._answer
        while queue and len(inflight) < self.concurrency:
            topic = queue.popleft()
            opaque = next_opaque()
            conn.expect(opaque, answer)
            inflight[opaque] = topic
            frames.append(route_request_frame(topic, opaque))
        if frames:
            conn.write(b"".join(frames))

    def _report(self, force: bool = False) -> None:
        if self.progress is None:
            return
        if force or self._done == self.total or self._done - self._reported >= max(1, self.total // _PROGRESS_STEPS):
            self._reported = self._done
            self.progress(self._done, self.total)

    def _fail(self, topic: str, reason: str) -> None:
        self._failed[reason] += 1
        self._example.setdefault(reason, topic)

    def _abandon(self, reason: str, kind: str = "closed") -> None:
        """Give up every request in flight and every queued topic, for ``reason``."""
        if self._lost is None:
            self._lost = reason
        # Closing fails the requests in flight first (in the order they were sent), each
        # through its waiter with the connection's error, or ``reason`` if it is the first.
        self._conn.shutdown(RemotingError(self.addr, kind, reason))
        lost = list(self._queue)
        self._queue.clear()
        for topic in lost:
            self._fail(topic, reason)
        self._done += len(lost)
        if lost:
            self._report(force=True)
        self._check_finished()

    def _check_finished(self) -> None:
        if not self._more and not self._inflight and not self._queue and not self._finished.done():
            self._finished.set_result(None)
