"""The rounds of a history, worked out on the driver from one small read of the captures
table (a row per capture file: rounds x servers, never topics or routes).

``captures_rows`` is that read (one Spark job); from it, in Python: the rounds
(``round_rows``, given to Spark as a table by ``frame``), the per-topic pass's
``Timeline`` and what the job reports of its input (``seen``). Conventions (SCHEMA.md):
a *round* has at least one readable capture; its time ``capture_ms`` is the earliest
readable one, ``seq`` its position in time (by time, then round number), ``next_ms`` the
next round's time and ``interval_ms`` the time to it (0 for the last round).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, UTC
from typing import Any, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mqadmin.pipeline.frames import driver_frame
from mqadmin.pipeline.topics import Timeline
from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG

#: The rounds table, as the joins of the job read it.
ROUNDS = ("round int, capture_ms long, servers_asked long, servers_answered long, servers array<string>, seq int, "
          "next_ms long, interval_ms long, date date")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def day_of(ms: int) -> date:
    """The UTC date of ``ms`` (ms since the epoch), as Spark's ``to_date(timestamp_millis(ms))``."""
    return (_EPOCH + timedelta(milliseconds=ms)).date()


def time_of(ms: int) -> datetime:
    """``timestamp_millis(ms)`` as an exact (UTC-aware) Python datetime."""
    return _EPOCH + timedelta(milliseconds=ms)


def captures_rows(captures: DataFrame) -> list[dict[str, Any]]:
    """The columns of the captures table the driver works with, a dict per file (the
    cluster info as ``brokers`` and ``clusters`` side by side: presence.py)."""
    return captures_columns(captures).toArrow().to_pylist()


def captures_columns(captures: DataFrame) -> DataFrame:
    """``captures_rows``' question, for a caller that asks it with others in one Spark job
    (tables.collect_small)."""
    has_order_ns = F.coalesce(F.array_contains(F.map_keys("kv"), ORDER_TOPIC_CONFIG), F.lit(False))
    return captures.select(
        "round", "capture_ms", "server", "ok", "unreadable", "has_topic_list", has_order_ns.alias("has_order_ns"),
        "has_cluster_info", F.col("cluster_brokers.broker").alias("brokers"),
        F.col("cluster_brokers.cluster").alias("clusters"),
    )


def answered(row: Mapping[str, Any]) -> bool:
    """A readable capture of a server that answered (Spark's ``ok AND NOT unreadable``)."""
    return row["ok"] is True and row["unreadable"] is False


def round_rows(captures: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per round with a readable capture, in time order (ROUNDS).

    The time comes from readable captures only: an unreadable file's time may be its
    mtime (a copy's is the time of the copy), which as a round would stretch the last
    real round's interval to it and close every window open at the end."""
    per: dict[int, dict[str, Any]] = {}
    for c in captures:
        r = per.setdefault(c["round"], {"round": c["round"], "capture_ms": None, "servers_asked": 0,
                                        "servers_answered": 0, "servers": []})
        r["servers_asked"] += 1
        if c["unreadable"] is False and c["capture_ms"] is not None:
            r["capture_ms"] = c["capture_ms"] if r["capture_ms"] is None else min(r["capture_ms"], c["capture_ms"])
        if answered(c):
            r["servers_answered"] += 1
            if c["server"] is not None:
                r["servers"].append(c["server"])
    # Spark's order: by time, then round number (nulls first)
    rows = sorted((r for r in per.values() if r["capture_ms"] is not None),
                  key=lambda r: (r["capture_ms"], r["round"] is not None, r["round"] or 0))
    for i, r in enumerate(rows):
        r["servers"].sort()
        r["seq"] = i + 1
        r["next_ms"] = rows[i + 1]["capture_ms"] if i + 1 < len(rows) else None
        r["interval_ms"] = 0 if r["next_ms"] is None else r["next_ms"] - r["capture_ms"]
        r["date"] = day_of(r["capture_ms"])
    return rows


def frame(spark: SparkSession, rounds: Sequence[Mapping[str, Any]]) -> DataFrame:
    """The rounds as a Spark table, for the joins that need a round's seq, time or date
    (through Arrow, ``driver_frame``: the per-topic pass broadcasts their seqs)."""
    return driver_frame(spark, [dict(r) for r in rounds], ROUNDS)


def timeline(captures: Sequence[Mapping[str, Any]], rounds: Sequence[Mapping[str, Any]]) -> Timeline:
    """The rounds in time order and who answered each, for the per-topic pass."""
    per_round: dict[int, list[tuple[str, bool, bool]]] = {}
    for c in captures:
        if answered(c):
            per_round.setdefault(c["round"], []).append((c["server"], bool(c["has_topic_list"]),
                                                         bool(c["has_order_ns"])))
    return Timeline([r["round"] for r in rounds], [r["capture_ms"] for r in rounds],
                    [r["interval_ms"] for r in rounds], [tuple(sorted(per_round.get(r["round"], ()))) for r in rounds])


@dataclass(frozen=True)
class Seen:
    """What the job says of its input: the dates of readable captures (the dates this
    run rewrites), and how many files, unreadable files and rounds there were."""

    dates: list[str]
    captures: int
    unreadable: int
    rounds: int


def seen(captures: Sequence[Mapping[str, Any]]) -> Seen:
    readable = [c for c in captures if c["unreadable"] is False]
    return Seen(sorted({day_of(c["capture_ms"]).isoformat() for c in readable if c["capture_ms"] is not None}),
                len(captures), sum(1 for c in captures if c["unreadable"] is True),
                len({c["round"] for c in readable if c["round"] is not None}))
