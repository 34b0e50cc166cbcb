"""Capture files and their flattening, without Spark: format, atomic writes, and rows
that rebuild exactly the routes the diff module compares."""

from __future__ import annotations

import os
from pathlib import Path

import msgpack
import pytest

from mqadmin.diff import ServerView, canonical_route, content_hash
from mqadmin.pipeline import flatten, rules
from mqadmin.pipeline.capture import capture_files, next_round, write_atomic, write_capture
from mqadmin.pipeline.schema import (
    SCHEMA, VERSION, CaptureFormatError, capture_of, check_location, decode_capture, encode_capture, file_name,
)
from mqnamesrv.protocol.bodies import BrokerData, QueueData, TopicRouteData
from tests.diff.views import route, view, wiped, with_addrs
from tests.pipeline.conftest import T0, chain_pass, judge_round, routes_rows

ODD_ROUTES = {
    "orders": route("broker-a", "broker-b"),
    "ordered": route("broker-a", order_conf="broker-a:4;broker-b:4"),
    "wiped": wiped("broker-b", "broker-a"),
    "no-master": with_addrs("broker-a", {1: "10.0.0.2:10911"}),
    "filtered": TopicRouteData((QueueData("broker-a", 4, 4, 6),), (BrokerData("c", "broker-a", {0: "x:1"}),),
                               filter_server_table={"x:1": ("f1:1", "f2:2")}),
    "queue-only": TopicRouteData((QueueData("broker-z", 2, 1, 4, 1),), ()),
    "twice": TopicRouteData((QueueData("broker-a", 4, 4, 6), QueueData("broker-a", 8, 8, 6)),
                            (BrokerData("c", "broker-a", {0: "x:1"}),)),
    "empty": TopicRouteData((), ()),
    "gone": None,
}


def test_capture_round_trip_and_header() -> None:
    v = view("10.0.0.1:9876", ODD_ROUTES, kv={"ORDER_TOPIC_CONFIG": {"ordered": "broker-a:4"}})
    cap = capture_of(v, captured_ms=T0, round=7)
    obj = msgpack.unpackb(encode_capture(cap), strict_map_key=False)
    assert list(obj) == ["schema", "version", "captured_ms", "server", "round", "ok", "error", "view"]
    assert (obj["schema"], obj["version"], obj["round"], obj["ok"]) == (SCHEMA, VERSION, 7, True)
    back = decode_capture(encode_capture(cap))
    assert back.server_view() == ServerView.from_obj(v.to_obj())
    assert content_hash(back.server_view()) == content_hash(v)


@pytest.mark.parametrize(("obj", "message"), [
    ({"schema": "other", "version": 1}, "not a route capture"),
    ({"schema": SCHEMA, "version": VERSION + 1, "captured_ms": 1, "server": "a", "round": 0, "ok": True,
      "view": {}}, "not supported"),
    ({"schema": SCHEMA, "version": 1, "server": "a", "round": 0, "ok": True, "view": {}}, "captured_ms"),
])
def test_bad_captures_are_refused(obj: dict, message: str) -> None:
    with pytest.raises(CaptureFormatError, match=message):
        decode_capture(msgpack.packb(obj))
    with pytest.raises(CaptureFormatError):
        flatten.parse(msgpack.packb(obj))


def test_truncated_file_is_refused() -> None:
    data = encode_capture(capture_of(view("A", {"t": route("broker-a")}), captured_ms=T0, round=0))
    with pytest.raises(CaptureFormatError):
        decode_capture(data[:-5])
    with pytest.raises(CaptureFormatError):
        flatten.parse(data[:-5])


def test_atomic_write_names_and_rounds(tmp_path: Path) -> None:
    assert next_round(tmp_path / "missing") == 0
    for r in (0, 1):
        for addr in ("10.0.0.1:9876", "10.0.0.2:9876"):
            write_capture(tmp_path, capture_of(ServerView(addr, error="refused"), captured_ms=T0 + r, round=r))
    # A writer killed mid-file leaves only its hidden temporary, which readers skip.
    (tmp_path / "000001" / ".10.0.0.3_9876.msgpack.123.tmp").write_bytes(b"\x85half")
    assert [p.relative_to(tmp_path).as_posix() for p in capture_files(tmp_path)] == [
        "000000/10.0.0.1_9876.msgpack", "000000/10.0.0.2_9876.msgpack",
        "000001/10.0.0.1_9876.msgpack", "000001/10.0.0.2_9876.msgpack",
    ]
    assert next_round(tmp_path) == 2
    assert file_name("[::1]:9876") == "[__1]_9876.msgpack"
    write_atomic(tmp_path / "x" / "f", b"data")
    assert os.listdir(tmp_path / "x") == ["f"]


def _rows(v: ServerView, round_no: int = 0) -> list[dict]:
    return routes_rows(v, round_no)


def test_routes_rows_rebuild_every_route_exactly() -> None:
    v = view("A", ODD_ROUTES, topic_list=("orders", "listed-only"),
             kv={"ORDER_TOPIC_CONFIG": {"ordered": "broker-a:4", "kv-only": "broker-b:2"}})
    rows = _rows(v)
    by_topic: dict[str, list[dict]] = {}
    for row in rows:
        by_topic.setdefault(row["topic"], []).append(row)
    assert set(by_topic) == set(ODD_ROUTES) | {"listed-only", "kv-only"}
    for topic, original in ODD_ROUTES.items():
        mine = sorted(by_topic[topic], key=lambda r: r["broker_seq"])
        assert [r["broker_seq"] for r in mine] == list(range(len(mine)))
        assert mine[0]["asked"] is True
        rebuilt = rules.route_from_rows(mine) if mine[0]["has_route"] else None
        assert canonical_route(rebuilt) == canonical_route(original), topic
    assert [r["broker"] for r in by_topic["orders"]] == ["broker-a", "broker-b"]
    assert by_topic["orders"][0]["listed"] is True and by_topic["wiped"][0]["listed"] is False
    assert by_topic["listed-only"][0]["asked"] is False and by_topic["listed-only"][0]["listed"] is True
    assert by_topic["kv-only"][0]["order_conf_kv"] == "broker-b:2"
    assert by_topic["no-master"][0]["master_addr"] is None
    assert by_topic["orders"][0]["master_addr"] == "10.0.0.1:10911"
    assert by_topic["twice"][1]["read_queue_nums"] == 8


def test_route_hash_equal_exactly_when_canonical_routes_are() -> None:
    a = route("broker-a", "broker-b")
    shuffled = TopicRouteData(tuple(reversed(a.queue_datas)), tuple(reversed(a.broker_datas)))
    rows_a = _rows(view("A", {"t": a}))
    rows_b = _rows(view("B", {"t": shuffled}))
    rows_c = _rows(view("C", {"t": wiped("broker-a", "broker-b")}))
    assert rows_a[0]["route_hash"] == rows_b[0]["route_hash"] != rows_c[0]["route_hash"]


def test_capture_row_matches_the_diff_summary() -> None:
    v = view("10.0.0.1:9876", ODD_ROUTES, kv={"ORDER_TOPIC_CONFIG": {"ordered": "x"}, "NS": {"k": "v"}})
    (row,) = chain_pass([("/d/000003/f.msgpack", encode_capture(capture_of(v, captured_ms=T0, round=3)))])["capture"]
    assert row["content_hash"] == content_hash(v)
    assert (row["round"], row["ok"], row["routes_asked"], row["routes_present"]) == (3, True, 9, 8)
    assert [b["broker"] for b in row["cluster_brokers"]] == ["broker-a", "broker-b"]
    bad = flatten.unreadable_row("/d/000004/10.0.0.1_9876.msgpack", T0, "truncated")
    assert (bad["round"], bad["server"], bad["unreadable"], bad["capture_ms"]) == (4, "10.0.0.1:9876", True, T0)


def test_failed_server_has_no_route_rows() -> None:
    out = chain_pass([("/d/000000/f.msgpack", encode_capture(capture_of(ServerView("A", error="refused"),
                                                                      captured_ms=T0, round=0)))])
    assert (out["fact"], [c["ok"] for c in out["capture"]]) == ([], [False])


@pytest.mark.parametrize("round_no", [0, 3, 6, 7], ids=["agreeing", "lost-broker", "mixed", "one-down"])
def test_one_round_judged_like_the_diff(round_no: int) -> None:
    """The chain and per-topic passes without Spark: every topic agrees or has the
    findings of diff_views, and each file's content hash is the diff's."""
    from mqadmin.diff import diff_views
    from tests.pipeline.conftest import hand_rounds

    views = hand_rounds()[round_no]
    captures, outcomes = judge_round(views, round_no)
    assert {c["server"]: c["content_hash"] for c in captures} == {v.addr: content_hash(v) if v.ok else None
                                                                  for v in views}
    report = diff_views(sorted(views, key=lambda v: v.addr), consumers=2)
    assert set(outcomes) == {t for v in views if v.ok for t in v.topics} | {None}
    for topic, row in outcomes.items():
        assert [f["kind"] for f in row["findings"]] == [f.kind for f in report.findings if f.topic == topic]
        assert row["agree"] is not any(f.topic == topic for f in report.findings)


def test_a_capture_must_sit_in_its_round_directory() -> None:
    check_location("file:/data/captures/000003/10.0.0.1_9876.msgpack", 3)
    check_location("/data/flat/10.0.0.1_9876.msgpack", 3)  # not a round directory: nothing to compare
    check_location("10.0.0.1_9876.msgpack", 3)
    with pytest.raises(CaptureFormatError, match=r"round 4 in directory '000003' \(round 3\); move it to 000004/"):
        check_location("file:/data/captures/000003/10.0.0.1_9876.msgpack", 4)
