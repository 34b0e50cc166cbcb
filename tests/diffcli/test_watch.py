"""--watch: rounds, what changed, how long differences lasted; Ctrl-C; the progress bar."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Callable

from mqadmin.diff import ServerView, diff_views
from mqadmin.render.diff import age_text, queues_text, render_round
from mqadmin.diff_run import _progress_bar
from mqadmin.diff.watch import Round, Tracker, exit_status
from mqadmin.exit import ExitStatus
from tests.diff.views import route, view
from tests.diffcli.conftest import Brokers, ns, row

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------- pure parts ----

def test_tracker_reports_new_changed_resolved_with_durations() -> None:
    both = [view("A", {"o": route("broker-a", "broker-b")}), view("B", {"o": route("broker-a")}, brokers=("broker-a",))]
    wiped = [view("A", {"o": route("broker-a", "broker-b", perm=4)}),
             view("B", {"o": route("broker-a", "broker-b")})]
    agree = [view("A", {"o": route("broker-a", "broker-b")}), view("B", {"o": route("broker-a", "broker-b")})]
    tracker = Tracker()
    r1 = tracker.add(both, diff_views(both), started_wall=1000.0, started=50.0, elapsed=0.5)
    assert r1.first and r1.number == 1 and r1.status == ExitStatus.DISAGREE
    assert [f.kind for f in r1.new] == ["cluster_members", "broker_missing", "broker_missing"]
    assert r1.to_obj({})["changes"] is None

    r2 = tracker.add(wiped, diff_views(wiped), started_wall=1010.0, started=60.0, elapsed=0.5)
    assert not r2.first and r2.number == 2
    assert [(f.kind, f.broker) for f in r2.new] == [("perm", "broker-a"), ("perm", "broker-b")]
    assert [(f.kind, f.topic, round(s, 1)) for f, s in r2.resolved] == [
        ("cluster_members", None, 10.0), ("broker_missing", None, 10.0), ("broker_missing", "o", 10.0)]
    assert [(c.addr, c.before[:8], c.after[:8]) for c in r2.servers_changed] == [
        ("A", "answered", "answered"), ("B", "answered", "answered")]
    doc = r2.to_obj({"watch": 10})
    assert doc["round"] == 2 and doc["started_at"] == "1970-01-01T00:16:50.000Z"
    assert [f["lasted_s"] for f in doc["changes"]["resolved"]] == [10.0] * 3
    assert [f["lasted_s"] for f in doc["changes"]["new"]] == [0.0, 0.0] and doc["elapsed_ms"] == 500.0
    assert doc["findings"][0]["first_seen"] == "1970-01-01T00:16:50.000Z"

    r3 = tracker.add(wiped, diff_views(wiped), started_wall=1020.0, started=70.25, elapsed=0.1)
    assert (r3.new, r3.resolved, r3.changed, r3.changes) == ((), (), (), 0)
    assert r3.lasted(r3.report.findings[0]) == 10.25  # first seen in round 2
    out = io.StringIO()
    render_round(r3, out, tty=False)
    assert out.getvalue().splitlines()[0].endswith("0 new, 0 changed, 0 resolved, 2 ongoing (oldest lasted 10 s); "
                                                   "no change")

    r4 = tracker.add(agree, diff_views(agree), started_wall=1030.0, started=80.0, elapsed=0.1)
    assert r4.status == ExitStatus.OK and len(r4.resolved) == 2 and r4.to_obj({})["status"] == "ok"


def test_a_difference_whose_side_went_silent_is_unconfirmed_not_resolved() -> None:
    lost = [view("A", {"o": route("broker-a", "broker-b")}), view("B", {"o": route("broker-a")}, brokers=("broker-a",))]
    b_down = [lost[0], ServerView("B", error="B: GET_BROKER_CLUSTER_INFO (106): connection refused")]
    agree = [lost[0], view("B", {"o": route("broker-a", "broker-b")})]
    tracker = Tracker()

    def add(views: list[ServerView], t: float) -> Round:
        return tracker.add(views, diff_views(views), started_wall=1000.0 + t, started=t, elapsed=0.1)

    r1 = add(lost, 0.0)
    kinds = [(f.kind, f.topic) for f in r1.report.findings]
    assert kinds == [("cluster_members", None), ("broker_missing", None), ("broker_missing", "o")]
    # B, the side that lacks broker-b, stops answering: A alone agrees with itself.
    r2 = add(b_down, 10.0)
    assert r2.report.findings == () and r2.resolved == () and r2.status == ExitStatus.PARTIAL
    assert [((f.kind, f.topic), silent) for f, silent in r2.went_silent] == [(k, ("B",)) for k in kinds]
    assert r2.unconfirmed == r2.went_silent
    doc = r2.to_obj({})
    assert [(f["kind"], f["silent"], f["lasted_s"]) for f in doc["unconfirmed"]] == [
        (k, ["B"], 10.0) for k, _ in kinds]
    assert doc["changes"]["unconfirmed"] == doc["unconfirmed"] and doc["changes"]["resolved"] == []
    out = io.StringIO()
    render_round(r2, out, tty=False)
    text = out.getvalue()
    assert "0 resolved, 0 ongoing, 3 unconfirmed (a server silent)" in text.splitlines()[0]
    assert row(text, "unconfirmed", "o", "broker-b", "broker", "present on A; missing on B", "lasted 10 s; B silent")

    r3 = add(b_down, 20.0)  # still silent: no change
    assert (r3.went_silent, r3.resolved, r3.changes, len(r3.unconfirmed)) == ((), (), 0, 3)
    # B answers again and still lacks broker-b: the same differences go on, from round 1.
    r4 = add(lost, 30.0)
    assert (r4.new, r4.resolved, r4.unconfirmed) == ((), (), ())
    assert [r4.lasted(f) for f in r4.report.findings] == [30.0] * 3
    # Silent again, then back and agreeing: resolved, having lasted from round 1.
    add(b_down, 40.0)
    r6 = add(agree, 50.0)
    assert [((f.kind, f.topic), lasted) for f, lasted in r6.resolved] == [(k, 50.0) for k in kinds]
    assert r6.status == ExitStatus.OK and r6.unconfirmed == ()


def test_agreement_seen_by_a_server_of_each_side_resolves() -> None:
    lost_b = view("B", {"o": route("broker-a")}, brokers=("broker-a",))
    first = [view("A", {"o": route("broker-a", "broker-b")}), lost_b, view("C", {"o": route("broker-a", "broker-b")})]
    # A (one of the majority) is down, but B now agrees with C: a real resolution.
    then = [ServerView("A", error="refused"), view("B", {"o": route("broker-a", "broker-b")}), first[2]]
    tracker = Tracker()
    tracker.add(first, diff_views(first), started_wall=0.0, started=0.0, elapsed=0.1)
    r2 = tracker.add(then, diff_views(then), started_wall=5.0, started=5.0, elapsed=0.1)
    assert len(r2.resolved) == 3 and r2.unconfirmed == ()


def test_exit_status_table() -> None:
    ok, down = view("A", {}), ServerView("B", error="refused")
    partial = ServerView("C", latency_ms=1.0, topics={}, failures=("C: GET_ROUTEINFO_BY_TOPIC (105): timeout",))
    assert exit_status([ok], diff_views([ok])) == ExitStatus.OK
    assert exit_status([ok, down], diff_views([ok, down])) == ExitStatus.PARTIAL
    assert exit_status([ok, partial], diff_views([ok, partial])) == ExitStatus.PARTIAL
    assert exit_status([down], diff_views([down])) == ExitStatus.ERROR
    other = view("D", {"t": route("broker-a")})
    assert exit_status([ok, other, down], diff_views([ok, other, down])) == ExitStatus.DISAGREE


def test_text_helpers() -> None:
    assert queues_text([("a", 0), ("a", 1), ("a", 2), ("b", 5), ("b", 7), ("b", 8)]) == "a/0-2, b/5, b/7-8"
    assert queues_text([]) == "none"
    assert [age_text(s) for s in (0.42, 42, 185, 7300)] == ["0.4 s", "42 s", "3m05s", "2h01m"]


def test_progress_bar_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    with _progress_bar(io.StringIO(), enabled=True) as progress:
        assert progress is None
    with _progress_bar(Tty(), enabled=False) as progress:
        assert progress is None
    tty = Tty()
    with _progress_bar(tty, enabled=True) as progress:
        assert progress is not None
        progress("A", 5, 10)
        progress("B", 10, 10)
    assert "fetching routes" in tty.getvalue()


# --------------------------------------------------- real processes, rounds ----

def start_watch(addrs: list[str], *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "NAMESRV_ADDR": "", "MQADMIN_CONFIG": "/nonexistent", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "mqadmin", "diff-namesrv", "-n", ns(addrs), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def read_until(stream: IO[str], done: Callable[[str], bool], timeout: float = 15) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        lines.append(line)
        if done(line):
            return lines
    raise AssertionError(f"no expected line in {lines}")


def test_watch_json_lines_report_the_resolved_finding(addrs: list[str], brokers: Brokers) -> None:
    two = addrs[:2]
    brokers(two, "broker-a", "127.0.0.1:10911", {"order_topic": 4})
    brokers(two[:1], "broker-b", "127.0.0.1:10921", {"order_topic": 4})
    proc = start_watch(two, "--watch", "1.5", "--count", "2", "-o", "json")
    assert proc.stdout is not None
    [first] = read_until(proc.stdout, lambda line: True)
    brokers(two[1:], "broker-b", "127.0.0.1:10921", {"order_topic": 4})  # the lost registration arrives
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    r1, r2 = json.loads(first), json.loads(out)
    assert "\n" not in first.rstrip("\n")  # JSON Lines: one document per line
    assert (r1["round"], r1["exit_status"], r1["changes"]) == (1, 4, None)
    assert ("broker_missing", "order_topic", "broker-b") in [(f["kind"], f["topic"], f["broker"]) for f in r1["findings"]]
    assert (r2["round"], r2["status"], r2["exit_status"], r2["findings"]) == (2, "ok", 0, [])
    resolved = r2["changes"]["resolved"]
    assert [(f["kind"], f["topic"], f["broker"]) for f in resolved] == [
        ("cluster_members", None, None), ("broker_missing", None, "broker-b"), ("broker_missing", "order_topic", "broker-b")]
    assert all(1.0 <= f["lasted_s"] < 10 for f in resolved)
    assert r2["changes"]["new"] == [] and len(r2["changes"]["servers"]) == 1
    assert r1["args"]["watch"] == 1.5 and r1["args"]["count"] == 2
    assert err == "mqadmin: warning: name servers disagree: 3 differences in 1 topic and the cluster info\n"


def test_watch_table_prints_only_changes(addrs: list[str], brokers: Brokers) -> None:
    two = addrs[:2]
    brokers(two, "broker-a", "127.0.0.1:10911", {"order_topic": 4})
    proc = start_watch(two, "--watch", "1.5", "--count", "2")
    assert proc.stdout is not None
    head = read_until(proc.stdout, lambda line: line.startswith("No differences"))
    assert head[0].startswith("round 1 at ")
    assert cli_wipe(two[1])
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 4, err
    lines = out.splitlines()
    assert lines[0].startswith("round 2 at ") and lines[0].endswith(": 1 new, 0 changed, 0 resolved, 0 ongoing "
                                                                    "(oldest lasted 0.0 s)")
    assert lines[1].startswith(f"server B {two[1]}: answered ") and " -> answered " in lines[1]
    assert row(out, "Change", "Topic", "Broker", "What", "Seen", "Duration")
    assert row(out, "new", "order_topic", "broker-a", "perm", "RW (6) on A; R- (4) on B", "lasted 0.0 s")
    assert row(out, "order_topic", "producers", "agreed route (A; no majority): broker-a 100%")
    assert row(out, "B: broker-a 0% (-100%)")
    assert "Id   Name server" not in out  # the server table is not repeated


def cli_wipe(addr: str) -> bool:
    env = {**os.environ, "NAMESRV_ADDR": "", "MQADMIN_CONFIG": "/nonexistent"}
    done = subprocess.run([sys.executable, "-m", "mqadmin", "wipeWritePerm", "-b", "broker-a", "-n", addr],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    return done.returncode == 0


def test_ctrl_c_exits_130_without_traceback(addrs: list[str]) -> None:
    proc = start_watch(addrs, "--watch", "30", "-o", "json")
    assert proc.stdout is not None
    read_until(proc.stdout, lambda line: line.startswith("{"))
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert err == "mqadmin: error: interrupted\n"
