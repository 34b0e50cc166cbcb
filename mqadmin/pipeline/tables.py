"""The analysis tables as DataFrame transformations (Spark SQL functions, no collect).

Each function takes DataFrames and returns one; job.py wires them, writes them and
keeps the small ones cached. Conventions shared by every table (SCHEMA.md):

* a *round* is one capture of every server; its time ``capture_ms`` is when it started,
  ``seq`` its position in time, and ``interval_ms`` the time to the next round: the
  time that round stands for (0 for the last one). Durations and "minutes" are sums of
  intervals, so a window's duration is the sum of the intervals of its rounds;
* ``date`` (UTC) is the partition column: the date of ``capture_ms``, or of a
  window's or an event's start.
"""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from mqadmin.pipeline import broker_runs, rules

OUTCOME_SPARK: StructType = from_arrow_schema(rules.OUTCOME)


def date_of(ms: str | Column) -> Column:
    col = F.col(ms) if isinstance(ms, str) else ms
    return F.to_date(F.timestamp_millis(col))


def _empty(field: str) -> Column:
    return F.lit(None).cast(OUTCOME_SPARK[field].dataType).alias(field)


def _array_of(field: str) -> Column:
    return F.expr(f"cast(array() as {OUTCOME_SPARK[field].dataType.simpleString()})").alias(field)


# ------------------------------------------------------------------- rounds ----


def rounds(captures: DataFrame) -> DataFrame:
    """One row per round that has a readable capture: time, position, interval, and who
    answered. The time comes from readable captures only: an unreadable file's time may
    be its mtime (a copy's is the time of the copy), which as a round would stretch the
    last real round's interval to it and close every window open at the end."""
    readable = ~F.col("unreadable")
    ok = F.col("ok") & readable
    per = captures.groupBy("round").agg(
        F.min(F.when(readable, F.col("capture_ms"))).alias("capture_ms"),
        F.count("*").alias("servers_asked"),
        F.count_if(ok).alias("servers_answered"),
        F.array_sort(F.collect_list(F.when(ok, F.col("server")))).alias("servers"),
    ).where(F.col("capture_ms").isNotNull())
    # A few thousand rows at most: one partition is right for the global order.
    order = Window.orderBy("capture_ms", "round")
    return (per.withColumn("seq", F.row_number().over(order))
            .withColumn("next_ms", F.lead("capture_ms").over(order))
            .withColumn("interval_ms", F.coalesce(F.col("next_ms") - F.col("capture_ms"), F.lit(0)))
            .withColumn("date", date_of("capture_ms")))


# --------------------------------------------------------------- divergence ----


def divergence(outcomes: DataFrame, agreed: DataFrame | None, rounds_df: DataFrame, consumers: int) -> DataFrame:
    """The divergence table from the round pass (per_round.py): its OUTCOME rows (topic
    null: the round's cluster-wide comparison) and, for the topics on which every server
    agreed, a row built here. ``agreed``: (round, topic) rows; None: OUTCOME rows only."""
    rows = outcomes
    if agreed is not None:
        rows = rows.unionByName(agreed.select(
            F.col("round").cast("int"), "topic", F.lit(True).alias("agree"), _array_of("differing"),
            _array_of("kinds"), _array_of("findings"), _array_of("brokers"), _array_of("clusters"),
            F.lit(False).alias("affects_clients"), F.lit(0).alias("unassigned"), F.lit(0).alias("doubly_assigned"),
            _array_of("unassigned_queues"), _array_of("doubly_assigned_queues"), F.lit(False).alias("key_hash_breaks"),
            _empty("impact_json")))
    r = F.broadcast(rounds_df.select("round", "capture_ms", "seq", "interval_ms", "date", "servers"))
    return (rows.join(r, "round")
            .withColumn("scope", F.when(F.col("topic").isNull(), "cluster").otherwise("topic"))
            .withColumn("capture_time", F.timestamp_millis("capture_ms"))
            .withColumn("consumers", F.lit(consumers))
            .select("date", "round", "seq", "capture_ms", "capture_time", "interval_ms", "scope", "topic", "servers",
                    *[c for c in OUTCOME_SPARK.fieldNames() if c not in ("round", "topic")], "consumers"))


# ------------------------------------------------------------------ windows ----


def cause_of(kinds: Column) -> Column:
    """The strongest cause class among ``kinds`` (rules.CAUSES order)."""
    expr = F.lit("other")
    for cause, members in reversed(rules.CAUSES):
        expr = F.when(F.arrays_overlap(kinds, F.array(*[F.lit(k) for k in members])), F.lit(cause)).otherwise(expr)
    return expr


def _union_of(col: str) -> Column:
    return F.array_sort(F.array_distinct(F.flatten(F.collect_list(col)))).alias(col)


def silences(answered: DataFrame, rounds_df: DataFrame) -> DataFrame:
    """(server, from_seq, to_seq): maximal runs of rounds in which a server that answered
    some round gave nothing. ``answered``: (seq, server) for every answer that counts."""
    servers = answered.select("server").distinct()
    missing = (rounds_df.select("seq").crossJoin(servers)
               .join(answered.select("seq", "server"), ["seq", "server"], "left_anti"))
    island = F.col("seq") - F.row_number().over(Window.partitionBy("server").orderBy("seq"))
    return (missing.withColumn("island", island).groupBy("server", "island")
            .agg(F.min("seq").alias("from_seq"), F.max("seq").alias("to_seq")).drop("island"))


def bridged(gaps: DataFrame, silent: DataFrame, keys: Sequence[str]) -> DataFrame:
    """The ``keys`` of the ``gaps`` that only silence explains.

    A gap is a run of rounds (``gap_from`` to ``gap_to``) in which the servers agreed,
    between two in which they did not; ``side_a`` and ``side_b`` are the two sides of
    the disagreement just before it. When every server of one side said nothing for the
    whole gap, the others agreeing says nothing about whether it ended: the gap is
    bridged. (Had one server of that side answered, the agreement would be real.)

    This is mqadmin.diff.rules.silent_side in Spark SQL (over the two sides, differing
    and majority, where the rule takes every group): the parity test
    (tests/pipeline/test_rule_parity.py) holds it to the watcher's windows."""
    sides = F.array(F.struct(F.lit(0).alias("side"), F.col("side_a").alias("members")),
                    F.struct(F.lit(1).alias("side"), F.col("side_b").alias("members")))
    members = (gaps.select(*keys, "gap_from", "gap_to", F.explode(sides).alias("s"))
               .select(*keys, "gap_from", "gap_to", "s.side", F.explode("s.members").alias("server")))
    q = F.broadcast(silent).alias("q")
    covered = (members.alias("g").join(q, (F.col("g.server") == F.col("q.server"))
                                       & (F.col("q.from_seq") <= F.col("g.gap_from"))
                                       & (F.col("q.to_seq") >= F.col("g.gap_to")), "left")
               .select(*[F.col(f"g.{k}") for k in keys], "g.side", F.col("q.server").isNotNull().alias("covered")))
    return (covered.groupBy(*keys, "side").agg(F.bool_and("covered").alias("silent"))
            .where("silent").select(*keys).distinct())


def windows(div: DataFrame, rounds_df: DataFrame) -> DataFrame:
    """Maximal runs of rounds in which a topic's servers disagree, bridging the rounds in
    which they seemed to agree only because one side of the disagreement was silent
    (a name server down or unreachable: ``bridged``)."""
    bad = div.where((F.col("scope") == "topic") & ~F.col("agree"))
    run = Window.partitionBy("topic").orderBy("seq")
    impacted = (F.col("unassigned") + F.col("doubly_assigned")) > 0
    # 1. islands: runs of consecutive disagreeing rounds
    islands = (bad.withColumn("island", F.col("seq") - F.row_number().over(run))
               .groupBy("topic", "island").agg(
                   F.min("seq").alias("start_seq"), F.min("capture_ms").alias("start_ms"),
                   F.max("seq").alias("last_seq"), F.max("capture_ms").alias("last_ms"), F.count("*").alias("rounds"),
                   F.max_by("differing", "seq").alias("last_differing"),
                   F.max_by(F.array_except("servers", "differing"), "seq").alias("last_majority"),
                   _union_of("differing"), _union_of("kinds"), _union_of("brokers"), _union_of("clusters"),
                   F.max("unassigned").alias("max_unassigned"), F.max("doubly_assigned").alias("max_doubly_assigned"),
                   F.sum(F.col("unassigned") * F.col("interval_ms")).alias("unassigned_ms"),
                   F.sum(F.col("doubly_assigned") * F.col("interval_ms")).alias("doubly_ms"),
                   F.sum(F.when(impacted, F.col("consumers") * F.col("interval_ms")).otherwise(0)).alias("consumer_ms"),
                   F.bool_or("key_hash_breaks").alias("key_hash_breaks")))
    nxt = F.broadcast(rounds_df.select((F.col("seq") - 1).alias("last_seq"), F.col("capture_ms").alias("next_ms")))
    order = Window.partitionBy("topic").orderBy("start_seq")
    islands = islands.join(nxt, "last_seq", "left").select(
        "*", F.lag("last_seq").over(order).alias("prev_last_seq"),
        F.lag("next_ms").over(order).alias("gap_start_ms"),
        F.lag("last_differing").over(order).alias("side_a"), F.lag("last_majority").over(order).alias("side_b"))
    # 2. islands that continue the one before them across a gap only silence explains
    gaps = islands.where(F.col("prev_last_seq").isNotNull()).select(
        "topic", "start_seq", (F.col("prev_last_seq") + 1).alias("gap_from"), (F.col("start_seq") - 1).alias("gap_to"),
        "side_a", "side_b")
    silent = silences(rounds_df.select("seq", F.explode("servers").alias("server")), rounds_df)
    joined = bridged(gaps, silent, ["topic", "start_seq"]).withColumn("bridged", F.lit(True))
    islands = islands.join(joined, ["topic", "start_seq"], "left").withColumn(
        "bridged", F.coalesce("bridged", F.lit(False)))
    starts = F.sum(F.when(F.col("bridged"), 0).otherwise(1)).over(order.rowsBetween(Window.unboundedPreceding, 0))
    unknown = F.when(F.col("bridged"), F.struct(F.col("gap_start_ms").alias("start_ms"),
                                                  F.col("start_ms").alias("end_ms")))
    # 3. windows: the islands merged
    grouped = islands.withColumn("window", starts).groupBy("topic", "window").agg(
        F.min("start_ms").alias("start_ms"), F.max("last_ms").alias("last_ms"),
        F.max_by("next_ms", "last_seq").alias("next_ms"), F.sum("rounds").alias("rounds"),
        _union_of("differing"), _union_of("kinds"), _union_of("brokers"), _union_of("clusters"),
        F.max("max_unassigned").alias("max_unassigned"), F.max("max_doubly_assigned").alias("max_doubly_assigned"),
        (F.sum("unassigned_ms") / 60000).alias("unassigned_queue_minutes"),
        (F.sum("doubly_ms") / 60000).alias("doubly_assigned_queue_minutes"),
        (F.sum("consumer_ms") / 60000).alias("affected_consumer_minutes"),
        F.bool_or("key_hash_breaks").alias("key_hash_breaks"),
        F.array_sort(F.collect_list(unknown)).alias("unknown_spans"))
    end = F.coalesce(F.col("next_ms"), F.col("last_ms"))
    unknown_s = F.aggregate("unknown_spans", F.lit(0).cast("bigint"),
                            lambda acc, s: acc + s["end_ms"] - s["start_ms"]) / 1000
    return grouped.select(
        date_of("start_ms").alias("date"), "topic", "start_ms", end.alias("end_ms"),
        F.timestamp_millis("start_ms").alias("start"), F.timestamp_millis(end).alias("end"),
        ((end - F.col("start_ms")) / 1000).alias("duration_s"), F.col("next_ms").isNull().alias("open"),
        "rounds", unknown_s.alias("unknown_s"), "unknown_spans",
        F.col("differing").alias("servers"), cause_of(F.col("kinds")).alias("cause"), "kinds", "brokers",
        "clusters", "max_unassigned", "max_doubly_assigned", "unassigned_queue_minutes",
        "doubly_assigned_queue_minutes", "affected_consumer_minutes", "key_hash_breaks",
    )


# ------------------------------------------------------------------ brokers ----


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
             .groupBy("broker").applyInArrow(broker_runs.arrow_events, from_arrow_schema(broker_runs.EVENTS)))
    return found.select(
        date_of("start_ms").alias("date"), "broker", "cluster", "kind", "start_ms",
        F.timestamp_millis("start_ms").alias("start"), "converged_ms", F.col("converged_ms").isNotNull().alias("converged"),
        ((F.col("converged_ms") - F.col("start_ms")) / 1000).alias("converge_s"), "rounds", "servers", "server_lags")


# ------------------------------------------------------------------ summary ----


def summary(div: DataFrame, wins: DataFrame, events: DataFrame, captures: DataFrame, rounds_df: DataFrame
            ) -> DataFrame:
    """Per (date, cluster): how much of the time every topic of the cluster agreed, the
    worst windows, and queue and consumer minutes affected."""
    no_cluster = F.lit("-")
    bad = (div.where((F.col("scope") == "topic") & ~F.col("agree"))
           .select("round", "topic", "unassigned", "doubly_assigned", "consumers",
                   F.explode(F.when(F.size("clusters") > 0, F.col("clusters")).otherwise(F.array(no_cluster)))
                   .alias("cluster")))
    impacted = (F.col("unassigned") + F.col("doubly_assigned")) > 0
    per_rc = bad.groupBy("round", "cluster").agg(
        F.count("*").alias("bad_topics"), F.sum("unassigned").alias("unassigned"),
        F.sum("doubly_assigned").alias("doubly"),
        F.sum(F.when(impacted, F.col("consumers")).otherwise(0)).alias("consumers_hit"))
    known = (captures.where(F.col("ok") & F.col("has_cluster_info"))
             .select("round", F.explode("cluster_brokers.cluster").alias("cluster")))
    rc = known.unionByName(per_rc.select("round", "cluster")).distinct()
    r = F.broadcast(rounds_df.select("round", "date", "interval_ms", "capture_ms"))
    base = rc.join(r, "round").join(per_rc, ["round", "cluster"], "left")
    # Rounds a window bridges (a side of its disagreement silent): not known consistent.
    win_cluster = F.explode(F.when(F.size("clusters") > 0, F.col("clusters")).otherwise(F.array(no_cluster)))
    spans = (wins.where(F.size("unknown_spans") > 0)
             .select(win_cluster.alias("cluster"), F.explode("unknown_spans").alias("span"))
             .select("cluster", "span.start_ms", "span.end_ms"))
    b, sp = base.alias("b"), F.broadcast(spans).alias("sp")
    unknown = (b.join(sp, (F.col("b.cluster") == F.col("sp.cluster")) & (F.col("b.capture_ms") >= F.col("sp.start_ms"))
                      & (F.col("b.capture_ms") < F.col("sp.end_ms")))
               .select("b.round", "b.cluster").distinct().withColumn("unknown", F.lit(True)))
    base = base.join(unknown, ["round", "cluster"], "left")
    iv = F.col("interval_ms")
    quiet = F.col("bad_topics").isNull()
    by_day = base.groupBy("date", "cluster").agg(
        F.count("*").alias("rounds"),
        (F.sum(iv) / 1000).alias("observed_s"),
        (F.sum(F.when(quiet & F.col("unknown").isNull(), iv).otherwise(0)) / 1000).alias("consistent_s"),
        (F.sum(F.when(quiet & F.col("unknown"), iv).otherwise(0)) / 1000).alias("unknown_s"),
        F.max(F.coalesce("bad_topics", F.lit(0))).alias("max_inconsistent_topics"),
        (F.sum(F.coalesce("unassigned", F.lit(0)) * iv) / 60000).alias("unassigned_queue_minutes"),
        (F.sum(F.coalesce("doubly", F.lit(0)) * iv) / 60000).alias("doubly_assigned_queue_minutes"),
        (F.sum(F.coalesce("consumers_hit", F.lit(0)) * iv) / 60000).alias("affected_consumer_minutes"),
    ).withColumn("consistent_share", F.try_divide(F.col("consistent_s"), F.col("observed_s")))
    worst = wins.select("*", win_cluster.alias("cluster")).groupBy("date", "cluster").agg(
        F.count("*").alias("windows"), F.max("duration_s").alias("longest_window_s"),
        F.slice(F.sort_array(F.collect_list(F.struct("duration_s", "topic", "start", "cause", "servers")),
                             asc=False), 1, 3).alias("worst_windows"))
    conv = events.groupBy("date", "cluster").agg(
        F.count("*").alias("broker_events"), F.max("converge_s").alias("max_converge_s"),
        F.count_if(~F.col("converged")).alias("unconverged_events"))
    return (by_day.join(worst, ["date", "cluster"], "left").join(conv, ["date", "cluster"], "left")
            .select("date", "cluster", "rounds", "observed_s", "consistent_s", "consistent_share", "unknown_s",
                    "max_inconsistent_topics", F.coalesce("windows", F.lit(0)).alias("windows"), "longest_window_s",
                    F.coalesce("worst_windows", F.expr("array()").cast(
                        "array<struct<duration_s:double,topic:string,start:timestamp,cause:string,"
                        "servers:array<string>>>")).alias("worst_windows"),
                    "unassigned_queue_minutes", "doubly_assigned_queue_minutes", "affected_consumer_minutes",
                    F.coalesce("broker_events", F.lit(0)).alias("broker_events"), "max_converge_s",
                    F.coalesce("unconverged_events", F.lit(0)).alias("unconverged_events")))
