"""What ``mqadmin analyze`` checks and sets up around the Spark job: everything that can
be wrong with the master URL, the captures directory or OUT is said in one line before a
JVM starts, and Ctrl-C stops the job without py4j's tracebacks."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any, Callable

from .delta import DeltaDecoder
from .schema import SUFFIX_V2, CaptureFormatError, in_round_directory, is_capture_name
from .session import cancel_all, java_binary

def capture_bytes(captures: Path) -> int | None:
    """About how many bytes of captures the job will read, from the capture files in
    round directories (NNNNNN/) under ``captures`` (schema.in_round_directory); None when
    there is none. A v2 file stands for a whole capture once rebuilt: each counts as its
    server's largest file (a keyframe) rebuilt, so that a history of small deltas is not
    taken for a small input."""
    v1 = 0
    v2: dict[str, tuple[int, Path, int]] = {}  # file name (server) -> largest size, its path, files
    found = False
    for p in captures.rglob("*.msgpack*"):
        if not (in_round_directory(p.as_posix()) and is_capture_name(p.name)):
            continue
        found = True
        size = p.stat().st_size
        if p.name.endswith(SUFFIX_V2):
            largest, path, files = v2.get(p.name, (-1, p, 0))
            v2[p.name] = (size, p, files + 1) if size > largest else (largest, path, files + 1)
        else:
            v1 += size
    return v1 + sum(_rebuilt_size(path, largest) * files for largest, path, files in v2.values()) if found else None


def _rebuilt_size(path: Path, size: int) -> int:
    """The v1 size of a v2 keyframe (its own size when it is not one, or unreadable)."""
    try:
        return len(DeltaDecoder().decode(path.read_bytes()))
    except (OSError, CaptureFormatError):
        return size


def missing_java() -> str | None:
    """Why no JVM can start here (session.java_binary), or None: said before Spark fails
    with "Java gateway process exited"."""
    if java_binary() is not None:
        return None
    home = os.environ.get("JAVA_HOME")
    return f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH and JAVA_HOME is not set"


def unwritable(out: Path) -> str | None:
    """Why ``out`` cannot take the tables, or None; creates it if missing."""
    if out.exists() and not out.is_dir():
        return "not a directory"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return exc.strerror or str(exc)
    if not os.access(out, os.W_OK | os.X_OK):
        return "not writable"
    return None


class CancelOnSigint:
    """Ctrl-C during ``analyze``: cancel the running Spark jobs from another thread.

    PySpark's own handler cancels them from inside the signal handler, on the main
    thread, which is then usually inside a py4j call: py4j prints screens of "reentrant
    call" tracebacks. Here the first Ctrl-C only sets ``requested`` and cancels through a
    second connection; the action under way fails, the job stops at its next step, and
    the command says so in one line. A second Ctrl-C interrupts at once."""

    def __init__(self, spark: Any, echo: Callable[[str], None]) -> None:
        self.spark = spark
        self.echo = echo
        self.requested = False
        self._before: Any = None

    def __enter__(self) -> CancelOnSigint:
        if threading.current_thread() is threading.main_thread():
            self._before = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._before is not None:
            signal.signal(signal.SIGINT, self._before)

    def _on_sigint(self, signum: int, frame: object) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.echo("analyze: interrupted: cancelling the Spark jobs (Ctrl-C again to stop at once)")
        threading.Thread(target=self._cancel, name="cancel-spark-jobs", daemon=True).start()

    def _cancel(self) -> None:
        try:
            cancel_all(self.spark)
        except Exception:  # the session is going away anyway
            pass


#: In OUT: the captures directory its tables were made from. Dynamic overwrite replaces
#: each date a run covers, so a second captures directory analysed into the same OUT
#: would silently replace the first one's days. ('_': Spark skips it when reading OUT.)
SOURCE_FILE = "_captures.txt"


def analysed_from(out: Path) -> str | None:
    try:
        return (out / SOURCE_FILE).read_text().strip() or None
    except OSError:
        return None


def record_source(out: Path, captures: Path) -> None:
    (out / SOURCE_FILE).write_text(f"{captures.resolve()}\n")


def first_line(exc: BaseException) -> str:
    """The gist of a Spark/py4j error, whose text runs on with a Java stack."""
    for line in str(exc).splitlines():
        line = line.strip()
        if line and not line.startswith("at "):
            return line[:300]
    return type(exc).__name__
