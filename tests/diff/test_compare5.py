"""diff over 5.x answers: acting-master flag, zone and static-topic mapping, taken from the
real Java 5.0.0 answers in tests/golden5."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from mqadmin.diff import Kind, ServerView, compare, content_hash, diff_views
from mqadmin.diff.impact import consumer_queues, producer_queues
from mqadmin.render.diff import findings_table
from mqnamesrv.protocol.bodies import ClusterInfo, TopicRouteData
from mqnamesrv.protocol.frame import decode
from tests.server.test_golden5_replay import GOLDEN5

STATIC = TopicRouteData.decode(decode((GOLDEN5 / "15-route-static" / "response.bin").read_bytes()).body)
ACTING = TopicRouteData.decode(decode((GOLDEN5 / "08-route-acting-group" / "response.bin").read_bytes()).body)
CLUSTER_INFO = ClusterInfo.decode(decode((GOLDEN5 / "11-cluster-acting-group" / "response.bin").read_bytes()).body)


def as_4x(route: TopicRouteData) -> TopicRouteData:
    """The same route from a server that keeps no 5.x fields."""
    return replace(route, broker_datas=tuple(replace(b, enable_acting_master=None, zone_name=None)
                                             for b in route.broker_datas), topic_queue_mapping_by_broker=None)


def view(addr: str, route: TopicRouteData, info: ClusterInfo = CLUSTER_INFO) -> ServerView:
    return ServerView(addr, cluster_info=info, topics={"static_t": route})


def findings(*views: ServerView) -> list[tuple[str, str | None, str | None, dict[str, str | None]]]:
    return [(f.kind, f.topic, f.broker, dict(f.values)) for f in compare(views)]


def test_java5_answers_agree_with_themselves() -> None:
    assert compare([view("java5", STATIC), view("ours", STATIC)]) == []


def test_a_server_that_lost_the_5x_fields_is_named() -> None:
    lost_info = ClusterInfo({n: replace(b, enable_acting_master=None, zone_name=None)
                             for n, b in CLUSTER_INFO.broker_addr_table.items()}, CLUSTER_INFO.cluster_addr_table)
    mapping = ("bname=broker5 scope=__global__ totalQueues=4 epoch=1795553231437 ids=0:0,1:1,2:2,3:3")
    assert findings(view("java5", STATIC), view("old", as_4x(STATIC), lost_info)) == [
        (Kind.ACTING_MASTER, None, "broker5", {"java5": "true", "old": None}),
        (Kind.ZONE_NAME, None, "broker5", {"java5": "zoneA", "old": None}),
        (Kind.ACTING_MASTER, "static_t", "broker5", {"java5": "true", "old": None}),
        (Kind.ZONE_NAME, "static_t", "broker5", {"java5": "zoneA", "old": None}),
        (Kind.QUEUE_MAPPING, "static_t", "broker5", {"java5": mapping, "old": None}),
    ]


def test_acting_master_false_and_absent_are_the_same_answer() -> None:
    """Java 5 writes enableActingMaster:false for a 4.x broker where 4.9.8 writes nothing."""
    plain = as_4x(ACTING)
    false = replace(plain, broker_datas=tuple(replace(b, enable_acting_master=False) for b in plain.broker_datas))
    assert compare([view("a", plain), view("b", false)]) == []


def test_another_zone_is_a_difference() -> None:
    moved = replace(ACTING, broker_datas=tuple(replace(b, zone_name="zoneB") for b in ACTING.broker_datas))
    assert findings(view("a", ACTING), view("b", moved)) == [
        (Kind.ZONE_NAME, "static_t", "broker5", {"a": "zoneA", "b": "zoneB"})]


def test_lost_mapping_changes_what_5x_clients_read_and_write() -> None:
    logical = tuple(("__syslo__global__", i) for i in range(4))
    assert consumer_queues(STATIC) == logical and producer_queues(STATIC) == logical
    assert consumer_queues(as_4x(STATIC)) == tuple(("broker5", i) for i in range(4))
    report = diff_views([view("java5", STATIC), view("old", as_4x(STATIC))], consumers=2)
    (impact,) = report.impacts
    assert impact.topic == "static_t" and impact.affects_clients
    assert set(impact.consumer.unassigned) | set(impact.consumer.doubly_assigned)


def test_4x_content_hash_is_unchanged_by_5x_support() -> None:
    """Canonical keys of routes without 5.x fields are what they were: this digest was
    computed by the diff module before 5.x fields existed."""
    route = as_4x(ACTING)
    assert content_hash(ServerView("a", topics={"t": route})) == \
        "b20df783e2a2dd35c722daf485c7231d5b5bd07e8ba015727de77d81d35cb164"


def test_the_table_names_the_5x_fields() -> None:
    out = io.StringIO()
    lost = compare([view("java5", STATIC), view("old", as_4x(STATIC))])
    findings_table(lost, {"java5": "A", "old": "B"}, Console(file=out, width=200))
    text = out.getvalue()
    assert "enableActingMaster" in text and "true on A; false/absent on B" in text
    assert "zone" in text and "zoneA on A; none on B" in text
    assert "static-topic mapping" in text and "totalQueues=4" in text
