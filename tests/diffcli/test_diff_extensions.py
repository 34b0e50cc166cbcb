"""What diff-namesrv added to mqadmin.diff: ServerView.failures, and canonical keys
computed once per shared route object. Neither may change a hash or a finding."""

from __future__ import annotations

import json

from mqadmin.diff import ServerView, content_hash, diff_views
from mqnamesrv.protocol.bodies import BrokerData, QueueData, TopicRouteData
from tests.diff.views import route, view


def test_failures_round_trip_and_default() -> None:
    v = ServerView("A", latency_ms=1.0, topics={"t": None}, failures=("A: GET_KVLIST_BY_NAMESPACE (219): timeout",))
    obj = json.loads(json.dumps(v.to_obj()))
    assert obj["failures"] == ["A: GET_KVLIST_BY_NAMESPACE (219): timeout"]
    assert ServerView.from_obj(obj) == v
    old = {k: val for k, val in obj.items() if k != "failures"}  # written before the field existed
    assert ServerView.from_obj(old).failures == ()
    assert ServerView("B").failures == ()


def test_failures_are_not_route_content() -> None:
    clean = view("A", {"t": route("broker-a")})
    failed = ServerView(clean.addr, None, clean.latency_ms, clean.cluster_info, clean.topic_list, clean.topics,
                        clean.kv, clean.config, failures=("A: something failed",))
    assert content_hash(clean) == content_hash(failed)
    assert diff_views([clean, ServerView.from_obj(failed.to_obj() | {"addr": "B"})]).agree


def test_shared_route_objects_give_the_same_report_as_separate_ones() -> None:
    def make() -> TopicRouteData:
        return TopicRouteData((QueueData("broker-a", 4, 4, 6),), (BrokerData("c", "broker-a", {0: "h:1"}),))

    shared = make()
    one = ServerView("A", topics={f"t{i}": shared for i in range(50)} | {"gone": None})
    many = ServerView("B", topics={f"t{i}": make() for i in range(50)} | {"gone": None})
    other = ServerView("C", topics={f"t{i}": route("broker-b") for i in range(50)} | {"gone": shared})
    assert content_hash(one) == content_hash(ServerView("A", topics=dict(many.topics)))
    by_shared = diff_views([one, other]).to_obj()
    by_separate = diff_views([ServerView("A", topics=dict(many.topics)), other]).to_obj()
    assert by_shared == by_separate and len(by_shared["findings"]) == 101
