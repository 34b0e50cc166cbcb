"""The ``brokers`` and ``broker_events`` tables (SCHEMA.md), worked out on the driver.

Their only input is the captures' cluster info, a row per capture file (rounds x
servers), which the driver reads once anyway (rounds.captures_rows). At 1 M route rows
the same tables took Spark eight small jobs and their planning (about 2 s); here they
take milliseconds, and Spark only writes them. Pure: no Spark, no clock, no I/O.

``presence`` is what tables.presence was in Spark, row for row: for every round in which
a server gave its cluster info, every broker seen anywhere, and whether that server listed
it; ``brokers`` and ``broker_events`` aggregate it as the Spark versions did (the
broker_events rule itself is broker_runs.events).
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Sequence

from mqadmin.pipeline import broker_runs
from mqadmin.pipeline.rounds import day_of, time_of

#: The brokers table as written (column order, types and nullability of the Spark version).
BROKERS = ("date date, broker string, server string, cluster string, rounds bigint not null, "
           "present_rounds bigint not null, present_minutes double, registrations bigint not null, "
           "appears bigint not null, disappears bigint not null, flaps bigint not null, first_seen_ms bigint, "
           "last_seen_ms bigint")
#: The broker_events table as written.
BROKER_EVENTS = ("date date, broker string, cluster string, kind string, start_ms bigint, start timestamp, "
                 "converged_ms bigint, converged boolean not null, converge_s double, rounds int, "
                 "servers array<string>, server_lags array<struct<server: string, lag_s: double>>")


def presence(captures: Iterable[Mapping[str, Any]], rounds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """(round, server, broker, cluster, present) with the round's seq, capture_ms,
    interval_ms and date, for every capture that gave cluster info (``ok`` and
    ``has_cluster_info``; its ``brokers`` and ``clusters`` side by side) in a round of
    ``rounds`` (rounds.round_rows), and every broker any of them listed. ``cluster`` is
    the one the server listed the broker under, else the largest it was listed under
    anywhere. Nulls join nothing, as in Spark: a null broker name is never ``present``."""
    return [row for rows in per_broker(captures, rounds) for row in rows]


def per_broker(captures: Iterable[Mapping[str, Any]], rounds: Sequence[Mapping[str, Any]]
               ) -> Iterator[list[dict[str, Any]]]:
    """``presence``'s rows one broker at a time: a broker's are a row per capture with
    cluster info (rounds x servers), where all of them at once would be that times the
    brokers (a week of 30 s captures of 5 servers and 32 brokers: 3 million dicts).
    ``brokers`` and ``broker_events`` take the rows of any set of whole brokers."""
    answered = [c for c in captures if c["ok"] is True and c["has_cluster_info"] is True]
    listed: dict[tuple[Any, Any, Any], list[str | None]] = {}
    home: dict[str | None, str | None] = {}
    for c in answered:
        for broker, cluster in zip(c["brokers"] or (), c["clusters"] or ()):
            if None not in (c["round"], c["server"], broker):
                listed.setdefault((c["round"], c["server"], broker), []).append(cluster)
            home[broker] = _largest(home.get(broker), cluster)
    by_round = {r["round"]: r for r in rounds}
    places = []  # the captures in a round of ``rounds``, with what each row of theirs holds
    for c in answered:
        r = by_round.get(c["round"]) if c["round"] is not None else None
        if r is not None:
            places.append((c["round"], c["server"],
                           {"round": c["round"], "server": c["server"],
                            **{k: r[k] for k in ("seq", "capture_ms", "interval_ms", "date")}}))
    for broker, fallback in home.items():
        out = []
        for round_, server, at in places:
            clusters = listed.get((round_, server, broker))
            if clusters is None:
                out.append({**at, "broker": broker, "cluster": fallback, "present": False})
            for cluster in clusters or ():  # once per listing (a left join's matches)
                out.append({**at, "broker": broker, "cluster": fallback if cluster is None else cluster,
                            "present": True})
        yield out


def brokers(pres: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (date, broker, server), how the server listed the broker (BROKERS): its rounds
    in seq order, each against the one before (appears, disappears, flaps: an appearance
    after having been listed before)."""
    runs: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for p in pres:
        runs.setdefault((p["broker"], p["server"]), []).append(p)
    out: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for (broker, server), rows in runs.items():
        prev: bool | None = None
        seen_before = False
        for p in sorted(rows, key=lambda p: p["seq"]):
            present = p["present"]
            a = out.get((p["date"], broker, server))
            if a is None:
                a = out[(p["date"], broker, server)] = {
                    "date": p["date"], "broker": broker, "server": server, "cluster": None, "rounds": 0,
                    "present_rounds": 0, "present_minutes": 0, "registrations": 0, "appears": 0, "disappears": 0,
                    "flaps": 0, "first_seen_ms": None, "last_seen_ms": None}
            a["cluster"] = _largest(a["cluster"], p["cluster"])
            a["rounds"] += 1
            if present:
                a["present_rounds"] += 1
                a["present_minutes"] += p["interval_ms"]  # ms until the end, then minutes
                a["registrations"] += prev is not True
                a["appears"] += prev is False
                a["flaps"] += prev is False and seen_before
                first, last = a["first_seen_ms"], a["last_seen_ms"]
                a["first_seen_ms"] = p["capture_ms"] if first is None else min(first, p["capture_ms"])
                a["last_seen_ms"] = p["capture_ms"] if last is None else max(last, p["capture_ms"])
            else:
                a["disappears"] += prev is True
            seen_before = seen_before or present
            prev = present
    for a in out.values():
        a["present_minutes"] /= 60000
    return list(out.values())


def _largest(a: str | None, b: str | None) -> str | None:
    """Spark's ``max`` of two strings: nulls left out."""
    return b if a is None else a if b is None else max(a, b)


def broker_events(pres: Sequence[Mapping[str, Any]], rounds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The events of every broker (BROKER_EVENTS): broker_runs.events over its presence
    rows, each with the next round's time (a lag ends at the round after a server's last
    wrong one, which may be a round without cluster info)."""
    next_ms = {r["seq"]: r["next_ms"] for r in rounds}
    per: dict[Any, list[dict[str, Any]]] = {}
    for p in pres:
        per.setdefault(p["broker"], []).append({"seq": p["seq"], "capture_ms": p["capture_ms"], "server": p["server"],
                                                "present": p["present"], "cluster": p["cluster"],
                                                "next_ms": next_ms.get(p["seq"])})
    out = []
    for broker, rows in per.items():
        seen, times = broker_runs.seen_from_rows(rows)
        for e in broker_runs.events(seen, times):
            out.append({"date": day_of(e.start_ms), "broker": broker, "cluster": e.cluster, "kind": e.kind,
                        "start_ms": e.start_ms, "start": time_of(e.start_ms), "converged_ms": e.converged_ms,
                        "converged": e.converged_ms is not None,
                        "converge_s": None if e.converged_ms is None else (e.converged_ms - e.start_ms) / 1000,
                        "rounds": e.rounds, "servers": e.servers,
                        "server_lags": [{"server": server, "lag_s": lag} for server, lag in e.server_lags.items()]})
    return out
