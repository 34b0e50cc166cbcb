"""Thousands of GET_ROUTEINFO_BY_TOPIC requests pipelined on one connection.

This is the hot path of ``collect_views``: 10,000 topics x 5 servers must be fetched
in a couple of seconds on two cores that the name servers share. A plain
``asyncio.gather(conn.get_route(t) for t in topics)`` on ``NamesrvConnection`` pays
per request a Task, a ``wait_for`` timer, a Future, a full header decode into a
RemotingCommand and a body decode, about 60 us on the client. ``RoutePump`` is an
``asyncio.Protocol`` on a connection of its own that instead

* builds each request frame from a template (byte-identical to ``build_request``);
* keeps ``concurrency`` requests in flight, answers matched by ``opaque`` in a dict,
  and writes the requests an incoming chunk freed up in one ``write``;
* reads only ``code``/``opaque``/``remark`` of each answer's header (orjson; anything
  unusual goes through the codec's own ``decode_payload``);
* decodes each distinct body once: the route body does not name its topic, so every
  topic with the same brokers, perms and queue counts gets the same bytes, and the
  decoded TopicRouteData is immutable and can be shared;
* has one deadline per connection (silence for ``timeout`` seconds) instead of one
  timer per request.
"""

from __future__ import annotations

import asyncio
import errno
import re
import struct
from collections import Counter, deque
from dataclasses import replace
from typing import Any, Callable, Iterable

import orjson

from nameserver.protocol.bodies import TopicRouteData
from nameserver.protocol.codes import FLAG_RESPONSE, RequestCode, ResponseCode
from nameserver.protocol.command import next_opaque
from nameserver.protocol.errors import ProtocolError
from nameserver.protocol.fastjson import dumps_str
from nameserver.protocol.frame import DEFAULT_MAX_FRAME, decode_payload, encode

from .client import build_request, split_host_port
from .errors import BadResponse, NameServerError, Unreachable, request_label

_ROUTE = RequestCode.GET_ROUTEINFO_BY_TOPIC
_U32 = struct.Struct(">I")
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


class RoutePump(asyncio.Protocol):
    """Routes of many topics from one name server, ``concurrency`` requests in flight.

    Topics may be added while it runs; ``finish()`` says no more will come and
    ``wait()`` returns once each topic has an answer or has failed. ``routes`` maps a
    topic to its TopicRouteData, or to None for TOPIC_NOT_EXIST; failed topics are
    left out and counted by reason (``failure_lines``).
    """

    def __init__(self, addr: str, *, concurrency: int, timeout: float, bodies: dict[bytes, TopicRouteData],
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.addr = addr
        self.concurrency = concurrency
        self.timeout = timeout
        self.bodies = bodies
        self.progress = progress
        self.routes: dict[str, TopicRouteData | None] = {}
        self.total = 0
        self._queue: deque[str] = deque()
        self._seen: set[str] = set()
        self._inflight: dict[int, str] = {}
        self._failed: Counter[str] = Counter()
        self._example: dict[str, str] = {}  # failure reason -> first topic that met it
        self._done = self._reported = 0
        self._more = True  # topics may still be added
        self._lost: str | None = None  # why the connection is unusable
        self._buf = bytearray()
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._last_answer = self._loop.time()
        self._finished = self._loop.create_future()

    @classmethod
    async def open(cls, addr: str, *, timeout: float, **kw: Any) -> "RoutePump":
        """Connect; raises Unreachable like ``Connection.connect``."""
        pump = cls(addr, timeout=timeout, **kw)
        try:
            host, port = split_host_port(addr)
            async with asyncio.timeout(timeout):  # not wait_for: it can lose a Ctrl-C on 3.11
                await pump._loop.create_connection(lambda: pump, host, port)
        except ValueError:
            raise Unreachable(addr, None, "unreachable", "not a host:port address") from None
        except TimeoutError:
            raise Unreachable(addr, None, "timeout", f"connect timed out after {timeout:g} s") from None
        except OSError as exc:
            kind = "refused" if isinstance(exc, ConnectionRefusedError) or exc.errno == errno.ECONNREFUSED \
                else "unreachable"
            raise Unreachable(addr, None, kind, exc.strerror or str(exc) or type(exc).__name__) from None
        return pump

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
                self._abandon(f"no answer within {self.timeout:g} s")
                break
            await asyncio.wait((self._finished,), timeout=remaining)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def failure_lines(self) -> list[str]:
        """One line per failure reason, e.g. ``addr: GET_ROUTEINFO_BY_TOPIC (105) for 9800
        of 10000 topics (first 'orders'): no answer within 3 s``."""
        label = request_label(_ROUTE)
        return [
            f"{self.addr}: {label} for {count} of {self.total} topics (first {self._example[reason]!r}): {reason}"
            if count > 1 else f"{self.addr}: {label} for topic {self._example[reason]!r}: {reason}"
            for reason, count in self._failed.items()
        ]

    # -------------------------------------------------------- protocol side ----

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lost is None:
            self._lost = "connection closed" + (f": {exc}" if exc else " by the server")
        self._abandon(self._lost)

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        pos, size = 0, len(buf)
        try:
            while size - pos >= 4:
                (length,) = _U32.unpack_from(buf, pos)
                if not 4 <= length <= DEFAULT_MAX_FRAME - 4:
                    raise ProtocolError(f"frame length {length} out of range")
                end = pos + 4 + length
                if end > size:
                    break
                self._frame(buf, pos + 4, end)
                pos = end
        except ProtocolError as exc:
            self._lost = BadResponse(self.addr, _ROUTE, str(exc)).reason
            self._abandon(self._lost)
            if self._transport is not None:
                self._transport.abort()
            return
        finally:
            del buf[:pos]
        self._fill()
        self._check_finished()

    def _frame(self, buf: bytearray, start: int, end: int) -> None:
        (word,) = _U32.unpack_from(buf, start)
        header_end = start + 4 + (word & 0xFFFFFF)
        header: Any = None
        if word >> 24 == 0 and header_end <= end:  # JSON header: read the three fields we need
            try:
                header = orjson.loads(buf[start + 4:header_end])
            except orjson.JSONDecodeError:
                header = None
        if isinstance(header, dict) and type(header.get("code")) is int and type(header.get("opaque")) is int \
                and type(header.get("flag", 0)) is int:
            code, opaque, flag, remark = header["code"], header["opaque"], header.get("flag", 0), header.get("remark")
            body = bytes(buf[header_end:end])
        else:  # binary header, fastjson dialect, odd types: the codec's own decoder
            cmd = decode_payload(bytes(buf[start:end]))
            code, opaque, flag, remark, body = cmd.code, cmd.opaque, cmd.flag, cmd.remark, cmd.body
        if flag & FLAG_RESPONSE:
            self._answer(opaque, code, remark, body)

    def _answer(self, opaque: int, code: int, remark: Any, body: bytes) -> None:
        topic = self._inflight.pop(opaque, None)
        if topic is None:  # a late answer to a request given up on
            return
        self._last_answer = self._loop.time()
        if code == ResponseCode.SUCCESS:
            route = self.bodies.get(body)
            if route is None:
                try:
                    route = self.bodies[body] = TopicRouteData.decode(body)
                except ProtocolError as exc:
                    self._fail(topic, BadResponse(self.addr, _ROUTE, str(exc)).reason)
            if route is not None:
                self.routes[topic] = route
        elif code == ResponseCode.TOPIC_NOT_EXIST:
            self.routes[topic] = None
        else:
            remark = None if remark is None else str(remark)
            self._fail(topic, NameServerError.for_code(code, addr=self.addr, request=_ROUTE, remark=remark).reason)
        self._done += 1
        self._report()

    def _fill(self) -> None:
        if self._lost is not None or self._transport is None:
            return
        frames = []
        inflight, queue = self._inflight, self._queue
        while queue and len(inflight) < self.concurrency:
            topic = queue.popleft()
            opaque = next_opaque()
            inflight[opaque] = topic
            frames.append(route_request_frame(topic, opaque))
        if frames:
            self._transport.write(b"".join(frames))

    def _report(self, force: bool = False) -> None:
        if self.progress is None:
            return
        if force or self._done == self.total or self._done - self._reported >= max(1, self.total // _PROGRESS_STEPS):
            self._reported = self._done
            self.progress(self._done, self.total)

    def _fail(self, topic: str, reason: str) -> None:
        self._failed[reason] += 1
        self._example.setdefault(reason, topic)

    def _abandon(self, reason: str) -> None:
        """Give up every request in flight and every queued topic, for ``reason``."""
        lost = list(self._inflight.values()) + list(self._queue)
        self._inflight.clear()
        self._queue.clear()
        for topic in lost:
            self._fail(topic, reason)
        self._done += len(lost)
        if lost:
            self._report(force=True)
        if self._lost is None:
            self._lost = reason
            self.close()
        self._check_finished()

    def _check_finished(self) -> None:
        if not self._more and not self._inflight and not self._queue and not self._finished.done():
            self._finished.set_result(None)
