"""How long the name servers took to agree on a broker: the ``broker_events`` table
(SCHEMA.md) computed for one broker at a time, in plain Python.

The job calls ``events`` once per broker over its presence rows (presence.broker_events,
on the driver); it is the whole rule, over plain values, so a test can feed it rounds by
hand. Pure: no Spark, no clock, no I/O.

A broker's rounds are few (one per capture round in which some server gave its cluster
info), so one pass over them in order says more plainly than window functions what an
event is:

* per round the state is ``all`` (every answering server lists the broker), ``none`` or
  ``split``; a *run* is a maximal stretch of rounds in one state;
* a split run is an event named by the runs around it (none->all ``appear``, all->none
  ``disappear``, all->all ``flap``, none->none ``transient``); a direct all<->none change
  is an ``appear``/``disappear`` that converged within one interval;
* a split, agreeing, split stretch is one event when the agreement is only the silence of
  one side of the last split round (those that listed the broker, or those that did not):
  the rule of ``mqadmin.diff.rules.silent_side``, applied to every agreeing round with the
  servers that answered in it, exactly as the live watcher applies it to each round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..diff.model import PRESENT
from ..diff.rules import Groups, silent_side

ALL, NONE, SPLIT = "all", "none", "split"

@dataclass(frozen=True)
class Seen:
    """One round of one broker: which of the servers that gave their cluster info listed it."""

    seq: int
    capture_ms: int
    listed: Mapping[str, bool]  # server -> listed the broker
    cluster: str | None = None  # the cluster the broker was listed under (the largest name, if several)

    @property
    def state(self) -> str:
        n = sum(self.listed.values())
        return NONE if n == 0 else ALL if n == len(self.listed) else SPLIT

    def sides(self) -> Groups:
        """The two sides of a split round as the diff's broker_missing finding has them
        (the groups silent_side takes): the servers that listed it, those that did not."""
        return ((PRESENT, sorted(s for s, v in self.listed.items() if v)),
                (None, sorted(s for s, v in self.listed.items() if not v)))


@dataclass(frozen=True)
class BrokerEvent:
    """One event: rounds ``start_seq`` to ``end_seq`` (bridged rounds included)."""

    kind: str
    start_seq: int
    end_seq: int
    start_ms: int
    converged_ms: int | None  # None: the history ends before the servers agree
    cluster: str | None
    #: server -> seconds from the start until it showed the final state for good (None: it never did)
    server_lags: Mapping[str, float | None]

    @property
    def rounds(self) -> int:
        return self.end_seq - self.start_seq + 1

    @property
    def servers(self) -> list[str]:
        """The servers that lagged."""
        return sorted(s for s, lag in self.server_lags.items() if lag is None or lag > 0)


@dataclass
class _Run:
    state: str
    rounds: list[Seen]

    @property
    def start_seq(self) -> int:
        return self.rounds[0].seq

    @property
    def end_seq(self) -> int:
        return self.rounds[-1].seq


def bridges(sides: Groups, gap: Iterable[Seen | None]) -> bool:
    """Whether the agreement of every round of ``gap`` (None: a round in which no server
    gave its cluster info) is only the silence of one of ``sides``: in each round, some
    side had no server answering (silent_side, as the watcher asks it each round)."""
    return all(silent_side(sides, set(r.listed) if r else set()) for r in gap)


def _runs(seen: Sequence[Seen]) -> list[_Run]:
    runs: list[_Run] = []
    for r in seen:
        if runs and runs[-1].state == r.state:
            runs[-1].rounds.append(r)
        else:
            runs.append(_Run(r.state, [r]))
    return runs


def _bridged(runs: list[_Run]) -> list[_Run]:
    """``runs`` with each split, agreeing, split stretch whose agreement silence explains
    merged into one split run. Each agreeing run is judged on its own, against the sides
    of the split round just before it."""
    by_seq = {r.seq: r for run in runs for r in run.rounds}
    out: list[_Run] = []
    joining = False
    for i, run in enumerate(runs):
        gap = (run.state != SPLIT and 0 < i < len(runs) - 1 and runs[i - 1].state == SPLIT
               and runs[i + 1].state == SPLIT
               and bridges(runs[i - 1].rounds[-1].sides(),
                           (by_seq.get(s) for s in range(run.start_seq, run.end_seq + 1))))
        if gap or joining:
            out[-1] = _Run(SPLIT, out[-1].rounds + run.rounds)
        else:
            out.append(run)
        joining = gap
    return out


def _kind(before: str | None, after: str | None) -> str:
    if before is not None and after is not None:
        return {(NONE, ALL): "appear", (ALL, NONE): "disappear", (ALL, ALL): "flap", (NONE, NONE): "transient"}[
            (before, after)]
    if after is not None:  # the history starts split
        return "appear" if after == ALL else "disappear"
    if before is not None:  # the history ends split
        return "appear" if before == NONE else "disappear"
    return "unknown"  # split from the first round to the last


def _cluster(rounds: Iterable[Seen]) -> str | None:
    return max((r.cluster for r in rounds if r.cluster is not None), default=None)


def events(seen: Iterable[Seen], rounds: Mapping[int, int]) -> list[BrokerEvent]:
    """The events of one broker, in time order. ``seen``: its rounds in which some server
    gave cluster info; ``rounds``: seq -> capture_ms, at least for the round after each of
    ``seen`` (a lag ends at the round after a server's last wrong one)."""
    runs = _bridged(_runs(sorted(seen, key=lambda r: r.seq)))
    out = []
    for i, run in enumerate(runs):
        before = runs[i - 1].state if i > 0 else None
        after = runs[i + 1] if i + 1 < len(runs) else None
        start_ms = run.rounds[0].capture_ms
        if run.state == SPLIT:
            kind = _kind(before, after.state if after else None)
            final = after.state == ALL if after else before == NONE
            converged_ms = after.rounds[0].capture_ms if after else None
            lag_rounds = run.rounds
        elif before in (ALL, NONE) and before != run.state:  # a direct change: agreed at once
            kind, final, converged_ms = ("appear" if run.state == ALL else "disappear"), run.state == ALL, start_ms
            lag_rounds = run.rounds[:1]
        else:
            continue
        # The cluster: the largest name over the whole run, for a direct change too.
        out.append(BrokerEvent(kind, lag_rounds[0].seq, lag_rounds[-1].seq, start_ms, converged_ms,
                               _cluster(run.rounds), _lags(lag_rounds, final, start_ms, rounds)))
    return out


def _lags(rounds_in: Sequence[Seen], final: bool, start_ms: int, rounds: Mapping[int, int]
          ) -> dict[str, float | None]:
    """Per server that answered in the event: from its start until the round after the
    last one in which the server did not show ``final`` (0 when it always did)."""
    last_wrong: dict[str, int | None] = {}
    for r in rounds_in:
        for server, listed in r.listed.items():
            if listed != final:
                last_wrong[server] = r.seq
            else:
                last_wrong.setdefault(server, None)
    lags: dict[str, float | None] = {}
    for server, seq in sorted(last_wrong.items()):
        good_ms = None if seq is None else rounds.get(seq + 1)
        lags[server] = 0.0 if seq is None else None if good_ms is None else (good_ms - start_ms) / 1000
    return lags


# ------------------------------------------------------------ presence rows ----


def seen_from_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[list[Seen], dict[int, int]]:
    """Presence rows of one broker (``seq, capture_ms, next_ms, server, present,
    cluster``; ``next_ms``: the next round's capture_ms, None for the last round) as the
    arguments of ``events``."""
    listed: dict[int, dict[str, bool]] = {}
    times: dict[int, int] = {}
    clusters: dict[int, list[str]] = {}
    for row in rows:
        seq = row["seq"]
        listed.setdefault(seq, {})[row["server"]] = bool(row["present"])
        times[seq] = row["capture_ms"]
        if row["next_ms"] is not None:
            times[seq + 1] = row["next_ms"]
        if row["cluster"] is not None:
            clusters.setdefault(seq, []).append(row["cluster"])
    seen = [Seen(seq, times[seq], servers, max(clusters[seq]) if seq in clusters else None)
            for seq, servers in sorted(listed.items())]
    return seen, times
