"""The brokers and broker_events tables worked out on the driver (presence.py) are the
ones Spark computed before (spark_reference.py): same rows, same schema, on captures
written by hand to hit the joins' corners, on the hand-written history and on a
synthetic one with many broker events."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest
from pyspark.sql.types import StructType

from mqadmin.pipeline import presence, rounds
from mqadmin.pipeline.frames import driver_frame
from mqadmin.pipeline.job import JobOptions, run
from mqadmin.pipeline.report import driver_answers, first_questions
from mqadmin.pipeline.report import window_names as window_names_of
from mqadmin.pipeline.summary import converged
from mqadmin.pipeline.synth import SynthPlan, synthesize
from mqadmin.pipeline.tables import collect_small
from tests.pipeline import spark_reference
from tests.pipeline.conftest import A, B, C, MINUTE, T0

DAY_MS = 86_400_000
#: The captures columns the driver reads (rounds.captures_rows), as the captures table has them.
CAPTURES = ("round int, capture_ms bigint, server string, ok boolean, unreadable boolean, has_topic_list boolean, "
            "kv map<string, string>, has_cluster_info boolean, cluster_brokers array<struct<broker: string, cluster: string>>")


def _bag(rows: Iterable[Mapping[str, Any]]) -> Counter[Any]:
    """Rows as a multiset (a table has no row order), values compared as values (a UTC
    time is one whatever object says UTC)."""
    return Counter(_value(r) for r in rows)


def _value(v: Any) -> Any:
    if isinstance(v, Mapping):
        return tuple(sorted((k, _value(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_value(x) for x in v)
    if isinstance(v, datetime):
        assert v.tzinfo is not None
        return ("time", v.timestamp())
    return v


def _assert_same(spark: Any, captures: Any) -> dict[str, list[dict[str, Any]]]:
    """The driver's presence, brokers and broker_events from ``captures`` equal Spark's,
    row for row and in schema; the driver's tables."""
    files = rounds.captures_rows(captures)
    round_rows = rounds.round_rows(files)
    rounds_df = rounds.frame(spark, round_rows)
    ref_pres = spark_reference.presence(captures, rounds_df)
    pres = presence.presence(files, round_rows)
    assert _bag(pres) == _bag(ref_pres.toArrow().to_pylist())
    # the job works a broker at a time: each group is one broker's, and the tables of the
    # groups together are the tables of all the rows at once
    groups = list(presence.per_broker(files, round_rows))
    assert all(len({r["broker"] for r in group}) == 1 for group in groups if group)
    assert _bag(r for group in groups for r in presence.brokers(group)) == _bag(presence.brokers(pres))
    assert _bag(r for group in groups for r in presence.broker_events(group, round_rows)) == \
        _bag(presence.broker_events(pres, round_rows))
    got = {"brokers": presence.brokers(pres), "broker_events": presence.broker_events(pres, round_rows)}
    refs = {"brokers": (spark_reference.brokers(ref_pres), presence.BROKERS),
            "broker_events": (spark_reference.broker_events(ref_pres, rounds_df), presence.BROKER_EVENTS)}
    for name, (ref, ddl) in refs.items():
        assert ref.schema == StructType.fromDDL(ddl), name  # names, types, nullability
        written = driver_frame(spark, got[name], ddl)
        assert written.schema == ref.schema, name
        # through Arrow both ways (timestamps as UTC-aware datetimes)
        assert _bag(written.toArrow().to_pylist()) == _bag(ref.toArrow().to_pylist()), name
        assert _bag(got[name]) == _bag(ref.toArrow().to_pylist()), name
    return got


def _capture(round_no: int | None, server: str | None, ms: int, listed: list[tuple[str | None, str | None]] | None,
             *, ok: bool = True, unreadable: bool = False) -> tuple[Any, ...]:
    return (round_no, ms, server, ok, unreadable, True, {}, listed is not None,
            None if listed is None else [{"broker": b, "cluster": c} for b, c in listed])


def test_corners_of_the_joins(spark: Any) -> None:
    """A broker listed twice (under two clusters), under no cluster, no broker name, a
    server without cluster info or not answering, an unreadable file's listing, a round
    of no number, an empty list, rounds across midnight: as Spark's joins had them."""
    a, b = ("broker-a", "c1"), ("broker-b", "c1")
    day2 = T0 + DAY_MS - MINUTE
    rows = [
        _capture(0, A, T0, [a, b]), _capture(0, B, T0, [a]), _capture(0, C, T0, None),
        _capture(1, A, T0 + MINUTE, [a, ("broker-b", "c2")]), _capture(1, B, T0 + MINUTE, [a, ("broker-b", None), (None, "c1")]),
        _capture(1, C, T0 + MINUTE, [a, b], ok=False),
        _capture(2, A, T0 + 2 * MINUTE, [a, ("broker-a", "c2")]), _capture(2, B, T0 + 2 * MINUTE, []),
        _capture(2, C, T0 + 2 * MINUTE, [("broker-z", "c9")], unreadable=True),
        _capture(None, A, T0 + 3 * MINUTE, [("broker-n", "c1")]),
        _capture(3, A, day2, [a, b]), _capture(3, B, day2, [a, b]), _capture(3, C, day2, [a]),
        _capture(4, A, day2 + MINUTE, [a]), _capture(4, B, day2 + MINUTE, [a]), _capture(4, C, day2 + MINUTE, [a, b]),
        _capture(5, A, day2 + 2 * MINUTE, [a]), _capture(5, B, day2 + 2 * MINUTE, [a]),
    ]
    got = _assert_same(spark, spark.createDataFrame(rows, CAPTURES))
    assert {e["kind"] for e in got["broker_events"]} >= {"appear", "disappear"}
    assert {r["date"].isoformat() for r in got["brokers"]} == {"2026-01-01", "2026-01-02"}


def test_the_hand_history(spark: Any, hand_history: dict[str, Any]) -> None:
    out: Path = hand_history["out"]
    got = _assert_same(spark, spark.read.parquet(str(out / "captures")))
    assert len(got["broker_events"]) == 1


@pytest.fixture(scope="module")
def eventful(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic history with broker events of every kind, analysed by the job."""
    base = tmp_path_factory.mktemp("eventful")
    synthesize(SynthPlan(base / "captures", servers=3, brokers=6, topics=40, hours=4, every=300, seed=4,
                         events_per_day=400))
    run(spark, JobOptions(str(base / "captures"), str(base / "out"), report=False))
    return base / "out"


def test_a_synthetic_history_with_many_events(spark: Any, eventful: Path) -> None:
    got = _assert_same(spark, spark.read.parquet(str(eventful / "captures")))
    assert len(got["broker_events"]) > 10
    for name in ("brokers", "broker_events"):  # as the job wrote them
        written = spark.read.parquet(str(eventful / name))
        assert _bag(written.toArrow().to_pylist()) == _bag(got[name]), name


def test_the_summary_and_the_report_ask_the_driver_what_spark_answered(spark: Any, eventful: Path) -> None:
    """What the summary (its broker-event counts) and the report (rounds, events, names)
    now take from the driver's rows is what their Spark questions gave."""
    tables = {name: spark.read.parquet(str(eventful / name)) for name in ("captures", "divergence", "windows", "broker_events")}
    files = rounds.captures_rows(tables["captures"])
    round_rows = rounds.round_rows(files)
    events = presence.broker_events(presence.presence(files, round_rows), round_rows)
    asked = collect_small({"conv": spark_reference.conv(tables["broker_events"]), **first_questions(
        {"captures": tables["captures"].where("not unreadable"), "divergence": tables["divergence"],
         "windows": tables["windows"], "broker_events": tables["broker_events"]})})
    assert _bag(converged(events)) == _bag(asked["conv"])
    got = driver_answers(files, events)
    assert _bag(got["rounds"]) == _bag({**r, "servers": sorted(r["servers"])} for r in asked["rounds"])
    assert got["events"] == sorted(asked["events"], key=lambda e: e["start_ms"])
    window_names = {r["n"] for r in collect_small({"n": window_names_of(tables["windows"])})["n"]}
    assert {r["n"] for r in got["names"]} | window_names == {r["n"] for r in asked["names"]}
