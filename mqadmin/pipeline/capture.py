"""Writing capture files, and the ``snapshot`` loop that asks every name server each round.

A file is written to a hidden temporary name in its round directory, fsynced, then
renamed: readers (and Spark, which skips names starting with '.') see a whole file or
none, whatever happens to the writer.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..transport.collect import collect_views
from ..diff import ServerView
from .delta import DEFAULT_KEYFRAME_EVERY, DeltaDecoder, DeltaEncoder
from .schema import (SUFFIX_V2, Capture, decode_capture, encode_capture, file_name, is_capture_name, round_dir_name,
                     server_of_name)
from .snapshot_encoder import SnapshotEncoder

Echo = Callable[[str], None]


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory;
    ``durable`` also fsyncs the file and the directory (synth-history skips that)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None:  # ENOSPC, EIO: say which file could not be written
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself survives a crash
    finally:
        os.close(dir_fd)


def capture_path(out: Path, round: int, server: str, version: int) -> Path:
    """Where the capture of ``server`` in ``round`` goes (schema.file_name)."""
    return out / round_dir_name(round) / file_name(server, version)


def write_capture(out: Path, capture: Capture, encoder: DeltaEncoder | None = None) -> Path:
    """Write one capture, as version 2 through ``encoder`` when one is given."""
    data = encode_capture(capture)
    if encoder is None:
        path = capture_path(out, capture.round, capture.server, 1)
    else:
        data = encoder.encode(data)
        path = capture_path(out, capture.round, capture.server, 2)
    write_atomic(path, data)
    return path


def capture_files(out: Path) -> Iterator[Path]:
    """Every capture file under ``out`` (both versions), sorted by round directory then name."""
    for round_dir in sorted(p for p in out.iterdir() if p.is_dir() and p.name.isdigit()):
        yield from sorted(p for p in round_dir.iterdir() if is_capture_name(p.name))


def read_captures(out: Path) -> Iterator[Capture]:
    """Every capture under ``out`` in round order, version 2 files rebuilt from their
    chains; raises CaptureFormatError at the first file that cannot be read."""
    decoder = DeltaDecoder()
    for path in capture_files(out):
        data = path.read_bytes()
        yield decode_capture(decoder.decode(data) if path.name.endswith(SUFFIX_V2) else data)


def next_round(out: Path) -> int:
    """The first round number after those already in ``out`` (0 for a new directory), so
    that a second ``snapshot`` into the same directory continues the history."""
    if not out.exists():
        return 0
    rounds = [int(p.name) for p in out.iterdir() if p.is_dir() and p.name.isdigit()]
    return max(rounds) + 1 if rounds else 0


def continuation_note(out: Path, number: int, addrs: Sequence[str]) -> str | None:
    """A line for a snapshot that continues a directory whose last round holds other
    servers' captures (another cluster, a synthetic history): analyze will compare all
    rounds as one history, so say it before the first round is written."""
    if number == 0:
        return None
    last = out / round_dir_name(number - 1)
    theirs = sorted(server_of_name(p.name) for p in last.iterdir() if is_capture_name(p.name))
    ours = sorted(server_of_name(file_name(addr)) for addr in addrs)
    if not theirs or theirs == ours:
        return None
    shown = ", ".join(theirs[:5]) + (", ..." if len(theirs) > 5 else "")
    return (f"note: {out} already holds rounds up to {number - 1:06d}, whose last round has captures of other "
            f"servers ({shown}); this run continues it at {number:06d} and analyze will compare them as one history")


# ------------------------------------------------------------------ snapshot ----


@dataclass
class SnapshotStats:
    rounds: int = 0
    files: int = 0
    answered: int = 0  # files of servers that answered (ok)
    failed: int = 0  # files of servers that did not
    interrupted: bool = False
    stopped_by: str = ""  # "Ctrl-C" or "SIGTERM" when a signal ended it
    errors: dict[str, str] = field(default_factory=dict)  # server -> last error


@dataclass(frozen=True)
class SnapshotPlan:
    addrs: Sequence[str]
    out: Path
    every: float = 60.0
    rounds: int | None = None
    duration: float | None = None
    kv_namespaces: Sequence[str] = ("ORDER_TOPIC_CONFIG",)
    timeout: float = 3.0
    version: int = 2  # capture format: 2 (delta.py) or 1 (every route every round)
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY  # v2: rounds between keyframes


async def capture_round(plan: SnapshotPlan, round: int, progress: Callable[[str, int, int], None] | None = None,
                        encoder: SnapshotEncoder | None = None) -> list[ServerView]:
    """Ask every name server once and write one file each, in ``encoder``'s format
    (version 1 without one); ``encoder`` holds each server's previous round, so a
    round costs in proportion to what changed since. Returns the views."""
    encoder = encoder or SnapshotEncoder(version=1)
    encoder.next_round()
    captured_ms = time.time_ns() // 1_000_000
    views = await collect_views(plan.addrs, kv_namespaces=tuple(plan.kv_namespaces), timeout=plan.timeout,
                                progress=progress, route_bodies=encoder.bodies)
    try:
        for view in views:
            data = encoder.encode(view, captured_ms=captured_ms, round=round)
            write_atomic(capture_path(plan.out, round, view.addr, encoder.version), data)
    except OSError:
        encoder.forget()  # the next round starts with keyframes: no delta builds on a file not written
        _remove_if_empty(plan.out / round_dir_name(round))  # no empty round left by a full disk
        raise
    return views


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:  # not empty (some servers' files were written), or already gone
        pass


async def run_snapshot(plan: SnapshotPlan, echo: Echo, *, progress: Callable[[str, int, int], None] | None = None,
                       stop: asyncio.Event | None = None) -> SnapshotStats:
    """Capture rounds every ``plan.every`` seconds until ``plan.rounds`` rounds, ``plan.duration``
    seconds, or ``stop`` is set (Ctrl-C sets it: the round under way is finished and written).

    Round starts are spaced ``every`` seconds apart; a round that takes longer than that
    is followed at once by the next.
    """
    stop = stop or asyncio.Event()
    stats = SnapshotStats()
    loop = asyncio.get_running_loop()
    installed = _install_stop_signals(loop, stop, echo, stats)
    try:
        plan.out.mkdir(parents=True, exist_ok=True)
        number = next_round(plan.out)
        note = continuation_note(plan.out, number, plan.addrs)
        if note:
            echo(note)
        began = loop.time()
        encoder = SnapshotEncoder(plan.version, plan.keyframe_every)
        while not stop.is_set():
            if plan.rounds is not None and stats.rounds >= plan.rounds:
                break
            if plan.duration is not None and loop.time() - began >= plan.duration:
                break
            started = loop.time()
            views = await capture_round(plan, number, progress, encoder)
            stats.rounds += 1
            stats.files += len(views)
            ok = [v for v in views if v.ok]
            stats.answered += len(ok)
            stats.failed += len(views) - len(ok)
            topics = max((len(v.topics) for v in ok), default=0)
            echo(f"round {number}: {len(ok)}/{len(views)} name servers answered, {topics} topics, "
                 f"{loop.time() - started:.1f} s -> {plan.out / round_dir_name(number)}")
            for view in views:
                if not view.ok:
                    stats.errors[view.addr] = str(view.error)
                    error = str(view.error)  # names the server already, as a rule
                    echo(f"round {number}: {error if error.startswith(view.addr) else f'{view.addr}: {error}'}")
                for line in view.failures:
                    echo(f"round {number}: {line}")
            number += 1
            if plan.rounds is not None and stats.rounds >= plan.rounds:
                break
            wait = started + plan.every - loop.time()
            if wait > 0:
                try:
                    async with asyncio.timeout(wait):  # not wait_for: it can lose a cancellation on 3.11
                        await stop.wait()
                except TimeoutError:
                    pass
        stats.interrupted = stop.is_set()
        return stats
    finally:
        if installed:
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)


#: Ctrl-C, and what systemd, Kubernetes and kill send: both end a snapshot the same way.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _install_stop_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event, echo: Echo,
                          stats: SnapshotStats) -> bool:
    """First Ctrl-C (or SIGTERM): finish the round under way, then stop. Second: stop at
    once (files already written are whole; the round under way may lack some servers)."""
    task = asyncio.current_task()

    def on_signal(name: str) -> None:
        if stop.is_set():
            if task is not None:
                task.cancel()
            return
        stop.set()
        stats.stopped_by = name
        echo(f"{'interrupted' if name == 'Ctrl-C' else 'terminated'}: finishing the current round "
             "(Ctrl-C again to stop at once)")

    installed: list[signal.Signals] = []
    try:
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, on_signal, "Ctrl-C" if sig == signal.SIGINT else "SIGTERM")
            installed.append(sig)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        for sig in installed:
            loop.remove_signal_handler(sig)
        return False
    return True
