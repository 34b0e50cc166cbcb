"""Protocol errors, split by who broke the protocol (h11's convention)."""

from __future__ import annotations


class ProtocolError(Exception):
    """Base of every error raised while encoding or decoding remoting frames."""


class LocalProtocolError(ProtocolError):
    """We were asked to send something the protocol cannot carry: a bug on our side."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes that are not a valid frame; the connection cannot continue."""


class BodyDecodeError(ProtocolError):
    """A body did not parse as the structure its request code promises.

    Unlike a frame error this does not desynchronise the connection: the server
    answers SYSTEM_ERROR and keeps reading, as the Java processors do.
    """
