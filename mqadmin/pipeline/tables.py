"""The analysis tables as DataFrame transformations (Spark SQL functions; ``route_map``
shapes a small input of the per-topic pass on the driver from ``distinct_routes``,
``collect_small`` collects several small results at once). The rounds (rounds.py), the
summary (summary.py) and the brokers and broker_events tables (presence.py) are worked
out on the driver.

Each function takes DataFrames and returns one; job.py wires them, writes them and
keeps the small ones cached. Conventions shared by every table (SCHEMA.md):

* a *round* is one capture of every server; its time ``capture_ms`` is when it started,
  ``seq`` its position in time, and ``interval_ms`` the time to the next round: the
  time that round stands for (0 for the last one). Durations and "minutes" are sums of
  intervals, so a window's duration is the sum of the intervals of its rounds;
* ``date`` (UTC) is the partition column: the date of ``capture_ms``, or of a
  window's or an event's start; interval rows (routes, divergence) are cut at midnight
  and sit in the date of their rounds.
"""

from __future__ import annotations

from functools import reduce
from typing import Any, Iterable, Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from mqadmin.pipeline import rules


def date_of(ms: str | Column) -> Column:
    col = F.col(ms) if isinstance(ms, str) else ms
    return F.to_date(F.timestamp_millis(col))


# ----------------------------------------------------------------- captures ----


def captures(raw: DataFrame) -> DataFrame:
    """The captures table from the chain pass's rows: an unreadable file takes the time of
    its round when a readable file of the round gives one (so its row sits on the
    round's date), else keeps its modification time (and makes no round: ``rounds``)."""
    times = raw.where(~F.col("unreadable")).groupBy("round").agg(F.min("capture_ms").alias("round_ms"))
    fixed = F.when(F.col("unreadable"), F.coalesce("round_ms", "capture_ms")).otherwise(F.col("capture_ms"))
    return (raw.join(F.broadcast(times), "round", "left")
            .select(*[fixed.alias(c) if c == "capture_ms" else F.col(c) for c in raw.columns])
            .withColumn("date", date_of("capture_ms")))


# ------------------------------------------------------------------- routes ----


def routes(facts: DataFrame, route_rows: DataFrame) -> DataFrame:
    """The routes table: a row per (server, topic, interval, broker) of the merged fact
    intervals (topics.FACT, bounds included), with its route's flattened rows
    (chains.ROUTE, by raw route key)."""
    rows = facts.join(F.broadcast(route_rows), "route_key")
    head = ["date", "server", "topic", "valid_from_ms", "valid_to_ms", "valid_from", "valid_to", "from_round",
            "to_round", "from_seq", "to_seq", "rounds", "asked", "has_route", "listed", "order_conf_kv"]
    return (rows.withColumn("date", date_of("valid_from_ms"))
            .withColumn("valid_from", F.timestamp_millis("valid_from_ms"))
            .withColumn("valid_to", F.timestamp_millis("valid_to_ms"))
            .withColumn("rounds", F.col("to_seq") - F.col("from_seq") + 1)
            .select(*head, *[c for c in route_rows.columns if c not in head and c not in ("route_key",)]))


def distinct_routes(rows: DataFrame) -> DataFrame:
    """The chain pass's route rows (chains.ROUTE), each (route_key, broker_seq) once.

    A chain task emits each route its chains name once, but a route named in several
    tasks comes once from each: collected as they are, a history whose topics have
    routes of their own, read in hundreds of tasks, would put tasks x routes x brokers
    rows on the driver. Spark's ``dropDuplicates`` keeps one copy per task before the
    shuffle (a partial aggregate) and one in all after it, so what reaches the driver
    is the distinct rows only. Any copy will do: the key is a hash of the route's
    content, so the copies are equal."""
    return rows.dropDuplicates(["route_key", "broker_seq"])


def route_map(route_rows: Iterable[Mapping[str, Any]]) -> dict[bytes, list[dict[str, Any]]]:
    """raw route key -> its template rows in broker order (small: one row per broker of
    each distinct route), for the per-topic pass to rebuild the views it compares."""
    out: dict[bytes, list[dict[str, Any]]] = {}
    for route in route_rows:
        row = dict(route)
        out.setdefault(row.pop("route_key"), []).append(row)
    for rows in out.values():
        rows.sort(key=lambda r: r["broker_seq"])
    return out


# --------------------------------------------------------------- divergence ----


def divergence(rows: DataFrame) -> DataFrame:
    """The divergence table from the per-topic and cluster passes' rows (topics.DIVERGENCE)."""
    return (rows.withColumn("date", date_of("valid_from_ms"))
            .withColumn("valid_from", F.timestamp_millis("valid_from_ms"))
            .withColumn("valid_to", F.timestamp_millis("valid_to_ms"))
            .select("date", "scope", "topic", "valid_from_ms", "valid_to_ms", "valid_from", "valid_to",
                    *[c for c in rows.columns if c not in ("scope", "topic", "valid_from_ms", "valid_to_ms")]))


# ------------------------------------------------------------------ windows ----


def cause_of(kinds: Column) -> Column:
    """The strongest cause class among ``kinds`` (rules.CAUSES order)."""
    expr = F.lit("other")
    for cause, members in reversed(rules.CAUSES):
        expr = F.when(F.arrays_overlap(kinds, F.array(*[F.lit(k) for k in members])), F.lit(cause)).otherwise(expr)
    return expr


def windows(rows: DataFrame) -> DataFrame:
    """The windows table from the per-topic pass's rows (topics.WINDOW): its date, times
    and cause."""
    return rows.select(
        date_of("start_ms").alias("date"), "topic", "start_ms", "end_ms", F.timestamp_millis("start_ms").alias("start"),
        F.timestamp_millis("end_ms").alias("end"), "duration_s", "open", "rounds", "unknown_s", "unknown_spans",
        "servers", cause_of(F.col("kinds")).alias("cause"), "kinds", "brokers", "clusters", "max_unassigned",
        "max_doubly_assigned", "unassigned_queue_minutes", "doubly_assigned_queue_minutes",
        "affected_consumer_minutes", "key_hash_breaks")


# ------------------------------------------------------------- small results ----


def collect_small(frames: Mapping[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """The rows of several small DataFrames in one Spark job (one action, one round
    trip): each frame's rows become a struct column of its own in a union, null in the
    other frames' rows. Rows come back as dicts, through Arrow (timestamps as UTC-aware
    datetimes, exact)."""
    # A frame's column in the other frames' rows: a null of its type with every field
    # nullable at every depth (a struct that is null in a row still has children there,
    # and Arrow takes no null in a child it was told has none; the union's type takes the
    # nullability of each part).
    nulls = {name: F.lit(None).cast(_nullable(df.schema)).alias(name) for name, df in frames.items()}
    parts = [df.select(*[F.struct(*[df[c] for c in df.columns]).alias(name) if other == name else nulls[other]
                         for other in frames])
             for name, df in frames.items()]
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in frames}
    for row in reduce(DataFrame.union, parts).toArrow().to_pylist():
        for name in frames:
            if row[name] is not None:
                out[name].append(row[name])
                break
    return out


def _nullable(t: DataType) -> Any:
    """``t`` with every field, element and value nullable."""
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(_nullable(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(_nullable(t.keyType), _nullable(t.valueType), True)
    return t
