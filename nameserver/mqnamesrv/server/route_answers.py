"""Whole encoded answers to route queries, reused for the same request with another opaque.

A client polls every topic every 30 s with a request that differs from its last one for
that topic only in the opaque. Decoding that header, dispatching and encoding the answer
cost ~10 us a request in Python, most of a route query's CPU. So the first answer to a
GET_ROUTEINFO_BY_TOPIC is kept, keyed by the request's header bytes with the opaque's
digits cut out, as the answer's frame cut at its opaque; the same request again is
answered by splicing the new opaque's digits back in, without decoding anything. A frame
no kept answer matches is decoded, cut once (``cut_opaque``) to keep the answer computed
the plain way.

Identical bytes parse identically, so the key decides the answer as long as the state it
was computed from is unchanged. Each answer is kept with what it was computed from: its
topic and the topic's queue map (whose brokers' groups and filter servers the route
lists). The caller drops the answers of the topics and brokers a write touched
(``drop``), or all of them (``clear``) when it cannot tell (a config change, tables
replaced wholesale).

A topic's first query since a write is also answered undecoded once its *form* is known:
the request's bytes without the opaque's digits and the topic's characters, learnt from
one request of that form that was decoded (``cut_topic``, ``form_holds``). And a read's
frames are cut in the decoder's buffer in one call (``RouteAnswers.run``), not one call
per frame; the first frame that must be decoded ends the run. A client asks its topics
in one form, so the run tries the form last answered from first: two compares where
``cut_topic`` scans the header four times (``in_last_form``).
"""

from __future__ import annotations

import queue
import re
import struct
import threading
import time
from typing import AbstractSet, Any, Callable, Collection, Hashable, Iterable

from ..protocol.codes import RequestCode, ResponseCode, SerializeType
from ..protocol.command import RemotingCommand
from ..protocol.errors import ProtocolError
from ..protocol.frame import decode_payload

#: Java's RemotingCommand writes ``"opaque":<int>``; a canonical decimal (no leading
#: zero, no space, no exponent, no "-0") is the only form spliced back unchanged.
_DIGITS = re.compile(rb"(?:0|-?[1-9][0-9]{0,9})(?=[,}])")
_OPAQUE_KEY = b'"opaque":'
_AFTER_KEY = len(_OPAQUE_KEY)
_PREFIX = struct.Struct(">Ii")
#: a frame's length and the word after it (serialize type and header length)
_PREFIX_WORDS = struct.Struct(">II")
#: the field after the frame length: the serialize type (high byte) and the header length
_TYPE_AND_HEADER_LENGTH = struct.Struct(">I")
_INT32 = range(-0x80000000, 0x80000000)
#: the answers worth keeping: a route, or "no such topic" (anything else is rare, or a bug)
_KEPT_CODES = frozenset({ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST})
#: (a plain int: an enum member is an object the cyclic GC tracks, and so would the entry be)
_SUCCESS = int(ResponseCode.SUCCESS)


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
    at = payload.find(_OPAQUE_KEY, 4)
    if at < 0 or payload.find(_OPAQUE_KEY, at + _AFTER_KEY) >= 0:
        return None  # none, or more than one: the plain decode tells which one counts
    start = at + _AFTER_KEY
    match = _DIGITS.match(payload, start)
    if match is None:
        return None
    digits = match.group()
    if len(digits) >= 10 and int(digits) not in _INT32:
        return None  # the plain decode refuses it, with the error it deserves
    return payload[4:start] + payload[match.end():], digits


#: A route query's topic field as every client writes it, and the characters RocketMQ allows
#: in a topic name (``TopicValidator``): a value of these alone needs no escaping in JSON.
_TOPIC_NAME = b'"topic"'
_TOPIC_FIELD = b'"topic":"'
_TOPIC_VALUE = re.compile(rb"[%|a-zA-Z0-9_-]+")
#: the most request forms kept (cleared when full): a fleet's clients write a handful
FORM_LIMIT = 1024
#: what is learnt of a form that did not prove to read as form plus topic (``form_holds``)
REFUSED = "refused"


def cut_topic(key: bytes) -> tuple[bytes, str] | None:
    """A cut request's ``key`` (``cut_opaque``) without its topic's characters, and the
    topic; None when the topic cannot be cut out safely (then it is decoded the plain way).

    Route queries from one client differ in their opaque and their topic only; with
    both cut out, the rest (its form) says everything else the answer depends on, so
    an answer for a topic not asked for before needs no decode either
    (``RouteAnswers.form``). Cut only where no byte can mean anything else: no escape
    anywhere in the header (so every ``"topic"`` is a whole string token), exactly one
    such token (so no other topic field can be the one read), written ``"topic":"``
    (a key whose value is a string) and a value of topic characters only (nothing in
    it can end or escape the string). Whether those characters are the topic the server
    reads is proven once per form, by decoding the request with another topic in their
    place (``form_holds``)."""
    if b"\\" in key or b"'" in key or key.count(_TOPIC_NAME) != 1:
        return None
    at = key.find(_TOPIC_FIELD)
    if at < 0:
        return None
    start = at + len(_TOPIC_FIELD)
    end = key.find(b'"', start)
    if end < 0 or _TOPIC_VALUE.fullmatch(key, start, end) is None:
        return None
    return key[:start] + key[end:], key[start:end].decode("ascii")


def form_holds(cut: Cut, formed: tuple[bytes, str], cmd: RemotingCommand) -> bool:
    """Whether every request of ``cmd``'s form reads as ``cmd`` with its own topic: the
    request (``cut`` and ``formed`` from its frame, ``cmd`` decoded from it) decoded
    again with another topic in the place ``cut_topic`` found must differ from ``cmd``
    in its ext topic alone. Topic characters parse alike wherever they stand, so what
    holds for that other topic holds for every one; a place that only looked like the
    topic field (inside a fastjson single-quoted string, say) changes something else."""
    form, topic = formed
    if cmd.ext is None or cmd.ext.get("topic") != topic:
        return False
    other = topic + "_x"
    start = form.index(_TOPIC_FIELD) + len(_TOPIC_FIELD)
    header = form[:start] + other.encode() + form[start:]
    at = header.find(_OPAQUE_KEY) + _AFTER_KEY  # the opaque's digits, where cut_opaque found them
    header = header[:at] + cut[1] + header[at:]
    try:
        probe = decode_payload(len(header).to_bytes(4, "big") + header)
    except ProtocolError:
        return False
    return probe.ext is not None and probe.ext.get("topic") == other and \
        {**probe.ext, "topic": topic} == cmd.ext and \
        (probe.code, probe.language, probe.version, probe.opaque, probe.flag, probe.remark, probe.serialize_type,
         probe.body) == (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.serialize_type,
                         cmd.body)


def answer_frame(head: bytes, digits: bytes, tail: bytes, body: bytes) -> bytes:
    """An answer's frame: its header ``head``, the request's opaque ``digits`` and ``tail``,
    then ``body``. (``RouteAnswers.run`` spells it out for a kept answer: it runs for each.)"""
    header_len = len(head) + len(digits) + len(tail)
    return b"".join((_PREFIX.pack(4 + header_len + len(body), header_len), head, digits, tail, body))


#: A write touching at least this many topics (a broker joining, leaving or re-registering
#: all its topics, a write-perm rewrite) drops every kept answer instead of its own: on a
#: 4 x 10^4-topic fleet, dropping a 10^4-topic broker's answers one by one held the loop
#: 12-26 ms (a dict pop and the frees of three objects each), past issue #19's ~10 ms; the
#: others are built again from their form at their next query (~3 us each, spread out).
DROP_ALL_AT = 4096


def _release(*garbage: dict[Any, Any]) -> None:
    """Free ``garbage`` (dicts no one else holds) away from the caller, a few entries at
    a time: 4 x 10^4 kept answers took 10-40 ms to free in one C call on the event loop.
    Freed by a thread of its own, entry by entry in chunks with a pause after each, so
    the loop's thread gets the GIL back within one chunk and mostly has it."""
    global _releaser
    with _releaser_lock:
        if _releaser is None or not _releaser.is_alive():
            _releaser = threading.Thread(target=_free_forever, name="route-answers-release", daemon=True)
            _releaser.start()
    _discarded.put(garbage)


def _free_forever() -> None:
    while True:
        garbage = _discarded.get()
        for table in garbage:
            while table:
                for _ in range(min(len(table), _RELEASE_CHUNK)):
                    table.popitem()
                time.sleep(_RELEASE_PAUSE)  # the GIL back to the loop, which comes first
        del garbage


#: entries freed at a time (~0.3-0.5 ms), then a pause for the event loop's thread
_RELEASE_CHUNK = 1024
_RELEASE_PAUSE = 0.001


_discarded: queue.SimpleQueue[tuple[dict[Any, Any], ...]] = queue.SimpleQueue()
_releaser: threading.Thread | None = None
_releaser_lock = threading.Lock()


#: what a kept answer was computed from: its topic, and the topic's queue map then, or its
#: broker names (None: the topic had none), which lead to the groups the route lists
Source = tuple[str, Iterable[str] | None]


class RouteAnswers:
    """The answers, bounded by ``limit`` entries (cleared when full: the topics a
    fleet's clients poll come back within one poll interval)."""

    __slots__ = ("_answers", "_by_topic", "_forms", "_last_form", "_pieces", "limit", "misses", "formed", "_builders")

    def __init__(self, limit: int) -> None:
        #: key -> (response code, header before the digits, header after them, body,
        #: the header's length without the digits, and what it was computed from: topic,
        #: the broker names of its queue map), flat: 40,000 kept answers are 40,000 of
        #: these, none of which the cyclic GC walks (``keep``)
        self._answers: dict[bytes, tuple[int, bytes, bytes, bytes, int, str, tuple[str, ...] | None]] = {}
        #: topic -> the key of its answer, or the keys of its answers in several client dialects
        self._by_topic: dict[str, bytes | tuple[bytes, ...]] = {}
        #: the header pieces, shared: every SUCCESS answer has the same two
        self._pieces: dict[bytes, bytes] = {}
        #: a request's form (``cut_topic``) -> what the answers for any topic in that form
        #: depend on besides the topic, as the processor read it from one decoded request
        self._forms: dict[bytes, Hashable] = {}
        #: the form last answered from (``use_form``), as the bytes before and after its
        #: topic, and what was learnt of it: a client's next first query is most likely
        #: in it, and is then cut by two compares instead of ``cut_topic``'s scans
        #: (none yet: no cut key starts with a NUL before topic characters alone, since
        #: every one holds ``"opaque":``)
        self._last_form: tuple[bytes, bytes, Hashable] = (b"\0", b"", REFUSED)
        self.limit = limit
        #: lookups that found nothing kept (a cheap counter: a miss costs far more anyway)
        self.misses = 0
        #: answers built from a form and a topic, undecoded (``run``'s and the caller's)
        self.formed = 0
        #: what ``run`` builds a missing answer with (``build_with``); none: it is decoded
        self._builders: tuple[Callable[[Cut], bytes | None],
                              Callable[[str, Hashable], tuple[bytes, tuple[str, ...]] | None],
                              tuple[bytes, bytes]] | None = None

    def build_with(self, formed: Callable[[Cut], bytes | None],
                   body_for: Callable[[str, Hashable], tuple[bytes, tuple[str, ...]] | None],
                   route_header: tuple[bytes, bytes]) -> None:
        """How ``run`` answers a query no kept answer matches: in the form last answered
        from, from ``body_for`` (a topic's route body for a request of that form and the
        queue map it was computed from, or None) and ``route_header`` (the two pieces
        every route answer's header has); in any other form by ``formed`` (an answer
        frame, or None). Set once, not passed at every run (two bound methods made per
        read: a fifth of a run's fixed cost)."""
        self._builders = (formed, body_for, route_header)

    def __len__(self) -> int:
        return len(self._answers)

    def answer(self, cut: Cut) -> tuple[int, bytes] | None:
        """(response code, the whole answer frame) for a request ``cut`` by ``cut_opaque``,
        or None when it must be decoded and handled: one frame's lookup (``run`` makes it
        for a whole read)."""
        entry = self._answers.get(cut[0])
        if entry is None:
            self.misses += 1
            return None
        return entry[0], answer_frame(entry[1], cut[1], entry[2], entry[3])

    def run(self, buf: bytearray, room: int, max_frame: int, max_header: int,
            size: int | None = None) -> tuple[list[bytes], int, int, int, int]:
        """Answers to the route queries at the head of ``buf`` (a decoder's ``small_frames``),
        cut in place, from kept answers or, on a miss, from their form (``build_with``):
        the loop ``cut_opaque`` and ``answer`` make per frame, in one call for a whole read.
        Stops before the first frame that must be decoded, or one out of bounds (the
        decoder refuses it), incomplete, or once ``room`` bytes of answers are made.
        ``size``: only the first ``size`` bytes of ``buf`` are frames (a read buffer).
        Returns (the answer frames, their bytes, the bytes of ``buf`` they answered, the
        kept ones used, the answers that are TOPIC_NOT_EXIST); the caller consumes those
        bytes of ``buf``."""
        answers, by_topic, out = self._answers, self._by_topic, []
        pos = used = hits = not_found = 0
        if size is None:
            size = len(buf)
        unpack, find, match_digits = _PREFIX_WORDS.unpack_from, buf.find, _DIGITS.match
        # (What only a miss uses is looked up there: most runs have none.)
        with memoryview(buf) as view:
            while size - pos >= 8 and used < room:
                length, header_len = unpack(buf, pos)
                end = pos + 4 + length
                # a JSON header with no body, within the bounds (as cut_opaque and _frame_end)
                if end > size or header_len != length - 4 or length < 4 or length + 4 > max_frame or \
                        header_len > max_header:
                    break
                at = find(_OPAQUE_KEY, pos + 8, end)
                if at < 0:
                    break
                start = at + _AFTER_KEY
                match = match_digits(buf, start, end)
                if match is None:
                    break
                digits = match.group()
                if len(digits) >= 10 and int(digits) not in _INT32:
                    break
                key = b"".join((view[pos + 8:start], view[start + len(digits):end]))
                entry = answers.get(key)
                if entry is None:
                    # A second opaque is looked for on a miss only: every kept key holds
                    # exactly one ``"opaque":``, right before where its digits were cut
                    # (cut_opaque's check, or this one, came first), so a header cut at its
                    # first one to an equal key has that one alone (digits and what followed
                    # them hold none).
                    if find(_OPAQUE_KEY, start, end) >= 0:
                        break
                    # A topic's first query since a write: in the form last answered from, it
                    # is answered here from that form and its topic; otherwise by ``formed``,
                    # or decoded.
                    self.misses += 1
                    if self._builders is None:
                        break
                    formed, body_for, (route_head, route_tail) = self._builders
                    last = self.in_last_form(key)
                    built = None if last is None else body_for(*last)
                    if built is None:
                        frame = formed((key, digits))
                        if frame is None:
                            break  # decoded next
                    else:
                        # ``keep``, spelled out for a key known to be new (this is a miss)
                        body, queues = built
                        topic = last[0]  # type: ignore[index]
                        if len(answers) >= self.limit:
                            self.clear()  # new dicts in place of the full ones
                            answers, by_topic = self._answers, self._by_topic
                        keys = by_topic.get(topic)
                        by_topic[topic] = key if keys is None else \
                            (keys if isinstance(keys, tuple) else (keys,)) + (key,)
                        header_len = len(route_head) + len(route_tail)
                        answers[key] = (_SUCCESS, route_head, route_tail, body, header_len, topic, queues)
                        header_len += len(digits)
                        frame = b"".join((_PREFIX.pack(4 + header_len + len(body), header_len), route_head, digits,
                                          route_tail, body))
                        self.formed += 1
                else:
                    code, head, tail, body, fixed, _, _ = entry
                    header_len = fixed + len(digits)
                    frame = b"".join((_PREFIX.pack(4 + header_len + len(body), header_len), head, digits, tail, body))
                    hits += 1
                    if code:
                        not_found += 1
                out.append(frame)
                used += len(frame)
                pos = end
        return out, used, pos, hits, not_found

    def form(self, key: bytes) -> Hashable | None:
        """What was learnt (``learn``) of requests of the form ``key`` (``cut_topic``)."""
        return self._forms.get(key)

    def use_form(self, key: bytes, form: Hashable) -> None:
        """An answer is being built from the form ``key`` (``cut_topic``), learnt as ``form``:
        ``run`` tries it first for the next topics (``in_last_form``)."""
        if form is not REFUSED:
            at = key.index(_TOPIC_FIELD) + len(_TOPIC_FIELD)
            self._last_form = (key[:at], key[at:], form)

    def in_last_form(self, key: bytes) -> tuple[str, Hashable] | None:
        """(topic, form) when a cut request ``key`` is in the form last used (``use_form``):
        what ``cut_topic`` and ``form`` would find, by two compares instead of scans.

        Why that is the same: the form's two pieces passed ``cut_topic`` (no backslash,
        no single quote, exactly one ``"topic"`` token, the first ``"topic":"`` ending
        the first piece, which the second piece's ``"`` closes) and the topic characters
        between them hold no quote or backslash, so the key does too. The key holds
        exactly one ``"topic"`` token unless the value is "topic": the first piece holds
        the one its key had and the second none, and a token reaching into the value
        needs a quote there, or the value to be exactly ``topic`` between the pieces'
        quotes. With one, the cut finds the same field and ends at the same quote."""
        before, after, form = self._last_form
        if key.startswith(before) and key.endswith(after):
            value = key[len(before):len(key) - len(after)]
            if value and value != b"topic" and _TOPIC_VALUE.fullmatch(value) is not None:
                return value.decode("ascii"), form
        return None

    def learn(self, key: bytes, form: Hashable) -> None:
        """Requests of the form ``key`` (``cut_topic``) are answered by ``form`` and their topic.
        Forms depend on nothing the registry holds: ``clear`` keeps them."""
        if len(self._forms) >= FORM_LIMIT:
            self._forms.clear()
        self._forms[key] = form

    def remember(self, cut: Cut, request: RemotingCommand, response: RemotingCommand, frame: bytes,
                 source: Source) -> None:
        """Keep ``frame``, the encoded ``response`` to ``request`` (whose frame ``cut_opaque``
        cut), if a later request differing only in its opaque may reuse it; ``source`` is
        what it was computed from, to be dropped by."""
        if request.code != RequestCode.GET_ROUTEINFO_BY_TOPIC or request.body or response.code not in _KEPT_CODES or \
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
        split = at + _AFTER_KEY
        head = self._pieces.setdefault(header[:split], header[:split])
        tail = self._pieces.setdefault(header[split + len(cut[1]):], header[split + len(cut[1]):])
        self.keep(cut[0], response.code, head, tail, response.body, source)

    def keep(self, key: bytes, code: int, head: bytes, tail: bytes, body: bytes, source: Source) -> None:
        """Keep, for requests cut to ``key``, the answer whose frame is ``head``, the
        request's opaque digits, ``tail`` and ``body`` (``remember`` once it has checked
        that an answer may be kept; a caller that built the frame from these pieces knows).
        ``run`` spells this out for an answer it builds from its form (a new key, a SUCCESS
        code, broker names already): the call cost a first query ~0.3 us of ~3, in process."""
        if len(self._answers) >= self.limit:
            self.clear()
        topic, queues = source
        if key not in self._answers:
            keys = self._by_topic.get(topic)
            self._by_topic[topic] = key if keys is None else (keys if isinstance(keys, tuple) else (keys,)) + (key,)
        # Only the broker names are kept (what ``drop`` reads): with nothing but strings,
        # bytes and ints in it, the entry drops out of the cyclic GC's walks (a queue map is
        # a dict, which kept 4 x 10^4 entries in every full collection: ~20 ms of it).
        names = queues if queues is None or type(queues) is tuple else tuple(queues)
        self._answers[key] = (int(code), head, tail, body, len(head) + len(tail), topic, names)

    def drop(self, topics: Collection[str], brokers: Collection[str] = ()) -> None:
        """Forget the answers for ``topics``, and those of the topics whose queues named one
        of ``brokers`` (a scan of every answer: broker writes that routes show are rare);
        all of them when that is ``DROP_ALL_AT`` topics or more, or a broker among many."""
        answers, by_topic = self._answers, self._by_topic
        if not answers:
            return
        if len(topics) >= DROP_ALL_AT or (brokers and len(answers) >= DROP_ALL_AT):
            self.clear()  # (a broker named: every answer scanned, ~0.15 us each)
            return
        gone = by_topic.keys() & (topics if isinstance(topics, AbstractSet) else set(topics))
        if brokers:
            names = frozenset(brokers)
            gone.update(topic for *_, topic, queues in answers.values()
                        if queues is not None and not names.isdisjoint(queues))
        # The intersection walks the smaller side: a first registration writes 10^4
        # topics, of which only those asked for have answers to drop.
        for topic in gone:
            keys = by_topic.pop(topic)
            if isinstance(keys, tuple):
                for key in keys:
                    answers.pop(key, None)
            else:
                answers.pop(keys, None)

    def clear(self) -> None:
        """Forget every answer: new, empty tables take the place of the old ones at once,
        which are freed away from the caller (``_release``)."""
        if self._answers:
            _release(self._answers, self._by_topic)
            self._answers, self._by_topic = {}, {}
        self._pieces.clear()


__all__ = ["FORM_LIMIT", "REFUSED", "Cut", "RouteAnswers", "Source", "answer_frame", "cut_opaque", "cut_topic",
           "form_holds"]
