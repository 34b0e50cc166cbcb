"""unknown_names: a -t topic or -c cluster no answering server knows is bad input, not agreement."""

from __future__ import annotations

from mqadmin.diff import ServerView, UnknownName, suggest, unknown_names, with_suggestions
from mqnamesrv.protocol.bodies import ClusterInfo
from tests.diff.views import route, view

DOWN = ServerView("C", error="C: GET_BROKER_CLUSTER_INFO (106): connection refused")


def test_topic_no_server_knows_is_unknown_with_a_case_hint() -> None:
    # As the CLI collects with -t: topic list cut to the asked topics, TOPIC_NOT_EXIST as None.
    views = [view("A", {"Payments": None}, topic_list=()), view("B", {"Payments": None}, topic_list=()), DOWN]
    assert unknown_names(views, topics=["Payments"]) == (UnknownName("topic", "Payments"),)
    full = [ServerView("A", topic_list=("payments", "orders"))]
    [unknown] = with_suggestions(unknown_names(views, topics=["Payments"]), full)
    assert unknown == UnknownName("topic", "Payments", "payments")
    assert unknown.message == "no name server knows topic 'Payments' (did you mean 'payments'?)"
    assert UnknownName("topic", "x").message == "no name server knows topic 'x'"


def test_topic_some_servers_know_is_a_difference_not_an_error() -> None:
    views = [view("A", {"lonely": route("broker-a")}), view("B", {"lonely": None})]
    assert unknown_names(views, topics=["lonely"]) == ()
    listed_only = [view("A", {"t": None}, topic_list=("t",)), view("B", {"t": None})]
    assert unknown_names(listed_only, topics=["t"]) == ()


def test_a_failed_route_question_proves_nothing() -> None:
    # B answered its cluster info but lost the route request: t may exist there.
    views = [view("A", {"t": None}), ServerView("B", latency_ms=1.0, failures=("B: timeout",))]
    assert unknown_names(views, topics=["t"]) == ()
    assert unknown_names([DOWN], topics=["t"]) == ()  # nobody answered: an error of its own


def test_cluster_unknown_only_when_every_cluster_info_lacks_it() -> None:
    views = [view("A", {}), view("B", {})]
    assert unknown_names(views, cluster="DefaultCluster") == ()
    assert unknown_names(views, cluster="defaultcluster") == (
        UnknownName("cluster", "defaultcluster", "DefaultCluster"),)
    # As collected with -c: cluster info cut to the asked cluster, so no hint in the views.
    cut = [ServerView("A", cluster_info=ClusterInfo({}, {}))]
    assert unknown_names(cut, cluster="defaultcluster") == (UnknownName("cluster", "defaultcluster"),)
    no_info = [view("A", {}), ServerView("B", topic_list=())]
    assert unknown_names(no_info, cluster="defaultcluster") == ()


def test_order_and_duplicates() -> None:
    views = [view("A", {"b": None, "a": None, "known": route("broker-a")})]
    got = unknown_names(views, topics=["b", "known", "a", "b"], cluster="Nope")
    assert [(u.kind, u.name) for u in got] == [("topic", "b"), ("topic", "a"), ("cluster", "Nope")]


def test_suggest() -> None:
    assert suggest("Payments", ["orders", "payments"]) == "payments"
    assert suggest("payments", ["payments"]) is None  # the same name is no hint
    assert suggest("Payments", ["pay"]) is None
    assert suggest("X", []) is None
