"""End to end: real name servers and simulated brokers (``mqadmin fixture up``) with a
partition in the middle, ``mqadmin snapshot`` against them, ``mqadmin analyze``: the
window in the windows table and in report.html is the one the capture files show."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mqadmin.cli import app
from mqadmin.diff import diff_views
from mqadmin.pipeline.capture import capture_files, read_captures
from tests.fixtures_sim.harness import FixtureProcess

# At --speed 20: registrations every 1.5 s, expiry after 6 s. broker-b stops reaching
# ns2 at 2 s, ns2 drops it about 6 s later, and lists it again soon after 13 s.
FIXTURE = """
name: pipeline-partition
nameServers:
  - name: ns1
  - name: ns2
clusters: [DefaultCluster]
brokers:
  - name: broker-a
  - name: broker-b
topics:
  - name: orders
    queues: 4
    brokers: [broker-a, broker-b]
timeline:
  - at: 40s
    do: partition
    broker: broker-b
    servers: [ns2]
  - at: 260s
    do: heal
    broker: broker-b
    servers: [ns2]
duration: 600s
"""


def test_snapshot_then_analyze_finds_the_partition(spark: Any, tmp_path: Path) -> None:
    fixture = tmp_path / "partition.yaml"
    fixture.write_text(FIXTURE)
    captures, out = tmp_path / "captures", tmp_path / "out"
    proc = FixtureProcess(fixture, "--speed", "20")
    try:
        addrs = proc.wait_ready(timeout=30)
        ns2 = proc.servers["ns2"]
        snap = CliRunner().invoke(app, ["snapshot", "-n", addrs, "--out", str(captures), "--every", "0.5",
                                        "--duration", "18", "--timeout", "2"])
    finally:
        proc.interrupt()
    assert snap.exit_code == 0, snap.output
    assert "round 0: 2/2 name servers answered" in snap.output

    # What the files say: the rounds in which the servers disagree on 'orders'.
    by_round: dict[int, list[Any]] = {}
    for cap in read_captures(captures):
        by_round.setdefault(cap.round, []).append(cap)
    times = {r: caps[0].captured_ms for r, caps in by_round.items()}
    bad = [r for r, caps in sorted(by_round.items())
           if any(f.topic == "orders" for f in diff_views(sorted((c.server_view() for c in caps),
                                                                 key=lambda v: v.addr)).findings)]
    assert bad and bad == list(range(bad[0], bad[-1] + 1)), bad  # one contiguous run
    assert bad[0] > 0 and bad[-1] < max(times)  # it starts and ends within the capture

    result = CliRunner().invoke(app, ["analyze", str(captures), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "analyze: ingest: reading captures, chain by chain\n" in result.output
    assert "analyze: report: drawing\n" in result.output
    assert (out / "_captures.txt").read_text() == f"{captures.resolve()}\n"
    windows = [r.asDict() for r in spark.read.parquet(str(out / "windows")).where("topic = 'orders'").collect()]
    assert len(windows) == 1
    (w,) = windows
    assert (w["start_ms"], w["end_ms"], w["open"]) == (times[bad[0]], times[bad[-1] + 1], False)
    assert w["duration_s"] == (times[bad[-1] + 1] - times[bad[0]]) / 1000
    assert 3 <= w["duration_s"] <= 12
    assert (w["servers"], w["cause"], w["brokers"]) == ([ns2], "broker_missing", ["broker-b"])
    assert w["max_unassigned"] == 4 and w["max_doubly_assigned"] == 2

    from tests.pipeline.test_report import assert_charts_drawn

    text = assert_charts_drawn(out / "report.html", tmp_path)
    start = datetime.fromtimestamp(w["start_ms"] / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert "orders" in text and start in text


@pytest.mark.parametrize("args", [["--rounds", "1", "--duration", "1"], ["--keyframe-every", "0"],
                                  ["--format", "v3"]], ids=["rounds-and-duration", "keyframe-0", "format-v3"])
def test_snapshot_usage_errors(args: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["snapshot", "-n", "127.0.0.1:1", "--out", str(tmp_path), *args])
    assert result.exit_code == 2


def test_snapshot_of_unreachable_server_writes_error_captures(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["snapshot", "-n", "127.0.0.1:1", "--out", str(tmp_path), "--rounds", "2",
                                      "--every", "0", "--timeout", "0.5"])
    assert result.exit_code == 1, result.output
    caps = list(read_captures(tmp_path))
    assert [(c.round, c.ok) for c in caps] == [(0, False), (1, False)]
    assert caps[0].error is not None and "127.0.0.1:1" in caps[0].error
    # One line per round naming the server once: "round 0: 127.0.0.1:1: ...: connection refused".
    lines = [line for line in result.stderr.splitlines() if line.startswith("round 0: 127.0.0.1:1")]
    assert len(lines) == 1 and lines[0].count("127.0.0.1:1") == 1, result.stderr


@pytest.mark.parametrize("fmt,names", [("v2", ["127.0.0.1_1.msgpack2"] * 3), ("v1", ["127.0.0.1_1.msgpack"] * 3)])
def test_snapshot_writes_v2_unless_told_v1_with_keyframes_as_asked(tmp_path: Path, fmt: str, names: list[str]) -> None:
    result = CliRunner().invoke(app, ["snapshot", "-n", "127.0.0.1:1", "--out", str(tmp_path), "--rounds", "3",
                                      "--every", "0", "--timeout", "0.5", "--format", fmt, "--keyframe-every", "2"])
    assert result.exit_code == 1, result.output
    assert [p.name for p in capture_files(tmp_path)] == names
    if fmt == "v2":
        from mqadmin.pipeline.delta import read_header

        heads = [read_header(p.read_bytes()) for p in capture_files(tmp_path)]
        assert [(h["round"], h["keyframe"], h["prev"]) for h in heads] == [(0, 0, None), (1, 0, 0), (2, 2, None)]
    assert [c.round for c in read_captures(tmp_path)] == [0, 1, 2]


@pytest.mark.parametrize("sig,name", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_ctrl_c_or_sigterm_finishes_the_round_under_way(namesrv: Any, tmp_path: Path, sig: int, name: str) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mqadmin", "snapshot", "-n", namesrv.addr, "--out", str(tmp_path),
                             "--every", "0.2"], stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        lines.append(line)
        if line.startswith("round 1:"):
            break
    proc.send_signal(sig)
    rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 0, "".join(lines) + rest
    assert f"stopped by {name}" in rest
    caps = list(read_captures(tmp_path))
    assert len(caps) >= 2 and all(c.ok for c in caps)
    assert [c.round for c in caps] == list(range(len(caps)))
    assert not [p for p in tmp_path.rglob(".*")]  # no temporary left behind


def test_analyze_refuses_an_empty_time_range_before_starting_spark(tmp_path: Path) -> None:
    from tests.cli.helpers import flat

    result = CliRunner().invoke(app, ["analyze", str(tmp_path), "--out", str(tmp_path / "out"),
                                      "--from", "2026-11-24", "--to", "2026-11-23"])
    assert result.exit_code == 2
    assert "--from (2026-11-24) must be before --to (2026-11-23)" in flat(result.output)
    assert not (tmp_path / "out").exists()


def test_a_full_disk_names_the_file_and_leaves_no_empty_round(tmp_path: Path) -> None:
    """ENOSPC carries no file name; the error must name the capture, and the round
    directory made for it must not stay behind empty. The temporary file is made a link
    to /dev/full, whose writes fail with ENOSPC."""
    import asyncio

    from mqadmin.pipeline.capture import SnapshotPlan, capture_round

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    round_dir = tmp_path / "000000"
    round_dir.mkdir()
    (round_dir / f".127.0.0.1_1.msgpack.{os.getpid()}.tmp").symlink_to("/dev/full")
    plan = SnapshotPlan(["127.0.0.1:1"], tmp_path, timeout=0.5)
    with pytest.raises(OSError) as caught:
        asyncio.run(capture_round(plan, 0))
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(round_dir / "127.0.0.1_1.msgpack")
    assert not round_dir.exists()


@pytest.mark.parametrize("args,code,message", [
    (["--master", "garbage://x"], 2, "'garbage://x' is not a Spark master URL"),
    (["--out", "{file}"], 1, "--out {file}: not a directory"),
    (["--captures", "{empty}"], 1, "no capture files under {empty} (snapshot writes"),
])
def test_analyze_checks_its_input_and_output_before_starting_spark(tmp_path: Path, args: list[str], code: int,
                                                                     message: str) -> None:
    from tests.cli.helpers import flat

    captures, empty, file = tmp_path / "captures", tmp_path / "empty", tmp_path / "file"
    (captures / "000000").mkdir(parents=True)
    (captures / "000000" / "10.0.0.1_9876.msgpack").write_bytes(b"")
    empty.mkdir()
    (empty / "notes").mkdir()
    (empty / "notes" / "x.msgpack").write_bytes(b"")  # not in a round directory: not a capture
    file.write_text("")
    names = {"file": str(file), "empty": str(empty)}
    args = [a.format(**names) for a in args]
    source = args[1] if args[0] == "--captures" else str(captures)
    rest = [] if args[0] == "--captures" else args
    out = ["--out", str(tmp_path / "out")] if "--out" not in rest else []
    result = CliRunner().invoke(app, ["analyze", source, *out, *rest])
    assert result.exit_code == code and message.format(**names) in flat(result.output), result.output
    assert not (tmp_path / "out").exists()


def test_analyze_refuses_an_out_made_from_other_captures(tmp_path: Path) -> None:
    """Each run replaces the dates it covers: a second captures directory analysed into
    the same OUT would replace the first one's days without a word."""
    from tests.cli.helpers import flat

    for name in ("cap1", "cap2"):
        (tmp_path / name / "000000").mkdir(parents=True)
        (tmp_path / name / "000000" / "10.0.0.1_9876.msgpack").write_bytes(b"")
    out = tmp_path / "out"
    out.mkdir()
    (out / "_captures.txt").write_text(f"{(tmp_path / 'cap1').resolve()}\n")
    result = CliRunner().invoke(app, ["analyze", str(tmp_path / "cap2"), "--out", str(out)])
    assert result.exit_code == 1
    assert (f"{out} holds the analysis of {(tmp_path / 'cap1').resolve()}; analysing {tmp_path / 'cap2'} into it "
            "would replace the dates both cover: give another --out, or --replace") in flat(result.output)
    assert (out / "_captures.txt").read_text() == f"{(tmp_path / 'cap1').resolve()}\n"


def test_snapshot_notes_a_directory_of_other_servers(tmp_path: Path) -> None:
    """Continuing a directory is normal (same servers: no note); continuing one whose last
    round holds other servers' captures (here a synthetic history) is said before the
    first round, since analyze will take both as one history."""
    snap = ["snapshot", "-n", "127.0.0.1:1", "--rounds", "1", "--every", "0", "--timeout", "0.5"]
    mine = tmp_path / "mine"
    for _ in range(2):
        result = CliRunner().invoke(app, [*snap, "--out", str(mine)])
        assert result.exit_code == 1 and "note:" not in result.stderr
    synth = tmp_path / "synth"
    assert CliRunner().invoke(app, ["synth-history", "--out", str(synth), "--servers", "2", "--brokers", "1",
                                    "--topics", "1", "--hours", "0.2", "--every", "600"]).exit_code == 0
    result = CliRunner().invoke(app, [*snap, "--out", str(synth)])
    assert (f"note: {synth} already holds rounds up to 000000, whose last round has captures of other servers "
            "(10.0.0.1_9876, 10.0.0.2_9876); this run continues it at 000001") in result.stderr
    assert sorted(p.name for p in (synth / "000001").iterdir()) == ["127.0.0.1_1.msgpack2"]
