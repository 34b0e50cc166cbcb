"""Progress of the Spark job for the person waiting on it: the step under way and how
many tasks of its running stages are done, read from Spark's status tracker (or, over
Spark Connect, from the progress the server sends: session.task_counter).

A 24-hour history takes minutes to analyse, most of it inside one step; step names alone
leave the operator wondering whether it hangs. On a terminal one line is rewritten in
place; otherwise (a log, CI) a line is added at most every ``every`` seconds and only
when the count moved, so logs stay short.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable


def task_counts(tracker: Any) -> tuple[int, int] | None:
    """(completed, total) tasks over the active stages; None when no stage runs."""
    done = total = 0
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:  # finished and forgotten between the two calls
            done += info.numCompletedTasks
            total += info.numTasks
    return (done, total) if total else None


def to_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


class StepProgress:
    """``step`` is the job's echo callback (it prints the step line and restarts the
    clock); used as a context manager it polls ``counts`` (session.task_counter) on a
    daemon thread."""

    def __init__(self, counts: Callable[[], tuple[int, int] | None], write: Callable[[str], None] = to_stderr, *, prefix: str, tty: bool,
                 every: float | None = None) -> None:
        self._counts = counts
        self._write = write
        self._prefix = prefix
        self._tty = tty
        self._every = every if every is not None else (0.5 if tty else 15.0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._last: tuple[int, int] | None = None
        self._on_line = False  # a progress line is on the terminal, to be cleared
        self._thread = threading.Thread(target=self._poll, name="analyze-progress", daemon=True)

    def step(self, text: str) -> None:
        with self._lock:
            self._clear()
            self._write(f"{self._prefix}{text}\n")
            self._started = time.monotonic()
            self._last = None

    def __enter__(self) -> StepProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        if self._on_line:
            self._write("\r\x1b[K")
            self._on_line = False

    def _poll(self) -> None:
        while not self._stop.wait(self._every):
            try:
                counts = self._counts()
            except Exception:  # the session is stopping; progress is optional
                return
            with self._lock:
                if counts is None or (counts == self._last and not self._tty):
                    continue
                self._last = counts
                line = f"{counts[0]}/{counts[1]} tasks, {time.monotonic() - self._started:.0f} s"
                if self._tty:
                    self._write(f"\r{self._prefix}  {line}\x1b[K")
                    self._on_line = True
                else:
                    self._write(f"{self._prefix}  {line}\n")
