"""One rule, two engines: the live watcher (diff/watch.py's Tracker, fed a fake clock) and
the Spark job (windows and divergence tables, real local PySpark) must find the same
windows of disagreement, bridging the same silent rounds, and the same odd servers
(diff/rules.py states both rules once).

Each scenario is a list of rounds of ServerViews a minute apart; ``expected`` gives, per
topic, its windows as (first round, round it ended at or None when open, bridged rounds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pytest

from mqadmin.diff import ServerView, diff_views
from mqadmin.diff.rules import differing_servers
from mqadmin.diff.watch import Round, Tracker
from tests.pipeline.conftest import A, B, C, MINUTE, T0, at_rounds, write_history
from tests.pipeline.test_outages import _down, _server, three_servers, two_servers

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

D = "10.0.0.4:9876"
#: (first round, round it ended at or None if still open, bridged rounds)
Window = tuple[int, int | None, tuple[int, ...]]


def never_returns() -> list[list[ServerView]]:
    """B has lost broker-b in 1-2, then is down for good (3-5)."""
    agree = [_server(s) for s in (A, B, C)]
    split = [_server(A), _server(B, lost_b=True), _server(C)]
    down = [_server(A), _down(B), _server(C)]
    return [agree, split, split, down, down, down]


def back_agreeing_then_again() -> list[list[ServerView]]:
    """B odd in 1, down in 2, back agreeing in 3, odd again in 4-5: two windows."""
    agree = [_server(s) for s in (A, B, C)]
    split = [_server(A), _server(B, lost_b=True), _server(C)]
    return [agree, split, [_server(A), _down(B), _server(C)], agree, split, split]


def majority_down() -> list[list[ServerView]]:
    """A and C (the majority) both down in 2-3 while B stays odd-less alone: B's view is
    all there is, so nothing disagrees and nothing is known; B odd again in 4."""
    agree = [_server(s) for s in (A, B, C)]
    split = [_server(A), _server(B, lost_b=True), _server(C)]
    alone = [_down(A), _server(B, lost_b=True), _down(C)]
    return [agree, split, alone, alone, split, agree]


def sides_silent_in_turn() -> list[list[ServerView]]:
    """B odd in 1; B down in 2 (A and C agree); A and C down in 3 (B alone); B odd again in
    4: no round of 2-3 had a server of each side, so the window goes on across them."""
    agree = [_server(s) for s in (A, B, C)]
    split = [_server(A), _server(B, lost_b=True), _server(C)]
    return [agree, split, [_server(A), _down(B), _server(C)], [_down(A), _server(B, lost_b=True), _down(C)],
            split, agree]


def three_way_split() -> list[list[ServerView]]:
    """Four servers, ``t`` with 4 queues on A and B, 8 on C, 16 on D (rounds 1, 4); in 2-3
    D is down and C has 4 again: A, B, C agree, but D's side is silent."""
    from tests.diff.views import route, view

    def at(addr: str, queues: int) -> ServerView:
        return view(addr, {"t": route("broker-a", queues=queues)}, brokers=("broker-a",))

    split = [at(A, 4), at(B, 4), at(C, 8), at(D, 16)]
    quiet = [at(A, 4), at(B, 4), at(C, 4), _down(D)]
    return [[at(s, 4) for s in (A, B, C, D)], split, quiet, quiet, split, [at(s, 4) for s in (A, B, C, D)]]


SCENARIOS: dict[str, tuple[Any, dict[str, list[Window]]]] = {
    "odd server down two rounds": (three_servers, {
        "orders": [(1, 7, (3, 4))], "t2": [(1, 7, (3, 4))], "t4": [(1, 3, ())], "t6": [(1, 3, ()), (5, 7, ())]}),
    "two servers, the majority silent": (two_servers, {"orders": [(1, 4, (2,))], "t2": [(1, 4, (2,))],
                                                      "t4": [(1, 2, ())]}),
    "a server that never returns": (never_returns, {"orders": [(1, 3, ())], "t2": [(1, 3, ())]}),
    "back agreeing, then odd again": (back_agreeing_then_again, {
        "orders": [(1, 2, ()), (4, None, ())], "t2": [(1, 2, ()), (4, None, ())]}),
    "the majority down": (majority_down, {"orders": [(1, 5, (2, 3))], "t2": [(1, 5, (2, 3))]}),
    "the sides silent in turn": (sides_silent_in_turn, {"orders": [(1, 5, (2, 3))], "t2": [(1, 5, (2, 3))]}),
}


def _live(rounds: Sequence[Sequence[ServerView]]) -> tuple[dict[str, list[Window]], dict[tuple[int, str], list[str]]]:
    """Windows per topic from the watcher's rounds: a window runs from a round a topic's
    difference is seen to the round after it was last seen; rounds in which it was only
    unconfirmed count when it was seen again after them (bridged), and not otherwise."""
    tracker = Tracker()
    seen: dict[str, list[tuple[int, str]]] = {}  # topic -> [(round, "seen" | "unconfirmed")]
    odd: dict[tuple[int, str], list[str]] = {}
    for i, views in enumerate(rounds):
        t = (T0 + i * MINUTE) / 1000
        report = diff_views(list(views), consumers=2)
        rnd: Round = tracker.add(list(views), report, started_wall=t, started=t, elapsed=0.1)
        topics = {f.topic for f in rnd.report.findings if f.topic is not None}
        for topic in topics:
            seen.setdefault(topic, []).append((i, "seen"))
            odd[(i, topic)] = differing_servers(f for f in rnd.report.findings if f.topic == topic)
        for topic in {f.topic for f, _ in rnd.unconfirmed if f.topic is not None} - topics:
            seen.setdefault(topic, []).append((i, "unconfirmed"))
    out: dict[str, list[Window]] = {}
    for topic, marks in seen.items():
        windows: list[list[Any]] = []  # [start, last seen, bridged, pending unconfirmed]
        prev = -2
        for i, state in marks:
            if i != prev + 1 or not windows:
                if state == "seen":
                    windows.append([i, i, [], []])
            elif state == "seen":
                windows[-1][2] += windows[-1][3]
                windows[-1][1], windows[-1][3] = i, []
            else:
                windows[-1][3].append(i)
            prev = i if windows else prev
        last = len(rounds) - 1
        out[topic] = [(s, None if e == last else e + 1, tuple(b)) for s, e, b, _ in windows]
    return out, odd


def _spark(spark: Any, base: Path, rounds: Sequence[Sequence[ServerView]]
           ) -> tuple[dict[str, list[Window]], dict[tuple[int, str], list[str]]]:
    from mqadmin.pipeline.job import JobOptions, run

    times = write_history(base / "captures", rounds)
    run(spark, JobOptions(str(base / "captures"), str(base / "out"), consumers=2, report=False))
    index = {t: i for i, t in enumerate(times)}
    out: dict[str, list[Window]] = {}
    for w in sorted(spark.read.parquet(str(base / "out" / "windows")).collect(), key=lambda w: w["start_ms"]):
        bridged = tuple(i for s in w["unknown_spans"] for i in range(index[s["start_ms"]], index[s["end_ms"]]))
        end = None if w["open"] else index[w["end_ms"]]
        out.setdefault(w["topic"], []).append((index[w["start_ms"]], end, bridged))
    odd = {(int(r["round"]), r["topic"]): list(r["differing"])
           for r in at_rounds(spark, base / "out", "divergence").collect()
           if r["topic"] is not None and not r["agree"]}
    return out, odd


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_watcher_and_the_job_find_the_same_windows_and_odd_servers(spark: Any, tmp_path: Path, name: str) -> None:
    make, expected = SCENARIOS[name]
    rounds = make()
    live_windows, live_odd = _live(rounds)
    job_windows, job_odd = _spark(spark, tmp_path, rounds)
    assert live_windows == expected
    assert job_windows == expected
    assert live_odd == job_odd and live_odd


THREE_WAY: dict[str, list[Window]] = {"t": [(1, 5, (2, 3))]}


def test_the_watcher_keeps_a_three_way_split_unconfirmed_while_its_odd_server_is_silent() -> None:
    assert _live(three_way_split())[0] == THREE_WAY


def test_the_job_bridges_a_three_way_split_as_the_watcher_does(spark: Any, tmp_path: Path) -> None:
    assert _spark(spark, tmp_path, three_way_split())[0] == THREE_WAY
