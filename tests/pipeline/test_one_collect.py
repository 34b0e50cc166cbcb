"""The job asks its small questions in fewer Spark jobs than the tables' own questions
would take: the distinct routes with the captures' rows (each once, however many chain
tasks named it), the report's window questions with the
summary's (their pseudo-topics partly worked out in Spark). Each shortcut gives what the
longer way gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqadmin.pipeline import summary
from mqadmin.pipeline.job import TABLES, JobOptions, _chains, job_conf, run, temporary_conf
from mqadmin.pipeline.report import collect_report_data, render_html
from mqadmin.pipeline.synth import SynthPlan, synthesize
from mqadmin.pipeline.tables import collect_small


def _rows(spark: Any, out: Path, name: str) -> list[str]:
    return sorted(repr(sorted(r.asDict(recursive=True).items())) for r in spark.read.parquet(str(out / name)).collect())


def _route_rows_emitted(spark: Any, src: Path) -> tuple[int, int]:
    """The chain pass's tasks and the route rows they emit between them, as the job
    reads ``src`` with the session's settings."""
    with temporary_conf(spark, job_conf(spark)):
        chained = _chains(spark, JobOptions(str(src), "unused"))
        return chained.rdd.getNumPartitions(), chained.where("route IS NOT NULL").count()


def test_the_driver_gets_each_route_once_however_many_tasks_name_it(spark: Any, tmp_path: Path) -> None:
    """Every chain task names every route here (each reads files of every server), so
    the route rows the tasks emit grow with the tasks; those the driver receives
    (``counts["route_rows"]``) are the distinct ones, as many as one task alone emits,
    and the tables and the page are those of a run in one task."""
    src = tmp_path / "captures"
    synthesize(SynthPlan(src, servers=3, brokers=6, topics=40, hours=1, every=300, seed=4, events_per_day=50,
                         version=1))
    one_task = {"spark.sql.files.minPartitionNum": "1", "spark.sql.files.maxPartitionBytes": str(1 << 30)}
    with temporary_conf(spark, one_task):
        alone = run(spark, JobOptions(str(src), str(tmp_path / "one")))
        assert _route_rows_emitted(spark, src)[0] == 1
        distinct = _route_rows_emitted(spark, src)[1]
    with temporary_conf(spark, {"spark.sql.files.minPartitionNum": "8"}):
        spread = run(spark, JobOptions(str(src), str(tmp_path / "spread")))
        tasks, emitted = _route_rows_emitted(spark, src)
    assert tasks >= 6 and emitted >= 3 * distinct  # each task emits most routes
    assert spread.counts["route_rows"] == alone.counts["route_rows"] == distinct
    for name in TABLES:
        assert _rows(spark, tmp_path / "spread", name) == _rows(spark, tmp_path / "one", name), name
    assert (tmp_path / "spread" / "report.html").read_bytes() == (tmp_path / "one" / "report.html").read_bytes()


def _page_of_tables(spark: Any, out: Path) -> str:
    frames = {name: spark.read.parquet(str(out / name))
              for name in ("captures", "divergence", "windows", "broker_events", "summary")}
    frames["captures"] = frames["captures"].where("not unreadable")
    return render_html(collect_report_data(frames))


def test_the_jobs_page_is_the_page_of_its_tables(spark: Any, hand_history: dict[str, Any]) -> None:
    """The job asks the page's questions with the summary's, in one Spark job; asked of
    the tables it wrote, in two, they give the same page."""
    out = hand_history["out"]
    assert (out / "report.html").read_text(encoding="utf-8") == _page_of_tables(spark, out)


def test_the_same_page_with_many_windows_and_events(spark: Any, tmp_path: Path) -> None:
    synthesize(SynthPlan(tmp_path / "captures", servers=3, brokers=6, topics=40, hours=4, every=300, seed=4,
                         events_per_day=400))
    result = run(spark, JobOptions(str(tmp_path / "captures"), str(tmp_path / "out")))
    assert result.counts["windows"] > 10
    assert (tmp_path / "out" / "report.html").read_text(encoding="utf-8") == _page_of_tables(spark, tmp_path / "out")


def test_disagreeing_clusters_are_those_the_summary_finds(spark: Any) -> None:
    """A cluster counts once some round has a disagreeing topic in it: the running sum of
    the sweep's topic changes, in seq order, above 0 (changes of one seq summed first)."""
    sweep = [
        ("up-down", 2, 1), ("up-down", 4, -1),          # disagreeing in rounds 2-3
        ("queues-only", 2, 0),                          # queue counts moved, no topic
        ("same-round", 3, 1), ("same-round", 3, -1),    # two changes of one seq: none
        ("down-first", 1, -1), ("down-first", 3, 1),    # -1, then 0: never above
        ("late", 1, -1), ("late", 3, 2),                # -1, then 1
        (None, 1, 1),                                   # no cluster: no name
        ("no-count", 2, None),
    ]
    df = spark.createDataFrame(sweep, "cluster string, seq int, topics bigint").coalesce(1)
    got = {r["n"] for r in collect_small({"n": summary.disagreeing_clusters(df)})["n"]}
    per: dict[tuple[Any, int], int | None] = {}
    for cluster, seq, topics in sweep:  # summed per (cluster, seq), as summary.aggregates does
        old = per.get((cluster, seq))
        per[(cluster, seq)] = topics if old is None else old if topics is None else old + topics
    rows = [{"cluster": c, "seq": s, "topics": t, "unassigned": 0, "doubly": 0, "consumers_hit": 0}
            for (c, s), t in per.items()]
    rounds = [{"round": seq, "seq": seq} for seq in range(1, 6)]
    expected = {cluster for _, cluster in summary.disagreeing(rounds, rows)} - {None}
    assert got == expected == {"up-down", "late"}
