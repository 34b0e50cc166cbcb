"""Remoting frames: ``length(4) | type<<24 | headerLength(4) | header | body``.

``FrameDecoder`` is sans-IO in the manner of h11: ``feed()`` only buffers,
``next_frame()`` returns a command or ``NEED_DATA``. It never reads a socket.
"""

from __future__ import annotations

import struct
from typing import Final

import orjson

from .codes import SerializeType
from .command import RemotingCommand
from .errors import LocalProtocolError, RemoteProtocolError
from .header import decode_binary_header, decode_json_header, encode_header

#: Java's com.rocketmq.remoting.frameMaxLength; it counts the 4-byte length field too.
DEFAULT_MAX_FRAME = 16 * 1024 * 1024
#: No client sends headers near this (a registration header is ~300 bytes); the bound
#: keeps a peer from making us parse megabytes of ext map.
DEFAULT_MAX_HEADER = 256 * 1024

#: A frame at least this long is read into a buffer of its own, sized once its length is
#: known (``big_buffer``): a server reads a registration's 1.5 MB straight from the socket
#: into it, instead of copying each chunk into the shared buffer (which regrows), then out.
BIG_FRAME = 256 * 1024
#: ...once this part of it has arrived (1/8): a peer must send an eighth of what it
#: announces before that much memory is set aside for it.
BIG_FRAME_SHARE = 8

_U32 = struct.Struct(">I")
_SERIALIZE_TYPES = {t.value: t for t in SerializeType}
_PREFIX = struct.Struct(">Ii")


class _NeedData:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()


def encode(cmd: RemotingCommand) -> bytes:
    """Serialize a command into one frame, header in ``cmd.serialize_type``."""
    header = encode_header(
        cmd.serialize_type, cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext
    )
    if len(header) > 0xFFFFFF:
        raise LocalProtocolError(f"header of {len(header)} bytes exceeds the 24-bit length field")
    body = cmd.body or b""
    return b"".join(
        (_PREFIX.pack(4 + len(header) + len(body), (int(cmd.serialize_type) << 24) | len(header)), header, body)
    )


def decode_payload(payload: bytes | bytearray) -> RemotingCommand:
    """Decode what follows the length field: type/header-length word, header, body."""
    size = len(payload)
    if size < 4:
        raise RemoteProtocolError(f"frame of {size} bytes has no header-length word")
    (word,) = _U32.unpack_from(payload, 0)
    stype = word >> 24
    header_len = word & 0xFFFFFF
    if header_len > size - 4:
        raise RemoteProtocolError(f"header length {header_len} exceeds the frame ({size - 4} bytes left)")
    header_bytes = bytes(payload[4:4 + header_len])  # a header, never big: bytes of bytes is no copy
    if stype == SerializeType.JSON:
        fields = decode_json_header(header_bytes)
    elif stype == SerializeType.ROCKETMQ:
        fields = decode_binary_header(header_bytes)
    else:
        raise RemoteProtocolError(f"unknown serialization type {stype}")
    with memoryview(payload) as view:  # one copy of the body, whatever buffer holds it
        body = bytes(view[4 + header_len:])
    return RemotingCommand(body=body, serialize_type=_SERIALIZE_TYPES[stype], **fields)


_JSON = int(SerializeType.JSON)
_INT_MAX = 0x7FFFFFFF


def decode_reply(payload: bytes | bytearray) -> RemotingCommand:
    """``decode_payload(payload)``, about three times faster for the headers answers carry.

    Clients read thousands of answers a second (the route pump, the bench); nearly all
    have a standard JSON header with int fields and string ext values. For those the
    header is read with one ``orjson.loads`` and no per-field conversion; anything else
    (ROCKETMQ headers, fastjson's dialect, numbers as strings, odd types) goes through
    ``decode_payload``, so the result is always the one ``decode_payload`` gives
    (``tests/protocol/test_decode_reply.py`` holds the two equal over every golden
    capture). Raises RemoteProtocolError like ``decode_payload``.
    """
    cmd = decode_plain_json(payload)
    return decode_payload(payload) if cmd is None else cmd


def decode_plain_json(payload: bytes | bytearray) -> RemotingCommand | None:
    """The fast path of ``decode_reply``: None unless the header is standard JSON whose
    fields need no conversion (ints in Java's int range, strings, string ext values)."""
    size = len(payload)
    if size < 4 or payload[0] != _JSON:
        return None
    header_end = 4 + (_U32.unpack_from(payload, 0)[0] & 0xFFFFFF)
    if header_end > size:
        return None
    try:
        head = orjson.loads(payload[4:header_end])
    except orjson.JSONDecodeError:
        return None
    if type(head) is not dict:
        return None
    get = head.get
    code, opaque, flag, version = get("code", 0), get("opaque", 0), get("flag", 0), get("version", 0)
    language, remark, ext = get("language", "JAVA"), get("remark"), get("extFields")
    # ``type(x) is int`` refuses bools. The range is Java's int, as ``_as_int`` checks, in
    # one comparison: the OR of non-negative ints within it stays within it, and a negative
    # one (legal, but no Java peer sends it) makes the OR negative: the codec's path then.
    if (type(code) is int and type(opaque) is int and type(flag) is int and type(version) is int
            and 0 <= (code | opaque | flag | version) <= _INT_MAX
            and type(language) is str and (remark is None or type(remark) is str)
            and (ext is None or (type(ext) is dict and all(type(v) is str for v in ext.values())))):
        return RemotingCommand(code, language, version, opaque, flag, remark, ext, bytes(payload[header_end:]))
    return None


def decode(frame: bytes) -> RemotingCommand:
    """Decode exactly one whole frame (length prefix included); for tests and captures."""
    dec = FrameDecoder(max_frame=max(DEFAULT_MAX_FRAME, len(frame)))
    dec.feed(frame)
    cmd = dec.next_frame()
    if cmd is NEED_DATA:
        raise RemoteProtocolError(f"incomplete frame: {len(frame)} bytes")
    if dec.buffered:
        raise RemoteProtocolError(f"{dec.buffered} bytes after the frame")
    assert isinstance(cmd, RemotingCommand)
    return cmd


class FrameDecoder:
    """Buffers bytes and cuts them into commands.

    The length is checked as soon as its four bytes arrive, so a peer announcing a
    2 GiB frame is refused before anything is buffered (h11's bound on incomplete input).
    After a RemoteProtocolError the stream is out of sync; the caller must close it.
    """

    __slots__ = ("_buf", "_max_frame", "_max_header", "_big", "_big_filled")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, max_header: int = 0xFFFFFF) -> None:
        self._buf = bytearray()
        self._max_frame = max_frame
        self._max_header = max_header
        #: the payload of a big frame being read (see ``big_buffer``), and how much of it has
        #: arrived; the bytes in ``_buf`` come after it
        self._big: bytearray | None = None
        self._big_filled = 0

    @property
    def buffered(self) -> int:
        return len(self._buf) + (0 if self._big is None else 4 + self._big_filled)

    @property
    def in_frame(self) -> bool:
        """True while part of a frame is buffered: the peer owes us the rest."""
        return bool(self._buf) or self._big is not None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        big = self._big
        if big is not None and self._big_filled < len(big):
            take = min(len(big) - self._big_filled, len(data))
            big[self._big_filled:self._big_filled + take] = memoryview(data)[:take]
            self._big_filled += take
            if take == len(data):
                return
            data = memoryview(data)[take:]
        self._buf += data

    def small_frames(self) -> bytearray | None:
        """The buffered bytes, for a reader that cuts whole frames in place (checking each
        against the decoder's bounds, ``max_frame`` and ``max_header``) and then
        ``consume``s them; None while a big frame is under way (its bytes come first)."""
        return self._buf if self._big is None else None

    @property
    def max_frame(self) -> int:
        return self._max_frame

    @property
    def max_header(self) -> int:
        return self._max_header

    def consume(self, nbytes: int) -> None:
        """Forget the first ``nbytes`` of ``small_frames()``: whole frames, handled."""
        del self._buf[:nbytes]

    def big_buffer(self) -> memoryview | None:
        """Where the rest of the big frame being read should go, straight from the socket
        (``asyncio.BufferedProtocol.get_buffer``; then ``big_filled``); None: nowhere of
        its own, ``feed`` the bytes. Only ``next_payload`` starts a big frame, once its
        length and header length are known to be within bounds."""
        big = self._big
        return None if big is None or self._big_filled == len(big) else memoryview(big)[self._big_filled:]

    def big_filled(self, nbytes: int) -> None:
        """``nbytes`` more of the big frame were written into ``big_buffer()``."""
        assert self._big is not None and self._big_filled + nbytes <= len(self._big)
        self._big_filled += nbytes

    def next_frame(self) -> RemotingCommand | _NeedData:
        payload = self.next_payload()
        return NEED_DATA if payload is NEED_DATA else decode_payload(payload)  # type: ignore[arg-type]

    def next_payload(self) -> bytes | bytearray | _NeedData:
        """The next whole frame without its length field, undecoded, or NEED_DATA. A big
        frame comes as the bytearray it was read into (no copy; the decoder lets go of it)."""
        big = self._big
        if big is not None:
            if self._big_filled < len(big):
                return NEED_DATA
            self._big = None
            return big
        buf = self._buf
        end = self._frame_end(buf, 0)
        if not end:
            self._start_big(buf)
            return NEED_DATA
        payload = bytes(memoryview(buf)[4:end])
        del buf[:end]
        return payload

    def _start_big(self, buf: bytearray) -> None:
        """Move the incomplete frame at the head of ``buf`` (its bounds checked already,
        by ``_frame_end``) into a buffer of its own size, if it is big enough."""
        if len(buf) < 8:
            return
        (length,) = _U32.unpack_from(buf, 0)
        if length < BIG_FRAME or len(buf) * BIG_FRAME_SHARE < length:
            return
        big = bytearray(length)
        have = len(buf) - 4
        with memoryview(buf) as view:
            big[:have] = view[4:]
        buf.clear()
        self._big, self._big_filled = big, have

    def payloads(self) -> list[bytes]:
        """Every whole frame buffered, in order, without length fields, undecoded.

        For clients that read answers by the thousand (``mqnamesrv.remoting``): one call
        and one buffer trim per chunk instead of per frame. A frame out of bounds raises
        RemoteProtocolError, after the frames before it have been returned.
        """
        buf, out, pos, size = self._buf, [], 0, len(self._buf)
        max_frame, max_header = self._max_frame, self._max_header
        with memoryview(buf) as view:
            try:
                # The bounds of ``_frame_end``, spelled out for the common case (a whole
                # frame within bounds): a call per frame costs as much as the cut itself.
                while size - pos >= 8:
                    (length,) = _U32.unpack_from(buf, pos)
                    end = pos + 4 + length
                    if (end > size or length + 4 > max_frame or length < 4
                            or (buf[pos + 5] << 16 | buf[pos + 6] << 8 | buf[pos + 7]) > max_header):
                        self._frame_end(buf, pos)  # raises, or says the frame is incomplete
                        break
                    out.append(bytes(view[pos + 4:end]))
                    pos = end
                else:
                    self._frame_end(buf, pos)  # fewer than 8 bytes left: a bad length still raises
            except RemoteProtocolError:
                if not out:
                    raise
        del buf[:pos]
        return out

    def _frame_end(self, buf: bytearray, pos: int) -> int:
        """Where the frame starting at ``pos`` ends, 0 while it is incomplete. Raises
        RemoteProtocolError as soon as its length (or header length) is out of bounds."""
        avail = len(buf) - pos
        if avail < 4:
            return 0
        (length,) = _U32.unpack_from(buf, pos)
        # The limit includes the length field itself (Java's LengthFieldBasedFrameDecoder).
        if length + 4 > self._max_frame:
            raise RemoteProtocolError(f"frame length {length} exceeds the limit of {self._max_frame} bytes")
        if length < 4:
            raise RemoteProtocolError(f"frame length {length} is shorter than the header-length word")
        if avail >= 8 and (header := buf[pos + 5] << 16 | buf[pos + 6] << 8 | buf[pos + 7]) > self._max_header:
            raise RemoteProtocolError(f"header length {header} exceeds the limit of {self._max_header} bytes")
        end = pos + 4 + length
        return end if length <= avail - 4 else 0
