"""Fixtures for diff-namesrv: three real name servers per module, brokers on kept-open
connections, and a clean slate between tests.

diff-namesrv compares *everything* a server holds, so a broker left over from the
previous test on one server would be a difference. The ``brokers`` fixture therefore
closes its connections at the end of a test and waits until every server has dropped
those brokers; tests that write KV entries remove them the same way.
"""

from __future__ import annotations

import re
import time
from typing import Callable, Iterator

import pytest

from mqnamesrv.protocol.bodies import ClusterInfo
from mqnamesrv.protocol.codes import RequestCode, ResponseCode
from mqnamesrv.protocol.command import request
from tests.cli.conftest import Run, addrs, cli, fake_server, kept_brokers, trio  # noqa: F401  (fixtures)
from tests.nsprocess import RawClient

Brokers = Callable[..., list[RawClient]]


def ns(addrs: list[str]) -> str:
    return ";".join(addrs)


def row(out: str, *cells: str) -> bool:
    """Whether ``out`` has a table line made of exactly these cells, in order; leading
    blanks allowed (a continuation row leaves its first cells empty)."""
    return re.search(r"^\s*" + r"\s+".join(re.escape(c) for c in cells) + "$", out, re.M) is not None


def cluster_info(addr: str) -> ClusterInfo:
    with RawClient(addr) as c:
        answer = c.call(request(RequestCode.GET_BROKER_CLUSTER_INFO))
    assert answer.code == ResponseCode.SUCCESS, answer
    return ClusterInfo.decode(answer.body)


def wait_until(check: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def brokers(addrs: list[str]) -> Iterator[Brokers]:  # noqa: F811
    """``brokers(ns_addrs, name, addr, topics, **kw)`` registers a broker on those name
    servers (topics: name -> queue count) over connections kept open until the test ends,
    then waits until every server has dropped them."""
    with kept_brokers() as reg:
        yield reg
    for addr in addrs:
        wait_until(lambda: not cluster_info(addr).broker_addr_table, f"brokers to leave {addr}")  # noqa: B023  (called here)
