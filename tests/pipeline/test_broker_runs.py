"""The broker_events rule (mqadmin/pipeline/broker_runs.py) over rounds written by hand,
and the same bridging decision as the live watcher (diff/watch.py's Tracker) on the
same rounds: the silent-side rule lives once, in mqadmin.diff.rules.

A history is written one round per word, one character per server (A, B, C, D in
order): ``1`` the server listed the broker, ``0`` it did not, ``-`` it gave no cluster
info. Rounds are a minute apart, round i has seq i.
"""

from __future__ import annotations

import pytest

from mqadmin.diff import ServerView, diff_views
from mqadmin.diff.watch import Tracker
from mqadmin.pipeline.broker_runs import SPLIT, BrokerEvent, Seen, events
from tests.diff.views import view
from tests.pipeline.conftest import A, B, C, MINUTE, T0

D = "10.0.0.4:9876"
SERVERS = (A, B, C, D)
#: (kind, first round, last round, converge_s or None, {server: lag_s})
Expected = tuple[str, int, int, float | None, dict[str, float | None]]


def history(text: str) -> tuple[list[Seen], dict[int, int]]:
    seen = []
    for seq, word in enumerate(text.split()):
        listed = {s: c == "1" for s, c in zip(SERVERS, word) if c != "-"}
        if listed:
            seen.append(Seen(seq, T0 + seq * MINUTE, listed, "DefaultCluster"))
    return seen, {seq: T0 + seq * MINUTE for seq in range(len(text.split()))}


def _plain(e: BrokerEvent) -> Expected:
    converge_s = None if e.converged_ms is None else (e.converged_ms - e.start_ms) / 1000
    return e.kind, e.start_seq, e.end_seq, converge_s, dict(e.server_lags)


CASES: dict[str, tuple[str, list[Expected]]] = {
    "appear": ("000 100 110 111", [("appear", 1, 2, 120.0, {A: 0.0, B: 60.0, C: 120.0})]),
    "disappear": ("111 011 000", [("disappear", 1, 1, 60.0, {A: 0.0, B: 60.0, C: 60.0})]),
    "flap": ("111 101 111", [("flap", 1, 1, 60.0, {A: 0.0, B: 60.0, C: 0.0})]),
    "transient": ("000 010 000", [("transient", 1, 1, 60.0, {A: 0.0, B: 60.0, C: 0.0})]),
    "direct changes": ("000 111 111 000", [("appear", 1, 1, 0.0, {A: 0.0, B: 0.0, C: 0.0}),
                                           ("disappear", 3, 3, 0.0, {A: 0.0, B: 0.0, C: 0.0})]),
    # Lost on B and never agreed again: a disappear whose lags are unknown for the
    # servers that still list it (the history ends first).
    "unconverged": ("111 101 101", [("disappear", 1, 2, None, {A: None, B: 0.0, C: None})]),
    "split from the first round to the last": ("101 101", [("unknown", 0, 1, None, {A: None, B: 0.0, C: None})]),
    # B (the side that lost it) is down in round 2: A and C agreeing says nothing.
    "bridged silent side": ("111 101 1-1 101 111", [("flap", 1, 3, 180.0, {A: 0.0, B: 180.0, C: 0.0})]),
    # D is down, but B (of D's side) answers and lists the broker: a real agreement.
    "one server of each side answered": ("1111 1010 111- 1010 1111", [
        ("flap", 1, 1, 60.0, {A: 0.0, B: 60.0, C: 0.0, D: 60.0}),
        ("flap", 3, 3, 60.0, {A: 0.0, B: 60.0, C: 0.0, D: 60.0})]),
    # B never comes back: the event ends where it went silent.
    "a server that never comes back": ("111 101 1-1 1-1", [("flap", 1, 1, 60.0, {A: 0.0, B: 60.0, C: 0.0})]),
    "back agreeing, then split again": ("111 101 1-1 111 101 111", [
        ("flap", 1, 1, 60.0, {A: 0.0, B: 60.0, C: 0.0}), ("flap", 4, 4, 60.0, {A: 0.0, B: 60.0, C: 0.0})]),
    # Two servers: A (which kept it) is down, B alone says "none".
    "the other side silent": ("11 10 -0 10 11", [("flap", 1, 3, 180.0, {A: 0.0, B: 180.0})]),
    # Each side silent in turn: no round in which a server of each side answered.
    "sides silent in turn": ("11 10 -1 1- 10 11", [("flap", 1, 4, 240.0, {A: 0.0, B: 240.0})]),
    # Nobody gave cluster info in round 2: the split goes on through it.
    "a round without cluster info": ("111 101 --- 101 111", [("flap", 1, 3, 180.0, {A: 0.0, B: 180.0, C: 0.0})]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_events_of_one_broker(name: str) -> None:
    text, expected = CASES[name]
    assert [_plain(e) for e in events(*history(text))] == expected


def test_servers_are_those_that_lagged_and_rounds_include_bridged_ones() -> None:
    (e,) = events(*history("111 101 1-1 101 111"))
    assert (e.servers, e.rounds, e.cluster) == ([B], 3, "DefaultCluster")
    (e,) = events(*history("111 101 101"))
    assert e.servers == [A, C]


# ------------------------------------------------ the same rule as the watcher ----


def _views(word: str) -> list[ServerView]:
    out = []
    for server, c in zip(SERVERS, word):
        if c == "-":
            out.append(ServerView(server, error=f"{server}: GET_BROKER_CLUSTER_INFO (106): connection refused"))
        else:
            out.append(view(server, {}, brokers=("broker-a", "broker-b") if c == "1" else ("broker-a",)))
    return out


def watcher_bridged(text: str) -> set[int]:
    """Rounds in which the watcher kept broker-b's difference unconfirmed (a side silent)
    and then saw it again: the rounds it carries the difference across."""
    tracker = Tracker()
    marks: list[str] = []
    for i, word in enumerate(text.split()):
        t = (T0 + i * MINUTE) / 1000
        views = _views(word)
        rnd = tracker.add(views, diff_views(views, consumers=2), started_wall=t, started=t, elapsed=0.1)
        marks.append("seen" if rnd.report.findings else "unconfirmed" if rnd.unconfirmed else "")
    bridged: set[int] = set()
    pending: list[int] = []
    for i, mark in enumerate(marks):
        if mark == "seen":
            bridged.update(pending)
        pending = pending + [i] if mark == "unconfirmed" else []
    return bridged


def job_bridged(text: str) -> set[int]:
    """Rounds inside a broker event in which the servers that answered agreed."""
    seen, times = history(text)
    split = {r.seq for r in seen if r.state == SPLIT}
    return {seq for e in events(seen, times) for seq in range(e.start_seq, e.end_seq + 1) if seq not in split}


PARITY: dict[str, tuple[str, set[int]]] = {
    "bridged silent side": ("111 101 1-1 1-1 101 111", {2, 3}),
    "one server of each side answered": ("1111 1010 111- 1010 1111", set()),
    "a server that never comes back": ("111 101 1-1 1-1", set()),
    "back agreeing, then split again": ("111 101 1-1 111 101 111", set()),
    "the other side silent": ("11 10 -0 10 11", {2}),
    "sides silent in turn": ("11 10 -1 1- 10 11", {2, 3}),
    "every server silent": ("111 101 --- 101 111", {2}),
}


@pytest.mark.parametrize("name", list(PARITY))
def test_the_watcher_and_broker_events_bridge_the_same_rounds(name: str) -> None:
    text, expected = PARITY[name]
    assert watcher_bridged(text) == expected
    assert job_bridged(text) == expected


def test_presence_rows_of_one_broker_give_the_same_events() -> None:
    """What the job hands the rule (presence.broker_events): one row per (round, server)
    and the rounds' next times, which end B's lag at round 2, a round in which no server
    gave cluster info."""
    from mqadmin.pipeline.presence import broker_events

    seen, times = history("111 101 --- 111")
    pres = [{"broker": "broker-b", "seq": r.seq, "capture_ms": r.capture_ms, "server": server, "present": listed,
             "cluster": r.cluster} for r in seen for server, listed in r.listed.items()]
    (event,) = broker_events(pres, [{"seq": seq, "next_ms": times.get(seq + 1)} for seq in times])
    assert {k: v for k, v in event.items() if k not in ("date", "start")} == {
        "broker": "broker-b", "cluster": "DefaultCluster", "kind": "flap", "start_ms": T0 + MINUTE,
        "converged_ms": T0 + 3 * MINUTE, "converged": True, "converge_s": 120.0, "rounds": 1, "servers": [B],
        "server_lags": [{"server": A, "lag_s": 0.0}, {"server": B, "lag_s": 60.0}, {"server": C, "lag_s": 0.0}]}
    assert broker_events([], []) == []
