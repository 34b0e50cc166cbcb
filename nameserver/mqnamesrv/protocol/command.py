"""The RemotingCommand: one request or response, independent of its serialization."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Mapping

from .codes import FLAG_ONEWAY, FLAG_RESPONSE, VERSION_V4_9_8, SerializeType


@dataclass(slots=True)
class RemotingCommand:
    """One remoting command as it travels in a frame. Treat it as immutable (build a new
    one, or ``with_opaque``); it is not a frozen dataclass only because two are built
    per request on the server's hot path, and a frozen one costs four times as much.

    ``ext`` is ``None`` when the header carries no ``extFields`` at all and ``{}``
    when it carries an empty map: Java tells the two apart (it skips header
    validation for the first, and writes ``"extFields":{}`` for the second).
    ``language`` keeps the sender's name as a string so that languages newer than
    this table (Go, Rust, Node clients) survive a round trip.
    """

    code: int
    language: str = "JAVA"
    version: int = VERSION_V4_9_8
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext: Mapping[str, str] | None = None
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def ext_get(self, key: str) -> str | None:
        return None if self.ext is None else self.ext.get(key)

    def with_opaque(self, opaque: int) -> RemotingCommand:
        return replace(self, opaque=opaque)

    def response(
        self,
        code: int,
        *,
        remark: str | None = None,
        ext: Mapping[str, str] | None = None,
        body: bytes = b"",
        version: int = VERSION_V4_9_8,
    ) -> RemotingCommand:
        """Build the answer to this request the way the Java server does.

        A fresh command: opaque copied, flag exactly RESPONSE (the one-way bit is not
        carried over), language JAVA, the server's own version and the request's
        serialization (4.9.8 mirrors it).
        """
        return RemotingCommand(
            code=code,
            language="JAVA",
            version=version,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext=ext,
            body=body,
            serialize_type=self.serialize_type,
        )


_opaque_counter = itertools.count()


def next_opaque() -> int:
    """Process-wide request id, like Java's RemotingCommand.requestId counter."""
    return next(_opaque_counter) & 0x7FFFFFFF


def request(
    code: int,
    ext: Mapping[str, str] | None = None,
    body: bytes = b"",
    *,
    oneway: bool = False,
    version: int = VERSION_V4_9_8,
    language: str = "JAVA",
    serialize_type: SerializeType = SerializeType.JSON,
    opaque: int | None = None,
) -> RemotingCommand:
    """A request as a Java 4.9.8 client would build it (version 409, JSON header)."""
    return RemotingCommand(
        code=code,
        language=language,
        version=version,
        opaque=next_opaque() if opaque is None else opaque,
        flag=FLAG_ONEWAY if oneway else 0,
        ext=None if ext is None else dict(ext),
        body=body,
        serialize_type=serialize_type,
    )


__all__ = ["RemotingCommand", "request", "next_opaque"]
