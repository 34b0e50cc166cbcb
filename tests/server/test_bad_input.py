"""Misbehaving peers: the offending connection is closed with a log line; others go on."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import NameServerProcess, RawClient

BAD_FRAMES = {
    "too-long": struct.pack(">I", 16 * 1024 * 1024),
    "length-below-4": struct.pack(">I", 2) + b"\0\0",
    "header-longer-than-frame": struct.pack(">II", 8, 100) + b"{}{}",
    "unknown-serialization": struct.pack(">II", 6, (5 << 24) | 2) + b"{}",
    "bad-json-header": struct.pack(">II", 9, 5) + b'{"cod',
    "json-header-not-object": struct.pack(">II", 6, 2) + b"[]",
    "binary-remark-overflow": struct.pack(">II", 25, (1 << 24) | 21) + struct.pack(">hBhiii", 105, 0, 409, 1, 0, 999) + b"\0\0\0\0",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NameServerProcess]:
    ns = NameServerProcess(tmp_path_factory.mktemp("bad")).start()
    yield ns
    ns.stop()


@pytest.mark.parametrize("frame", BAD_FRAMES.values(), ids=BAD_FRAMES.keys())
def test_bad_frame_closes_only_that_connection(server: NameServerProcess, frame: bytes) -> None:
    with RawClient(server.addr) as good, RawClient(server.addr) as bad:
        bad.send_bytes(frame)
        assert bad.recv(timeout=5) is None, "the server must close, not answer"
        assert good.call(request(R.GET_BROKER_CLUSTER_INFO)).code == 0
    assert "undecodable frame" in server.stderr()
    assert "Traceback" not in server.stderr()


def test_bad_body_is_an_error_answer_not_a_close(server: NameServerProcess) -> None:
    with RawClient(server.addr) as c:
        ext = {"brokerId": "0", "clusterName": "C", "brokerAddr": "1.1.1.1:1", "haServerAddr": "x", "brokerName": "b"}
        resp = c.call(request(R.REGISTER_BROKER, ext, b"{not json"))
        assert resp.code == 1 and "RegisterBrokerBody" in (resp.remark or "")
        resp = c.call(request(R.REGISTER_BROKER, {**ext, "compressed": "true"}, b"not zlib"))
        assert resp.code == 1 and "zlib" in (resp.remark or "")
        resp = c.call(request(R.REGISTER_BROKER, {**ext, "brokerId": "zero"}, b""))
        assert (resp.code, resp.remark) == (1, "the custom field <brokerId> is not a number: 'zero'")
        assert c.call(request(R.GET_BROKER_CLUSTER_INFO)).body == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'


def test_frame_split_into_single_bytes(server: NameServerProcess) -> None:
    from mqnamesrv.protocol.frame import encode

    with RawClient(server.addr) as c:
        data = encode(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, opaque=77))
        for i in range(len(data)):
            c.send_bytes(data[i:i + 1])
        resp = c.recv(timeout=5)
        assert resp is not None and resp.opaque == 77
