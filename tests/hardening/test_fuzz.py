"""Property-based tests: random and mutated frames never crash the decoder or the server."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import SerializeType
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.errors import ProtocolError
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, decode, encode
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.kv import KVStore
from mqnamesrv.registry.routes import RouteTable
from mqnamesrv.server.dispatch import Processor
from tests.nsprocess import NameServerProcess, RawClient

GOLDEN = Path(__file__).parents[1] / "golden"
CAPTURES = [p.read_bytes() for p in sorted(GOLDEN.glob("*/request.bin"))]

text = st.text(max_size=40)
commands = st.builds(
    RemotingCommand,
    code=st.integers(-32768, 32767),
    language=st.sampled_from(["JAVA", "PYTHON", "GO", "RUST"]),
    version=st.integers(-32768, 32767),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.none() | text.filter(bool),
    ext=st.none() | st.dictionaries(text.filter(bool), text.filter(bool), max_size=8),
    body=st.binary(max_size=200),
    serialize_type=st.sampled_from(list(SerializeType)),
)


def _drain(data: bytes) -> None:
    dec = FrameDecoder()
    dec.feed(data)
    try:
        while dec.next_frame() is not NEED_DATA:
            pass
    except ProtocolError:
        pass


@given(commands)
def test_any_command_round_trips(cmd: RemotingCommand) -> None:
    back = decode(encode(cmd))
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        # The binary form cannot tell an empty map from no map.
        cmd = RemotingCommand(**{**{f: getattr(cmd, f) for f in cmd.__dataclass_fields__}, "ext": cmd.ext or None})
    assert back == cmd


@given(st.binary(max_size=600))
def test_random_bytes_only_raise_protocol_errors(data: bytes) -> None:
    _drain(data)


@given(st.sampled_from(CAPTURES), st.data())
def test_mutated_captures_only_raise_protocol_errors(capture: bytes, data: st.DataObject) -> None:
    raw = bytearray(capture)
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    _drain(bytes(raw[:cut]))


@given(st.sampled_from(CAPTURES), st.data())
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
def test_processor_answers_any_mutated_request(capture: bytes, data: st.DataObject) -> None:
    """Whatever decodes is answered (or deliberately not), never raised out of."""
    raw = bytearray(capture)
    for _ in range(data.draw(st.integers(1, 6))):
        raw[data.draw(st.integers(8, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        cmd = decode(bytes(raw))
    except ProtocolError:
        return
    processor = Processor(RouteTable(), KVStore(), NamesrvConfig())
    response = processor.handle(cmd, object())
    if response is not None:
        decode(encode(response))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NameServerProcess]:
    ns = NameServerProcess(tmp_path_factory.mktemp("fuzz")).start()
    yield ns
    ns.stop()


@given(payload=st.sampled_from(CAPTURES).flatmap(
    lambda c: st.lists(st.tuples(st.integers(0, len(c) - 1), st.integers(0, 255)), min_size=1, max_size=6)
    .map(lambda muts: _mutate(c, muts))) | st.binary(min_size=1, max_size=300))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_server_survives_garbage(server: NameServerProcess, payload: bytes) -> None:
    host, port = server.addr.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        try:
            while s.recv(65536):
                pass
        except (TimeoutError, ConnectionResetError):
            pass
    with RawClient(server.addr) as c:  # the server still answers others
        assert c.call(request(R.GET_BROKER_CLUSTER_INFO)).code == 0


def _mutate(capture: bytes, muts: list[tuple[int, int]]) -> bytes:
    raw = bytearray(capture)
    for pos, value in muts:
        raw[pos] = value
    return bytes(raw)


def test_server_log_has_no_traceback_after_fuzzing(server: NameServerProcess) -> None:
    assert "Traceback" not in server.stderr()
