"""Configured limits close only the offending connection, with a clear log line."""

from __future__ import annotations

import socket
import struct
import time
from typing import Callable

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import encode
from tests.nsprocess import NameServerProcess, RawClient


def test_header_limit(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"headerMaxLength": "1024"})
    with RawClient(ns.addr) as good, RawClient(ns.addr) as bad:
        big = request(R.GET_ROUTEINFO_BY_TOPIC, {f"k{i}": "v" * 20 for i in range(100)})
        bad.send(big)
        assert bad.recv(timeout=5) is None
        assert good.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"})).code == 17
    assert "exceeds the limit of 1024 bytes" in ns.stderr()


def test_frame_limit_is_configurable(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"frameMaxLength": "4096"})
    with RawClient(ns.addr) as c:
        c.send(request(R.UPDATE_NAMESRV_CONFIG, body=b"#" * 5000))
        assert c.recv(timeout=5) is None
    assert "frame length 5" in ns.stderr() and "exceeds the limit of 4096 bytes" in ns.stderr()


def test_slow_sender_is_dropped_but_a_quiet_one_is_not(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"frameReadTimeoutSeconds": "1", "scanNotActiveBrokerInterval": "100"})
    frame = encode(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
    with RawClient(ns.addr) as slow, RawClient(ns.addr) as quiet:
        time.sleep(1.5)  # quiet: no bytes at all, so not a slow sender (idle limit is 120 s)
        slow.send_bytes(frame[:10])
        time.sleep(0.5)
        quiet.send_bytes(frame[:10])  # a new partial frame after a long silence: clock starts now
        assert slow.recv(timeout=5) is None  # closed about 1 s after its partial frame began
        quiet.send_bytes(frame[10:])
        resp = quiet.recv(timeout=5)
        assert resp is not None and resp.code == 0
    assert "frame incomplete for more than 1 s" in ns.stderr()


def test_connection_cap(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"maxConnections": "5"})
    host, port = ns.addr.split(":")
    held = [RawClient(ns.addr) for _ in range(5)]
    try:
        for c in held:  # make sure all five are registered server-side
            assert c.call(request(R.GET_BROKER_CLUSTER_INFO)).code == 0
        extra = socket.create_connection((host, int(port)), timeout=5)
        extra.sendall(encode(request(R.GET_BROKER_CLUSTER_INFO)))
        try:
            assert extra.recv(100) == b""
        except ConnectionResetError:
            pass
        extra.close()
        assert held[0].call(request(R.GET_BROKER_CLUSTER_INFO)).code == 0
    finally:
        for c in held:
            c.close()
    assert "refusing connection" in ns.stderr()


def test_negative_length_word_is_refused(namesrv: NameServerProcess) -> None:
    with RawClient(namesrv.addr) as c:
        c.send_bytes(struct.pack(">i", -5) + b"\0" * 8)
        assert c.recv(timeout=5) is None
