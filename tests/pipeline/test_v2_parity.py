"""The same history captured as v1 and as v2 gives the same tables (issue 22's parity):
``windows``, ``brokers``, ``broker_events``, ``summary`` and the divergence of every round."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mqadmin.pipeline.capture import capture_files, write_capture
from mqadmin.pipeline.delta import DeltaEncoder
from mqadmin.pipeline.job import JobOptions, run
from mqadmin.pipeline.schema import capture_of
from mqadmin.pipeline.synth import SynthPlan, synthesize
from tests.pipeline.conftest import MINUTE, T0, hand_rounds

COMPARED = ("divergence", "windows", "brokers", "broker_events", "summary")
#: Every event kind of synth.py at a rate that puts each in two hours of 3 servers.
PLAN = dict(servers=3, brokers=8, topics=200, hours=2, every=60, seed=12, events_per_day=40, operations=True)


def _rows(spark: Any, out: Path, name: str) -> list[str]:
    df = spark.read.parquet(str(out / name))
    return sorted(repr(sorted(r.asDict(recursive=True).items())) for r in df.collect())


def _analyse(spark: Any, src: Path, out: Path) -> Any:
    return run(spark, JobOptions(str(src), str(out), consumers=2, report=False))


def _assert_same_tables(spark: Any, a: Path, b: Path) -> None:
    for name in COMPARED:
        assert _rows(spark, a, name) == _rows(spark, b, name), name


@pytest.fixture(scope="module")
def synth_pair(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("parity")
    one = synthesize(SynthPlan(base / "v1", version=1, **PLAN))  # type: ignore[arg-type]
    synthesize(SynthPlan(base / "v2", version=2, keyframe_every=9, **PLAN))  # type: ignore[arg-type]
    return {"events": one.events, "base": base, "v1": _analyse(spark, base / "v1", base / "out1"),
            "v2": _analyse(spark, base / "v2", base / "out2")}


def test_synth_history_with_every_event_kind_gives_the_same_tables(spark: Any, synth_pair: dict[str, Any]) -> None:
    kinds = {e.kind for e in synth_pair["events"]}
    assert kinds >= {"partition", "broker_crash", "broker_restart", "namesrv_restart", "namesrv_outage",
                     "perm_wipe_partial", "topic_create", "topic_delete", "namesrv_rolling_restart",
                     "namesrv_partition"}
    assert {e.detail for e in synth_pair["events"] if e.kind == "broker_crash"} == {"kill", "host"}  # host: expiry
    base = synth_pair["base"]
    _assert_same_tables(spark, base / "out1", base / "out2")
    assert synth_pair["v1"].counts == synth_pair["v2"].counts
    windows = spark.read.parquet(str(base / "out2" / "windows"))
    assert windows.count() > 0 and windows.where("unknown_s > 0").count() > 0  # a silent server was bridged
    routes1, routes2 = (_comparable(spark.read.parquet(str(base / out / "routes"))) for out in ("out1", "out2"))
    assert routes1.count() == routes2.count() and routes1.exceptAll(routes2).count() == 0


def _comparable(df: Any) -> Any:
    """Map columns as JSON: set operations refuse maps."""
    from pyspark.sql import functions as F

    return df.select(*(F.to_json(c).alias(c) if c in ("filter_servers", "broker_addrs") else c
                       for c in df.columns if c != "date"))


def test_hand_history_gives_the_same_tables(spark: Any, tmp_path: Path) -> None:
    encoder = DeltaEncoder(keyframe_every=4)
    for i, views in enumerate(hand_rounds()):
        for view in views:
            capture = capture_of(view, captured_ms=T0 + i * MINUTE, round=i)
            write_capture(tmp_path / "v1", capture)
            write_capture(tmp_path / "v2", capture, encoder)
    _analyse(spark, tmp_path / "v1", tmp_path / "out1")
    _analyse(spark, tmp_path / "v2", tmp_path / "out2")
    _assert_same_tables(spark, tmp_path / "out1", tmp_path / "out2")


def test_a_lost_v2_file_makes_its_chain_unreadable_until_the_next_keyframe(spark: Any, tmp_path: Path) -> None:
    synthesize(SynthPlan(tmp_path / "caps", servers=3, brokers=4, topics=20, hours=0.5, every=60, seed=2,
                         events_per_day=0, keyframe_every=10))
    (tmp_path / "caps" / "000004" / "10.0.0.2_9876.msgpack2").unlink()
    (tmp_path / "caps" / "000012" / "10.0.0.3_9876.msgpack2").write_bytes(b"\x85garbage")
    result = _analyse(spark, tmp_path / "caps", tmp_path / "out")
    bad = {(r["round"], r["server"]): r["error"] for r in
           spark.read.parquet(str(tmp_path / "out" / "captures")).where("unreadable").collect()}
    assert sorted(bad) == [*((r, "10.0.0.2:9876") for r in range(5, 10)),
                           *((r, "10.0.0.3:9876") for r in range(12, 20))]
    assert bad[(5, "10.0.0.2:9876")].startswith("delta of round 5 builds on round 4 of 10.0.0.2:9876")
    assert bad[(12, "10.0.0.3:9876")].startswith("not a route capture")
    assert result.counts["unreadable_files"] == 13 and result.counts["rounds"] == 30
    assert len(list(capture_files(tmp_path / "caps"))) == 89
