"""Remoting frames: ``length(4) | type<<24 | headerLength(4) | header | body``.

``FrameDecoder`` is sans-IO in the manner of h11: ``feed()`` only buffers,
``next_frame()`` returns a command or ``NEED_DATA``. It never reads a socket.
"""

from __future__ import annotations

import struct
from typing import Final

from .codes import SerializeType
from .command import RemotingCommand
from .errors import LocalProtocolError, RemoteProtocolError
from .header import decode_binary_header, decode_json_header, encode_header

#: Java's com.rocketmq.remoting.frameMaxLength; it counts the 4-byte length field too.
DEFAULT_MAX_FRAME = 16 * 1024 * 1024
#: No client sends headers near this (a registration header is ~300 bytes); the bound
#: keeps a peer from making us parse megabytes of ext map.
DEFAULT_MAX_HEADER = 256 * 1024

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


def decode_payload(payload: bytes) -> RemotingCommand:
    """Decode what follows the length field: type/header-length word, header, body."""
    size = len(payload)
    if size < 4:
        raise RemoteProtocolError(f"frame of {size} bytes has no header-length word")
    (word,) = _U32.unpack_from(payload, 0)
    stype = word >> 24
    header_len = word & 0xFFFFFF
    if header_len > size - 4:
        raise RemoteProtocolError(f"header length {header_len} exceeds the frame ({size - 4} bytes left)")
    header_bytes = payload[4:4 + header_len]
    if stype == SerializeType.JSON:
        fields = decode_json_header(header_bytes)
    elif stype == SerializeType.ROCKETMQ:
        fields = decode_binary_header(header_bytes)
    else:
        raise RemoteProtocolError(f"unknown serialization type {stype}")
    return RemotingCommand(
        body=bytes(payload[4 + header_len:]), serialize_type=_SERIALIZE_TYPES[stype], **fields
    )


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

    __slots__ = ("_buf", "_max_frame", "_max_header")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, max_header: int = 0xFFFFFF) -> None:
        self._buf = bytearray()
        self._max_frame = max_frame
        self._max_header = max_header

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def in_frame(self) -> bool:
        """True while part of a frame is buffered: the peer owes us the rest."""
        return bool(self._buf)

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_frame(self) -> RemotingCommand | _NeedData:
        payload = self.next_payload()
        return payload if isinstance(payload, _NeedData) else decode_payload(payload)

    def next_payload(self) -> bytes | _NeedData:
        """The next whole frame undecoded (what follows its length field), for callers
        that may answer it without decoding it (``decode_payload`` does the rest)."""
        buf = self._buf
        if len(buf) < 4:
            return NEED_DATA
        (length,) = _U32.unpack_from(buf, 0)
        # The limit includes the length field itself (Java's LengthFieldBasedFrameDecoder).
        if length + 4 > self._max_frame:
            raise RemoteProtocolError(f"frame length {length} exceeds the limit of {self._max_frame} bytes")
        if length < 4:
            raise RemoteProtocolError(f"frame length {length} is shorter than the header-length word")
        if len(buf) >= 8 and (buf[5] << 16 | buf[6] << 8 | buf[7]) > self._max_header:
            raise RemoteProtocolError(
                f"header length {buf[5] << 16 | buf[6] << 8 | buf[7]} exceeds the limit of {self._max_header} bytes"
            )
        end = 4 + length
        if len(buf) < end:
            return NEED_DATA
        payload = bytes(memoryview(buf)[4:end])
        del buf[:end]
        return payload
