"""One local SparkSession for every pipeline test (the job never builds its own when one
is active), and the helpers that write capture histories by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from mqadmin.diff import ServerView
from mqadmin.pipeline.capture import write_capture
from mqadmin.pipeline.schema import capture_of

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000


def write_history(out: Path, rounds: Sequence[Sequence[ServerView]], *, start_ms: int = T0,
                  every_ms: int = MINUTE) -> list[int]:
    """One capture file per view, round i at ``start_ms + i * every_ms``; the round times."""
    times = []
    for i, views in enumerate(rounds):
        t = start_ms + i * every_ms
        times.append(t)
        for view in views:
            write_capture(out, capture_of(view, captured_ms=t, round=i))
    return times


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from mqadmin.pipeline.session import Place, start

    session = start(Place("local[2]", conf={
        "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.driver.memory": "2g",
        "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "2"}), app="mqadmin-tests")
    yield session
    session.stop()


# ------------------------------------------------------- a history written by hand ----

A, B, C = "10.0.0.1:9876", "10.0.0.2:9876", "10.0.0.3:9876"


def hand_rounds() -> list[list[ServerView]]:
    """Nine rounds, a minute apart, of three servers:

    * 0-1 agree; 2-4 B has lost broker-b (cluster info, ``orders`` on broker-a only, no
      ``t2``); 5 agree again;
    * 6: a perm wipe only A got, a queue-count change only C has, ORDER_TOPIC_CONFIG on A
      only (B has the namespace empty, C lacks it), another namespace differing, C without
      the master of ``t3``;
    * 7: C unreachable, B's topic list failed, A and B disagree on a slave address;
    * 8 agree.
    """
    from mqnamesrv.protocol.bodies import QueueData, TopicRouteData
    from tests.diff.views import bd, route, view, wiped, with_addrs

    def agreeing(addr: str) -> ServerView:
        return view(addr, {"orders": route("broker-a", "broker-b"), "t2": route("broker-b"), "t3": route("broker-a")})

    def lost_b(addr: str) -> ServerView:
        return view(addr, {"orders": route("broker-a"), "t2": None, "t3": route("broker-a")}, brokers=("broker-a",))

    r6 = [
        view(A, {"orders": wiped("broker-a", "broker-b"), "t2": route("broker-b"), "t3": route("broker-a")},
             kv={"ORDER_TOPIC_CONFIG": {"orders": "broker-a:4;broker-b:4"}, "NS": {"k": "1"}}),
        view(B, {"orders": route("broker-a", "broker-b"), "t2": route("broker-b"), "t3": route("broker-a")},
             kv={"ORDER_TOPIC_CONFIG": {}, "NS": {"k": "2"}}),
        view(C, {"orders": route("broker-a", "broker-b"),
                 "t2": TopicRouteData((QueueData("broker-b", 8, 8, 6),), (bd("broker-b"),)),
                 "t3": with_addrs("broker-a", {1: "10.0.0.2:10911"})}),
    ]
    moved = with_addrs("broker-a", {0: "10.0.0.1:10911", 1: "10.9.9.9:10911"})
    b7 = agreeing(B)
    r7 = [
        view(A, {"orders": route("broker-a", "broker-b"), "t2": route("broker-b"), "t3": route("broker-a")}),
        ServerView(B, latency_ms=1.0, cluster_info=b7.cluster_info, topic_list=None,
                   topics={"orders": route("broker-a", "broker-b"), "t2": route("broker-b"), "t3": moved}),
        ServerView(C, error="10.0.0.3:9876: GET_BROKER_CLUSTER_INFO (106): connection refused"),
    ]
    rounds = [[agreeing(s) for s in (A, B, C)] for _ in range(2)]
    rounds += [[agreeing(A), lost_b(B), agreeing(C)] for _ in range(3)]
    rounds += [[agreeing(s) for s in (A, B, C)], r6, r7, [agreeing(s) for s in (A, B, C)]]
    return rounds


@pytest.fixture(scope="session")
def hand_history(spark: object, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The hand-written history, analysed once by the job (consumers=2)."""
    from mqadmin.pipeline.job import JobOptions, run

    base = tmp_path_factory.mktemp("hand")
    rounds = hand_rounds()
    times = write_history(base / "captures", rounds)
    result = run(spark, JobOptions(str(base / "captures"), str(base / "out"), consumers=2))  # type: ignore[arg-type]
    return {"rounds": rounds, "times": times, "out": base / "out", "result": result}


def at_rounds(spark: Any, out: Path, name: str) -> Any:
    """An interval table (``routes``, ``divergence``) read back with one row per round
    each row holds for: its columns plus that round's ``round``, ``seq``, ``capture_ms``
    and ``interval_ms`` (as the per-round tables had them)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    read = spark.read
    captures = read.parquet(str(out / "captures")).where("not unreadable")
    order = Window.orderBy("capture_ms", "round")
    rounds = (captures.groupBy("round").agg(F.min("capture_ms").alias("capture_ms"))
              .withColumn("seq", F.row_number().over(order))
              .withColumn("interval_ms", F.coalesce(F.lead("capture_ms").over(order) - F.col("capture_ms"), F.lit(0))))
    table = read.parquet(str(out / name)).drop("rounds", "interval_ms")
    return (table.withColumn("seq", F.explode(F.sequence("from_seq", "to_seq"))).join(rounds, "seq"))


# --------------------------------------------- the passes without Spark, for unit tests ----


def chain_pass(files: Sequence[tuple[str, bytes]], from_ms: int | None = None, to_ms: int | None = None,
               mtime_ms: int = T0) -> dict[str, list[dict[str, Any]]]:
    """chains.map_chains over v1 files (each a chain of its own): its rows by kind
    (``capture``, ``fact``, ``route``)."""
    import pyarrow as pa

    from mqadmin.pipeline.chains import map_chains

    batch = pa.RecordBatch.from_pydict({
        "path": [p for p, _ in files], "modificationTime": pa.array([mtime_ms * 1000] * len(files), pa.timestamp("us")),
        "content": pa.array([c for _, c in files], pa.binary())})
    out: dict[str, list[dict[str, Any]]] = {"capture": [], "fact": [], "route": []}
    for b in map_chains(from_ms, to_ms)([batch]):
        for row in b.to_pylist():
            for kind, value in row.items():
                if value is not None:
                    out[kind].append(value)
    return out


def routes_rows(view: ServerView, round_no: int = 0) -> list[dict[str, Any]]:
    """The routes rows (fact joined with its route's rows, chains.py) of one capture of
    ``view``, in the order of its facts."""
    from mqadmin.pipeline.capture import encode_capture

    out = chain_pass([(f"/d/{round_no:06d}/f.msgpack", encode_capture(capture_of(view, captured_ms=T0,
                                                                                  round=round_no)))])
    by_key: dict[bytes, list[dict[str, Any]]] = {}
    for r in out["route"]:
        by_key.setdefault(r.pop("route_key"), []).append(r)
    return [fact | r for fact in out["fact"] for r in sorted(by_key[fact["route_key"]], key=lambda r: r["broker_seq"])]


def judge_round(views: Sequence[ServerView], round_no: int = 0
                ) -> tuple[list[dict[str, Any]], dict[str | None, dict[str, Any]]]:
    """One round's captures rows and its outcome per topic (None: cluster-wide), as the
    chain pass and the per-topic pass give them (a timeline of that round alone)."""
    from mqadmin.pipeline import rules
    from mqadmin.pipeline.capture import encode_capture
    from mqadmin.pipeline.topics import Interval, Timeline, TopicJudge

    out = chain_pass([(f"/d/{round_no:06d}/{v.addr.replace(':', '_')}.msgpack",
                       encode_capture(capture_of(v, captured_ms=T0, round=round_no))) for v in views])
    captures = sorted(out["capture"], key=lambda c: c["server"])
    answering = tuple((c["server"], c["has_topic_list"], any(ns == "ORDER_TOPIC_CONFIG" for ns, _ in c["kv"] or ()))
                      for c in captures if c["ok"] and not c["unreadable"])
    routes: dict[bytes, list[dict[str, Any]]] = {}
    for r in out["route"]:
        routes.setdefault(r.pop("route_key"), []).append(r)
    judge = TopicJudge(Timeline([round_no], [T0], [0], [answering]), routes, 2, "averagely")
    intervals: dict[str, list[Interval]] = {}
    for f in out["fact"]:
        intervals.setdefault(f["topic"], []).append(Interval(f["server"], 1, 1, f["asked"], f["route_key"],
                                                             f["listed"], f["order_conf_kv"]))
    outcomes: dict[str | None, dict[str, Any]] = {}
    for topic, mine in intervals.items():
        (segment,) = judge.segments(topic, mine)
        outcomes[topic] = segment.outcome
    outcomes[None] = rules.cluster_outcome({"round": round_no, "captures": [c for c in captures
                                                                            if not c["unreadable"]]}, 2, "averagely")
    return captures, outcomes
