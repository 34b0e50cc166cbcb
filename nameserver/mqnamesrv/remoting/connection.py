"""One remoting connection: one reader, answers matched by ``opaque``, a close that fails
everything still waiting. aiokafka's ``conn.py`` is the model.

``RemotingConnection`` is an ``asyncio.Protocol``: ``data_received`` cuts frames with the
codec's ``FrameDecoder`` (bounds checked before buffering) and decodes them with
``decode_reply``; an answer goes to the waiter registered under its ``opaque``, a request
to the handler, if any (a broker answers the name server on the connection it registered
on). Two ways to wait for an answer:

* ``call(cmd, timeout)``: a future per request, for the admin commands;
* ``expect(opaque, waiter)``: a plain callback, for the callers that pipeline thousands
  of requests (the route pump, the bench) and cannot afford a future and a timer each.

Every failure is a ``RemotingError`` whose ``kind`` says what happened (``refused``,
``timeout``, ``unreachable``, ``closed``, ``protocol``); ``connect`` is the one place a
socket error becomes one. Callers map it to their own error types once.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from functools import partial
from typing import Any, Awaitable, Callable, ClassVar, Self

from ..protocol.codes import FLAG_RESPONSE
from ..protocol.command import RemotingCommand
from ..protocol.errors import ProtocolError
from ..protocol.frame import FrameDecoder, decode_reply, encode

log = logging.getLogger("nameserver.remoting")

#: Answers a peer's request; None for no answer (one-way requests never get one).
Handler = Callable[[RemotingCommand], Awaitable[RemotingCommand | None]]
#: Gets the answer, or the exception the connection was closed with.
Waiter = Callable[[RemotingCommand | Exception], None]


class RemotingError(Exception):
    """A request could not be sent or answered.

    ``kind``: ``refused``, ``timeout``, ``unreachable`` (DNS, no route, other socket
    errors), ``closed`` (by the peer or by us) or ``protocol`` (the peer sent bytes that
    are no frame). ``reason`` is the specifics without the address; ``str()`` adds it.
    """

    KINDS: ClassVar[tuple[str, ...]] = ("refused", "timeout", "unreachable", "closed", "protocol")

    def __init__(self, addr: str, kind: str, reason: str) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"unknown RemotingError kind {kind!r}")
        self.addr, self.kind, self.reason = addr, kind, reason
        super().__init__(f"{addr}: {reason}")


def split_host_port(addr: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port``; raises ValueError for anything else."""
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def _settle(future: asyncio.Future[RemotingCommand], reply: RemotingCommand | Exception) -> None:
    if future.done():  # the caller timed out or was cancelled
        return
    if isinstance(reply, Exception):
        future.set_exception(reply)
    else:
        future.set_result(reply)


class RemotingConnection(asyncio.Protocol):
    """One TCP connection to (or from) a RocketMQ remoting peer."""

    def __init__(self, addr: str = "", handler: Handler | None = None) -> None:
        self.addr = addr
        self._handler = handler
        self._decoder = FrameDecoder()
        self._pending: dict[int, Waiter] = {}
        self._answering: set[asyncio.Task[None]] = set()
        self._transport: asyncio.Transport | None = None
        self._error: Exception | None = None
        self._loop = asyncio.get_running_loop()
        self.lost: asyncio.Future[None] = self._loop.create_future()
        """Done once the transport is gone (peer closed, we closed, or it broke)."""
        self.after_read: Callable[[], None] | None = None
        """Called once the frames of one read are dispatched: where a pipelining caller
        writes the requests their answers made room for, in one write, before the loop
        turns (a later callback would leave the server idle meanwhile)."""

    @classmethod
    async def connect(cls, addr: str, timeout: float, **kw: Any) -> Self:
        """Open a connection within ``timeout`` s; ``kw`` go to the constructor.

        Raises RemotingError: ``refused``, ``timeout`` or ``unreachable``.
        """
        try:
            host, port = split_host_port(addr)
        except ValueError:
            raise RemotingError(addr, "unreachable", "not a host:port address") from None
        loop = asyncio.get_running_loop()
        try:
            # Not ``wait_for``: on 3.11 it can lose a Ctrl-C that comes with the result (gh-86296).
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(lambda: cls(addr, **kw), host, port)
        except TimeoutError:
            raise RemotingError(addr, "timeout", f"connect timed out after {timeout:g} s") from None
        except ConnectionRefusedError:
            raise RemotingError(addr, "refused", "connection refused") from None
        except OSError as exc:
            kind = "refused" if exc.errno == errno.ECONNREFUSED else "unreachable"
            raise RemotingError(addr, kind, exc.strerror or str(exc) or type(exc).__name__) from None
        return conn

    @property
    def closed(self) -> bool:
        return self._error is not None

    @property
    def error(self) -> Exception | None:
        """What the connection was closed with (None while open)."""
        return self._error

    # ------------------------------------------------------------ requests ----

    async def call(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send one request and wait for the answer with the same ``opaque``, whatever its code.

        Raises the error the connection is or gets closed with (a RemotingError unless
        ``close`` was given another), or RemotingError ``timeout``.
        """
        if self._error is not None:
            raise self._error
        future: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self._pending[cmd.opaque] = partial(_settle, future)
        try:
            self.write(encode(cmd))
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise RemotingError(self.addr, "timeout", f"no answer within {timeout:g} s") from None
        finally:
            # A late answer finds no waiter and is dropped, as Java drops it.
            self._pending.pop(cmd.opaque, None)

    def expect(self, opaque: int, waiter: Waiter) -> None:
        """Have ``waiter`` called with the answer to ``opaque`` (or the closing error); the
        caller writes the request itself. Raises the closing error if already closed."""
        if self._error is not None:
            raise self._error
        self._pending[opaque] = waiter

    def forget(self, opaque: int) -> None:
        self._pending.pop(opaque, None)

    @property
    def waiting(self) -> int:
        """Requests sent and not answered yet."""
        return len(self._pending)

    def write(self, data: bytes) -> None:
        """Write frames as they are; dropped once closed (the waiters have their error)."""
        if self._error is None and self._transport is not None:
            self._transport.write(data)

    def send(self, cmd: RemotingCommand) -> None:
        """Write without waiting (one-way requests, answers)."""
        self.write(encode(cmd))

    # -------------------------------------------------------- protocol side ----

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is no asyncio.Transport subclass
        if not self.addr:
            peer = transport.get_extra_info("peername")
            self.addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    def data_received(self, data: bytes) -> None:
        decoder = self._decoder
        decoder.feed(data)
        try:
            while payloads := decoder.payloads():
                for payload in payloads:
                    cmd = decode_reply(payload)
                    # ``command_received`` inline for an awaited answer: this runs once per
                    # answer the route pump and the bench read, thousands a second.
                    if cmd.flag & FLAG_RESPONSE and (waiter := self._pending.pop(cmd.opaque, None)) is not None:
                        waiter(cmd)
                    else:
                        self.command_received(cmd)
                    if self._error is not None:  # a waiter or handler closed us: the rest is not ours
                        return
        except ProtocolError as exc:
            log.debug("%s: undecodable frame: %s", self.addr, exc)
            self.shutdown(RemotingError(self.addr, "protocol", str(exc)), abort=True)
            return
        if self.after_read is not None:
            self.after_read()

    def command_received(self, cmd: RemotingCommand) -> None:
        """A request to the handler, an answer nobody waits for to ``unmatched_answer``
        (``data_received`` hands awaited answers to their waiters itself)."""
        if cmd.flag & FLAG_RESPONSE:
            waiter = self._pending.pop(cmd.opaque, None)
            if waiter is None:
                self.unmatched_answer(cmd)
            else:
                waiter(cmd)
        elif self._handler is not None:
            task = self._loop.create_task(self._answer(self._handler, cmd))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        else:
            log.debug("%s: dropping request code=%s opaque=%s", self.addr, cmd.code, cmd.opaque)

    def unmatched_answer(self, cmd: RemotingCommand) -> None:
        """An answer nobody waits for (a late one): dropped, as Java drops it."""
        log.debug("%s: dropping answer code=%s opaque=%s", self.addr, cmd.code, cmd.opaque)

    async def _answer(self, handler: Handler, cmd: RemotingCommand) -> None:
        try:
            response = await handler(cmd)
        except Exception:  # a handler bug must not kill the connection
            log.exception("%s: handling request code %s failed", self.addr, cmd.code)
            return
        if response is not None and not cmd.is_oneway:
            self.send(response)

    def connection_lost(self, exc: Exception | None) -> None:
        reason = "connection closed by the server" if exc is None else (
            getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
        self.shutdown(RemotingError(self.addr, "closed", reason))
        if not self.lost.done():
            self.lost.set_result(None)

    # ------------------------------------------------------------- closing ----

    def shutdown(self, exc: Exception | None = None, *, abort: bool = False) -> None:
        """Fail every waiter with ``exc`` (default: closed by us), stop answering, send FIN
        (or RST with ``abort``). The first reason is the one later calls get."""
        exc = exc or RemotingError(self.addr, "closed", "connection closed by the client")
        if self._error is None:
            self._error = exc
        pending, self._pending = self._pending, {}
        for waiter in pending.values():
            waiter(exc)
        current = asyncio.current_task(self._loop)
        for task in self._answering:
            if task is not current:
                task.cancel()  # the answer could not be sent any more
        if self._transport is not None:
            if abort:
                self._transport.abort()
            else:
                self._transport.close()

    async def close(self, exc: Exception | None = None) -> None:
        """``shutdown``, then wait until the transport and the answers in progress are done.

        The FIN is on its way before the first ``await``. A cancellation of the caller
        while waiting is not swallowed: it is most likely the Ctrl-C that made us close.
        """
        self.shutdown(exc)
        current = asyncio.current_task(self._loop)
        await asyncio.wait([self.lost, *(t for t in self._answering if t is not current)])

    async def wait_closed(self) -> None:
        """Until the transport is gone (peer closed, or ``close()``)."""
        await asyncio.wait([self.lost])
