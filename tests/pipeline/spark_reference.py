"""The brokers and broker_events tables as the job computed them in Spark until they moved
to the driver (mqadmin/pipeline/presence.py), kept here only as the reference that the
driver's tables are compared with (test_presence.py): same rows, same schema."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from mqadmin.pipeline.broker_runs import events, seen_from_rows
from mqadmin.pipeline.tables import date_of

#: What ``arrow_events`` returns per event; ``broker_events`` adds the derived columns.
EVENTS = pa.schema([
    ("broker", pa.string()), ("cluster", pa.string()), ("kind", pa.string()), ("start_ms", pa.int64()),
    ("converged_ms", pa.int64()), ("rounds", pa.int32()), ("servers", pa.list_(pa.string())),
    ("server_lags", pa.list_(pa.struct([("server", pa.string()), ("lag_s", pa.float64())]))),
])


def presence(captures: DataFrame, rounds_df: DataFrame) -> DataFrame:
    """(round, server, broker) for every server that gave its cluster info in a round and
    every broker seen anywhere, with ``present``: whether that server listed it."""
    answered = captures.where(F.col("ok") & F.col("has_cluster_info")).select("round", "server", "cluster_brokers")
    listed = answered.select("round", "server", F.explode("cluster_brokers").alias("b")).select(
        "round", "server", F.col("b.broker").alias("broker"), F.col("b.cluster").alias("cluster"))
    universe = listed.groupBy("broker").agg(F.max("cluster").alias("home"))
    grid = answered.select("round", "server").crossJoin(F.broadcast(universe))
    r = F.broadcast(rounds_df.select("round", "seq", "capture_ms", "interval_ms", "date"))
    return (grid.join(listed.withColumn("present", F.lit(True)), ["round", "server", "broker"], "left")
            .select("round", "server", "broker", F.coalesce("cluster", "home").alias("cluster"),
                    F.coalesce("present", F.lit(False)).alias("present"))
            .join(r, "round"))


def brokers(pres: DataFrame) -> DataFrame:
    """Per (date, broker, server): how the server listed the broker."""
    w = Window.partitionBy("broker", "server").orderBy("seq")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    prev = F.lag("present").over(w)
    marked = pres.select(
        "*", prev.alias("prev"), F.bool_or("present").over(before).alias("seen_before"))
    appear = F.col("present") & (F.col("prev") == F.lit(False))
    disappear = ~F.col("present") & (F.col("prev") == F.lit(True))
    return marked.groupBy("date", "broker", "server").agg(
        F.max("cluster").alias("cluster"),
        F.count("*").alias("rounds"),
        F.count_if("present").alias("present_rounds"),
        (F.sum(F.when(F.col("present"), F.col("interval_ms")).otherwise(0)) / 60000).alias("present_minutes"),
        F.count_if(F.col("present") & F.coalesce(~F.col("prev"), F.lit(True))).alias("registrations"),
        F.count_if(appear).alias("appears"),
        F.count_if(disappear).alias("disappears"),
        F.count_if(appear & F.coalesce(F.col("seen_before"), F.lit(False))).alias("flaps"),
        F.min(F.when(F.col("present"), F.col("capture_ms"))).alias("first_seen_ms"),
        F.max(F.when(F.col("present"), F.col("capture_ms"))).alias("last_seen_ms"),
    )


def broker_events(pres: DataFrame, rounds_df: DataFrame) -> DataFrame:
    """Each time the servers stop agreeing on whether a broker is registered, or switch
    from all to none or back: the event, and how long until every server agreed again.

    The rule (states, runs, kinds, the silent side) is broker_runs.events, run once per
    broker over its presence rows (a broker's rows are rounds x servers: few). Each row
    carries the next round's time (``next_ms``): a server's lag ends at the round after its
    last wrong one, which may be a round without cluster info, and so without a row.
    """
    nxt = F.broadcast(rounds_df.select((F.col("seq") - 1).alias("seq"), F.col("capture_ms").alias("next_ms")))
    found = (pres.select("broker", "seq", "capture_ms", "server", "present", "cluster").join(nxt, "seq", "left")
             .groupBy("broker").applyInArrow(arrow_events, from_arrow_schema(EVENTS)))
    return found.select(
        date_of("start_ms").alias("date"), "broker", "cluster", "kind", "start_ms",
        F.timestamp_millis("start_ms").alias("start"), "converged_ms", F.col("converged_ms").isNotNull().alias("converged"),
        ((F.col("converged_ms") - F.col("start_ms")) / 1000).alias("converge_s"), "rounds", "servers", "server_lags")


def arrow_events(table: pa.Table) -> pa.Table:
    """``applyInArrow`` over the presence rows grouped by broker: that broker's events
    (EVENTS)."""
    rows = table.to_pylist()
    if not rows:
        return EVENTS.empty_table()
    seen, times = seen_from_rows(rows)
    broker = rows[0]["broker"]
    found = events(seen, times)
    return pa.Table.from_pylist([
        {"broker": broker, "cluster": e.cluster, "kind": e.kind, "start_ms": e.start_ms,
         "converged_ms": e.converged_ms, "rounds": e.rounds, "servers": e.servers,
         "server_lags": [{"server": s, "lag_s": lag} for s, lag in e.server_lags.items()]}
        for e in found], schema=EVENTS)


def conv(events: DataFrame) -> DataFrame:
    """The summary's broker-event aggregates per (date, cluster), as Spark asked them."""
    return events.groupBy("date", "cluster").agg(
        F.count("*").alias("broker_events"), F.max("converge_s").alias("max_converge_s"),
        F.count_if(~F.col("converged")).alias("unconverged_events"))
