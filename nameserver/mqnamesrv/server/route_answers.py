"""Whole encoded answers to route queries, reused for the same request with another opaque.

A client polls every topic every 30 s with a request that differs from its last one for
that topic only in the opaque. Decoding that header, dispatching and encoding the answer
cost ~10 us a request in Python, most of a route query's CPU. So the first answer to a
GET_ROUTEINFO_BY_TOPIC is kept, keyed by the request's header bytes with the opaque's
digits cut out, as the answer's frame cut at its opaque; the same request again is
answered by splicing the new opaque's digits back in, without decoding anything. A frame
is cut once (``cut_opaque``): the cut looks up the answer and, on a miss, keeps the one
computed the plain way.

Identical bytes parse identically, so the key decides the answer as long as the state it
was computed from is unchanged: the caller passes an ``epoch`` (the generations of the
routes, the KV store and the config) and every answer is dropped when it moves.
"""

from __future__ import annotations

import re
import struct
from typing import Hashable

from ..protocol.codes import RequestCode, SerializeType
from ..protocol.command import RemotingCommand

#: Java's RemotingCommand writes ``"opaque":<int>``; a canonical decimal (no leading
#: zero, no space, no exponent) is the only form spliced back unchanged.
_OPAQUE = re.compile(rb'"opaque":(-?(?:0|[1-9][0-9]{0,9}))(?=[,}])')
_OPAQUE_KEY = b'"opaque":'
_PREFIX = struct.Struct(">Ii")
#: the field after the frame length: the serialize type (high byte) and the header length
_TYPE_AND_HEADER_LENGTH = struct.Struct(">I")
_INT32 = range(-0x80000000, 0x80000000)


#: (a request's header without its opaque's digits, the digits): the key and the splice
Cut = tuple[bytes, bytes]


def cut_opaque(payload: bytes) -> Cut | None:
    """A frame's ``payload`` (what follows its length field) cut at its opaque, or None
    when it cannot be answered from a kept frame: not a JSON header without a body, or
    no single canonical top-level-looking opaque (then it is decoded the plain way)."""
    # Only a JSON header with no body: with the type byte 0 (JSON), the field read whole
    # is the header length, which must be all the rest.
    if len(payload) < 4 or _TYPE_AND_HEADER_LENGTH.unpack_from(payload)[0] != len(payload) - 4:
        return None
    header = payload[4:]
    match = _OPAQUE.search(header)
    if match is None or header.count(_OPAQUE_KEY) != 1:
        return None
    digits = match.group(1)
    if len(digits) >= 10 and int(digits) not in _INT32:
        return None  # the plain decode refuses it, with the error it deserves
    start, end = match.span(1)
    return header[:start] + header[end:], digits


class RouteAnswers:
    """The answers, bounded by ``limit`` entries (cleared when full: the topics a
    fleet's clients poll come back within one poll interval)."""

    __slots__ = ("_answers", "_pieces", "_epoch", "limit")

    def __init__(self, limit: int) -> None:
        #: key -> (response code, header before the digits, header after them, body)
        self._answers: dict[bytes, tuple[int, bytes, bytes, bytes]] = {}
        #: the header pieces, shared: every SUCCESS answer has the same two
        self._pieces: dict[bytes, bytes] = {}
        self._epoch: Hashable = None
        self.limit = limit

    def __len__(self) -> int:
        return len(self._answers)

    def answer(self, cut: Cut, epoch: Hashable) -> tuple[int, bytes] | None:
        """(response code, the whole answer frame) for a request ``cut`` by ``cut_opaque``,
        or None when it must be decoded and handled."""
        if epoch != self._epoch:
            self._answers.clear()
            self._pieces.clear()
            self._epoch = epoch
            return None
        entry = self._answers.get(cut[0])
        if entry is None:
            return None
        code, head, tail, body = entry
        digits = cut[1]
        header_len = len(head) + len(digits) + len(tail)
        return code, b"".join((_PREFIX.pack(4 + header_len + len(body), header_len), head, digits, tail, body))

    def remember(self, cut: Cut, request: RemotingCommand, response: RemotingCommand, frame: bytes,
                 epoch: Hashable) -> None:
        """Keep ``frame``, the encoded ``response`` to ``request`` (whose frame ``cut_opaque``
        cut), if a later request differing only in its opaque may reuse it."""
        if epoch != self._epoch or request.code != RequestCode.GET_ROUTEINFO_BY_TOPIC or request.body or \
                request.serialize_type != SerializeType.JSON or request.is_oneway or request.is_response:
            return
        if cut[1] != str(request.opaque).encode():
            return  # the cut did not find the opaque the decoder read
        header_len = int.from_bytes(frame[5:8], "big")
        header = frame[8:8 + header_len]
        marker = _OPAQUE_KEY + cut[1]
        at = header.find(marker)
        if at < 0 or header.count(_OPAQUE_KEY) != 1 or frame[8 + header_len:] != response.body:
            return
        if len(self._answers) >= self.limit:
            self._answers.clear()
        split = at + len(_OPAQUE_KEY)
        head = self._pieces.setdefault(header[:split], header[:split])
        tail = self._pieces.setdefault(header[split + len(cut[1]):], header[split + len(cut[1]):])
        self._answers[cut[0]] = (response.code, head, tail, response.body)


__all__ = ["Cut", "RouteAnswers", "cut_opaque"]
