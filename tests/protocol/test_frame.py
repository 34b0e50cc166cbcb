"""Framing: ``length(4) | type<<24 | headerLength(4) | header | body`` (spec section 1).

Sans-IO in the manner of h11: bytes go in with ``feed()``, ``next_frame()`` returns a
command or ``NEED_DATA``, and a peer that breaks the framing gets RemoteProtocolError.
"""

from __future__ import annotations

import struct

import pytest

from mqnamesrv.protocol.codes import FLAG_ONEWAY, FLAG_RESPONSE, SerializeType
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.errors import LocalProtocolError, RemoteProtocolError
from mqnamesrv.protocol.frame import (
    BIG_FRAME,
    DEFAULT_MAX_FRAME,
    NEED_DATA,
    FrameDecoder,
    decode,
    decode_payload,
    encode,
)

# Spec 2.2 / 2.3: GET_ROUTEINFO_BY_TOPIC for TopicTest, opaque 1, in both serializations.
JSON_HEADER = (
    b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,'
    b'"serializeTypeCurrentRPC":"JSON","version":409}'
)
JSON_FRAME = bytes.fromhex("00000087 00000083") + JSON_HEADER
BINARY_FRAME = bytes.fromhex(
    "0000002d 01000029"
    "0069 00 0199"
    "00000001 00000000"
    "00000000"
    "00000014"
    "0005 746f706963"
    "00000009 546f70696354657374"
)
ROUTE_REQUEST = RemotingCommand(code=105, opaque=1, ext={"topic": "TopicTest"})


def frame(word: int, header: bytes, body: bytes = b"", length: int | None = None) -> bytes:
    if length is None:
        length = 4 + len(header) + len(body)
    return struct.pack(">II", length, word) + header + body


# ------------------------------------------------------------------- encode ----

def test_encode_json_example_from_spec() -> None:
    assert len(JSON_HEADER) == 131
    assert encode(ROUTE_REQUEST) == JSON_FRAME


def test_encode_binary_example_from_spec() -> None:
    cmd = RemotingCommand(code=105, opaque=1, ext={"topic": "TopicTest"}, serialize_type=SerializeType.ROCKETMQ)
    assert len(BINARY_FRAME) == 49
    assert encode(cmd) == BINARY_FRAME


@pytest.mark.parametrize("raw", [JSON_FRAME, BINARY_FRAME], ids=["json", "rocketmq"])
def test_spec_examples_decode(raw: bytes) -> None:
    cmd = decode(raw)
    assert (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag) == (105, "JAVA", 409, 1, 0)
    assert cmd.remark is None
    assert cmd.ext == {"topic": "TopicTest"}
    assert cmd.body == b""


def test_body_follows_header_and_is_counted_in_length() -> None:
    cmd = RemotingCommand(code=322, opaque=7, ext={}, body=b'{"counter":1,"timestamp":2}')
    raw = encode(cmd)
    header = b'{"code":322,"extFields":{},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":409}'
    assert raw == frame(len(header), header, cmd.body)
    assert raw[:4] == (4 + len(header) + 27).to_bytes(4, "big")
    assert decode(raw) == cmd


def test_binary_type_byte_is_the_high_byte_of_the_header_length_word() -> None:
    raw = encode(RemotingCommand(code=0, flag=1, serialize_type=SerializeType.ROCKETMQ))
    assert raw == bytes.fromhex("00000019 01000015") + bytes.fromhex("0000 00 0199 00000000 00000001 00000000 00000000")


def test_encode_refuses_a_header_beyond_24_bits() -> None:
    cmd = RemotingCommand(code=0, remark="x" * 0x1000000)
    with pytest.raises(LocalProtocolError):
        encode(cmd)


# ------------------------------------------------------------ decode basics ----

def test_need_data_until_the_whole_frame_is_there() -> None:
    dec = FrameDecoder()
    assert dec.next_frame() is NEED_DATA
    for i, byte in enumerate(JSON_FRAME[:-1]):
        dec.feed(bytes([byte]))
        assert dec.next_frame() is NEED_DATA, i
        assert dec.in_frame
    dec.feed(JSON_FRAME[-1:])
    assert dec.next_frame() == ROUTE_REQUEST
    assert not dec.in_frame
    assert dec.next_frame() is NEED_DATA


def test_feed_of_nothing_is_harmless() -> None:
    dec = FrameDecoder()
    dec.feed(b"")
    assert dec.next_frame() is NEED_DATA
    assert dec.buffered == 0


def test_several_frames_in_one_feed_come_out_in_order() -> None:
    second = RemotingCommand(code=106, opaque=2, serialize_type=SerializeType.ROCKETMQ)
    dec = FrameDecoder()
    dec.feed(JSON_FRAME + encode(second) + BINARY_FRAME[:10])
    assert dec.next_frame() == ROUTE_REQUEST
    assert dec.next_frame() == second
    assert dec.next_frame() is NEED_DATA
    assert dec.buffered == 10
    dec.feed(BINARY_FRAME[10:])
    assert dec.next_frame() == RemotingCommand(
        code=105, opaque=1, ext={"topic": "TopicTest"}, serialize_type=SerializeType.ROCKETMQ
    )


def test_frame_with_empty_body() -> None:
    cmd = decode(JSON_FRAME)
    assert cmd.body == b""


def test_decode_requires_exactly_one_frame() -> None:
    with pytest.raises(RemoteProtocolError):
        decode(JSON_FRAME[:-1])
    with pytest.raises(RemoteProtocolError):
        decode(JSON_FRAME + b"\x00")
    with pytest.raises(RemoteProtocolError):
        decode(b"")


# ------------------------------------------------------------- frame limits ----

def test_default_limit_is_16_mib_including_the_length_field() -> None:
    assert DEFAULT_MAX_FRAME == 16 * 1024 * 1024
    ok = FrameDecoder()
    ok.feed(struct.pack(">I", 16777212))
    assert ok.next_frame() is NEED_DATA
    too_long = FrameDecoder()
    too_long.feed(struct.pack(">I", 16777213))
    with pytest.raises(RemoteProtocolError):
        too_long.next_frame()


@pytest.mark.parametrize("length", [1021, 1 << 24, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF],
                         ids=["limit+1", "16MiB", "int-max", "negative-min", "negative-one"])
def test_oversized_length_refused_as_soon_as_four_bytes_arrive(length: int) -> None:
    dec = FrameDecoder(max_frame=1024)
    dec.feed(struct.pack(">I", length)[:3])
    assert dec.next_frame() is NEED_DATA
    dec.feed(struct.pack(">I", length)[3:])
    # nothing of the announced frame has arrived yet: refused from the prefix alone
    assert dec.buffered == 4
    with pytest.raises(RemoteProtocolError, match="exceeds the limit"):
        dec.next_frame()


def test_length_at_the_limit_is_accepted() -> None:
    dec = FrameDecoder(max_frame=1024)
    header = b'{"code":1}'
    body = b"x" * (1024 - 8 - len(header))
    raw = frame(len(header), header, body)
    assert len(raw) == 1024
    dec.feed(raw[:4])
    assert dec.next_frame() is NEED_DATA
    dec.feed(raw[4:])
    cmd = dec.next_frame()
    assert isinstance(cmd, RemotingCommand)
    assert cmd.code == 1 and cmd.body == body


@pytest.mark.parametrize("length", [0, 1, 2, 3])
def test_length_shorter_than_the_header_word_is_refused(length: int) -> None:
    dec = FrameDecoder()
    dec.feed(struct.pack(">I", length))
    with pytest.raises(RemoteProtocolError, match="shorter"):
        dec.next_frame()


def test_header_length_beyond_the_frame_is_refused() -> None:
    header = b'{"code":1}'
    raw = frame(len(header) + 1, header)  # claims one byte more than the frame holds
    dec = FrameDecoder()
    dec.feed(raw)
    with pytest.raises(RemoteProtocolError, match="header length"):
        dec.next_frame()
    with pytest.raises(RemoteProtocolError):
        decode_payload(raw[4:])


def test_header_length_filling_the_frame_exactly_means_no_body() -> None:
    header = b'{"code":1,"opaque":5}'
    cmd = decode(frame(len(header), header))
    assert (cmd.code, cmd.opaque, cmd.body) == (1, 5, b"")


def test_header_limit_checked_from_the_first_eight_bytes() -> None:
    dec = FrameDecoder(max_header=100)
    dec.feed(struct.pack(">II", 1000, 101))
    with pytest.raises(RemoteProtocolError, match="header length 101"):
        dec.next_frame()
    dec = FrameDecoder(max_header=100)
    dec.feed(struct.pack(">II", 1000, 100))
    assert dec.next_frame() is NEED_DATA


@pytest.mark.parametrize("stype", [2, 3, 0x7F, 0xFF])
def test_unknown_serialization_type_is_refused(stype: int) -> None:
    header = b'{"code":1}'
    with pytest.raises(RemoteProtocolError, match="serialization type"):
        decode(frame(stype << 24 | len(header), header))


@pytest.mark.parametrize(
    "header",
    [b"{", b"not json", b"", b"[1,2]", b'{"code":"abc"}', b'{"extFields":[]}', b"\xff\xfe"],
    ids=["truncated", "garbage", "empty", "array", "code-not-number", "ext-not-map", "not-utf8"],
)
def test_bad_json_header_is_refused(header: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode(frame(len(header), header))


def test_bad_rocketmq_header_is_refused() -> None:
    header = bytes.fromhex("0069 00 0199 00000001 00000000 000000ff 00000000")  # remark len 255
    with pytest.raises(RemoteProtocolError):
        decode(frame(1 << 24 | len(header), header))


def test_payload_without_header_word_is_refused() -> None:
    with pytest.raises(RemoteProtocolError):
        decode_payload(b"\x00\x00\x00")


# --------------------------------------------------------- command builders ----

def test_request_defaults_match_a_java_4_9_8_client() -> None:
    cmd = request(105, {"topic": "t"}, opaque=3)
    assert cmd == RemotingCommand(code=105, language="JAVA", version=409, opaque=3, flag=0,
                                  remark=None, ext={"topic": "t"}, body=b"",
                                  serialize_type=SerializeType.JSON)
    assert not cmd.is_response and not cmd.is_oneway
    assert request(105, opaque=3).ext is None


def test_oneway_request_sets_flag_bit_1() -> None:
    cmd = request(103, {}, b"x", oneway=True, opaque=9)
    assert cmd.flag == FLAG_ONEWAY == 2
    assert cmd.is_oneway and not cmd.is_response


def test_request_copies_ext() -> None:
    ext = {"topic": "t"}
    cmd = request(105, ext, opaque=1)
    ext["topic"] = "changed"
    assert cmd.ext == {"topic": "t"}


def test_requests_get_increasing_opaques() -> None:
    a, b = request(105), request(105)
    assert b.opaque > a.opaque >= 0


def test_response_is_a_fresh_command() -> None:
    req = request(103, {"brokerName": "b"}, b"body", oneway=True, opaque=77, version=37,
                  language="PYTHON", serialize_type=SerializeType.ROCKETMQ)
    rsp = req.response(1, remark="crc32 not match", ext={})
    assert rsp == RemotingCommand(code=1, language="JAVA", version=409, opaque=77, flag=FLAG_RESPONSE,
                                  remark="crc32 not match", ext={}, body=b"",
                                  serialize_type=SerializeType.ROCKETMQ)
    assert rsp.is_response and not rsp.is_oneway


def test_commands_are_rebuilt_not_changed() -> None:
    changed = ROUTE_REQUEST.with_opaque(5)
    assert changed.opaque == 5 and ROUTE_REQUEST.opaque == 1
    assert changed is not ROUTE_REQUEST and changed.ext is ROUTE_REQUEST.ext
    answer = ROUTE_REQUEST.response(0, body=b"x")
    assert (answer.opaque, answer.flag, ROUTE_REQUEST.flag, ROUTE_REQUEST.body) == (1, 1, 0, b"")
    with pytest.raises(AttributeError):  # slots: no stray attributes
        ROUTE_REQUEST.extra = 1  # type: ignore[attr-defined]


# -------------------------------------------------------------- big frames ----

def _big_request(size: int, opaque: int = 7) -> RemotingCommand:
    return request(103, {"brokerName": "b"}, bytes(range(256)) * (size // 256), opaque=opaque)


@pytest.mark.parametrize("chunk", [1000, 65536, 262144, 10**7])
def test_a_big_frame_fed_in_chunks_then_small_ones_come_out_whole_and_in_order(chunk: int) -> None:
    """A frame past BIG_FRAME moves into a buffer of its own once an eighth of it has
    arrived; whatever the chunks, the commands are the ones sent, in order."""
    big, small = _big_request(4 * BIG_FRAME), request(105, {"topic": "t"}, opaque=8)
    stream = encode(small) + encode(big) + encode(small) + encode(big)
    dec, out = FrameDecoder(), []
    for i in range(0, len(stream), chunk):
        dec.feed(stream[i:i + chunk])
        while (cmd := dec.next_frame()) is not NEED_DATA:
            out.append(cmd)
    assert [(c.code, c.body) for c in out] == [(105, b""), (103, big.body)] * 2  # type: ignore[union-attr]
    assert dec.buffered == 0 and not dec.in_frame and dec.big_buffer() is None


def test_a_big_frame_is_read_into_its_own_buffer_straight_from_the_socket() -> None:
    """``big_buffer``/``big_filled``, as a BufferedProtocol uses them: what the peer sends
    after the first eighth lands in the frame's buffer, and the payload is that buffer."""
    big = _big_request(2 * BIG_FRAME)
    wire = encode(big) + JSON_FRAME
    dec = FrameDecoder()
    head = len(wire) // 8 + 8
    dec.feed(wire[:head])
    assert dec.next_payload() is NEED_DATA
    pos = head
    while (view := dec.big_buffer()) is not None:
        n = min(len(view), 100_000)
        view[:n] = wire[pos:pos + n]
        dec.big_filled(n)
        pos += n
    dec.feed(wire[pos:])  # the route query after it: through the shared buffer
    payload = dec.next_payload()
    assert isinstance(payload, bytearray) and decode_payload(payload).body == big.body
    assert dec.next_frame().ext == ROUTE_REQUEST.ext  # type: ignore[union-attr]
    assert not dec.in_frame


def test_a_big_frame_announced_takes_no_memory_until_an_eighth_of_it_arrived() -> None:
    """The length and header length are in bounds, but the peer has sent little: nothing
    is set aside for the frame beyond what arrived."""
    length = DEFAULT_MAX_FRAME - 4
    dec = FrameDecoder()
    dec.feed(frame(0, b"{}", length=length) + bytes(length // 8 - 100))
    assert dec.next_payload() is NEED_DATA and dec.big_buffer() is None and dec.in_frame
    dec.feed(bytes(200))
    assert dec.next_payload() is NEED_DATA and dec.big_buffer() is not None


def test_a_big_frame_out_of_bounds_is_refused_before_any_buffer_is_made() -> None:
    dec = FrameDecoder(max_frame=BIG_FRAME * 2, max_header=64)
    with pytest.raises(RemoteProtocolError):
        dec.feed(frame(0, b"{}", length=BIG_FRAME * 4) + bytes(BIG_FRAME))
        dec.next_payload()
    dec = FrameDecoder(max_frame=BIG_FRAME * 2, max_header=64)
    dec.feed(struct.pack(">II", BIG_FRAME, 65) + bytes(BIG_FRAME // 2))
    with pytest.raises(RemoteProtocolError):
        dec.next_payload()
    assert dec.big_buffer() is None
