"""What ``mqadmin analyze`` does once its options are parsed: check the input and the
output directory, start (or reuse) Spark, run the job with progress and Ctrl-C handling,
and say what it wrote. The command (mqadmin/commands/pipeline.py) only parses options and
calls ``analyze``; the job itself is job.py.

Every failure is one line through ``error`` and an exit status; nothing here prints a
traceback unless ``traceback`` asks for one.
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ..exit import ExitStatus
from . import launch, session
from .job import JobOptions, NoCaptures, run
from .progress import StepProgress


@dataclass(frozen=True)
class Analysis:
    """One ``analyze`` run: the job's options and where and how to run Spark."""

    captures: Path
    out: Path
    job: JobOptions
    master: str | None = None
    remote: str | None = None
    conf: Mapping[str, str] | None = None
    replace: bool = False
    verbose: bool = False
    traceback: bool = False


def analyze(a: Analysis, echo: Callable[[str], None], error: Callable[[str], None]) -> ExitStatus:
    """Run one analysis; ``echo`` hears progress lines, ``error`` the one line of a failure."""
    captures, out = a.captures, a.out
    if not captures.is_dir():
        error(f"no such directory: {captures}")
        return ExitStatus.ERROR
    size = launch.capture_bytes(captures)
    if size is None:
        error(f"no capture files under {captures} (snapshot writes {captures}/NNNNNN/HOST_PORT.msgpack)")
        return ExitStatus.ERROR
    problem = launch.unwritable(out)
    if problem:
        error(f"--out {out}: {problem}")
        return ExitStatus.ERROR
    other = launch.analysed_from(out)
    if other is not None and other != str(captures.resolve()) and not a.replace:
        error(f"{out} holds the analysis of {other}; analysing {captures} into it would replace the dates "
              "both cover: give another --out, or --replace")
        return ExitStatus.ERROR
    java = None if a.remote else launch.missing_java()
    if java:
        error(f"analyze runs Spark, which needs Java 17: {java}")
        return ExitStatus.ERROR
    launch.record_source(out, captures)
    place = session.Place(master=None if a.remote else (a.master or "local[*]"), remote=a.remote,
                          conf=dict(a.conf or {}), log=None if a.verbose or a.remote else out / session.LOG_NAME,
                          input_bytes=size)
    see_log = f" (Spark's log: {place.log})" if place.log else ""
    if not a.verbose:  # PySpark's own advice (Connect's client warns as the JVM logs): not ours to print
        warnings.filterwarnings("ignore", module=r"pyspark(\.|$)")
    from pyspark.sql import SparkSession

    existing = None if a.remote else SparkSession.getActiveSession()
    echo(f"analyze: starting Spark ({place.describe()})")
    try:
        if existing is not None:
            spark = existing
            session.ship(spark)
        else:
            spark = session.start(place)
    except Exception as exc:  # no Java, JVM gone, master or server unreachable
        error(f"cannot start Spark with {place.describe()}: {launch.first_line(exc)}{see_log}")
        return ExitStatus.ERROR
    started = time.perf_counter()
    progress = StepProgress(session.task_counter(spark), prefix="analyze: ", tty=sys.stderr.isatty())
    stop = launch.CancelOnSigint(spark, echo)

    def step(text: str) -> None:
        if stop.requested:  # between two Spark actions: do not start the next step
            raise KeyboardInterrupt
        progress.step(text)

    try:
        with progress, stop:
            result = run(spark, a.job, echo=step)
    except NoCaptures as exc:
        error(str(exc))
        return ExitStatus.ERROR
    except (Exception, KeyboardInterrupt) as exc:
        if not stop.requested:
            if a.traceback or not isinstance(exc, Exception):
                raise
            error(f"analyze failed with {place.describe()}: {launch.first_line(exc)}{see_log}")
            return ExitStatus.ERROR
        result = None  # Ctrl-C: the Spark job under way was cancelled, or the next step not begun
    finally:
        if existing is None:
            spark.stop()
    if result is None or stop.requested:
        error(f"interrupted; the tables under {out} may mix this run and an earlier one: run analyze again")
        return ExitStatus.INTERRUPTED
    c = result.counts
    echo(f"analyze: {c.get('rounds', 0)} rounds, {c.get('captures', 0)} captures, "
         f"{c.get('inconsistent', 0)} inconsistent (round, topic) pairs, {c.get('windows', 0)} windows "
         f"on {', '.join(result.dates)}, {time.perf_counter() - started:.0f} s")
    echo(f"analyze: tables under {out}" + (f"; report {result.report}" if result.report else ""))
    if c.get("unreadable_files"):
        echo(f"analyze: {c['unreadable_files']} capture files could not be read and were left out "
             "(exit 3; see the captures table, unreadable = true)")
        return ExitStatus.PARTIAL
    return ExitStatus.OK
