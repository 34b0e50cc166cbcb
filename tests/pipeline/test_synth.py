"""synth-history: deterministic files in the capture format, following the name
server's registration and expiry rules."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mqadmin.cli import app
from mqadmin.diff import diff_views
from mqadmin.pipeline.capture import capture_files, read_captures
from tests.cli.helpers import flat
from mqadmin.pipeline.synth import EXPIRY_MS, PERIOD_MS, SCAN_MS, Event, SynthPlan, _build, _Fleet, listed, synthesize


def test_same_seed_same_files(tmp_path: Path) -> None:
    plan = dict(servers=3, brokers=4, topics=40, hours=2, every=600, seed=9, events_per_day=40)
    one = synthesize(SynthPlan(tmp_path / "a", **plan))  # type: ignore[arg-type]
    two = synthesize(SynthPlan(tmp_path / "b", **plan))  # type: ignore[arg-type]
    assert one.events and [e.kind for e in one.events] == [e.kind for e in two.events]
    files_a = [p.read_bytes() for p in capture_files(tmp_path / "a")]
    assert files_a == [p.read_bytes() for p in capture_files(tmp_path / "b")]
    assert len(files_a) == one.files == 3 * 12


def test_files_are_captures_of_a_plausible_cluster(tmp_path: Path) -> None:
    synthesize(SynthPlan(tmp_path, servers=2, brokers=32, topics=100, hours=0.2, every=600, events_per_day=0))
    caps = list(read_captures(tmp_path))
    assert [(c.round, c.server) for c in caps] == [(0, "10.0.0.1:9876"), (0, "10.0.0.2:9876")]
    views = [c.server_view() for c in caps]
    v = views[0]
    assert v.cluster_info is not None and sorted(v.cluster_info.cluster_addr_table) == ["cluster-a", "cluster-b"]
    assert len(v.cluster_info.broker_addr_table) == 32
    route = v.topics["topic-00000"]
    assert route is not None and len(route.queue_datas) == 2 and route.broker_datas[0].broker_addrs.keys() == {0, 1}
    assert set(v.topic_list or ()) == set(v.topics)  # every listed topic asked, as collect_views does
    assert "TBW102" in v.topics and "ORDER_TOPIC_CONFIG" in v.kv
    assert diff_views(views).agree  # no event: the servers agree


def test_partitioned_broker_expires_then_returns() -> None:
    hour = 3_600_000
    fleet = _Fleet(0, hour, 2, 1, random.Random(1))
    cut, heal = 20 * 60_000, 40 * 60_000
    fleet.events.append(Event("partition", cut, heal, broker=0, server=1))
    _build(fleet)
    assert listed(fleet, 1, 0, cut - 1) and listed(fleet, 0, 0, cut + 10 * 60_000)
    assert listed(fleet, 1, 0, cut + 60_000)  # not yet expired
    assert not listed(fleet, 1, 0, cut + EXPIRY_MS + SCAN_MS + PERIOD_MS)
    assert not listed(fleet, 1, 0, heal - 1)
    assert listed(fleet, 1, 0, heal + PERIOD_MS + 1)  # the first registration after the heal


def test_cli(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["synth-history", "--out", str(tmp_path), "--servers", "2", "--brokers", "2",
                                      "--topics", "5", "--hours", "1", "--every", "1200", "--events", "0", "-v"])
    assert result.exit_code == 0, result.output
    assert "synth-history: 3 rounds, 6 files" in result.output
    assert len(list(capture_files(tmp_path))) == 6


def test_cli_refuses_a_directory_that_holds_captures(tmp_path: Path) -> None:
    """A second history into the same directory would overwrite rounds of the first and
    mix two histories (or fake rounds into a real snapshot): refused, nothing written."""
    args = ["synth-history", "--servers", "2", "--brokers", "2", "--topics", "5", "--every", "1200", "--events", "0"]
    assert CliRunner().invoke(app, [*args, "--out", str(tmp_path), "--hours", "1"]).exit_code == 0
    before = {p: p.read_bytes() for p in capture_files(tmp_path)}
    again = CliRunner().invoke(app, [*args, "--out", str(tmp_path), "--hours", "0.5", "--seed", "2"])
    assert again.exit_code == 1
    assert f"{tmp_path} already holds captures (rounds up to 000002)" in flat(again.stderr)
    assert {p: p.read_bytes() for p in capture_files(tmp_path)} == before


@pytest.mark.parametrize("option,value,message", [
    ("--start", "yesterday", "not a time: 'yesterday'"),
    ("--start", "2026-13-01", "not a time: '2026-13-01'"),
    ("--hours", "inf", "must be a finite number, got inf"),
    ("--every", "inf", "must be a finite number, got inf"),
])
def test_cli_usage_errors(tmp_path: Path, option: str, value: str, message: str) -> None:
    result = CliRunner().invoke(app, ["synth-history", "--out", str(tmp_path / "h"), "--topics", "5", option, value])
    assert result.exit_code == 2 and message in flat(result.output), result.output
    assert not (tmp_path / "h").exists()


def test_cli_start_takes_epoch_ms_as_analyze_does(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["synth-history", "--out", str(tmp_path), "--servers", "1", "--brokers", "1",
                                      "--topics", "1", "--hours", "0.1", "--every", "600", "--events", "0",
                                      "--start", "1767225600000"])
    assert result.exit_code == 0, result.output
    (cap,) = list(read_captures(tmp_path))
    assert cap.captured_ms == 1_767_225_600_000


def test_a_failed_write_leaves_no_partial_round(tmp_path: Path) -> None:
    """The second server's file of round 0 cannot be written (its temporary is a link to
    /dev/full: ENOSPC): the error names it, and round 0 is not left with one file of two."""
    import errno
    import os

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    (tmp_path / "000000").mkdir()
    (tmp_path / "000000" / f".10.0.0.2_9876.msgpack2.{os.getpid()}.tmp").symlink_to("/dev/full")
    with pytest.raises(OSError) as caught:
        synthesize(SynthPlan(tmp_path, servers=2, brokers=2, topics=5, hours=1, every=1200, events_per_day=0))
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(tmp_path / "000000" / "10.0.0.2_9876.msgpack2")
    assert not (tmp_path / "000000").exists()


def test_operations_create_and_delete_topics_and_restart_every_server(tmp_path: Path) -> None:
    result = synthesize(SynthPlan(tmp_path, servers=3, brokers=4, topics=2000, hours=3, every=60, seed=4,
                                  events_per_day=8, operations=True))
    by_kind: dict[str, list[Event]] = {}
    for e in result.events:
        by_kind.setdefault(e.kind, []).append(e)
    assert {"topic_create", "topic_delete", "namesrv_rolling_restart", "namesrv_partition"} <= set(by_kind)
    caps = {(c.round, c.server): c for c in read_captures(tmp_path)}
    names = {int(n.split("-")[1]): n for c in caps.values() for n in c.view["topics"] if n.startswith("topic-")}
    created = by_kind["topic_create"][0]
    deleted = by_kind["topic_delete"][0]
    before, after = (created.start_ms - T0_SYNTH) // 60_000, (created.end_ms - T0_SYNTH) // 60_000 + 1
    topic = f"topic-{created.topics[0]:05d}"
    assert all(topic not in caps[(before, s)].view["topic_list"] for s in SERVERS if caps[(before, s)].ok)
    assert all(topic in caps[(after, s)].view["topic_list"] for s in SERVERS if caps[(after, s)].ok)
    gone = f"topic-{deleted.topics[0]:05d}"
    later = (deleted.end_ms - T0_SYNTH) // 60_000 + 1
    assert all(gone not in caps[(later, s)].view["topics"] for s in SERVERS if caps[(later, s)].ok)
    assert names  # the regular topics are there
    # The rolling restart takes every server down once, one after the other.
    (rolling,) = by_kind["namesrv_rolling_restart"]
    assert rolling.end_ms - rolling.start_ms == 3 * 120_000


T0_SYNTH = 1_767_225_600_000
SERVERS = ("10.0.0.1:9876", "10.0.0.2:9876", "10.0.0.3:9876")
