"""diff_views(): summaries, findings and impacts in one report; ServerView round trip."""

from __future__ import annotations

import json
import time

import pytest

from mqadmin.diff import SCHEMA_VERSION, Kind, ServerView, diff_views
from tests.diff.views import route, view, with_addrs

ORDER = "order_topic"


def test_order_topic_report() -> None:
    a = view("A", {ORDER: route("broker-a", "broker-b")})
    b = view("B", {ORDER: route("broker-a")}, brokers=("broker-a",))
    down = ServerView("C", error="connect timed out")
    report = diff_views([a, b, down])

    assert [(s.addr, s.ok, s.brokers, s.routes) for s in report.servers] == [
        ("A", True, 2, 1), ("B", True, 1, 1), ("C", False, None, 0),
    ]
    assert report.servers[0].content_hash != report.servers[1].content_hash
    assert [(f.kind, f.topic, f.broker) for f in report.findings] == [
        (Kind.CLUSTER_MEMBERS, None, None),
        (Kind.BROKER_MISSING, None, "broker-b"),
        (Kind.BROKER_MISSING, ORDER, "broker-b"),
    ]
    (only,) = report.impacts
    assert (only.topic, only.servers) == (ORDER, ("A", "B"))
    assert [f"{q[0]}/{q[1]}" for q in only.consumer.doubly_assigned] == ["broker-a/2", "broker-a/3"]
    assert report.agree is False

    obj = report.to_obj()
    assert json.loads(json.dumps(obj)) == obj
    assert list(obj) == ["schema_version", "servers", "findings", "impacts"]
    assert obj["schema_version"] == SCHEMA_VERSION
    assert obj["impacts"][0]["consumer"]["unassigned"] == ["broker-b/0", "broker-b/1", "broker-b/2", "broker-b/3"]


def test_agreeing_servers_report_equal_hashes_and_nothing_else() -> None:
    views = [view(addr, {ORDER: route("broker-a", "broker-b"), "t2": route("broker-b")}) for addr in ("A", "B", "C")]
    report = diff_views(views, consumers=5, strategy="circle")
    assert report.agree is True
    assert (report.findings, report.impacts) == ((), ())
    assert len({s.content_hash for s in report.servers}) == 1


def test_route_differences_clients_do_not_see_have_no_impact() -> None:
    moved = with_addrs("broker-a", {0: "10.0.0.1:10911", 1: "10.9.9.9:10911"})
    report = diff_views([view("A", {ORDER: route("broker-a")}), view("B", {ORDER: moved})])
    assert [f.kind for f in report.findings] == [Kind.BROKER_ADDR]
    assert report.impacts == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"strategy": "random"}, "unknown allocation strategy"), ({"consumers": 0}, "at least 1")],
    ids=["unknown-strategy", "no-consumers"],
)
def test_bad_arguments_fail_even_when_views_agree(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        diff_views([view("A", {})], **kwargs)  # type: ignore[arg-type]


def test_server_view_round_trips_through_json() -> None:
    v = view("A", {ORDER: route("broker-a", "broker-b", order_conf="broker-a:4"), "gone": None},
             kv={"ORDER_TOPIC_CONFIG": {ORDER: "broker-a:4"}}, config={"listenPort": "9876"})
    back = ServerView.from_obj(json.loads(json.dumps(v.to_obj())))
    assert back.to_obj() == v.to_obj()
    assert diff_views([v, ServerView.from_obj(v.to_obj() | {"addr": "B"})]).agree is True
    failed = ServerView("B", error="refused")
    assert ServerView.from_obj(failed.to_obj()) == failed


def test_ten_thousand_topics_on_five_servers_is_fast() -> None:
    """A broker lost on one server makes every topic differ; still well under a second
    of CPU on a laptop (the bound here is loose so slow CI machines pass)."""
    full = {f"topic-{i}": route("broker-a", "broker-b") for i in range(10_000)}
    lost = {f"topic-{i}": route("broker-a") for i in range(10_000)}
    views = [view(f"ns{i}", full) for i in range(4)] + [view("ns4", lost, brokers=("broker-a",))]
    start = time.process_time()
    report = diff_views(views)
    elapsed = time.process_time() - start
    assert len(report.impacts) == 10_000
    assert len(report.findings) == 10_002
    # Memoised per shape, yet each result names its own topic.
    assert [i.topic for i in report.impacts[:3]] == ["topic-0", "topic-1", "topic-10"]
    assert [(f.topic, f.broker) for f in report.findings[-2:]] == [
        ("topic-9998", "broker-b"), ("topic-9999", "broker-b"),
    ]
    assert elapsed < 2.0
