"""Compressed registrations are bounded (issue 17, item 6): the inflated size by the frame
limit, the topic count by ``maxTopicsPerRegistration``; refusing either costs neither
memory nor time, and other clients are served meanwhile."""

from __future__ import annotations

import struct
import threading
import time
import zlib
from pathlib import Path
from typing import Callable

import pytest

from mqnamesrv.protocol.bodies import DataVersion
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.compressed import decode_compressed
from mqnamesrv.protocol.errors import BodyDecodeError
from mqnamesrv.protocol.register import register_request
from tests.nsprocess import NameServerProcess, RawClient


def _rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def zero_bomb(inflated_mb: int) -> bytes:
    """A deflate stream of ``inflated_mb`` MiB of zeros (about 1 KB per MiB)."""
    comp = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    return b"".join(comp.compress(chunk) for _ in range(inflated_mb)) + comp.flush()


def many_topics(count: int) -> bytes:
    """A valid compressed body announcing and carrying ``count`` short topic lines."""
    def part(data: bytes) -> bytes:
        return struct.pack(">i", len(data)) + data
    comp = zlib.compressobj(9)
    out = [comp.compress(part(DataVersion(1, 1).encode()) + struct.pack(">i", count))]
    for start in range(0, count, 50_000):
        out.append(comp.compress(b"".join(part(f"t{i:x} 1 1 6 S".encode())
                                          for i in range(start, min(count, start + 50_000)))))
    out.append(comp.compress(part(b"[]")))
    return b"".join(out) + comp.flush()


def compressed_register(body: bytes) -> RemotingCommand:
    return register_request("DefaultCluster", "broker-a", "127.0.0.1:10911", 0, body, compressed=True)


def _served_meanwhile(ns: NameServerProcess, send: Callable[[], RemotingCommand]) -> tuple[RemotingCommand, float]:
    """Run ``send`` while another client keeps asking; (its answer, the longest wait)."""
    worst = 0.0
    done = threading.Event()
    answer: list[RemotingCommand] = []

    def attack() -> None:
        answer.append(send())
        done.set()

    with RawClient(ns.addr) as other:
        other.call(request(R.GET_BROKER_CLUSTER_INFO))
        thread = threading.Thread(target=attack)
        thread.start()
        while not done.is_set():
            started = time.monotonic()
            assert other.call(request(R.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS
            worst = max(worst, time.monotonic() - started)
        thread.join()
    return answer[0], worst


def test_inflating_past_the_frame_limit_is_refused(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"frameMaxLength": str(8 << 20)})
    assert ns.proc is not None
    bomb = zero_bomb(400)  # 400 MiB of zeros in ~400 KB
    before = _rss_kb(ns.proc.pid, "VmRSS")
    with RawClient(ns.addr) as broker:
        resp = broker.call(compressed_register(bomb))
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, f"compressed body inflates beyond {8 << 20} bytes")
    growth_mb = (_rss_kb(ns.proc.pid, "VmHWM") - before) / 1024
    assert growth_mb < 40, f"resident size grew {growth_mb:.0f} MB"
    assert "refused REGISTER_BROKER from 127.0.0.1: compressed body inflates beyond" in ns.stderr()


def test_too_many_topics_are_refused_before_parsing(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv()
    body = many_topics(600_000)  # under the 16 MiB inflated limit: only the topic count refuses it
    assert len(body) < 2 << 20
    def send() -> RemotingCommand:
        with RawClient(ns.addr, timeout=30) as broker:
            return broker.call(compressed_register(body))

    resp, worst = _served_meanwhile(ns, send)
    assert (resp.code, resp.remark) == (
        ResponseCode.SYSTEM_ERROR, "compressed body: 600000 topics exceed the limit of 100000")
    assert worst < 0.5, f"another client waited {worst:.2f} s"
    with RawClient(ns.addr) as c:
        assert c.call(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body == b'{"topicList":[]}'


def test_topic_limit_is_configurable(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"maxTopicsPerRegistration": "1000"})
    with RawClient(ns.addr) as broker:
        assert broker.call(compressed_register(many_topics(1000))).code == ResponseCode.SUCCESS
        resp = broker.call(compressed_register(many_topics(1001)))
        assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR,
                                            "compressed body: 1001 topics exceed the limit of 1000")
        plain = register_request("DefaultCluster", "broker-b", "127.0.0.1:10921", 0,
                                 b'{"filterServerList":[],"topicConfigSerializeWrapper":{"topicConfigTable":{'
                                 + b",".join(b'"t%d":{"perm":6,"readQueueNums":1,"writeQueueNums":1}' % i
                                             for i in range(1001)) + b"}}}")
        resp = broker.call(plain)
        assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR,
                                            "RegisterBrokerBody: 1001 topics exceed the limit of 1000")


def test_decoder_holds_no_more_than_its_bound() -> None:
    with pytest.raises(BodyDecodeError, match="inflates beyond 1048576 bytes"):
        decode_compressed(zero_bomb(64), max_inflated=1 << 20)
    with pytest.raises(BodyDecodeError, match="3 topics exceed the limit of 2"):
        decode_compressed(many_topics(3), max_topics=2)
    assert len(decode_compressed(many_topics(2), max_topics=2).topic_configs) == 2
