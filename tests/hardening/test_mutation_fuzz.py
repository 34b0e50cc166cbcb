"""20,000 mutated requests through the real codec and processor: every one is a
protocol error or an answer, never an exception that escapes or a logged traceback
(issue 17, item 7). Deterministic (seeded), so a failure reproduces."""

from __future__ import annotations

import logging
import random
import struct
from pathlib import Path

import pytest

from mqnamesrv.protocol.errors import ProtocolError
from mqnamesrv.protocol.frame import decode, encode
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.kv import KVStore
from mqnamesrv.registry.routes import RouteTable
from mqnamesrv.server.dispatch import Processor

GOLDEN = Path(__file__).parents[1] / "golden"
CAPTURES = [p.read_bytes() for p in sorted(GOLDEN.glob("*/request.bin"))]
#: Splices that once escaped as RecursionError, OverflowError or UnicodeEncodeError.
TOKENS = [b"Infinity", b"-Infinity", b"NaN", b"1e999", b"\\ud800", b"\\udfff", b"[" * 3000, b"{" * 3000,
          b'{0:"x"}', b"99999999999999999999", b'"', b"\xff\xfe", b"\\u0000", b"null", b"[]", b"{}", b"-1", b"0.5"]


def _split(frame: bytes) -> tuple[int, bytes, bytes]:
    (word,) = struct.unpack_from(">I", frame, 4)
    head_len = word & 0xFFFFFF
    return word >> 24, frame[8:8 + head_len], frame[8 + head_len:]


def _mutate(part: bytes, rng: random.Random) -> bytes:
    raw = bytearray(part)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randint(0, len(raw))
        kind = rng.random()
        if kind < 0.4 and raw:
            raw[min(pos, len(raw) - 1)] = rng.randint(0, 255)
        elif kind < 0.8:
            raw[pos:pos + rng.randint(0, 8)] = rng.choice(TOKENS)
        else:
            del raw[pos:pos + rng.randint(1, 16)]
    return bytes(raw)


def _mutated_frames(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    frames = []
    for _ in range(count):
        stype, head, body = _split(rng.choice(CAPTURES))
        if rng.random() < 0.5:
            head = _mutate(head, rng)
        if body and rng.random() < 0.7 or rng.random() < 0.1:
            body = _mutate(body, rng)
        frames.append(struct.pack(">II", 4 + len(head) + len(body), (stype << 24) | len(head)) + head + body)
    return frames


@pytest.mark.parametrize("seed", range(4))
def test_mutated_requests_never_escape(seed: int, caplog: pytest.LogCaptureFixture) -> None:
    processor = Processor(RouteTable(), KVStore(), NamesrvConfig())
    conn = object()
    caplog.set_level(logging.WARNING)
    answered = refused = 0
    for frame in _mutated_frames(5_000, seed):
        try:
            cmd = decode(frame)
        except ProtocolError:
            refused += 1
            continue
        response = processor.handle(cmd, conn, "127.0.0.1")
        if response is not None:
            decode(encode(response))
            answered += 1
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info]
    assert tracebacks == []
    assert answered > 500 and refused > 500
