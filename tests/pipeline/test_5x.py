"""The pipeline over RocketMQ 5.x answers: enableActingMaster, zoneName and static-topic
mappings go through the capture files and the routes rows, so the job finds what
``diff_views`` finds where servers differ only in them, and 4.x captures (which have none
of them) read as "absent"."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

import msgpack
import pytest

from mqadmin.diff import Kind, ServerView, canonical_route, content_hash, diff_views
from mqadmin.pipeline import flatten, rules
from mqadmin.pipeline.schema import capture_of, decode_capture, encode_capture
from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, TopicQueueMappingInfo, TopicRouteData
from tests.diff.views import CLUSTER, bd, qd
from tests.pipeline.conftest import A, B, C, MINUTE, T0, at_rounds, chain_pass, judge_round, routes_rows, write_history
from tests.pipeline.test_job import assert_divergence_is_diff_views

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

NEW_COLUMNS = ("enable_acting_master", "zone_name", "topic_queue_mapping")


# --------------------------------------------------------------- 5.x answers ----


def group(broker: str, acting: bool | None = True, zone: str | None = "zoneA") -> BrokerData:
    """A 5.x broker group (master and slave) with its acting-master flag and zone."""
    return replace(bd(broker), enable_acting_master=acting, zone_name=zone)


def mapping(broker: str, first: int, epoch: int = 1_795_553_231_437) -> TopicQueueMappingInfo:
    """``broker``'s share of static_t: logical queues first .. first + 3 of 8."""
    return TopicQueueMappingInfo("static_t", broker, total_queues=8, epoch=epoch,
                                 curr_id_map={first + i: i for i in range(4)})


def routes5(groups: Mapping[str, BrokerData], mapped: bool = True) -> dict[str, TopicRouteData | None]:
    """static_t on broker-a and broker-b (a static topic unless not ``mapped``),
    acting_t on broker-a, plain_t on broker-b, with ``groups``' BrokerData."""
    def on(*names: str) -> TopicRouteData:
        return TopicRouteData(tuple(qd(n) for n in names), tuple(groups[n] for n in names))

    static = on("broker-a", "broker-b")
    if mapped:
        static = replace(static, topic_queue_mapping_by_broker={
            "broker-a": mapping("broker-a", 0), "broker-b": mapping("broker-b", 4)})
    return {"static_t": static, "acting_t": on("broker-a"), "plain_t": on("broker-b")}


def view5(addr: str, a: BrokerData | None = None, b: BrokerData | None = None, mapped: bool = True) -> ServerView:
    """A server of a 5.x fleet that answered everything; broker-a is an acting-master
    group and broker-b a plain one, both in zoneA, unless ``a`` / ``b`` say otherwise."""
    groups = {"broker-a": a or group("broker-a"), "broker-b": b or group("broker-b", acting=None)}
    topics = routes5(groups, mapped)
    return ServerView(addr, latency_ms=1.0, cluster_info=ClusterInfo(groups, {CLUSTER: ("broker-a", "broker-b")}),
                      topic_list=tuple(topics), topics=topics, kv={"ORDER_TOPIC_CONFIG": {}})


def rounds5() -> list[list[ServerView]]:
    """Seven rounds, a minute apart, in which the servers differ only in 5.x fields:

    * 0 agree;
    * 1-2: B lost broker-a's enableActingMaster (routes of static_t and acting_t, cluster info);
    * 3: C writes enableActingMaster false for broker-b where A and B leave it out: agree;
    * 4: C has broker-b in zoneB (static_t, plain_t, cluster info);
    * 5: A lost static_t's mapping (5.x clients then see other queues);
    * 6 agree.
    """
    same = [view5(s) for s in (A, B, C)]
    lost_acting = group("broker-a", acting=None)
    return [
        same,
        [view5(A), view5(B, a=lost_acting), view5(C)],
        [view5(A), view5(B, a=lost_acting), view5(C)],
        [view5(A), view5(B), view5(C, b=group("broker-b", acting=False))],
        [view5(A), view5(B), view5(C, b=group("broker-b", acting=None, zone="zoneB"))],
        [view5(A, mapped=False), view5(B), view5(C)],
        same,
    ]


# -------------------------------------------------- files and rows, no Spark ----


def _rows(v: ServerView) -> list[dict[str, Any]]:
    return routes_rows(v)


def test_capture_with_5x_fields_round_trips() -> None:
    v = view5(A, b=group("broker-b", acting=False, zone="zoneB"))
    data = encode_capture(capture_of(v, captured_ms=T0, round=2))
    raw = msgpack.unpackb(data, strict_map_key=False)["view"]
    assert raw["cluster_info"]["brokerAddrTable"]["broker-b"]["enableActingMaster"] is False
    assert raw["topics"]["static_t"]["brokerDatas"][0]["zoneName"] == "zoneA"
    assert raw["topics"]["static_t"]["topicQueueMappingByBroker"]["broker-b"]["currIdMap"] == {
        "4": 0, "5": 1, "6": 2, "7": 3}
    back = decode_capture(data).server_view()
    assert back == v
    static = back.topics["static_t"]
    assert static is not None and static.topic_queue_mapping_by_broker is not None
    assert static.topic_queue_mapping_by_broker["broker-a"].epoch == 1_795_553_231_437
    assert content_hash(back) == content_hash(v) != content_hash(view5(A))


def test_capture_written_before_5x_reads_as_absent() -> None:
    """A version-1 file as snapshot wrote it before 5.x fields existed (none of their keys)."""
    broker = {"brokerAddrs": {"0": "10.0.0.1:10911"}, "brokerName": "broker-a", "cluster": CLUSTER}
    old = {"schema": "mqadmin-route-capture", "version": 1, "captured_ms": T0, "server": A, "round": 0, "ok": True,
           "error": None, "view": {
               "addr": A, "ok": True, "error": None, "latency_ms": 1.0,
               "cluster_info": {"brokerAddrTable": {"broker-a": broker}, "clusterAddrTable": {CLUSTER: ["broker-a"]}},
               "topic_list": ["t"], "topics": {"t": {"brokerDatas": [broker], "filterServerTable": {}, "queueDatas": [
                   {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0,
                    "writeQueueNums": 4}]}},
               "kv": {}, "config": None, "failures": []}}
    data = msgpack.packb(old, use_bin_type=True)
    v = decode_capture(data).server_view()
    route = v.topics["t"]
    assert route is not None and v.cluster_info is not None
    (b,) = route.broker_datas
    assert (b.enable_acting_master, b.zone_name, route.topic_queue_mapping_by_broker) == (None, None, None)
    assert v.cluster_info.broker_addr_table["broker-a"].zone_name is None
    out = chain_pass([("/d/000000/f.msgpack", data)])
    (row,) = out["route"][1:]  # after the "no route" template every reader starts with
    assert [row[c] for c in NEW_COLUMNS] == [None, None, None]
    (capture,) = out["capture"]
    assert capture["cluster_brokers"][0]["enable_acting_master"] is None
    assert capture["cluster_brokers"][0]["zone_name"] is None
    # Written today, the same 4.x view is byte for byte the old file.
    assert encode_capture(capture_of(v, captured_ms=T0, round=0)) == data


def test_routes_rows_carry_and_rebuild_the_5x_fields() -> None:
    only_mapped = TopicRouteData((qd("broker-a"),), (group("broker-a"),), topic_queue_mapping_by_broker={
        "broker-a": mapping("broker-a", 0), "broker-z": mapping("broker-z", 4)})
    v = view5(A, b=group("broker-b", acting=False, zone=None))
    v = replace(v, topics={**v.topics, "only_mapped": only_mapped})
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(v):
        by_topic.setdefault(row["topic"], []).append(row)
    for topic, original in v.topics.items():
        rebuilt = rules.route_from_rows(sorted(by_topic[topic], key=lambda r: r["broker_seq"]))
        assert rebuilt == original, topic  # exactly, False and None kept apart
        assert canonical_route(rebuilt) == canonical_route(original), topic
    static = by_topic["static_t"]
    assert [(r["broker"], r["enable_acting_master"], r["zone_name"]) for r in static] == [
        ("broker-a", True, "zoneA"), ("broker-b", False, None)]
    assert flatten.mapping_from_json(static[1]["topic_queue_mapping"]) == mapping("broker-b", 4)
    assert by_topic["acting_t"][0]["topic_queue_mapping"] is None
    # A broker only the mapping names still has its row, as the diff compares it.
    z = by_topic["only_mapped"][1]
    assert (z["broker"], z["has_queue_data"], z["has_broker_data"], z["cluster"]) == ("broker-z", False, False, None)
    assert z["topic_queue_mapping"] is not None


def test_4x_routes_rows_have_null_5x_columns() -> None:
    from tests.pipeline.test_files import ODD_ROUTES
    from tests.diff.views import view

    rows = _rows(view(A, ODD_ROUTES))
    assert len(rows) == 12
    assert {(c, r[c]) for r in rows for c in NEW_COLUMNS} == {(c, None) for c in NEW_COLUMNS}
    assert flatten.TEMPLATE.names[-3:] == list(NEW_COLUMNS)  # appended: the 4.x columns keep their places


@pytest.mark.parametrize("round_no", range(7))
def test_round_batch_finds_what_diff_views_finds(round_no: int) -> None:
    """The chain and per-topic passes without Spark, every round of the 5.x history."""
    views = rounds5()[round_no]
    _, outcomes = judge_round(views, round_no)
    report = diff_views(sorted(views, key=lambda v: v.addr), consumers=2)
    found = [(topic, f["kind"], f["broker"], tuple((v["server"], v["value"]) for v in f["values"]))
             for topic, row in outcomes.items() for f in row["findings"]]
    assert sorted(found, key=str) == sorted(((f.topic, f.kind, f.broker, f.values) for f in report.findings), key=str)
    assert bool(found) is (round_no in (1, 2, 4, 5))


def test_new_kinds_have_causes() -> None:
    assert rules.CAUSE_OF_KIND[Kind.QUEUE_MAPPING] == "queue_mapping"
    assert rules.CAUSE_OF_KIND[Kind.ACTING_MASTER] == rules.CAUSE_OF_KIND[Kind.ZONE_NAME] == "addresses"
    from mqadmin.diff.model import KINDS

    assert set(KINDS) <= set(rules.CAUSE_OF_KIND)  # no kind falls to "other"


# ------------------------------------------------------------- the Spark job ----


@pytest.fixture(scope="module")
def history5(spark: object, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The 5.x history, analysed once by the job (consumers=2)."""
    from mqadmin.pipeline.job import JobOptions, run

    base = tmp_path_factory.mktemp("hand5")
    rounds = rounds5()
    write_history(base / "captures", rounds)
    run(spark, JobOptions(str(base / "captures"), str(base / "out"), consumers=2, report=False))  # type: ignore[arg-type]
    return {"rounds": rounds, "out": base / "out"}


def _table(spark: Any, hist: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(hist["out"] / name)).collect()]


def test_job_divergence_equals_diff_views_on_5x_fields(spark: Any, history5: dict[str, Any]) -> None:
    rows = [r.asDict(recursive=True) for r in at_rounds(spark, history5["out"], "divergence").collect()]
    assert_divergence_is_diff_views(rows, history5["rounds"])
    found = {(r["round"], r["topic"]): r["kinds"] for r in rows if not r["agree"]}
    assert found == {
        (1, None): [Kind.ACTING_MASTER], (1, "static_t"): [Kind.ACTING_MASTER], (1, "acting_t"): [Kind.ACTING_MASTER],
        (2, None): [Kind.ACTING_MASTER], (2, "static_t"): [Kind.ACTING_MASTER], (2, "acting_t"): [Kind.ACTING_MASTER],
        (4, None): [Kind.ZONE_NAME], (4, "static_t"): [Kind.ZONE_NAME], (4, "plain_t"): [Kind.ZONE_NAME],
        (5, "static_t"): [Kind.QUEUE_MAPPING],
    }
    lost = next(r for r in rows if (r["round"], r["topic"]) == (5, "static_t"))
    assert lost["differing"] == [A] and lost["affects_clients"] is True and lost["unassigned"] > 0


def test_job_windows_of_5x_differences(spark: Any, history5: dict[str, Any]) -> None:
    windows = {(w["topic"], w["start_ms"]): (w["end_ms"], w["cause"], w["kinds"], w["servers"])
               for w in _table(spark, history5, "windows")}
    at = [T0 + i * MINUTE for i in range(7)]
    assert windows == {
        ("static_t", at[1]): (at[3], "addresses", [Kind.ACTING_MASTER], [B]),
        ("acting_t", at[1]): (at[3], "addresses", [Kind.ACTING_MASTER], [B]),
        # zone then mapping: one window, named by the stronger cause
        ("static_t", at[4]): (at[6], "queue_mapping", [Kind.QUEUE_MAPPING, Kind.ZONE_NAME], [A, C]),
        ("plain_t", at[4]): (at[5], "addresses", [Kind.ZONE_NAME], [C]),
    }


def test_job_routes_table_has_the_5x_columns(spark: Any, history5: dict[str, Any]) -> None:
    routes = at_rounds(spark, history5["out"], "routes")
    rows = routes.where(f"round = 4 and server = '{C}' and topic = 'static_t'").orderBy("broker_seq").collect()
    assert [(r["broker"], r["enable_acting_master"], r["zone_name"]) for r in rows] == [
        ("broker-a", True, "zoneA"), ("broker-b", None, "zoneB")]
    assert flatten.mapping_from_json(rows[1]["topic_queue_mapping"]) == mapping("broker-b", 4)
    lost = routes.where(f"round = 5 and server = '{A}' and topic = 'static_t'").collect()
    assert [r["topic_queue_mapping"] for r in lost] == [None, None]
    captures = spark.read.parquet(str(history5["out"] / "captures"))
    (b_round1,) = captures.where(f"round = 1 and server = '{B}'").collect()
    assert [(b["broker"], b["enable_acting_master"], b["zone_name"]) for b in b_round1["cluster_brokers"]] == [
        ("broker-a", None, "zoneA"), ("broker-b", None, "zoneA")]
