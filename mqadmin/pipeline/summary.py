"""The summary table (SCHEMA.md: one row per date and cluster), worked out on the driver.

Its inputs are small: a row per (round, cluster) at most, built from the rounds, the
captures' cluster lists and the per-topic pass's *sweep* (changes of the per-(cluster,
round) disagreement counts), plus aggregates of the windows and broker events per
(date, cluster). ``aggregates`` says what Spark computes of them (one job, with the
job's counts: ``tables.collect_small``); ``converged`` the broker events' (worked out on
the driver: presence.py); ``summary_rows`` does the rest in Python.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from mqadmin.pipeline.topics import NO_CLUSTER

WORST_WINDOW = "struct<duration_s:double,topic:string,start:timestamp,cause:string,servers:array<string>>"
SUMMARY = (f"date date, cluster string, rounds long, observed_s double, consistent_s double, "
           f"consistent_share double, unknown_s double, max_inconsistent_topics long, windows long, "
           f"longest_window_s double, worst_windows array<{WORST_WINDOW}>, unassigned_queue_minutes double, "
           f"doubly_assigned_queue_minutes double, affected_consumer_minutes double, broker_events long, "
           f"max_converge_s double, unconverged_events long")
COLUMNS = [field.split()[0] for field in SUMMARY.split(", ")]
#: per-(cluster, round) counts the sweep carries, in its column order
_COUNTS = ("topics", "unassigned", "doubly", "consumers_hit")


def window_cluster() -> Column:
    """A window's clusters, one row each; a window on no known cluster counts under "-"."""
    return F.explode(F.when(F.size("clusters") > 0, F.col("clusters")).otherwise(F.array(F.lit(NO_CLUSTER))))


def aggregates(sweep: DataFrame, wins: DataFrame) -> dict[str, DataFrame]:
    """What Spark computes for the summary, each small: the sweep summed per (cluster,
    seq); the spans in which a window bridged a silent server, per cluster; and per (date,
    cluster) the windows (count, longest, three longest). The broker events' part is
    ``converged``, on the driver."""
    spans = (wins.where(F.size("unknown_spans") > 0)
             .select(window_cluster().alias("cluster"), F.explode("unknown_spans").alias("span"))
             .select("cluster", "span.start_ms", "span.end_ms").distinct())
    worst = wins.select("*", window_cluster().alias("cluster")).groupBy("date", "cluster").agg(
        F.count("*").alias("windows"), F.max("duration_s").alias("longest_window_s"),
        F.slice(F.sort_array(F.collect_list(F.struct("duration_s", "topic", "start", "cause", "servers")),
                             asc=False), 1, 3).alias("worst_windows"))
    return {"sweep": sweep.groupBy("cluster", "seq").agg(*[F.sum(c).alias(c) for c in _COUNTS]), "spans": spans,
            "worst": worst}


def converged(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (date, cluster) of the broker events (presence.broker_events, worked out on the
    driver): how many, the slowest to converge and how many never did (the summary's
    ``conv``, as Spark's count, max and count_if had it: a null ``converge_s`` left out)."""
    out: dict[tuple[Any, Any], dict[str, Any]] = {}
    for e in events:
        c = out.setdefault((e["date"], e["cluster"]), {"date": e["date"], "cluster": e["cluster"], "broker_events": 0,
                                                       "max_converge_s": None, "unconverged_events": 0})
        c["broker_events"] += 1
        if e["converge_s"] is not None:
            c["max_converge_s"] = e["converge_s"] if c["max_converge_s"] is None else max(c["max_converge_s"],
                                                                                          e["converge_s"])
        c["unconverged_events"] += not e["converged"]
    return list(out.values())


def disagreeing(rounds: Sequence[Mapping[str, Any]], sweep: Sequence[Mapping[str, Any]]
                ) -> dict[tuple[int, str], tuple[int, int, int, int]]:
    """(round, cluster) -> (disagreeing topics, unassigned queues, doubly assigned queues,
    consumers hit) for every round and cluster with a disagreeing topic: the sweep's
    changes summed up round by round (``rounds`` in time order)."""
    changes: dict[str, dict[int, tuple[int, ...]]] = {}
    for s in sweep:
        changes.setdefault(s["cluster"], {})[s["seq"]] = tuple(s[c] or 0 for c in _COUNTS)
    out: dict[tuple[int, str], tuple[int, int, int, int]] = {}
    for cluster, at in changes.items():
        t = u = d = h = 0
        for r in rounds:
            change = at.get(r["seq"])
            if change is not None:
                t, u, d, h = t + change[0], u + change[1], d + change[2], h + change[3]
            if t > 0:
                out[(r["round"], cluster)] = (t, u, d, h)
    return out


def _listed(captures: Sequence[Mapping[str, Any]]) -> set[tuple[Any, Any]]:
    """(round, cluster) for every cluster a server gave in its cluster info that round."""
    return {(c["round"], cluster) for c in captures if c["ok"] is True and c["has_cluster_info"] is True
            for cluster in c["clusters"] or ()}


def listed_clusters(rounds: Sequence[Mapping[str, Any]], captures: Sequence[Mapping[str, Any]]) -> set[str]:
    """The clusters of summary rows that come from the cluster info (the others come from
    ``disagreeing_clusters``), before the summary is worked out: the report's
    pseudo-topics include them."""
    known = {r["round"] for r in rounds}
    return {cluster for rnd, cluster in _listed(captures) if rnd in known and cluster is not None}


def disagreeing_clusters(sweep: DataFrame) -> DataFrame:
    """The clusters ``disagreeing`` finds a disagreeing topic in at some round (a running
    sum of the sweep's topic changes above 0), as a Spark question: one-partition
    ``sweep`` in, one-partition names (``n``) out, for the report's pseudo-topics to be
    asked in the job's one Spark job of small questions. Nulls left out."""
    changes = sweep.where(F.col("cluster").isNotNull()).groupBy("cluster", "seq").agg(F.sum("topics").alias("t"))
    running = F.sum("t").over(Window.partitionBy("cluster").orderBy("seq"))
    return (changes.select("cluster", running.alias("run")).where(F.col("run") > 0)
            .select(F.col("cluster").alias("n")).distinct())


def summary_rows(rounds: Sequence[Mapping[str, Any]], captures: Sequence[Mapping[str, Any]],
                 got: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[tuple[Any, ...]]:
    """The summary's rows (SUMMARY order) from the rounds (rounds.round_rows), the
    captures' rows (rounds.captures_rows) and the collected ``aggregates``.

    A (round, cluster) counts when some server gave that cluster in its cluster info that
    round, or a topic of the cluster disagreed; its interval is consistent time when no
    topic of the cluster disagreed and no window of the cluster bridged a silent server at
    that round's time, unknown time when only the latter."""
    bad = disagreeing(rounds, got["sweep"])
    known = _listed(captures)
    spans: dict[str, list[tuple[int, int]]] = {}
    for s in got["spans"]:
        spans.setdefault(s["cluster"], []).append((s["start_ms"], s["end_ms"]))
    by_round = {r["round"]: r for r in rounds}
    days: dict[tuple[Any, str | None], list[int]] = {}
    for rnd, cluster in known | set(bad):
        r = by_round.get(rnd)
        if r is None:
            continue
        iv, at = r["interval_ms"], r["capture_ms"]
        counts = bad.get((rnd, cluster)) if cluster is not None else None
        # a cluster of None matches nothing, as a join on it would not
        bridged = cluster is not None and any(start <= at < end for start, end in spans.get(cluster, ()))
        acc = days.setdefault((r["date"], cluster), [0, 0, 0, 0, 0, 0, 0, 0])
        t, u, d, h = counts or (0, 0, 0, 0)
        acc[0] += 1
        acc[1] += iv
        if counts is None:
            acc[2 if not bridged else 3] += iv
        acc[4] = max(acc[4], t)
        acc[5] += u * iv
        acc[6] += d * iv
        acc[7] += h * iv
    worst = {(w["date"], w["cluster"]): w for w in got["worst"] if w["cluster"] is not None}
    conv = {(e["date"], e["cluster"]): e for e in got["conv"] if e["cluster"] is not None}
    rows = []
    for (day, cluster), (n, observed, consistent, unknown, top, u_ms, d_ms, h_ms) in days.items():
        w = worst.get((day, cluster)) if cluster is not None else None
        e = conv.get((day, cluster)) if cluster is not None else None
        rows.append((
            day, cluster, n, observed / 1000, consistent / 1000, (consistent / 1000) / (observed / 1000)
            if observed else None, unknown / 1000, top, w["windows"] if w else 0, w["longest_window_s"] if w else None,
            w["worst_windows"] if w else [], u_ms / 60000, d_ms / 60000, h_ms / 60000,
            e["broker_events"] if e else 0, e["max_converge_s"] if e else None, e["unconverged_events"] if e else 0,
        ))
    return rows
