"""Ask every server at once: address lists, per-server answers, concurrency.

``ask_all`` runs one coroutine per server concurrently, each on its own connection,
and returns one ``Answer`` per address: a value, or the ``ServerFailure`` that server
produced. A single server failing never raises; only bugs do.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Generic, Sequence, TypeVar

from .client import DEFAULT_TIMEOUT, Connection, NamesrvConnection
from ..errors import AddressError, ServerFailure, Unreachable

T = TypeVar("T")
C = TypeVar("C", bound=Connection)

# A DNS name or IPv4 address, or a bracketed IPv6 address; the port is checked apart.
_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])$")
# Slack added to the per-request timeouts before the fan-out gives up on a server
# itself; it only fires if a server coroutine hangs somewhere no timeout covers.
_BACKSTOP_SLACK = 1.0


def parse_addrs(text: str, source: str = "-n/--namesrvAddr") -> list[str]:
    """Split Java's ``host:port;host:port`` list, validating every element.

    Elements are trimmed and duplicates dropped (order kept). A trailing ``;`` is fine,
    as in Java; an empty element elsewhere, a missing or bad port, or a bad host name
    raises AddressError naming ``source``, before anything is sent.
    """
    parts = [p.strip() for p in text.split(";")]
    while parts and parts[-1] == "":
        parts.pop()
    if not parts:
        raise AddressError(f"{source}: no name-server address in {text!r}")
    addrs: list[str] = []
    for part in parts:
        _check_addr(part, text, source)
        if part not in addrs:
            addrs.append(part)
    return addrs


def _check_addr(part: str, text: str, source: str) -> None:
    def bad(why: str) -> AddressError:
        hint = " (separate name servers with ';')" if "," in text else ""
        return AddressError(f"{source}: {why} in {text!r}; expected host:port;host:port{hint}")

    if not part:
        raise bad("empty address")
    host, sep, port = part.rpartition(":")
    if not sep or not host:
        raise bad(f"{part!r} is not host:port")
    if not _HOST.match(host):
        raise bad(f"{host!r} is not a host name or IP address")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise bad(f"port {port!r} of {part!r} is not a TCP port (1-65535)")


class OkOrFailure:
    """What ``ok`` and ``answered`` mean, once, for everything that holds one server's
    ``error`` (None when it succeeded): a fan-out ``Answer`` and a result's ``Outcome``."""

    __slots__ = ()
    error: ServerFailure | None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def answered(self) -> bool:
        """The server replied (an error code counts); False when refused, timed out, closed."""
        return self.error is None or self.error.answered


@dataclass(frozen=True, slots=True)
class Answer(OkOrFailure, Generic[T]):
    """What one server gave: ``value`` when ``ok``, else ``error``; ``latency_ms`` either way."""

    addr: str
    value: T | None = None
    error: ServerFailure | None = None
    latency_ms: float = 0.0


async def ask_one(
    addr: str,
    fn: Callable[[C], Awaitable[T]],
    timeout: float,
    *,
    connection: type[C],
    request: int | None = None,
    detail: str = "",
) -> Answer[T]:
    """Connect to ``addr``, run ``fn(conn)``, close; failures become the Answer's error.

    ``request``/``detail`` label failures that happen before any request (connect).
    """
    start = time.perf_counter()
    try:
        # ``asyncio.timeout``, not ``wait_for``: a cancellation (Ctrl-C) must end us even
        # when it comes with the answer (see Connection.call).
        async with asyncio.timeout(timeout * 2 + _BACKSTOP_SLACK):
            async with await connection.connect(addr, timeout) as conn:
                value = await fn(conn)
    except ServerFailure as exc:
        return Answer(addr, error=exc.with_request(request, detail), latency_ms=_ms(start))
    except TimeoutError:
        error = Unreachable(addr, request, "timeout", f"no answer within {timeout:g} s", detail)
        return Answer(addr, error=error, latency_ms=_ms(start))
    return Answer(addr, value=value, latency_ms=_ms(start))


async def ask_all(
    addrs: Sequence[str],
    fn: Callable[[C], Awaitable[T]],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    connection: type[C] = NamesrvConnection,  # type: ignore[assignment]
    request: int | None = None,
    detail: str = "",
    progress: dict[str, Answer[T]] | None = None,
) -> dict[str, Answer[T]]:
    """Run ``fn`` against every address concurrently; one Answer per address, in order.

    ``progress`` receives each Answer as it arrives, so that a caller that is cancelled
    (Ctrl-C) can still say which servers had answered and how."""
    async def one(addr: str) -> Answer[T]:
        answer = await ask_one(addr, fn, timeout, connection=connection, request=request, detail=detail)
        if progress is not None:
            progress[addr] = answer
        return answer

    answers = await asyncio.gather(*(one(a) for a in addrs))
    return dict(zip(addrs, answers))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
