"""Client impact: allocation strategies, queue lists (spec 8.3, 8.4) and the worst case."""

from __future__ import annotations

import itertools
import json

import pytest

from mqadmin.diff import (
    EXACT_LIMIT, BrokerShare, Queue, allocate_averagely, allocate_by_circle, consumer_queues, impact, producer_queues,
)
from mqnamesrv.protocol.bodies import TopicRouteData
from tests.diff.views import bd, qd, route, wiped


def qs(broker: str, *ids: int) -> tuple[Queue, ...]:
    return tuple((broker, i) for i in ids)


A8 = qs("broker-a", 0, 1, 2, 3) + qs("broker-b", 0, 1, 2, 3)

# ------------------------------------------------------------- allocation ----


@pytest.mark.parametrize(
    ("n", "count", "expected"),
    [
        (8, 2, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        (4, 2, [[0, 1], [2, 3]]),
        (5, 3, [[0, 1], [2, 3], [4]]),
        (7, 3, [[0, 1, 2], [3, 4], [5, 6]]),
        (3, 3, [[0], [1], [2]]),
        (2, 3, [[0], [1], []]),
        (0, 2, [[], []]),
    ],
    ids=["even", "half", "rest-1", "rest-2", "one-each", "fewer-queues", "no-queues"],
)
def test_allocate_averagely_follows_spec_formula(n: int, count: int, expected: list[list[int]]) -> None:
    queues = qs("broker-a", *range(n))
    assert [allocate_averagely(queues, i, count) for i in range(count)] == [qs("broker-a", *e) for e in expected]


def test_allocate_by_circle_deals_queues_in_turn() -> None:
    queues = qs("broker-a", *range(5))
    assert allocate_by_circle(queues, 0, 2) == qs("broker-a", 0, 2, 4)
    assert allocate_by_circle(queues, 1, 2) == qs("broker-a", 1, 3)
    assert allocate_by_circle(queues, 2, 3) == qs("broker-a", 2)


@pytest.mark.parametrize("allocate", [allocate_averagely, allocate_by_circle], ids=["averagely", "circle"])
@pytest.mark.parametrize(("index", "count"), [(2, 2), (-1, 2), (0, 0)], ids=["past-end", "negative", "no-consumers"])
def test_allocate_rejects_bad_index(allocate: object, index: int, count: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        allocate(A8, index, count)  # type: ignore[operator]


# ------------------------------------------------------------ queue lists ----


def test_consumer_queues_need_read_bit_not_master() -> None:
    r = TopicRouteData(
        queue_datas=(qd("broker-b", 2), qd("broker-a", 2, perm=2), qd("broker-c", 1, perm=4)),
        broker_datas=(bd("broker-b", 1),),  # broker-b: slave only; broker-c: no BrokerData at all
    )
    assert consumer_queues(r) == qs("broker-b", 0, 1) + qs("broker-c", 0)
    assert consumer_queues(None) == ()


def test_consumer_queues_use_read_count() -> None:
    r = TopicRouteData(queue_datas=(qd("broker-a", 2, write=8),), broker_datas=(bd("broker-a"),))
    assert consumer_queues(r) == qs("broker-a", 0, 1)
    assert producer_queues(r) == qs("broker-a", *range(8))


def test_producer_queues_sorted_by_broker_with_write_bit_and_master() -> None:
    r = TopicRouteData(
        queue_datas=(qd("broker-c", 1), qd("broker-b", 2), qd("broker-a", 2, perm=4), qd("broker-d", 1)),
        broker_datas=(bd("broker-b"), bd("broker-a"), bd("broker-c", 1)),  # c: no master; d: no BrokerData
    )
    assert producer_queues(r) == qs("broker-b", 0, 1)


def test_missing_master_makes_producers_skip_that_broker() -> None:
    r = TopicRouteData(queue_datas=(qd("broker-a"), qd("broker-b")), broker_datas=(bd("broker-a"), bd("broker-b", 1)))
    assert producer_queues(r) == qs("broker-a", 0, 1, 2, 3)
    assert consumer_queues(r) == A8


@pytest.mark.parametrize(
    ("conf", "expected"),
    [
        ("broker-b:2;broker-a:1", qs("broker-b", 0, 1) + qs("broker-a", 0)),
        ("broker-a:2;", qs("broker-a", 0, 1)),
        ("broker-a:2;;broker-b:1", ()),
        ("broker-a", ()),
        ("broker-a:x", ()),
    ],
    ids=["written-order", "trailing-separator", "empty-item", "no-count", "bad-count"],
)
def test_order_topic_conf_wins_over_queue_datas(conf: str, expected: tuple[Queue, ...]) -> None:
    # broker-a has no write perm and broker-b no master: the conf ignores both.
    r = TopicRouteData(queue_datas=(qd("broker-a", perm=4), qd("broker-b")), broker_datas=(bd("broker-b", 1),),
                       order_topic_conf=conf)
    assert producer_queues(r) == expected


def test_empty_order_topic_conf_falls_back_to_queue_datas() -> None:
    assert producer_queues(route("broker-a", queues=2, order_conf="")) == qs("broker-a", 0, 1)


# ------------------------------------------------------------------ impact ----


def test_order_topic_broker_b_lost_on_one_server() -> None:
    """Spec 8.4 worked example: A knows broker-a and broker-b, B lost broker-b."""
    result = impact("order_topic", {"A": route("broker-a", "broker-b"), "B": route("broker-a")}, consumers=2)

    c = result.consumer
    assert c.unassigned == qs("broker-b", 0, 1, 2, 3)
    assert c.doubly_assigned == qs("broker-a", 2, 3)
    assert [(a.consumer, a.servers, a.queues) for a in c.worst_case] == [
        ("c1", ("A",), qs("broker-a", 0, 1, 2, 3)),
        ("c2", ("B",), qs("broker-a", 2, 3)),
    ]
    assert (c.exact, c.assignments_checked) == (True, 4)
    assert c.queues == A8

    p = result.producer
    assert p.agreed_servers == ("A",)  # 1-1 tie: the longer list
    assert p.majority is False
    assert p.agreed_queues == A8
    assert p.agreed == (BrokerShare("broker-a", 4, 0.5, 0.0), BrokerShare("broker-b", 4, 0.5, 0.0))
    assert [(v.server, v.agrees, v.brokers) for v in p.views] == [
        ("A", True, (BrokerShare("broker-a", 4, 0.5, 0.0), BrokerShare("broker-b", 4, 0.5, 0.0))),
        ("B", False, (BrokerShare("broker-a", 4, 1.0, 0.5), BrokerShare("broker-b", 0, 0.0, -0.5))),
    ]
    assert p.key_hash_breaks is True
    assert result.affects_clients is True


def test_order_topic_impact_json_schema() -> None:
    result = impact("order_topic", {"A": route("broker-a", "broker-b", queues=2), "B": route("broker-a", queues=2)})
    obj = result.to_obj()
    assert json.loads(json.dumps(obj)) == obj
    half = [{"broker": "broker-a", "queues": 2, "share": 0.5, "delta": 0.0},
            {"broker": "broker-b", "queues": 2, "share": 0.5, "delta": 0.0}]
    assert obj == {
        "topic": "order_topic", "strategy": "averagely", "consumers": 2, "servers": ["A", "B"],
        "consumer": {
            "queues": ["broker-a/0", "broker-a/1", "broker-b/0", "broker-b/1"],
            "unassigned": ["broker-b/0", "broker-b/1"],
            "doubly_assigned": ["broker-a/1"],
            "worst_case": [
                {"consumer": "c1", "servers": ["A"], "queues": ["broker-a/0", "broker-a/1"]},
                {"consumer": "c2", "servers": ["B"], "queues": ["broker-a/1"]},
            ],
            "exact": True, "assignments_checked": 4,
        },
        "producer": {
            "agreed_servers": ["A"], "majority": False,
            "agreed_queues": ["broker-a/0", "broker-a/1", "broker-b/0", "broker-b/1"],
            "agreed": half,
            "views": [
                {"server": "A", "queues": ["broker-a/0", "broker-a/1", "broker-b/0", "broker-b/1"], "agrees": True,
                 "brokers": half},
                {"server": "B", "queues": ["broker-a/0", "broker-a/1"], "agrees": False,
                 "brokers": [{"broker": "broker-a", "queues": 2, "share": 1.0, "delta": 0.5},
                             {"broker": "broker-b", "queues": 0, "share": 0.0, "delta": -0.5}]},
            ],
            "key_hash_breaks": True,
        },
    }


def test_circle_strategy_worst_case_on_order_topic() -> None:
    # (A,B) and (B,A) each leave two queues; both consumers on B leave all of broker-b.
    result = impact("order_topic", {"A": route("broker-a", "broker-b"), "B": route("broker-a")}, strategy="circle")
    c = result.consumer
    assert c.unassigned == qs("broker-b", 0, 1, 2, 3)
    assert c.doubly_assigned == ()
    assert [(a.consumer, a.servers, a.queues) for a in c.worst_case] == [
        ("c1", ("B",), qs("broker-a", 0, 2)),
        ("c2", ("B",), qs("broker-a", 1, 3)),
    ]


def test_agreeing_views_have_no_impact_and_no_search() -> None:
    ab, ba = route("broker-a", "broker-b"), route("broker-b", "broker-a")
    routes = {"A": ab, "B": ba, "C": ab}
    result = impact("t", routes)
    assert result.consumer.worst_case == ()
    assert (result.consumer.unassigned, result.consumer.doubly_assigned) == ((), ())
    assert result.consumer.assignments_checked == 0
    assert result.producer.agreed_servers == ("A", "B", "C")
    assert result.producer.majority is True
    assert result.producer.key_hash_breaks is False
    assert result.affects_clients is False


def test_wiped_write_perm_on_one_server_affects_producers_only() -> None:
    w = wiped("broker-b", "broker-a")
    result = impact("t", {"A": route("broker-a", "broker-b"), "B": w, "C": w})
    assert result.consumer.worst_case == ()
    p = result.producer
    assert (p.agreed_servers, p.majority) == (("B", "C"), True)
    assert p.agreed_queues == qs("broker-a", 0, 1, 2, 3)
    assert [(v.server, v.agrees, [(b.broker, b.queues, b.share, b.delta) for b in v.brokers]) for v in p.views] == [
        ("A", False, [("broker-a", 4, 0.5, -0.5), ("broker-b", 4, 0.5, 0.5)]),
        ("B", True, [("broker-a", 4, 1.0, 0.0), ("broker-b", 0, 0.0, 0.0)]),
        ("C", True, [("broker-a", 4, 1.0, 0.0), ("broker-b", 0, 0.0, 0.0)]),
    ]
    assert p.key_hash_breaks is True
    assert result.affects_clients is True


def test_different_queue_counts() -> None:
    result = impact("t", {"A": route("broker-a", queues=4), "B": route("broker-a", queues=8)})
    c = result.consumer
    # c1 on B takes a/0-3, c2 on A takes a/2-3: a/4-7 unowned, a/2-3 twice.
    assert c.unassigned == qs("broker-a", 4, 5, 6, 7)
    assert c.doubly_assigned == qs("broker-a", 2, 3)
    assert [(a.consumer, a.servers) for a in c.worst_case] == [("c1", ("B",)), ("c2", ("A",))]
    assert result.producer.agreed_servers == ("B",)
    assert [v.queues for v in result.producer.views] == [qs("broker-a", 0, 1, 2, 3), qs("broker-a", *range(8))]
    assert result.producer.key_hash_breaks is True


def test_same_queue_count_different_brokers_still_breaks_key_hash() -> None:
    result = impact("t", {"A": route("broker-a"), "B": route("broker-b")})
    assert result.producer.key_hash_breaks is True
    assert result.producer.agreed_servers == ("A",)


def test_no_route_on_one_server_gives_its_consumers_nothing() -> None:
    result = impact("t", {"A": route("broker-a", queues=2), "B": None}, consumers=3)
    c = result.consumer
    assert c.unassigned == qs("broker-a", 0, 1)
    assert c.doubly_assigned == ()
    # c3 gets nothing from A either (2 queues, 3 consumers): the first worst case found wins.
    assert [(a.servers, a.queues) for a in c.worst_case] == [(("B",), ()), (("B",), ()), (("A",), ())]
    assert result.producer.views[1].brokers == (BrokerShare("broker-a", 0, 0.0, -1.0),)


def test_single_consumer() -> None:
    result = impact("t", {"A": route("broker-a", "broker-b"), "B": route("broker-a")}, consumers=1)
    assert result.consumer.unassigned == qs("broker-b", 0, 1, 2, 3)
    assert result.consumer.assignments_checked == 2


def _brute_force_score(lists: list[tuple[Queue, ...]], consumers: int) -> int:
    best = 0
    for choice in itertools.product(range(len(lists)), repeat=consumers):
        owners = [q for i, d in enumerate(choice) for q in allocate_averagely(lists[d], i, consumers)]
        universe = set().union(*lists)
        best = max(best, len(universe - set(owners)) + len({q for q in owners if owners.count(q) > 1}))
    return best


def test_large_assignment_space_uses_local_search() -> None:
    routes = {"A": route("broker-a", "broker-b", "broker-c"), "B": route("broker-a"), "C": route("broker-b", queues=8)}
    consumers = 8  # 3 ** 8 = 6561 > EXACT_LIMIT
    assert 3 ** consumers > EXACT_LIMIT
    c = impact("t", routes, consumers=consumers).consumer
    assert c.exact is False
    assert 0 < c.assignments_checked < 3 ** consumers
    score = len(c.unassigned) + len(c.doubly_assigned)
    lists = [consumer_queues(r) for r in routes.values()]
    assert score == _brute_force_score(lists, consumers) == 15


def test_exact_search_matches_brute_force_at_the_limit() -> None:
    routes = {
        "A": route("broker-a", "broker-b", queues=3),
        "B": route("broker-a", queues=5),
        "C": route("broker-b", queues=2),
    }
    c = impact("t", routes, consumers=7).consumer
    # The 7th consumer gets nothing from any list (6 queues at most): 3 ** 6 assignments.
    assert (c.exact, c.assignments_checked) == (True, 729)
    lists = [consumer_queues(r) for r in routes.values()]
    assert len(c.unassigned) + len(c.doubly_assigned) == _brute_force_score(lists, 7)


def test_consumers_beyond_the_queue_count_cost_nothing_to_search() -> None:
    """A group of 100,000 consumers on a topic of 8 queues: the extra consumers get no
    queue whichever server they ask, so the search is the 8-consumer one (it used to
    grow with the square of the group and never finish)."""
    routes = {"A": route("broker-a", "broker-b"), "B": route("broker-a")}
    small = impact("t", routes, consumers=8).consumer
    for strategy in ("averagely", "circle"):
        big = impact("t", routes, consumers=100_000, strategy=strategy).consumer
        same = impact("t", routes, consumers=8, strategy=strategy).consumer
        assert (big.unassigned, big.doubly_assigned, big.assignments_checked) == (
            same.unassigned, same.doubly_assigned, same.assignments_checked)
        assert len(big.worst_case) == 100_000 and all(not a.queues for a in big.worst_case[8:])
    assert small.assignments_checked == 2 ** 8


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"strategy": "random"}, "unknown allocation strategy"), ({"consumers": 0}, "at least 1")],
    ids=["unknown-strategy", "no-consumers"],
)
def test_impact_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        impact("t", {"A": route("broker-a")}, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no server answered"):
        impact("t", {})
