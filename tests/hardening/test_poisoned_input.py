"""Text that is not valid Unicode, and JSON no peer may send, is refused where it enters
and never reaches the tables (issue 17, items 5 and 7)."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path
from typing import Callable

import pytest

from mqnamesrv.protocol.bodies import ClusterInfo
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import encode
from mqnamesrv.protocol.register import register_request
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register


def raw_frame(header: str | bytes, body: bytes = b"") -> bytes:
    """A frame around a hand-written JSON header (escapes kept as written)."""
    head = header.encode() if isinstance(header, str) else header
    return struct.pack(">II", 4 + len(head) + len(body), len(head)) + head + body


def json_header(code: int, ext: str, opaque: int = 1) -> str:
    return f'{{"code":{code},"extFields":{ext},"flag":0,"language":"JAVA","opaque":{opaque},"version":409}}'


def cluster_info(ns: NameServerProcess) -> ClusterInfo:
    with RawClient(ns.addr) as c:
        resp = c.call(request(R.GET_BROKER_CLUSTER_INFO))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return ClusterInfo.decode(resp.body)


@pytest.fixture
def ns(start_namesrv: Callable[..., NameServerProcess], tmp_path: Path) -> NameServerProcess:
    return start_namesrv({"routeSnapshotInterval": "50"}, extra_args=["--route-snapshot", str(tmp_path / "snap")])


def test_lone_surrogate_in_a_header_never_reaches_the_tables(ns: NameServerProcess, tmp_path: Path) -> None:
    good = register("broker-a")
    ext = json.dumps(dict(good.ext or {}))[:-1] + ',"brokerName":"poison\\ud800"}'
    with RawClient(ns.addr) as bad:
        bad.send_bytes(raw_frame(json_header(R.REGISTER_BROKER, ext), good.body))
        assert bad.recv(timeout=5) is None  # a header that is not text: closed, like an undecodable frame
    assert cluster_info(ns).broker_addr_table == {}
    with RawClient(ns.addr) as broker:  # kept open: closing it removes the broker
        assert broker.call(register("broker-b")).code == 0
        assert set(cluster_info(ns).broker_addr_table) == {"broker-b"}
        time.sleep(0.3)
        assert (tmp_path / "snap").exists()
    assert "route snapshot" not in ns.stderr().replace("no route snapshot", "")  # still written, no failures
    assert "Traceback" not in ns.stderr()


def test_poisoned_route_query_keeps_the_answers_before_it(ns: NameServerProcess) -> None:
    with RawClient(ns.addr) as c:
        c.send_bytes(encode(request(R.GET_BROKER_CLUSTER_INFO, opaque=7))
                     + raw_frame(json_header(R.GET_ROUTEINFO_BY_TOPIC, '{"topic":"\\ud800"}', opaque=8)))
        first = c.recv(timeout=5)
        assert first is not None and (first.opaque, first.code) == (7, ResponseCode.SUCCESS)
        assert c.recv(timeout=5) is None
    assert "not valid Unicode" in ns.stderr()
    assert "Traceback" not in ns.stderr()


@pytest.mark.parametrize("body", [
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},'
    b'"topicConfigTable":{"t\\udc00":{"perm":6,"readQueueNums":4,"topicName":"t\\udc00","writeQueueNums":4}}}}',
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":Infinity,"timestamp":1},'
    b'"topicConfigTable":{}}}',
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1e999,"timestamp":1},'
    b'"topicConfigTable":{}}}',
    b'{"filterServerList":' + b"[" * 3000 + b"]" * 3000 + b"}",
], ids=["surrogate-topic", "infinity", "overflow", "deep-nesting"])
def test_bad_register_body_is_an_error_answer(ns: NameServerProcess, body: bytes) -> None:
    with RawClient(ns.addr) as broker:
        resp = broker.call(register_request("DefaultCluster", "broker-a", "127.0.0.1:10911", 0, body))
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert broker.call(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).code == ResponseCode.SUCCESS
    assert cluster_info(ns).broker_addr_table == {}
    assert "refused REGISTER_BROKER from 127.0.0.1" in ns.stderr()
    assert "Traceback" not in ns.stderr()


@pytest.mark.parametrize("header", [
    '{"code":105,"extFields":{"topic":' + "[" * 5000 + "]" * 5000 + '},"opaque":1}',
    '{"code":105,"extFields":{"topic":' + "[" * 900 + "]" * 900 + '},"opaque":1}',
    '{"code":1e999,"opaque":1}',
    '{"code":105,"opaque":99999999999999999999}',
    '{"code":105,"extFields":{"topic":NaN},"opaque":1}',
], ids=["deep-nesting", "nesting-below-the-limit", "overflow", "huge-opaque", "nan"])
def test_bad_json_header_is_one_log_line(ns: NameServerProcess, header: str) -> None:
    with RawClient(ns.addr) as c:
        c.send_bytes(raw_frame(header))
        answer = c.recv(timeout=5)
        assert answer is None or answer.code != ResponseCode.SUCCESS
    with RawClient(ns.addr) as other:
        assert other.call(request(R.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS
    assert "Traceback" not in ns.stderr()
