"""Capture files that pass the header checks but cannot be analysed, and files that are
not part of the history: both passes must agree on them, name them, and keep them out of
the rounds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pytest

from mqadmin.pipeline.schema import capture_of, encode_capture, in_round_directory
from tests.diff.views import route, view
from tests.pipeline.conftest import A, B, C, MINUTE, T0, at_rounds, chain_pass, write_history

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

DAY_MS = 86_400_000


def _capture(addr: str = A, round_no: int = 1, **view_fields: Any) -> bytes:
    """A capture of a view that answered, with ``view_fields`` replaced as given (raw)."""
    obj = msgpack.unpackb(encode_capture(capture_of(view(addr, {"t": route("broker-a")}), captured_ms=T0 + MINUTE,
                                                    round=round_no)), strict_map_key=False)
    obj["view"].update(view_fields)
    return msgpack.packb(obj)


def _batch(files: list[tuple[str, bytes]], mtime_ms: int = T0 + 5 * DAY_MS) -> pa.RecordBatch:
    """What Spark's ``binaryFile`` source hands to mapInArrow (modificationTime in µs)."""
    return pa.record_batch({
        "path": pa.array([p for p, _ in files], pa.string()),
        "modificationTime": pa.array([mtime_ms * 1000] * len(files), pa.timestamp("us", tz="UTC")),
        "content": pa.array([c for _, c in files], pa.binary()),
    })


BAD_VIEWS = {
    "route-a-string": ({"topics": {"order_topic": "notaroute"}}, "route of topic 'order_topic' is not a map"),
    "route-bad-queue": ({"topics": {"t": {"queueDatas": ["x"], "brokerDatas": []}}},
                        "route of topic 't': BodyDecodeError: QueueData: expected a JSON object, got str"),
    "route-perm-too-big": ({"topics": {"t": {"queueDatas": [{"brokerName": "a", "perm": 2 ** 40}]}}},
                           "route of topic 't' has a queue number or perm out of range (broker 'a')"),
    "route-broker-id-too-big": ({"topics": {"t": {"brokerDatas": [{"brokerName": "a",
                                                                   "brokerAddrs": {"9" * 20: "x"}}]}}},
                                "route of topic 't' has a broker id out of range (broker 'a')"),
    "route-filter-not-str": ({"topics": {"t": {"filterServerTable": {"x:1": [1, 2]}}}},
                             "route of topic 't' has a filter server of 'x:1' that is not a string"),
    "cluster-info-a-string": ({"cluster_info": "x"}, "view field 'cluster_info' is not a map"),
    "cluster-broker-a-list": ({"cluster_info": {"brokerAddrTable": {"broker-a": [1]}}}, "view field 'cluster_info'"),
    "topic-list-a-string": ({"topic_list": "orders"}, "view field 'topic_list' is not a list of strings"),
    "topic-list-of-ints": ({"topic_list": [1, 2]}, "view field 'topic_list' is not a list of strings"),
    "kv-a-list": ({"kv": ["x"]}, "view field 'kv' is not a map"),
    "kv-namespace-a-string": ({"kv": {"ORDER_TOPIC_CONFIG": "x"}},
                              "view field 'kv': namespace 'ORDER_TOPIC_CONFIG' is not a map of strings"),
    "kv-value-an-int": ({"kv": {"ORDER_TOPIC_CONFIG": {"t": 4}}},
                        "view field 'kv': namespace 'ORDER_TOPIC_CONFIG' is not a map of strings"),
    "config-a-list": ({"config": ["x"]}, "view field 'config' is not a map"),
    "latency-a-string": ({"latency_ms": "fast"}, "view field 'latency_ms' is not a number"),
    "failures-an-int": ({"failures": 3}, "view field 'failures' is not a list"),
}


@pytest.mark.parametrize(("fields", "reason"), BAD_VIEWS.values(), ids=BAD_VIEWS.keys())
def test_malformed_view_is_unreadable(fields: dict[str, Any], reason: str) -> None:
    """The file is an unreadable captures row naming what was wrong and has no facts;
    the round's readable files are read without it (its round time and the comparison
    without it: test_malformed_view_is_listed_and_the_run_goes_on)."""
    bad = ("/d/000001/10.0.0.3_9876.msgpack", _capture(C, **fields))
    good = [(f"/d/000001/{a.replace(':', '_')}.msgpack", _capture(a)) for a in (A, B)]
    out = chain_pass([good[0], bad, good[1]], mtime_ms=T0 + 5 * DAY_MS)
    assert {f["server"] for f in out["fact"]} == {A, B}
    captures = {r["server"]: r for r in out["capture"]}
    assert (captures[C]["unreadable"], captures[C]["round"], captures[C]["ok"]) == (True, 1, False)
    assert captures[C]["error"].startswith("unreadable capture: " + reason)
    assert not captures[A]["unreadable"] and not captures[B]["unreadable"]


def test_error_that_is_not_a_string_is_unreadable() -> None:
    obj = msgpack.unpackb(_capture(), strict_map_key=False)
    obj["error"] = 5
    (row,) = chain_pass([("/d/000001/10.0.0.1_9876.msgpack", msgpack.packb(obj))])["capture"]
    assert row["unreadable"] and row["error"].startswith("unreadable capture: capture field 'error' is not a string")


def test_a_bad_route_does_not_poison_the_template_cache() -> None:
    bad = _capture(topics={"t": {"queueDatas": [{"brokerName": "a", "perm": 2 ** 40}]}})
    out = chain_pass([("/d/000001/10.0.0.1_9876.msgpack", bad), ("/d/000001/10.0.0.2_9876.msgpack", _capture(B))])
    assert [c["unreadable"] for c in out["capture"]] == [True, False]
    assert [r["perm"] for r in out["route"] if r["has_route"]] == [6]


@pytest.mark.parametrize("path", ["/d/notes/10.0.0.1_9876.msgpack", "/d/10.0.0.1_9876.msgpack",
                                  "10.0.0.1_9876.msgpack", "/d/000001/sub/10.0.0.1_9876.msgpack"],
                         ids=["named-directory", "top-level", "no-directory", "below-a-round"])
def test_files_outside_round_directories_are_ignored(path: str) -> None:
    for content in (_capture(), b"garbage"):
        out = chain_pass([(path, content)])
        assert (out["capture"], out["fact"]) == ([], [])
    assert in_round_directory("file:/d/000001/10.0.0.1_9876.msgpack")


def test_an_unreadable_file_keeps_its_mtime() -> None:
    """In the chain pass; tables.captures gives it its round's time when the round has
    a readable file (test_malformed_view_is_listed_and_the_run_goes_on)."""
    out = chain_pass([("/d/000002/10.0.0.1_9876.msgpack", b"\x85garbage")], mtime_ms=T0 + DAY_MS)
    assert [(r["round"], r["capture_ms"], r["unreadable"]) for r in out["capture"]] == [(2, T0 + DAY_MS, True)]


# ---------------------------------------------------------------- with Spark ----


def test_malformed_view_is_listed_and_the_run_goes_on(spark: Any, tmp_path: Path) -> None:
    from mqadmin.pipeline.job import JobOptions, run

    caps, out = tmp_path / "captures", tmp_path / "out"
    same = {"order_topic": route("broker-a")}
    write_history(caps, [[view(s, same) for s in (A, B, C)] for _ in range(3)])
    bad = caps / "000001" / "10.0.0.3_9876.msgpack"
    obj = msgpack.unpackb(bad.read_bytes(), strict_map_key=False)
    obj["view"]["topics"] = {"order_topic": "notaroute"}
    bad.write_bytes(msgpack.packb(obj))
    os.utime(bad, ns=((T0 + 5 * DAY_MS) * 1_000_000,) * 2)
    result = run(spark, JobOptions(str(caps), str(out), report=False))
    assert (result.counts["unreadable_files"], result.counts["rounds"], result.dates) == (1, 3, ["2026-01-01"])
    (row,) = spark.read.parquet(str(out / "captures")).where("unreadable").collect()
    assert (row["round"], row["server"], row["capture_ms"]) == (1, C, T0 + MINUTE)
    assert row["error"] == "unreadable capture: route of topic 'order_topic' is not a map"
    routes = at_rounds(spark, out, "routes").where("round = 1").select("server").distinct().collect()
    assert sorted(r["server"] for r in routes) == [A, B]
    (cluster,) = at_rounds(spark, out, "divergence").where("round = 1 and scope = 'cluster'").collect()
    assert (cluster["servers"], cluster["agree"]) == ([A, B], True)


def test_stray_and_unreadable_files_make_no_round(spark: Any, tmp_path: Path) -> None:
    """Four rounds two seconds apart; ``t`` disagrees in the last two. Then a stray copy
    and a stray garbage file outside any round directory (ignored), and a round
    directory holding only a garbage file written days later (listed, with its mtime,
    but not a round): the history still ends at round 3, its window stays open."""
    from mqadmin.pipeline.job import JobOptions, run

    caps, out = tmp_path / "captures", tmp_path / "out"
    same, other = {"t": route("broker-a")}, {"t": route("broker-b")}
    every = 2_000
    times = write_history(caps, [[view(A, same), view(B, same)]] * 2 + [[view(A, same), view(B, other)]] * 2,
                          every_ms=every)
    later = T0 + 3 * DAY_MS
    strays = [caps / "notes" / "x.msgpack", caps / "10.0.0.1_9876.msgpack", caps / "000004" / "10.0.0.1_9876.msgpack"]
    strays[0].parent.mkdir()
    strays[2].parent.mkdir()
    strays[0].write_bytes(b"not msgpack at all")
    strays[1].write_bytes((caps / "000003" / "10.0.0.1_9876.msgpack").read_bytes())
    strays[2].write_bytes(b"\x85garbage")
    for path in strays:
        os.utime(path, ns=(later * 1_000_000,) * 2)
    result = run(spark, JobOptions(str(caps), str(out), report=False))
    assert (result.counts["rounds"], result.counts["captures"], result.counts["unreadable_files"]) == (4, 9, 1)
    assert result.dates == ["2026-01-01"]  # not the garbage file's date
    (bad,) = spark.read.parquet(str(out / "captures")).where("unreadable").collect()
    assert (bad["round"], bad["capture_ms"], str(bad["date"])) == (4, later, "2026-01-04")
    div = at_rounds(spark, out, "divergence").where("scope = 'cluster'").collect()
    assert sorted((r["round"], r["interval_ms"]) for r in div) == [(0, every), (1, every), (2, every), (3, 0)]
    (window,) = spark.read.parquet(str(out / "windows")).collect()
    assert (window["start_ms"], window["end_ms"], window["duration_s"], window["open"], window["rounds"]) == (
        times[2], times[3], 2.0, True, 2)
    (summary,) = spark.read.parquet(str(out / "summary")).collect()
    assert (summary["rounds"], summary["observed_s"], summary["consistent_share"]) == (4, 6.0, pytest.approx(2 / 3))


def test_a_history_of_unreadable_files_only_is_no_history(spark: Any, tmp_path: Path) -> None:
    """Nothing to analyse, and the error says why; the file is still listed."""
    from mqadmin.pipeline.job import JobOptions, NoCaptures, run

    caps, out = tmp_path / "captures", tmp_path / "out"
    (caps / "000000").mkdir(parents=True)
    (caps / "000000" / "10.0.0.1_9876.msgpack").write_bytes(b"\x85garbage")
    with pytest.raises(NoCaptures, match=r"no readable capture files under .* \(1 unreadable, listed in "):
        run(spark, JobOptions(str(caps), str(out), report=False))
    (row,) = spark.read.parquet(str(out / "captures")).collect()
    assert (row["round"], row["server"], row["unreadable"]) == (0, A, True)
