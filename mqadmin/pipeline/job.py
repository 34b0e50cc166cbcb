"""``mqadmin analyze``: the PySpark job from capture files to Parquet tables and a report.

Also runnable with ``spark-submit``; the executors need nothing of ours (session.py)::

    python -m mqadmin.pipeline.session mqadmin-job.zip
    spark-submit --master spark://host:7077 --py-files mqadmin-job.zip \
        mqadmin/pipeline/job.py CAPTURES --out OUT

Steps (stderr says which one runs):

1. ingest: the capture files are read with Spark's ``binaryFile`` source; the chain pass
   (chains.py) reads each chain (a v2 server's files from one keyframe to the next, in
   round order; a v1 file alone) and yields the *captures* rows, the server's per-topic
   fact intervals and each distinct route's rows. The driver reads the captures table
   (a row per file) and the routes' rows in one Spark job, and works out the rounds
   from the former (rounds.py);
2. routes: the fact intervals shuffled by topic; the per-topic pass (topics.py) joins a
   server's intervals where one continues another (cut at midnight), compares the
   servers once per run of rounds in which nothing changes, calling the diff module
   (rules.py) only where they differ, and yields the merged intervals (joined with their
   route's rows: the routes table), the divergence segments, the windows and the
   summary's per-round counts as changes;
3. divergence: those segments and the cluster-wide comparison per round;
4. windows (the per-topic pass's); brokers, broker_events: on the driver, from the
   captures' cluster info it has read (presence.py), written by Spark while the
   per-topic pass runs; summary: small aggregates collected in one Spark job, the rest
   on the driver (summary.py);
5. report.html from small aggregates of those tables (report.py: its questions asked
   with the summary's, in the same Spark job).

No task grows with the number of rounds: the work splits by chain, then by topic.
Every table is partitioned by ``date`` and written with dynamic partition overwrite, so
running the job again replaces exactly the dates it covers. The writes run one after
another in a thread of their own while the driver goes on (``Writes``): a step's time
(``JobResult.timings``) leaves out the writes of its tables that overlap the next steps.
Imports are absolute so that the file also runs as a script under spark-submit.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence


from pyspark import StorageLevel, inheritable_thread_target
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from mqadmin.diff import STRATEGIES
from mqadmin.pipeline import chains, presence, rounds, session, summary, tables, topics
from mqadmin.pipeline.frames import driver_frame
from mqadmin.pipeline.progress import StepProgress
from mqadmin.pipeline.session import computed_once
from mqadmin.pipeline.schema import SUFFIX, SUFFIX_V2
from mqadmin.pipeline.times import parse_time

TABLES = ("captures", "routes", "divergence", "windows", "brokers", "broker_events", "summary")
#: For the questions whose inputs and answers are small (the summary's, the counts, the
#: report's): no Java source generated and compiled per stage, which on tables of a few
#: thousand rows costs more than it saves (the summary's questions at 1 M route rows:
#: 0.7 s instead of 1.0 s).
SMALL_RESULTS = {"spark.sql.codegen.wholeStage": "false"}
#: Files written before the --from bound by more than this are not even read (their
#: mtime is when they were written, which is after their capture time).
MTIME_SLACK_MS = 3_600_000


@dataclass(frozen=True)
class JobOptions:
    src: str
    out: str
    consumers: int = 2
    strategy: str = "averagely"
    from_ms: int | None = None
    to_ms: int | None = None
    report: bool = True


@dataclass
class JobResult:
    """What a run says of itself: each step's seconds, the counts (rounds, captures,
    inconsistent (round, topic) pairs, windows, unreadable files, and ``route_rows``: the
    distinct route rows the driver received for the per-topic pass), the dates it
    covered and the page it drew."""

    timings: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    dates: list[str] = field(default_factory=list)
    report: Path | None = None


def configure(spark: SparkSession) -> None:
    """Session settings the job needs, also applied to a session it did not build."""
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    spark.conf.set("spark.sql.session.timeZone", "UTC")


def _chains(spark: SparkSession, opts: JobOptions) -> DataFrame:
    """The chain pass over every capture (chains.py): CHAIN_OUT rows. A v1 file is a
    chain of its own and is read where it lies; v2 files are keyed by chain from their
    header, shuffled so that a chain's files meet in one task, and sorted by round."""
    read = chains.map_chains(opts.from_ms, opts.to_ms)
    out_schema = from_arrow_schema(chains.CHAIN_OUT)
    files = _listing(spark, opts.src, "*" + SUFFIX)
    if opts.from_ms is not None:
        files = files.where(F.col("modificationTime") >= F.timestamp_millis(F.lit(opts.from_ms - MTIME_SLACK_MS)))
    out = files.select("path", "modificationTime", "content").mapInArrow(read, out_schema)
    v2 = _listing(spark, opts.src, "*" + SUFFIX_V2)
    if not v2.inputFiles():  # a v1 history (asked of the file listing: no Spark job)
        return out
    # Every v2 file, whatever --from says: a delta needs its chain from the keyframe on
    # (they are small); the chain pass leaves out the rounds out of range.
    keyed = v2.select("path", "modificationTime", "content").mapInArrow(chains.map_keys,
                                                                      from_arrow_schema(chains.KEYED))
    return out.unionByName(keyed.repartition("chain").sortWithinPartitions("chain", "round", "path")
                           .mapInArrow(read, out_schema))


def _listing(spark: SparkSession, src: str, glob: str) -> DataFrame:
    return (spark.read.format("binaryFile").option("pathGlobFilter", glob)
            .option("recursiveFileLookup", "true").load(src))


def job_conf(spark: SparkSession) -> dict[str, str]:
    """Session settings for the duration of the job (``run`` restores the previous ones).

    * Capture files are a few MB each: small Arrow batches keep the Python workers'
      memory flat, and about four file splits per core (instead of one per 128 MB) keep
      every core busy until the end of each pass over the files (unless the session
      says otherwise: a small local run wants fewer tasks, session.SMALL_CONF).
    * Spark's planned write sorts every task's rows by ``date`` before writing: a copy of
      the whole routes table through the sorter, for rows that mostly share one date per
      task. Concurrent writers (one open file per date) skip it, and fall back to
      sorting past that many dates in one task.
    """
    return {
        "spark.sql.execution.arrow.maxRecordsPerBatch": "8",
        "spark.sql.files.minPartitionNum": spark.conf.get("spark.sql.files.minPartitionNum", None)
        or str(4 * session.default_parallelism(spark)),
        "spark.sql.optimizer.plannedWrite.enabled": "false",
        "spark.sql.maxConcurrentOutputFileWriters": "8",
    }


@contextmanager
def temporary_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session settings for the block, then back to what they were."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def _write(df: DataFrame, out: str, name: str, clear: Sequence[str] = ()) -> None:
    """Write table ``name``, first removing its partitions of the dates in ``clear``
    (the dates the run covers, once known: see _clear)."""
    if clear:
        _clear(df, f"{out}/{name}", clear)
    df.write.mode("overwrite").partitionBy("date").parquet(f"{out}/{name}")
    if clear and not _has_files(df.sparkSession, f"{out}/{name}"):
        # No row at all (a quiet history has no window): a file with the schema and no
        # row, in a date this run owns, so that spark.read.parquet(table) still works.
        df.limit(0).drop("date").write.mode("overwrite").parquet(f"{out}/{name}/date={clear[0]}")


class Writes:
    """Table writes run one after another in a thread of their own while the driver goes
    on with the next step: at 1 M route rows the small steps after the per-topic pass are
    mostly the driver planning one Spark job after another, and a write's tasks and the
    next step's planning can share the two cores. The thread keeps the caller's Spark job
    group and local properties (``inheritable_thread_target``). ``wait`` raises a failed
    write's error; leaving the block waits for the writes under way (a Ctrl-C has
    cancelled their Spark jobs)."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mqadmin-write")
        self._pending: list[Future[None]] = []

    def write(self, df: DataFrame, out: str, name: str, clear: Sequence[str] = ()) -> None:
        """``_write(df, out, name, clear)``, after the writes asked before."""
        self._pending.append(self._pool.submit(inheritable_thread_target(self._spark)(_write), df, out, name, clear))

    def wait(self) -> None:
        """Until every write asked so far is done; the first failure raised."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def __enter__(self) -> Writes:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _clear(df: DataFrame, table: str, dates: Sequence[str]) -> None:
    """Remove the partitions of ``dates`` from ``table`` before ``df`` is written to it.

    Dynamic overwrite replaces only the partitions the new rows fall in, so a date this
    run covers but finds nothing for (no window left after --from, no broker event)
    would keep the rows of an earlier run. Through Hadoop's FileSystem, so OUT may be
    any filesystem Spark writes to; over Spark Connect, which has no JVM on this side,
    by a static-partition INSERT OVERWRITE of no rows, which Spark does by deleting the
    partition."""
    spark = df.sparkSession
    if not session.is_connect(spark):
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        root = jvm.org.apache.hadoop.fs.Path(table)
        fs = root.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        for date in dates:
            fs.delete(root.suffix(f"/date={date}"), True)
        return
    if not _readable(spark, table):
        return  # nothing written there yet
    name = f"mqadmin_clear_{uuid.uuid4().hex}"
    location = table.replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{location}'")
    try:
        spark.createDataFrame([], spark.table(name).drop("date").schema).createOrReplaceTempView(f"{name}_none")
        for date in dates:
            spark.sql(f"INSERT OVERWRITE TABLE {name} PARTITION (date = '{date}') SELECT * FROM {name}_none")
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")  # an external table: its files stay
        spark.catalog.dropTempView(f"{name}_none")


def _has_files(spark: SparkSession, table: str) -> bool:
    """Whether ``table`` holds a Parquet file in some partition, so that reading it finds a
    schema. A look at the filesystem through Hadoop's, which runs no Spark job (a schema
    inference does: one per table written); over Connect, the schema inference."""
    if session.is_connect(spark):
        return _readable(spark, table)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    pattern = jvm.org.apache.hadoop.fs.Path(f"{table}/*=*/*.parquet")
    found = pattern.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).globStatus(pattern)
    # Spark skips the files whose name starts with "_" or "." when it reads a table.
    return any(not str(status.getPath().getName()).startswith(("_", ".")) for status in found or ())


def _readable(spark: SparkSession, table: str) -> bool:
    """Whether ``spark.read.parquet(table)`` finds a schema (some file of the table)."""
    try:
        spark.read.parquet(table).schema  # noqa: B018  (resolving the schema is the check)
    except Exception:  # Spark's AnalysisException, classic or Connect: no file, no table
        return False
    return True


def run(spark: SparkSession, opts: JobOptions, echo: Callable[[str], None] = lambda s: None) -> JobResult:
    """Run the whole job with ``spark``; returns timings and row counts (small numbers
    only; nothing large is collected)."""
    if opts.consumers < 1:
        raise ValueError(f"--consumers must be at least 1, got {opts.consumers}")
    if opts.from_ms is not None and opts.to_ms is not None and opts.from_ms >= opts.to_ms:
        raise ValueError(f"--from must be before --to (got {opts.from_ms} >= {opts.to_ms} ms)")
    if opts.strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {opts.strategy!r}; expected one of {sorted(STRATEGIES)}")
    configure(spark)
    with temporary_conf(spark, job_conf(spark)), Writes(spark) as writes:
        return _run(spark, opts, echo, writes)


def _run(spark: SparkSession, opts: JobOptions, echo: Callable[[str], None], writes: Writes) -> JobResult:
    result = JobResult()
    out = opts.out.rstrip("/")
    clock = time.perf_counter()

    def step(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        result.timings[name] = round(now - clock, 3)
        clock = now

    # 1. ingest: the chain pass gives the captures rows, the fact intervals of each chain
    # and the distinct routes, a result kept cached until the last two have been read
    # (captures and routes are small; the facts grow with the changes).
    echo("ingest: reading captures, chain by chain")
    chained = _chains(spark, opts).persist(StorageLevel.MEMORY_AND_DISK)
    # One row per file, in one partition and cached: the many small steps reading it run
    # one task each, and plan it as a scan of its rows, not as the chain pass again. The
    # first Spark job to read it (the next one, which runs the chain pass on every core)
    # fills the cache: no checkpoint job of its own. Its write is queued after that job.
    captures = (tables.captures(chained.where(F.col("capture").isNotNull()).select("capture.*")).coalesce(1)
                .persist(StorageLevel.MEMORY_AND_DISK))
    # What the driver needs of the captures, read once (a row per file): the rounds, the
    # per-topic pass's timeline, the summary's clusters, and the dates of readable
    # captures (an unreadable file in a round without a readable one carries its mtime,
    # and that date is no date of the history this run should clear: rounds.seen).
    # The chain pass's distinct routes come in the same Spark job (the per-topic pass
    # needs them on the driver; the routes table joins them from there), made distinct
    # by Spark: the driver receives each route's rows once, however many tasks named it.
    got = tables.collect_small({"files": rounds.captures_columns(captures), "routes": tables.distinct_routes(
        chained.where(F.col("route").isNotNull()).select("route.*"))})
    files = got["files"]
    writes.write(captures, out, "captures")
    route_list = got["routes"]
    del got
    result.counts["route_rows"] = len(route_list)
    seen = rounds.seen(files)
    dates = result.dates = seen.dates
    if not dates:
        chained.unpersist()
        if seen.unreadable:
            raise NoCaptures(f"no readable capture files under {opts.src} in the selected time range "
                             f"({seen.unreadable} unreadable, listed in {out}/captures with unreadable = true)")
        raise NoCaptures(f"no capture files under {opts.src} in the selected time range")
    result.counts["unreadable_files"] = seen.unreadable
    if seen.unreadable:
        echo(f"ingest: {seen.unreadable} unreadable capture files (listed in {out}/captures with unreadable = true)")
    step("captures")

    # brokers, broker_events: from the captures' cluster info the driver has read, one
    # broker's presence rows at a time (all of them are rounds x servers x brokers).
    # Worked out and queued for writing now, so that their writes run beside the
    # per-topic pass rather than after it.
    echo("brokers: registrations and broker events")
    round_rows = rounds.round_rows(files)
    broker_rows: list[dict[str, Any]] = []
    event_rows: list[dict[str, Any]] = []
    for pres in presence.per_broker(files, round_rows):
        broker_rows += presence.brokers(pres)
        event_rows += presence.broker_events(pres, round_rows)
    writes.write(driver_frame(spark, broker_rows, presence.BROKERS), out, "brokers", dates)
    events = driver_frame(spark, event_rows, presence.BROKER_EVENTS)
    writes.write(events, out, "broker_events", dates)
    step("brokers")

    # 2. routes: the chains' fact intervals, shuffled by topic, merged where they continue
    # each other and compared across servers in the same pass (topics.py), which also
    # yields the divergence segments, the windows and the summary's per-round counts.
    echo("routes: fact intervals, merged and compared topic by topic")
    rounds_df = rounds.frame(spark, round_rows)
    timeline = rounds.timeline(files, round_rows)
    route_rows = driver_frame(spark, route_list, chains.ROUTE)
    seqs = F.broadcast(rounds_df.select("round", "seq"))
    raw = (chained.where(F.col("fact").isNotNull()).select("fact.*")
           .join(seqs.select(F.col("round").alias("from_round"), F.col("seq").alias("from_seq")), "from_round")
           .join(seqs.select(F.col("round").alias("to_round"), F.col("seq").alias("to_seq")), "to_round"))
    judge = topics.map_topics(timeline, tables.route_map(route_list), opts.consumers, opts.strategy)
    del route_list
    with temporary_conf(spark, {"spark.sql.execution.arrow.maxRecordsPerBatch": "10000"}):
        judged = computed_once(
            raw.select("topic", "server", "from_seq", "to_seq", "asked", "route_key", "listed", "order_conf_kv")
            .repartition("topic").sortWithinPartitions("topic", "server", "from_seq")
            .mapInArrow(judge, from_arrow_schema(topics.TOPIC_OUT)))
    chained.unpersist()  # all of it is in captures, the routes and judged now
    writes.write(tables.routes(judged.where(F.col("fact").isNotNull()).select("fact.*"), route_rows), out, "routes",
                 dates)
    step("routes")

    # 3. divergence: the per-topic pass's segments and the cluster-wide comparison per round
    echo("divergence: per topic and cluster-wide")
    readable = ~F.col("unreadable")
    with temporary_conf(spark, {"spark.sql.execution.arrow.maxRecordsPerBatch": "10000"}):
        cluster = (captures.where(readable).coalesce(1)
                   .mapInArrow(topics.map_cluster(timeline, opts.consumers, opts.strategy),
                               from_arrow_schema(topics.DIVERGENCE)))
        by_topic = tables.divergence(judged.where(F.col("divergence").isNotNull()).select("divergence.*"))
        # (map_cluster reads its few rows at once: the batch size it runs with, if the
        # write starts after this block, changes nothing)
        writes.write(by_topic.unionByName(tables.divergence(cluster)), out, "divergence", dates)
    # What every later step reads of the divergence: the topics that disagreed (all of
    # them come from the per-topic pass, computed once already). Here and below, the
    # small tables are read as one partition: an aggregate of one partition needs no
    # shuffle, so each small question below is one stage, and many are one job.
    bad = by_topic.where((F.col("scope") == "topic") & ~F.col("agree")).coalesce(1)
    step("divergence")

    # 4. The small tables, each computed once, written, and read by the next ones and by
    # the report from memory rather than from their Parquet files.
    echo("windows, summary")
    # cached by the first job that reads it (its write, or the small questions)
    wins = (tables.windows(judged.where(F.col("window").isNotNull()).select("window.*")).coalesce(1)
            .persist(StorageLevel.MEMORY_AND_DISK))
    writes.write(wins, out, "windows", dates)
    step("windows")
    # The summary's inputs, the run's counts and the report's questions, all
    # small, in one Spark job; the rest on the driver (summary.py, report.py), which
    # holds the captures' and the broker events' rows already.
    page = opts.report and ("://" not in out or out.startswith("file:"))  # the page goes to a local OUT only
    frames = {"captures": captures.where(readable), "divergence": bad, "windows": wins, "broker_events": events}
    sweep = judged.where(F.col("sweep").isNotNull()).select("sweep.*").coalesce(1)
    questions = {**summary.aggregates(sweep, wins), "inconsistent": bad.agg(F.sum("rounds").alias("n")),
                 "windows": wins.agg(F.count("*").alias("n"))}
    if page:
        from mqadmin.pipeline import report

        # The windows' questions need the pseudo-topics: the names the driver holds, and
        # those Spark works out in the same job (the windows', the disagreeing clusters').
        names = (report.window_names(wins).unionByName(summary.disagreeing_clusters(sweep)).coalesce(1)
                 .distinct())
        answers = report.driver_answers(files, event_rows)
        known = {r["n"] for r in answers["names"]} | summary.listed_clusters(round_rows, files)
        questions.update(report_held=report.held(bad), **{f"report_{k}": q for k, q in report.window_questions(
            wins, known, names).items()})
    # Asked while the writes go on: the two cores are shared by the writes' tasks and this
    # job's one task and planning. (A write planned while these settings hold runs
    # without whole-stage code generation: the same rows, written a little slower.)
    with temporary_conf(spark, SMALL_RESULTS):
        got = tables.collect_small(questions)
        rows = [dict(zip(summary.COLUMNS, r))
                for r in summary.summary_rows(round_rows, files, {**got, "conv": summary.converged(event_rows)})]
        writes.write(driver_frame(spark, rows, summary.SUMMARY), out, "summary", dates)
        result.counts.update(rounds=seen.rounds, captures=seen.captures,
                             inconsistent=int(got["inconsistent"][0]["n"] or 0), windows=int(got["windows"][0]["n"]))
        step("summary")
        if page:
            echo("report: drawing")
            first = {**answers, "held": got["report_held"]}
            result.report = report.write_report(out, frames, first, rows,
                                                {k: got[f"report_{k}"] for k in ("hist", "grouped", "per_day")})
            step("report")
    writes.wait()
    for df in (captures, judged, wins):
        df.unpersist()
    return result


class NoCaptures(ValueError):
    """Nothing to analyse: no capture file in the directory and time range."""


# ----------------------------------------------------------------- spark-submit ----


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mqadmin-analyze", description=__doc__.split("\n\n")[0])
    parser.add_argument("captures")
    parser.add_argument("--out", required=True)
    parser.add_argument("--master", default=None, help="default: spark-submit's")
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--strategy", default="averagely", choices=sorted(STRATEGIES))
    parser.add_argument("--from", dest="from_", default=None)
    parser.add_argument("--to", default=None)
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args(argv)
    opts = JobOptions(args.captures, args.out, args.consumers, args.strategy,
                      None if args.from_ is None else parse_time(args.from_),
                      None if args.to is None else parse_time(args.to), not args.no_report)
    # Under spark-submit the master, the executors' Python and the logging are its own;
    # the job only ships its code (already there with --py-files: session.code_archive).
    spark = session.start(session.Place(master=args.master, log=None))
    try:
        with StepProgress(session.task_counter(spark), prefix="", tty=sys.stderr.isatty()) as progress:
            result = run(spark, opts, echo=progress.step)
    finally:
        spark.stop()
    print(f"{result.counts} {result.timings}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
