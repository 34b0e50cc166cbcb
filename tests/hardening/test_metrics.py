"""``--metrics-port`` serves Prometheus text that tracks what the server did."""

from __future__ import annotations

import re
import time
import urllib.request
from typing import Callable

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register


def scrape(ns: NameServerProcess) -> dict[str, float]:
    deadline = time.monotonic() + 5
    while not (m := re.search(r"metrics on http://(\S+)/metrics", ns.stderr())):
        assert time.monotonic() < deadline, "no metrics log line"
        time.sleep(0.05)
    text = urllib.request.urlopen(f"http://{m.group(1)}/metrics", timeout=5).read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_metrics_follow_requests(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv(extra_args=["--metrics-port", "0"])
    broker = RawClient(ns.addr)
    assert broker.call(register("broker-a", topics={"t1": 4, "t2": 4})).code == 0
    with RawClient(ns.addr) as c:
        for _ in range(5):
            assert c.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "t1"})).code == 0
        assert c.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "nope"})).code == 17
        assert c.call(request(R.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"})).code == 0
        assert c.call(request(9999)).code == 3
        m = scrape(ns)
        assert m['rocketmq_namesrv_requests_total{code="GET_ROUTEINFO_BY_TOPIC",result="SUCCESS"}'] == 5
        assert m['rocketmq_namesrv_requests_total{code="GET_ROUTEINFO_BY_TOPIC",result="TOPIC_NOT_EXIST"}'] == 1
        assert m['rocketmq_namesrv_requests_total{code="OTHER",result="REQUEST_CODE_NOT_SUPPORTED"}'] == 1
        assert m["rocketmq_namesrv_route_query_seconds_count"] == 6
        assert m["rocketmq_namesrv_route_cache_hits_total"] == 4
        assert m["rocketmq_namesrv_broker_registrations_total"] == 1
        assert m["rocketmq_namesrv_kv_changes_total"] == 1
        assert (m["rocketmq_namesrv_brokers"], m["rocketmq_namesrv_topics"], m["rocketmq_namesrv_connections"]) == (1, 2, 2)
        broker.close()
        deadline = time.monotonic() + 5
        while scrape(ns).get('rocketmq_namesrv_broker_removals_total{reason="connection_closed"}') != 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert scrape(ns)["rocketmq_namesrv_topics"] == 0


def test_metrics_count_pipelined_route_queries_answered_in_one_run(
        start_namesrv: Callable[..., NameServerProcess]) -> None:
    """With metrics on, a read's route queries are still answered in one call; the run
    is counted in one update: each query once, by its result, in the latency histogram."""
    from mqnamesrv.protocol.frame import encode

    ns = start_namesrv(extra_args=["--metrics-port", "0"])
    broker = RawClient(ns.addr)
    assert broker.call(register("broker-a", topics={"t1": 4, "t2": 4})).code == 0
    with RawClient(ns.addr) as c:
        assert c.call(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "t1"}, opaque=1)).code == 0
        topics = ["t1"] * 10 + ["nope"] * 5 + ["t2"] * 5
        c.send_bytes(b"".join(encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": t}, opaque=2 + i))
                              for i, t in enumerate(topics)))
        answers = [c.recv(timeout=5) for _ in topics]
        assert [a.code for a in answers] == [0 if t != "nope" else 17 for t in topics]  # type: ignore[union-attr]
        m = scrape(ns)
    broker.close()
    assert m['rocketmq_namesrv_requests_total{code="GET_ROUTEINFO_BY_TOPIC",result="SUCCESS"}'] == 16
    assert m['rocketmq_namesrv_requests_total{code="GET_ROUTEINFO_BY_TOPIC",result="TOPIC_NOT_EXIST"}'] == 5
    assert m["rocketmq_namesrv_route_query_seconds_count"] == 21
    buckets = [(float(k.split('"')[1]), v) for k, v in m.items()
               if k.startswith("rocketmq_namesrv_route_query_seconds_bucket")]
    assert [v for _, v in sorted(buckets)] == sorted(v for _, v in buckets)  # cumulative
    assert max(buckets) == (float("inf"), 21)
    assert 0 < m["rocketmq_namesrv_route_query_seconds_sum"] < 21 * 0.05
