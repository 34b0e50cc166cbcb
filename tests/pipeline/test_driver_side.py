"""The small tables the job works out on the driver, without Spark: rounds and the dates
a run covers (rounds.py), the summary's per-(round, cluster) counts and rows
(summary.py), the report's per-round counts (report.per_time) and the per-topic pass's
merge of the chains' fact intervals (topics.merged)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pyarrow as pa

from mqadmin.pipeline.report import per_time
from mqadmin.pipeline.rounds import frame, round_rows, seen, timeline
from mqadmin.pipeline.summary import disagreeing, summary_rows
from mqadmin.pipeline.topics import Interval, Timeline, merged
from tests.pipeline.conftest import A, B, MINUTE, T0

DAY_MS = 86_400_000


def capture(round_no: int, server: str | None, ms: int | None, *, ok: bool = True, unreadable: bool = False,
            clusters: list[str | None] | None = None) -> dict[str, Any]:
    return {"round": round_no, "capture_ms": ms, "server": server, "ok": ok, "unreadable": unreadable,
            "has_topic_list": True, "has_order_ns": False, "has_cluster_info": clusters is not None,
            "clusters": clusters}


def test_rounds_come_from_readable_captures_in_time_order() -> None:
    files = [capture(7, A, T0 + MINUTE), capture(7, B, T0 + MINUTE, ok=False),
             capture(3, B, T0), capture(3, A, T0),
             capture(9, None, T0 + 5 * DAY_MS, unreadable=True),  # its mtime: no round, no date
             capture(8, A, T0 + MINUTE, unreadable=True)]  # a round of unreadable files only: none
    rows = round_rows(files)
    assert [(r["round"], r["seq"], r["servers_asked"], r["servers_answered"], r["servers"]) for r in rows] == [
        (3, 1, 2, 2, [A, B]), (7, 2, 2, 1, [A])]
    assert [(r["next_ms"], r["interval_ms"], r["date"]) for r in rows] == [
        (T0 + MINUTE, MINUTE, date(2026, 1, 1)), (None, 0, date(2026, 1, 1))]
    assert seen(files).__dict__ == {"dates": ["2026-01-01"], "captures": 6, "unreadable": 2, "rounds": 2}
    assert timeline(files, rows).answering == [((A, True, False), (B, True, False)), ((A, True, False),)]


def test_the_rounds_reach_spark_without_a_python_worker(spark: Any) -> None:
    # The per-topic pass broadcasts the rounds' seqs: made from a list of rows, the
    # frame ran Python workers at every action (1.5 s of a one-off run of 90 files).
    rows = round_rows([capture(7, A, T0 + MINUTE), capture(3, B, T0), capture(3, A, T0)])
    df = frame(spark, rows)
    assert "PythonRDD" not in df._jdf.queryExecution().toRdd().toDebugString()
    assert [r.asDict() for r in df.collect()] == rows


def test_rounds_of_one_time_are_ordered_by_round_number() -> None:
    rows = round_rows([capture(5, A, T0), capture(4, A, T0)])
    assert [(r["round"], r["seq"], r["interval_ms"]) for r in rows] == [(4, 1, 0), (5, 2, 0)]


def test_disagreement_counts_are_the_sweep_summed_round_by_round() -> None:
    rounds = [{"round": 10 + seq, "seq": seq} for seq in range(1, 6)]
    sweep = [{"cluster": "c", "seq": 2, "topics": 2, "unassigned": 4, "doubly": 0, "consumers_hit": 2},
             {"cluster": "c", "seq": 4, "topics": -2, "unassigned": -4, "doubly": 0, "consumers_hit": -2},
             {"cluster": "-", "seq": 5, "topics": 1, "unassigned": 0, "doubly": 1, "consumers_hit": 2}]
    assert disagreeing(rounds, sweep) == {(12, "c"): (2, 4, 0, 2), (13, "c"): (2, 4, 0, 2), (15, "-"): (1, 0, 1, 2)}


def test_summary_rows_count_bridged_rounds_as_unknown() -> None:
    day = date(2026, 1, 1)
    rounds = [{"round": i, "seq": i + 1, "capture_ms": T0 + i * MINUTE, "interval_ms": MINUTE, "date": day}
              for i in range(4)]
    files = [capture(i, A, T0 + i * MINUTE, clusters=["c", "c", None]) for i in range(4)]
    sweep = [{"cluster": "c", "seq": 2, "topics": 1, "unassigned": 2, "doubly": 0, "consumers_hit": 2},
             {"cluster": "c", "seq": 3, "topics": -1, "unassigned": -2, "doubly": 0, "consumers_hit": -2}]
    got: dict[str, list[dict[str, Any]]] = {
        "sweep": sweep, "spans": [{"cluster": "c", "start_ms": T0 + 2 * MINUTE, "end_ms": T0 + 3 * MINUTE}],
        "worst": [{"date": day, "cluster": "c", "windows": 1, "longest_window_s": 60.0, "worst_windows": []}],
        "conv": [{"date": day, "cluster": None, "broker_events": 1, "max_converge_s": 5.0, "unconverged_events": 0}]}
    rows = {r[1]: r for r in summary_rows(rounds, files, got)}
    # c: round 1 disagrees, round 2 is bridged, rounds 0 and 3 are consistent
    assert rows["c"] == (day, "c", 4, 240.0, 120.0, 0.5, 60.0, 1, 1, 60.0, [], 2.0, 0.0, 2.0, 0, None, 0)
    # a broker without a cluster: its rounds count, and nothing joins on a null cluster
    assert rows[None] == (day, None, 4, 240.0, 240.0, 1.0, 0.0, 0, 0, None, [], 0.0, 0.0, 0.0, 0, None, 0)


def test_per_time_spreads_counts_over_the_rounds_a_row_holds_for() -> None:
    times = [0, 10, 10, 20, 30]
    held: list[dict[str, Any]] = [{"valid_from_ms": 10, "valid_to_ms": 30, "server": None, "count": 2},
            {"valid_from_ms": 20, "valid_to_ms": None, "server": A, "count": 1},
            {"valid_from_ms": 40, "valid_to_ms": None, "server": B, "count": 5}]
    assert per_time(times, held) == {(10, None): 4, (20, None): 2, (20, A): 1, (30, A): 1}


def _facts(rows: list[tuple[str, str, int, int, str]]) -> pa.RecordBatch:
    topic, server, first, last, key = zip(*rows)
    return pa.RecordBatch.from_pydict({
        "topic": list(topic), "server": list(server), "from_seq": pa.array(first, pa.int32()),
        "to_seq": pa.array(last, pa.int32()), "asked": [True] * len(rows), "route_key": [k.encode() for k in key],
        "listed": pa.array([None] * len(rows), pa.bool_()), "order_conf_kv": pa.array([None] * len(rows), pa.string())})


def test_fact_intervals_are_joined_across_batches_and_cut_at_midnight() -> None:
    # rounds 1-3 on one date, 4-6 on the next
    tl = Timeline(list(range(6)), [T0 + DAY_MS - 3 * MINUTE + i * MINUTE for i in range(6)], [MINUTE] * 6,
                  [((A, True, False), (B, True, False))] * 6)
    batches = [_facts([("t", A, 1, 1, "k"), ("t", A, 2, 2, "k")]),
                _facts([("t", A, 3, 5, "k"), ("t", A, 6, 6, "x"), ("t", B, 1, 2, "k")]),
                _facts([("t", B, 4, 6, "k"), ("u", A, 1, 6, "k")])]
    got: list[tuple[str, Interval]] = list(merged(batches, tl))  # the last one yielded may still grow
    assert [(topic, iv.server, iv.first, iv.last, iv.route_key) for topic, iv in got] == [
        ("t", A, 1, 3, b"k"), ("t", A, 4, 5, b"k"), ("t", A, 6, 6, b"x"), ("t", B, 1, 2, b"k"), ("t", B, 4, 6, b"k"),
        ("u", A, 1, 3, b"k"), ("u", A, 4, 6, b"k")]
