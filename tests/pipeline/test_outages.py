"""A name server that stops answering in the middle of a disagreement: the servers still
answering agree, but that says nothing about whether the disagreement ended. Windows and
broker events continue across such rounds when the disagreement is seen again after them
(SCHEMA.md, "Silent servers"); agreement seen while a server of each side answers still
ends them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mqadmin.diff import ServerView
from tests.diff.views import route, view
from tests.pipeline.conftest import A, B, C, MINUTE, T0, write_history

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def _down(addr: str) -> ServerView:
    return ServerView(addr, error=f"{addr}: GET_BROKER_CLUSTER_INFO (106): connection refused")


def _topics(lost_b: bool = False, t4_wide: bool = False, t6_wide: bool = False) -> dict[str, Any]:
    """``orders`` on both brokers and ``t2`` on broker-b (both changed when broker-b is
    lost); ``t4`` and ``t6`` on broker-a with 4 queues, or 8 when "wide"."""
    return {"orders": route("broker-a") if lost_b else route("broker-a", "broker-b"),
            "t2": None if lost_b else route("broker-b"),
            "t4": route("broker-a", queues=8 if t4_wide else 4),
            "t6": route("broker-a", queues=8 if t6_wide else 4)}


def _server(addr: str, **kw: bool) -> ServerView:
    return view(addr, _topics(**kw), brokers=("broker-a",) if kw.get("lost_b") else ("broker-a", "broker-b"))


def three_servers() -> list[list[ServerView]]:
    """Nine rounds a minute apart:

    * 0 agree; 1-2 B has lost broker-b and has ``t4`` wide; B and C have ``t6`` wide;
    * 3-4 B is down: A and C agree on everything (``t6`` narrow on C now);
    * 5-6 B has lost broker-b again (``t4`` narrow: it changed while down); B and C have
      ``t6`` wide again;
    * 7-8 agree.
    """
    agree = [_server(s) for s in (A, B, C)]
    split = [_server(A), _server(B, lost_b=True, t4_wide=True, t6_wide=True), _server(C, t6_wide=True)]
    again = [_server(A), _server(B, lost_b=True, t6_wide=True), _server(C, t6_wide=True)]
    return [agree, split, split, [_server(A), _down(B), _server(C)], [_server(A), _down(B), _server(C)],
            again, again, agree, agree]


def two_servers() -> list[list[ServerView]]:
    """Five rounds of A and B: 0 agree; 1 B has lost broker-b and has ``t4`` wide; 2 A
    is down; 3 B has lost broker-b (``t4`` narrow again); 4 agree."""
    agree = [_server(A), _server(B)]
    return [agree, [_server(A), _server(B, lost_b=True, t4_wide=True)], [_down(A), _server(B, lost_b=True)],
            [_server(A), _server(B, lost_b=True)], agree]


def _analyse(spark: Any, base: Path, rounds: list[list[ServerView]]) -> dict[str, list[dict[str, Any]]]:
    from mqadmin.pipeline.job import JobOptions, run

    write_history(base / "captures", rounds)
    run(spark, JobOptions(str(base / "captures"), str(base / "out"), consumers=2, report=False))
    return {name: [r.asDict(recursive=True) for r in spark.read.parquet(str(base / "out" / name)).collect()]
            for name in ("windows", "summary", "broker_events")}


@pytest.fixture(scope="module")
def three(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    return _analyse(spark, tmp_path_factory.mktemp("three"), three_servers())


def _windows(tables: dict[str, list[dict[str, Any]]], topic: str) -> list[dict[str, Any]]:
    return sorted((w for w in tables["windows"] if w["topic"] == topic), key=lambda w: w["start_ms"])


def test_a_window_continues_across_the_rounds_its_odd_server_was_down(three: dict[str, Any]) -> None:
    for topic in ("orders", "t2"):
        (w,) = _windows(three, topic)
        assert (w["start_ms"], w["end_ms"], w["duration_s"], w["open"]) == (T0 + MINUTE, T0 + 7 * MINUTE, 360.0, False)
        assert (w["rounds"], w["unknown_s"], w["servers"]) == (4, 120.0, [B])
        assert [(s["start_ms"], s["end_ms"]) for s in w["unknown_spans"]] == [(T0 + 3 * MINUTE, T0 + 5 * MINUTE)]
    # Queue-minutes count the rounds seen disagreeing only: 4 unassigned queues of
    # broker-b's, 2 doubly assigned, for 4 minutes.
    (orders,) = _windows(three, "orders")
    assert (orders["unassigned_queue_minutes"], orders["doubly_assigned_queue_minutes"]) == (16.0, 8.0)


def test_agreement_after_the_server_is_back_ends_the_window_where_it_went_silent(three: dict[str, Any]) -> None:
    (w,) = _windows(three, "t4")  # B wide in 1-2, narrow again when it came back
    assert (w["start_ms"], w["end_ms"], w["duration_s"], w["rounds"], w["unknown_s"], w["unknown_spans"]) == (
        T0 + MINUTE, T0 + 3 * MINUTE, 120.0, 2, 0.0, [])


def test_agreement_seen_by_a_server_of_each_side_ends_the_window(three: dict[str, Any]) -> None:
    # t6: A alone is odd in 1-2 and 5-6. In 3-4 B is down, but A and C (one of the
    # majority) agree: a real agreement, so two windows.
    windows = _windows(three, "t6")
    assert [(w["start_ms"], w["end_ms"], w["unknown_s"], w["servers"]) for w in windows] == [
        (T0 + MINUTE, T0 + 3 * MINUTE, 0.0, [A]), (T0 + 5 * MINUTE, T0 + 7 * MINUTE, 0.0, [A])]


def test_summary_counts_the_bridged_rounds_as_unknown_not_consistent(three: dict[str, Any]) -> None:
    (row,) = three["summary"]
    # Rounds 1, 2, 5, 6 disagree; 3 and 4 are bridged; 0 and 7 agree; 8 is the last.
    assert (row["observed_s"], row["consistent_s"], row["unknown_s"]) == (480.0, 120.0, 120.0)
    assert row["consistent_share"] == pytest.approx(0.25)
    assert row["windows"] == 5  # orders, t2, t4, and t6 twice
    assert row["longest_window_s"] == 360.0


def test_a_broker_event_continues_across_the_rounds_its_lagging_server_was_down(three: dict[str, Any]) -> None:
    (event,) = three["broker_events"]
    assert (event["broker"], event["kind"], event["start_ms"], event["converged_ms"]) == (
        "broker-b", "flap", T0 + MINUTE, T0 + 7 * MINUTE)
    assert (event["converge_s"], event["rounds"], event["servers"]) == (360.0, 6, [B])


def test_two_servers_the_majority_going_silent_also_bridges(spark: Any, tmp_path: Path) -> None:
    tables = _analyse(spark, tmp_path, two_servers())
    (orders,) = _windows(tables, "orders")
    assert (orders["start_ms"], orders["end_ms"], orders["rounds"], orders["unknown_s"], orders["servers"]) == (
        T0 + MINUTE, T0 + 4 * MINUTE, 2, 60.0, [B])
    # t4 is not seen disagreeing again: its window ends where A went silent.
    (t4,) = _windows(tables, "t4")
    assert (t4["start_ms"], t4["end_ms"], t4["unknown_s"]) == (T0 + MINUTE, T0 + 2 * MINUTE, 0.0)
    (event,) = tables["broker_events"]
    assert (event["kind"], event["start_ms"], event["converged_ms"], event["servers"]) == (
        "flap", T0 + MINUTE, T0 + 4 * MINUTE, [B])
