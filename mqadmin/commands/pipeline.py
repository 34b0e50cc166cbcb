"""``snapshot``, ``analyze`` and ``synth-history``: the route-history pipeline
(mqadmin/pipeline/SCHEMA.md documents the files and tables)."""

from __future__ import annotations

import asyncio
import math
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..core import EXIT_INTERRUPTED, NamesrvOpt, ProfileOpt, TimeoutOpt, TracebackOpt, error_line, guard
from ..exit import ExitStatus
from .diff import Strategy

OutDirOpt = Annotated[Path, typer.Option("--out", help="Directory to write to.", show_default=False)]


class CaptureFormat(str, Enum):
    v2 = "v2"
    v1 = "v1"


class Fleet(str, Enum):
    jmh = "jmh"


#: --fleet presets: RocketMQ's benchmark fleet, 4 clusters x 8 broker groups, 40,000 topics
#: each on the 8 groups of its cluster, watched by 5 name servers once a minute.
FLEETS = {Fleet.jmh: dict(servers=5, brokers=32, clusters=4, topics=40_000, spread=8, every=60.0, operations=True)}

FormatOpt = Annotated[CaptureFormat, typer.Option(
    "--format",
    help="Capture format: v2 stores what changed since the server's previous round and a keyframe every "
         "--keyframe-every rounds; v1 every route every round (SCHEMA.md).")]
KeyframeOpt = Annotated[int, typer.Option("--keyframe-every", min=1, metavar="ROUNDS",
                                          help="v2: a full keyframe every ROUNDS rounds per server (a lost file "
                                               "costs at most that many rounds of its server).")]


def _echo(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def snapshot(
    out: OutDirOpt,
    every: Annotated[float, typer.Option("--every", min=0.0, help="Seconds between round starts.")] = 60.0,
    rounds: Annotated[Optional[int], typer.Option("--rounds", min=1, show_default=False,
                                                  help="Stop after N rounds.")] = None,
    duration: Annotated[Optional[float], typer.Option("--duration", min=0.0, show_default=False,
                                                      help="Start no round after S seconds.")] = None,
    kv: Annotated[Optional[list[str]], typer.Option(
        "--kv", metavar="NAMESPACE", show_default=False,
        help="KV namespace to capture (repeatable). Default: ORDER_TOPIC_CONFIG.")] = None,
    format_: FormatOpt = CaptureFormat.v2, keyframe_every: KeyframeOpt = 60,
    namesrv: NamesrvOpt = None, timeout: TimeoutOpt = None, profile: ProfileOpt = None,
    traceback: TracebackOpt = False,
) -> None:
    """Capture every name server's cluster info, topic list, routes and KV namespaces,
    one msgpack file per server per round under OUT/<round>/ (written atomically; v2,
    the default, holds only what changed since that server's previous round).

    Runs until --rounds or --duration, or Ctrl-C or SIGTERM (which finish the round under
    way; a second one stops at once, exit 130). Exit 0 when every server answered every
    round, 3 when some did not, 1 when none did.
    """
    from ..pipeline.capture import SnapshotPlan, run_snapshot
    from ..profiles import resolve

    if rounds is not None and duration is not None:
        raise typer.BadParameter("give --rounds or --duration, not both", param_hint="'--rounds'")

    def body() -> int:
        target = resolve(namesrv, profile)
        plan = SnapshotPlan(target.addrs, out, every=every, rounds=rounds, duration=duration,
                            kv_namespaces=tuple(kv or ("ORDER_TOPIC_CONFIG",)), timeout=timeout or target.timeout or 3.0,
                            version=_version(format_), keyframe_every=keyframe_every)
        _echo(f"snapshot: {len(plan.addrs)} name servers ({target.source}) every {every:g} s into {out}")
        try:
            stats = asyncio.run(run_snapshot(plan, _echo, progress=_progress() if sys.stderr.isatty() else None))
        except asyncio.CancelledError:  # a second Ctrl-C; every file written is whole
            error_line("interrupted")
            return EXIT_INTERRUPTED
        how = f"stopped by {stats.stopped_by or 'request'}" if stats.interrupted else "done"
        _echo(f"snapshot: {how}: {stats.rounds} rounds, {stats.files} files, {stats.failed} from servers that "
              "did not answer")
        if stats.files and not stats.answered:
            return int(ExitStatus.ERROR)
        return int(ExitStatus.PARTIAL if stats.failed else ExitStatus.OK)

    raise typer.Exit(code=guard(body, traceback=traceback))


def _version(format_: CaptureFormat) -> int:
    return 1 if format_ is CaptureFormat.v1 else 2


def _progress():  # type: ignore[no-untyped-def]
    last = [0.0]

    def show(addr: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] > 0.2:
            last[0] = now
            sys.stderr.write(f"\r  {addr}: {done}/{total} routes\x1b[K")
            if done == total:
                sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
    return show


def _time_option(text: Optional[str], name: str) -> Optional[int]:
    """--from/--to as epoch ms; a bad one is a usage error naming the option."""
    from ..pipeline import times

    try:
        return None if text is None else times.parse_time(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=f"'{name}'") from None


def analyze(
    captures: Annotated[Path, typer.Argument(help="Directory written by snapshot or synth-history.",
                                             show_default=False)],
    out: OutDirOpt,
    master: Annotated[Optional[str], typer.Option(
        "--master", show_default=False,
        help="Spark master URL: local[*] (default), local[N], spark://HOST:PORT, yarn, k8s://URL.")] = None,
    remote: Annotated[Optional[str], typer.Option(
        "--remote", show_default=False, help="Spark Connect server, sc://HOST:PORT (instead of --master).")] = None,
    conf: Annotated[Optional[list[str]], typer.Option(
        "--conf", metavar="KEY=VALUE", show_default=False,
        help="Spark setting, as spark-submit's --conf (repeatable), e.g. spark.pyspark.python=/opt/py/bin/python "
             "for the executors' Python.")] = None,
    consumers: Annotated[int, typer.Option("--consumers", min=1, help="Consumers per group for the impact.")] = 2,
    strategy: Annotated[Strategy, typer.Option(
        "--strategy", help="Consumers' queue allocation strategy (as diff-namesrv).")] = Strategy.averagely,
    from_: Annotated[Optional[str], typer.Option("--from", show_default=False,
                                                 help="First capture time (2026-11-23, ...T08:00[Z], epoch ms).")] = None,
    to: Annotated[Optional[str], typer.Option("--to", show_default=False, help="End (exclusive), same forms.")] = None,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Write OUT/report.html.")] = True,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Analyse into an OUT that holds the analysis of another captures directory "
                          "(its dates covered by this run are replaced).")] = False,
    verbose: Annotated[bool, typer.Option(
        "-v", "--verbose", help="Spark's own log lines on stderr (otherwise in OUT/_spark.log).")] = False,
    traceback: TracebackOpt = False,
) -> None:
    """Analyse a capture history with Spark: Parquet tables routes, divergence, windows,
    brokers, broker_events, summary (and captures) under OUT, partitioned by date and
    rewritten per date on a re-run; plus OUT/report.html. Runs locally, on a cluster
    (--master) or through Spark Connect (--remote); the executors need none of our packages."""
    missing = _missing_pipeline_packages()
    if missing:
        error_line(f"analyze needs {', '.join(missing)}: pip install 'mqadmin[pipeline]'")
        raise typer.Exit(code=int(ExitStatus.ERROR))
    from ..pipeline import session
    from ..pipeline.job import JobOptions
    from ..pipeline.run import Analysis
    from ..pipeline.run import analyze as run_analysis

    if master is not None and remote is not None:
        raise typer.BadParameter("give --master or --remote, not both", param_hint="'--remote'")
    if master is not None and not session.MASTER.fullmatch(master):
        raise typer.BadParameter(f"{master!r} is not a Spark master URL (local, local[N], local[*], "
                                 "spark://HOST:PORT, yarn, k8s://URL)", param_hint="'--master'")
    if remote is not None and not session.REMOTE.fullmatch(remote):
        raise typer.BadParameter(f"{remote!r} is not a Spark Connect URL (sc://HOST:PORT)", param_hint="'--remote'")
    try:
        settings = session.parse_conf(conf or [])
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--conf'") from None

    def body() -> int:
        opts = JobOptions(str(captures.resolve()), str(out.resolve()), consumers, strategy.value,
                          _time_option(from_, "--from"), _time_option(to, "--to"), report)
        if opts.from_ms is not None and opts.to_ms is not None and opts.from_ms >= opts.to_ms:
            raise typer.BadParameter(f"--from ({from_}) must be before --to ({to})", param_hint="'--from'")
        analysis = Analysis(captures, out, opts, master=master, remote=remote, conf=settings, replace=replace,
                            verbose=verbose, traceback=traceback)
        return int(run_analysis(analysis, echo=_echo, error=error_line))

    raise typer.Exit(code=guard(body, traceback=traceback))


#: What analyze imports beyond the name server's dependencies (the 'pipeline' extra).
PIPELINE_PACKAGES = ("pyspark", "pyarrow", "pandas", "numpy", "plotly")


def _missing_pipeline_packages() -> list[str]:
    import importlib.util

    return [name for name in PIPELINE_PACKAGES if importlib.util.find_spec(name) is None]


def synth_history(
    out: OutDirOpt,
    servers: Annotated[int, typer.Option("--servers", min=1, help="Name servers.")] = 3,
    brokers: Annotated[int, typer.Option("--brokers", min=1, help="Broker groups (master + slave each).")] = 32,
    topics: Annotated[int, typer.Option("--topics", min=0, help="Topics (system topics come on top).")] = 10_000,
    hours: Annotated[float, typer.Option("--hours", min=0.0, help="History length.")] = 24.0,
    every: Annotated[float, typer.Option("--every", min=1.0, help="Seconds between captures.")] = 300.0,
    seed: Annotated[int, typer.Option("--seed", help="Random seed: same seed, same files.")] = 1,
    spread: Annotated[int, typer.Option("--spread", min=1, help="Broker groups per topic.")] = 2,
    start: Annotated[str, typer.Option("--start", help="Time of the first capture (2026-01-01, ...T08:00[Z], "
                                                       "epoch ms; UTC unless given).")] = "2026-01-01T00:00:00Z",
    events: Annotated[float, typer.Option("--events", min=0.0, help="Event rate multiplier (0: none).")] = 1.0,
    operations: Annotated[bool, typer.Option(
        "--operations", help="Also what operators do in a day: topics created and deleted, a rolling name-server "
                             "restart, a name server cut off from the brokers.")] = False,
    fleet: Annotated[Optional[Fleet], typer.Option(
        "--fleet", show_default=False,
        help="A preset fleet instead of --servers/--brokers/--topics/--spread/--every: jmh = 5 name servers, "
             "4 clusters x 8 broker groups, 40,000 topics each on the 8 groups of its cluster, a round a minute, "
             "with --operations.")] = None,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="List the events drawn.")] = False,
    format_: FormatOpt = CaptureFormat.v2, keyframe_every: KeyframeOpt = 60,
    traceback: TracebackOpt = False,
) -> None:
    """Generate a capture history (register periods, partitions, crashes, restarts, perm
    wipes) in the format snapshot writes, for tests, demos and benchmarks."""
    from ..pipeline.synth import SynthPlan, describe, synthesize

    from ..pipeline.capture import next_round
    from ..pipeline.times import parse_time

    for name, value in (("--hours", hours), ("--every", every), ("--events", events)):
        if not math.isfinite(value):
            raise typer.BadParameter(f"must be a finite number, got {value:g}", param_hint=f"'{name}'")
    try:
        parse_time(start)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--start'") from None

    def body() -> int:
        held = next_round(out) if out.is_dir() else 0
        if held:
            error_line(f"{out} already holds captures (rounds up to {held - 1:06d}); synth-history "
                       "writes a whole history: give a new or empty directory")
            return int(ExitStatus.ERROR)
        shape = dict(servers=servers, brokers=brokers, topics=topics, every=every, spread=spread,
                     operations=operations) | (FLEETS[fleet] if fleet is not None else {})
        plan = SynthPlan(out, hours=hours, seed=seed, start=start, events_per_day=events, version=_version(format_),
                         keyframe_every=keyframe_every, **shape)  # type: ignore[arg-type]
        started = time.perf_counter()
        tty = sys.stderr.isatty()

        def progress(done: int, total: int) -> None:
            if tty:
                sys.stderr.write(f"\rsynth-history: round {done}/{total}\x1b[K")

        result = synthesize(plan, progress)
        if tty:
            sys.stderr.write("\r\x1b[K")
        if verbose:
            for line in describe(result.events, plan.servers):
                _echo(f"  {line}")
        _echo(f"synth-history: {result.rounds} rounds, {result.files} files, {result.route_rows:,} route rows, "
              f"{len(result.events)} events, {result.bytes / 1e6:,.0f} MB in {time.perf_counter() - started:.1f} s "
              f"-> {out}")
        return int(ExitStatus.OK)

    raise typer.Exit(code=guard(body, traceback=traceback))

