"""The Spark job on a hand-written history: same findings and impact as diff_views, and
the numbers of every table checked against what the history holds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mqadmin.diff import Finding, ServerView, diff_views
from tests.pipeline.conftest import A, B, C, MINUTE, T0, at_rounds

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def _table(spark: Any, hand: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(hand["out"] / name)).collect()]


def _per_round(spark: Any, hand: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in at_rounds(spark, hand["out"], name).collect()]


def _finding(topic: str | None, f: dict[str, Any]) -> Finding:
    return Finding(f["kind"], topic, f["broker"], f["subject"], tuple((v["server"], v["value"]) for v in f["values"]))


def test_divergence_equals_diff_views_round_by_round(spark: Any, hand_history: dict[str, Any]) -> None:
    assert_divergence_is_diff_views(_per_round(spark, hand_history, "divergence"), hand_history["rounds"])


def assert_divergence_is_diff_views(rows: list[dict[str, Any]], rounds: list[list[ServerView]],
                                    consumers: int = 2) -> None:
    """Each round's divergence rows hold exactly the findings and impacts ``diff_views``
    gives for that round's views (rounds a minute apart from T0)."""
    for round_no, views in enumerate(rounds):
        report = diff_views(sorted(views, key=lambda v: v.addr), consumers=consumers)
        mine = [r for r in rows if r["round"] == round_no]
        (cluster,) = [r for r in mine if r["scope"] == "cluster"]
        assert [_finding(None, f) for f in cluster["findings"]] == [f for f in report.findings if f.topic is None]
        topics = {r["topic"]: r for r in mine if r["scope"] == "topic"}
        expected_topics = {f.topic for f in report.findings if f.topic is not None}
        assert expected_topics <= set(topics), round_no
        for topic, row in topics.items():
            expected = [f for f in report.findings if f.topic == topic]
            assert [_finding(topic, f) for f in row["findings"]] == expected, (round_no, topic)
            assert row["agree"] is (not expected)
            impact = next((i for i in report.impacts if i.topic == topic), None)
            assert (None if row["impact_json"] is None else json.loads(row["impact_json"])) == (
                None if impact is None else impact.to_obj()), (round_no, topic)
            if impact is not None:
                assert row["unassigned"] == len(impact.consumer.unassigned)
                assert row["doubly_assigned"] == len(impact.consumer.doubly_assigned)
        assert all(r["capture_ms"] == T0 + round_no * MINUTE for r in mine)


def test_divergence_rows_are_intervals(spark: Any, hand_history: dict[str, Any]) -> None:
    """B lacks broker-b in rounds 2-4 alike: one row for the three rounds; the agreeing
    rounds around it are rows too."""
    rows = sorted((r["from_round"], r["to_round"], r["rounds"], r["interval_ms"], r["agree"])
                  for r in _table(spark, hand_history, "divergence") if r["topic"] == "orders")
    assert rows[:3] == [(0, 1, 2, 2 * MINUTE, True), (2, 4, 3, 3 * MINUTE, False), (5, 5, 1, MINUTE, True)]


def test_every_kind_of_difference_was_exercised(spark: Any, hand_history: dict[str, Any]) -> None:
    kinds = {k for r in _table(spark, hand_history, "divergence") for k in r["kinds"]}
    assert kinds >= {"broker_missing", "route_missing", "topic_list_missing", "cluster_members", "perm",
                     "read_queue_nums", "write_queue_nums", "kv_value", "master_missing", "broker_addr"}


def test_partition_window_numbers(spark: Any, hand_history: dict[str, Any]) -> None:
    windows = {(w["topic"], w["start_ms"]): w for w in _table(spark, hand_history, "windows")}
    orders = windows[("orders", T0 + 2 * MINUTE)]
    assert (orders["end_ms"], orders["duration_s"], orders["open"], orders["rounds"]) == (
        T0 + 5 * MINUTE, 180.0, False, 3)
    assert (orders["servers"], orders["cause"], orders["brokers"], orders["clusters"]) == (
        [B], "broker_missing", ["broker-b"], ["DefaultCluster"])
    # Spec 8.4's example: b/0-b/3 read by nobody, a/2 and a/3 by both, for 3 minutes.
    assert (orders["max_unassigned"], orders["max_doubly_assigned"]) == (4, 2)
    assert (orders["unassigned_queue_minutes"], orders["doubly_assigned_queue_minutes"]) == (12.0, 6.0)
    assert orders["affected_consumer_minutes"] == 6.0
    t2 = windows[("t2", T0 + 2 * MINUTE)]
    assert (t2["duration_s"], t2["cause"], t2["servers"]) == (180.0, "topic_missing", [B])
    # Round 6 alone: one-round windows last one interval.
    assert windows[("orders", T0 + 6 * MINUTE)]["duration_s"] == 60.0
    assert windows[("orders", T0 + 6 * MINUTE)]["cause"] == "perm"
    # t3 lacks its master on C in round 6, then has a moved slave on B in round 7: one
    # window of two rounds, caused by the stronger of the two.
    t3 = windows[("t3", T0 + 6 * MINUTE)]
    assert (t3["duration_s"], t3["cause"], t3["kinds"], t3["servers"]) == (
        120.0, "master_missing", ["broker_addr", "master_missing"], [B, C])
    assert not any(w["open"] for w in windows.values())


def test_summary_numbers(spark: Any, hand_history: dict[str, Any]) -> None:
    (row,) = _table(spark, hand_history, "summary")
    assert (str(row["date"]), row["cluster"], row["rounds"]) == ("2026-01-01", "DefaultCluster", 9)
    # Rounds 2, 3, 4, 6 and 7 disagree; the last round stands for no time.
    assert (row["observed_s"], row["consistent_s"]) == (480.0, 180.0)
    assert row["consistent_share"] == pytest.approx(0.375)
    # Queue-minutes straight from diff_views' impacts, a minute per round.
    unassigned = doubly = 0
    for views in hand_history["rounds"][:-1]:
        for impact in diff_views(sorted(views, key=lambda v: v.addr), consumers=2).impacts:
            unassigned += len(impact.consumer.unassigned)
            doubly += len(impact.consumer.doubly_assigned)
    assert (row["unassigned_queue_minutes"], row["doubly_assigned_queue_minutes"]) == (unassigned, doubly)
    assert row["worst_windows"][0]["duration_s"] == 180.0
    assert row["windows"] == len(_table(spark, hand_history, "windows"))


def test_brokers_and_convergence(spark: Any, hand_history: dict[str, Any]) -> None:
    brokers = {(r["broker"], r["server"]): r for r in _table(spark, hand_history, "brokers")}
    on_b = brokers[("broker-b", B)]
    assert (on_b["rounds"], on_b["present_rounds"], on_b["registrations"]) == (9, 6, 2)
    assert (on_b["appears"], on_b["disappears"], on_b["flaps"]) == (1, 1, 1)
    on_c = brokers[("broker-b", C)]
    assert (on_c["rounds"], on_c["flaps"], on_c["registrations"]) == (8, 0, 1)  # C did not answer round 7
    (event,) = _table(spark, hand_history, "broker_events")
    assert (event["broker"], event["kind"], event["start_ms"], event["converge_s"], event["converged"]) == (
        "broker-b", "flap", T0 + 2 * MINUTE, 180.0, True)
    assert event["servers"] == [B]
    assert {s["server"]: s["lag_s"] for s in event["server_lags"]} == {A: 0.0, B: 180.0, C: 0.0}


def test_routes_table_is_the_flattened_captures(spark: Any, hand_history: dict[str, Any]) -> None:
    routes = at_rounds(spark, hand_history["out"], "routes")
    assert routes.where("round = 0").count() == 3 * (2 + 1 + 1)  # orders on 2 brokers, t2, t3
    lost = routes.where(f"round = 3 and server = '{B}' and topic = 't2'").collect()
    assert [(r["asked"], r["has_route"], r["listed"], r["broker"]) for r in lost] == [(True, False, False, None)]
    # What did B say about t2 at 3.5 minutes: one filter, one interval (rounds 2-4).
    t = T0 + 3 * MINUTE + 30_000
    said = spark.read.parquet(str(hand_history["out"] / "routes")).where(
        f"server = '{B}' and topic = 't2' and valid_from_ms <= {t} and (valid_to_ms is null or valid_to_ms > {t})")
    assert [(r["has_route"], r["from_round"], r["to_round"], r["rounds"], r["valid_to_ms"]) for r in said.collect()] == [
        (False, 2, 4, 3, T0 + 5 * MINUTE)]
    captures = spark.read.parquet(str(hand_history["out"] / "captures"))
    assert captures.count() == 27
    assert captures.where("not ok").select("server", "round").collect()[0].asDict() == {"server": C, "round": 7}


def test_synth_history_analysed_twice_into_the_same_out(spark: Any, tmp_path: Any) -> None:
    """A quiet synthetic history: no window, empty tables read back fine, and a second
    run over the same captures replaces its dates instead of adding to them."""
    from mqadmin.pipeline.job import JobOptions, run
    from mqadmin.pipeline.synth import SynthPlan, synthesize

    synth = synthesize(SynthPlan(tmp_path / "captures", servers=2, brokers=4, topics=30, hours=0.5, every=300,
                                 events_per_day=0, start="2026-03-01T23:40:00Z"))
    assert (synth.rounds, synth.files) == (6, 12)
    out = tmp_path / "out"
    first = run(spark, JobOptions(str(tmp_path / "captures"), str(out)))
    assert first.dates == ["2026-03-01", "2026-03-02"]
    assert (first.counts["windows"], first.counts["inconsistent"], first.counts["rounds"]) == (0, 0, 6)
    assert at_rounds(spark, out, "routes").count() == synth.route_rows
    summary = {str(r["date"]): r for r in spark.read.parquet(str(out / "summary")).collect()}
    assert summary["2026-03-01"]["consistent_share"] == 1.0 and summary["2026-03-01"]["observed_s"] == 1200.0
    second = run(spark, JobOptions(str(tmp_path / "captures"), str(out), report=False,
                                   from_ms=synth_start("2026-03-02T00:00:00Z")))
    assert second.dates == ["2026-03-02"]
    assert at_rounds(spark, out, "routes").count() == synth.route_rows
    assert (out / "report.html").exists()


def synth_start(text: str) -> int:
    from mqadmin.pipeline.synth import parse_start

    return parse_start(text)


def test_unreadable_and_misplaced_files_are_listed_not_compared(spark: Any, tmp_path: Any) -> None:
    """A truncated file and a file copied into another round's directory: both are
    captures rows with unreadable = true and the reason, and neither takes part in a
    comparison (the misplaced copy differs from its new round's peers)."""
    from mqadmin.pipeline.job import JobOptions, run
    from tests.diff.views import route, view
    from tests.pipeline.conftest import write_history

    caps = tmp_path / "captures"
    same = {"t": route("broker-a")}
    write_history(caps, [[view(A, same), view(B, same)], [view(A, same), view(B, same)],
                         [view(A, {"t": route("broker-b")}), ServerView(B, error="refused")]])
    (caps / "000001" / "10.0.0.2_9876.msgpack").write_bytes((caps / "000002" / "10.0.0.1_9876.msgpack").read_bytes())
    truncated = caps / "000000" / "10.0.0.2_9876.msgpack"
    truncated.write_bytes(truncated.read_bytes()[:-7])
    out = tmp_path / "out"
    result = run(spark, JobOptions(str(caps), str(out), report=False))
    assert result.counts["unreadable_files"] == 2
    bad = {(r["round"], r["server"]): r["error"] for r in
           spark.read.parquet(str(out / "captures")).where("unreadable").collect()}
    assert set(bad) == {(0, B), (1, B)}
    assert "unreadable capture" in bad[(0, B)]
    assert bad[(1, B)].startswith("capture of round 2 in directory '000001'")
    differing = at_rounds(spark, out, "divergence").where("scope = 'topic' and not agree").collect()
    assert [(r["round"], r["topic"]) for r in differing] == []
    routes = at_rounds(spark, out, "routes")
    assert [r["server"] for r in routes.where("round = 1").select("server").distinct().collect()] == [A]


def test_rerun_over_part_of_a_date_drops_windows_and_events_it_no_longer_sees(spark: Any, tmp_path: Any) -> None:
    """A window and a broker event in rounds 0-2, then agreement. Re-run from round 3:
    the date is rewritten with only rounds 3-5, so its window and event are gone,
    although this run finds no window or event to write in their place."""
    from mqadmin.pipeline.job import JobOptions, run
    from tests.diff.views import route, view
    from tests.pipeline.conftest import write_history

    caps, out = tmp_path / "captures", tmp_path / "out"
    both, one = {"t": route("broker-a", "broker-b")}, {"t": route("broker-a")}
    split = [view(A, both), view(B, one, brokers=("broker-a",))]
    agree = [view(A, both), view(B, both)]
    times = write_history(caps, [split, split, split, agree, agree, agree])
    first = run(spark, JobOptions(str(caps), str(out), report=False))
    assert first.counts["windows"] == 1
    assert spark.read.parquet(str(out / "broker_events")).count() == 1
    second = run(spark, JobOptions(str(caps), str(out), report=False, from_ms=times[3]))
    assert second.dates == first.dates == ["2026-01-01"]
    assert second.counts["windows"] == 0
    for table in ("windows", "broker_events"):
        assert spark.read.parquet(str(out / table)).count() == 0, table
    rounds = spark.read.parquet(str(out / "captures")).select("round").distinct().collect()
    assert sorted(r["round"] for r in rounds) == [3, 4, 5]  # the date holds only the selected rounds
    summary = spark.read.parquet(str(out / "summary")).collect()
    assert [(r["rounds"], r["windows"], r["consistent_share"]) for r in summary] == [(3, 0, 1.0)]
