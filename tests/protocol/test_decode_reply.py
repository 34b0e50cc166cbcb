"""``decode_reply`` (the clients' fast path) against ``decode_payload`` on every golden capture.

Every frame captured from Java 4.9.8 (``tests/golden``) and 5.0.0 (``tests/golden5``),
requests and answers, must decode to the same RemotingCommand both ways; the answers of
those servers must take the fast path (else the test proves nothing about it). Headers
the fast path must leave to the codec (numbers as strings, fastjson's bare keys, binary
headers, null fields) are checked the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mqnamesrv.protocol.codes import SerializeType
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.errors import RemoteProtocolError
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, decode_payload, decode_plain_json, decode_reply, encode

TESTS = Path(__file__).resolve().parents[1]
CAPTURES = sorted(
    p for folder in ("golden", "golden5") for p in (TESTS / folder).glob("*/*.bin")
)


def _payloads(frames: bytes) -> list[bytes]:
    dec = FrameDecoder()
    dec.feed(frames)
    out = []
    while isinstance(payload := dec.next_payload(), bytes):
        out.append(payload)
    assert dec.next_payload() is NEED_DATA and dec.buffered == 0
    return out


@pytest.mark.parametrize("path", CAPTURES, ids=[f"{p.parent.parent.name}/{p.parent.name}/{p.stem}" for p in CAPTURES])
def test_golden_frames_decode_the_same_both_ways(path: Path) -> None:
    payloads = _payloads(path.read_bytes())
    assert payloads
    for payload in payloads:
        assert decode_reply(payload) == decode_payload(payload)
        if path.stem == "response" and payload[0] == SerializeType.JSON:
            assert decode_plain_json(payload) == decode_payload(payload)  # the fast path, not the fallback


def test_most_golden_answers_take_the_fast_path() -> None:
    answers = [p for path in CAPTURES if path.stem == "response" for p in _payloads(path.read_bytes())]
    fast = [p for p in answers if decode_plain_json(p) is not None]
    assert len(answers) >= 40 and len(fast) >= len(answers) - 5


def _payload(header: bytes, body: bytes = b"{}", stype: int = 0) -> bytes:
    return ((stype << 24) | len(header)).to_bytes(4, "big") + header + body


@pytest.mark.parametrize("header", [
    b'{"code":"17","flag":1,"opaque":5}',                 # a number as a string
    b'{"code":0,"flag":1,"extFields":{7:"a"}}',          # fastjson's bare integer keys
    b'{"code":0,"flag":1,"opaque":null,"remark":7}',      # null and a non-string remark
    b'{"code":0,"flag":1,"extFields":{"n":3,"b":true}}',  # ext values Java would stringify
    b'{"code":0,"flag":1,"language":1}',                  # a language by its number
    b'{"code":-1,"flag":1,"opaque":5}',                   # a negative int: legal, rare
], ids=["string-number", "bare-keys", "null-and-odd-remark", "ext-numbers", "language-number", "negative-int"])
def test_headers_the_fast_path_leaves_to_the_codec(header: bytes) -> None:
    payload = _payload(header)
    assert decode_plain_json(payload) is None
    assert decode_reply(payload) == decode_payload(payload)


def test_binary_headers_and_big_numbers_go_to_the_codec() -> None:
    binary = encode(request(105, {"topic": "t"}, serialize_type=SerializeType.ROCKETMQ))[4:]
    assert decode_plain_json(binary) is None and decode_reply(binary) == decode_payload(binary)
    with pytest.raises(RemoteProtocolError, match="out of range"):
        decode_reply(_payload(b'{"code":0,"opaque":2147483648}'))
    with pytest.raises(RemoteProtocolError, match="not a number"):
        decode_reply(_payload(b'{"code":true,"flag":1}'))  # a bool is no int


def test_a_plain_answer_is_read_whole() -> None:
    answer = RemotingCommand(0, opaque=9, flag=1, remark="ok", ext={"k": "v"}, body=b"xyz")
    assert decode_plain_json(encode(answer)[4:]) == answer


@pytest.mark.parametrize("payload", [b"", b"\x00\x00", b"\x00\x00\x00\x09{}"], ids=["empty", "short", "header-past-end"])
def test_truncated_payloads_raise_like_the_codec(payload: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_payload(payload)
    with pytest.raises(RemoteProtocolError):
        decode_reply(payload)
