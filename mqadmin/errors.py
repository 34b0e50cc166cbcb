"""Errors of the admin side, aiokafka-style: data a caller can act on, one class per kind.

``MqadminError`` is the root; ``mqadmin.core`` turns any of them into one stderr line and
an exit status. ``ServerFailure`` and its children describe what went wrong with *one*
server (name server or broker); the fan-out keeps them as answers instead of raising.
Their ``str()`` is a whole operator-facing line that names the server and the request::

    127.0.0.1:9876: GET_ROUTEINFO_BY_TOPIC (105) for topic 'orders': TOPIC_NOT_EXIST (17): No topic route info ...
"""

from __future__ import annotations

import re
from typing import ClassVar

from mqnamesrv.protocol.codes import ResponseCode, code_name

from .exit import ExitStatus


class MqadminError(Exception):
    """Root of every error the CLI reports without a traceback."""

    exit_status: ClassVar[ExitStatus] = ExitStatus.ERROR


class AddressError(MqadminError):
    """A name-server list (from -n, NAMESRV_ADDR or a profile) that is not ``host:port;...``."""


class ConfigError(MqadminError):
    """No name server configured, or an unreadable / invalid profiles file."""


def request_label(code: int | None) -> str:
    """``GET_ROUTEINFO_BY_TOPIC (105)``; empty when the request is unknown."""
    return "" if code is None else f"{code_name(code)} ({code})"


def first_line(text: str | None) -> str:
    """Java remarks append ``\\nSee <FAQ url> for further details.``; a message keeps line one."""
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


class ServerFailure(MqadminError):
    """Something went wrong with one server for one request.

    ``kind`` is the stable name used in JSON output (``error.type``). ``absent`` marks a
    definitive negative answer ("no such topic / key"): a read groups those answers like
    values, so one server missing a topic is a disagreement, not an outage.
    """

    kind: ClassVar[str] = "error"
    absent: ClassVar[bool] = False
    #: the server replied (as opposed to refused, timed out, closed)
    answered: ClassVar[bool] = True
    retriable: ClassVar[bool] = False

    def __init__(self, addr: str, request: int | None, detail: str = "") -> None:
        self.addr = addr
        self.request = request
        self.detail = detail
        super().__init__(self.message)

    @property
    def reason(self) -> str:
        """What went wrong, without the server and request prefix."""
        return self.kind

    @property
    def message(self) -> str:
        where = " ".join(p for p in (request_label(self.request), self.detail) if p)
        return f"{self.addr}: {where}: {self.reason}" if where else f"{self.addr}: {self.reason}"

    def __str__(self) -> str:
        return self.message

    def with_request(self, request: int | None, detail: str = "") -> ServerFailure:
        """A copy that names ``request`` and ``detail`` where this failure did not.

        Failures of a connection (refused, closed) are born without a request; the call
        or fan-out that meets them knows which request it was.
        """
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        if new.request is None:
            new.request = request
        if not new.detail:
            new.detail = detail
        new.args = (new.message,)
        return new


class NameServerError(ServerFailure):
    """The server answered with a response code other than SUCCESS."""

    kind = "response"

    def __init__(self, addr: str, request: int | None, code: int, remark: str | None, detail: str = "") -> None:
        self.code = code
        self.remark = remark
        super().__init__(addr, request, detail)

    @property
    def code_name(self) -> str:
        return code_name(self.code, response=True)

    @property
    def reason(self) -> str:
        text = first_line(self.remark)
        return f"{self.code_name} ({self.code})" + (f": {text}" if text else "")

    @classmethod
    def for_code(
        cls, code: int, *, addr: str, request: int | None, remark: str | None = None, detail: str = ""
    ) -> NameServerError:
        """The subclass registered for ``code`` (``NameServerError`` itself for unknown codes)."""
        return _BY_CODE.get(code, cls)(addr, request, code, remark, detail)


class SystemErrorResponse(NameServerError):
    """SYSTEM_ERROR (1): bad header or body, or a failed server-side check."""


class SystemBusy(NameServerError):
    retriable = True


class RequestCodeNotSupported(NameServerError):
    """The server does not know the request (a 4.9.8 server says nothing and times out instead)."""


class NoPermission(NameServerError):
    """NO_PERMISSION (16): e.g. a black-listed key in updateNamesrvConfig."""


class TopicNotExist(NameServerError):
    absent = True


class QueryNotFound(NameServerError):
    absent = True


_BY_CODE: dict[int, type[NameServerError]] = {
    ResponseCode.SYSTEM_ERROR: SystemErrorResponse,
    ResponseCode.SYSTEM_BUSY: SystemBusy,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: RequestCodeNotSupported,
    ResponseCode.NO_PERMISSION: NoPermission,
    ResponseCode.TOPIC_NOT_EXIST: TopicNotExist,
    ResponseCode.QUERY_NOT_FOUND: QueryNotFound,
}


class Unreachable(ServerFailure):
    """No answer: the connection was refused, timed out, or closed under the request.

    ``kind`` is the reason: ``refused``, ``timeout``, ``closed`` or ``unreachable`` (DNS,
    no route to host, other socket errors); ``text`` adds the specifics.
    """

    answered = False
    retriable = True
    KINDS: ClassVar[tuple[str, ...]] = ("refused", "timeout", "closed", "unreachable")

    def __init__(self, addr: str, request: int | None, kind: str, text: str, detail: str = "") -> None:
        if kind not in self.KINDS:
            raise ValueError(f"unknown Unreachable kind {kind!r}")
        self.kind = kind  # type: ignore[misc]  # per instance on purpose
        self.text = text
        super().__init__(addr, request, detail)

    @property
    def reason(self) -> str:
        return self.text


class BadResponse(ServerFailure):
    """The server answered with bytes or a body we cannot decode."""

    kind = "protocol"

    def __init__(self, addr: str, request: int | None, text: str, detail: str = "") -> None:
        self.text = text
        super().__init__(addr, request, detail)

    @property
    def reason(self) -> str:
        peer = _text_peer(self.text)
        return f"{peer} answered, not a RocketMQ name server (wrong port?)" if peer else f"malformed answer: {self.text}"


#: the first four bytes of text protocols' greetings, read as a RocketMQ frame length
#: (b"HTTP" is 1213486160): what answered instead of a name server
_TEXT_PEERS = {b"HTTP": "an HTTP server", b"SSH-": "an SSH server", b"220 ": "an FTP or SMTP server"}
_FRAME_LENGTH = re.compile(r"frame length (\d+) exceeds")


def _text_peer(text: str) -> str | None:
    match = _FRAME_LENGTH.search(text)
    if match is None or int(match.group(1)) >= 1 << 32:
        return None
    return _TEXT_PEERS.get(int(match.group(1)).to_bytes(4, "big"))


class NotFound(ServerFailure):
    """A definitive negative answer computed on our side (e.g. an unknown cluster in an answer)."""

    kind = "not_found"
    absent = True

    def __init__(self, addr: str, request: int | None, text: str, detail: str = "") -> None:
        self.text = text
        super().__init__(addr, request, detail)

    @property
    def reason(self) -> str:
        return self.text


class Pending(ServerFailure):
    """Sent, but the command was interrupted (Ctrl-C) before this target answered: the
    write may or may not have been applied there."""

    kind = "pending"
    answered = False

    @property
    def reason(self) -> str:
        return "no answer yet (interrupted): the write may or may not have been applied"


class Skipped(ServerFailure):
    """The request was never sent to this target because an earlier step failed."""

    kind = "skipped"
    answered = False

    def __init__(self, addr: str, request: int | None, text: str, detail: str = "") -> None:
        self.text = text
        super().__init__(addr, request, detail)

    @property
    def reason(self) -> str:
        return f"not sent: {self.text}"
