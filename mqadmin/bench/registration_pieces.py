"""The worker thread's part of a fleet broker's registration (``table_changes``), this
tree's against an earlier commit's, in one run (issue #19).

The bodies are ``bench fleet``'s: one broker of RocketMQ's JMH fleet, 10,000 topics of 8
read / 8 write queues (1.5 MB). Four cases: a first registration (no base), a bumped
re-registration with the same topics, one with 1% of the topics renamed in place (what
``bench fleet`` sends), and one with 1% more topics inserted along the table (as a
broker's HashMap order places new topics: every later piece moves). Old and new run
alternately, each case ``--repeat`` times; the figures are medians of CPU time on this
thread (``time.thread_time``, so other processes' load counts only through the caches),
with the wall-clock medians beside them. Both must find the same topics, or the bench stops.

The old code is read from git (``--old``, by default the commit before this rework) and
imported beside the new one; only its own module is old, what it imports is this tree's.

    python -m mqadmin.bench.registration_pieces [--repeat 30] [--old REV]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
import types
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mqadmin.bench.load import topics_body
from mqadmin.bench.runs import _fleet, _one_percent_changed
from mqnamesrv.protocol import table_pieces
from mqnamesrv.server.memtrim import keep_heap_thresholds

#: the last commit before the one-byte split, xxh3 pieces and the layout reader
OLD = "a5564b4"
MODULE = "nameserver/mqnamesrv/protocol/table_pieces.py"
V = 409

Changes = Callable[[bytes, int, array], "table_pieces.TableChanges | None"]


def old_table_changes(rev: str) -> Changes:
    """``table_changes`` as it was at ``rev``, imported as a module of the same package."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(["git", "show", f"{rev}:{MODULE}"], cwd=root, check=True, capture_output=True,
                            text=True).stdout
    module = types.ModuleType("mqnamesrv.protocol._table_pieces_old")
    module.__package__ = "mqnamesrv.protocol"
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, f"{rev}:{MODULE}", "exec"), module.__dict__)
    changes: Changes = module.table_changes
    return changes


def inserted(topics: list[str]) -> list[str]:
    """``topics`` with a new topic after every hundredth."""
    out: list[str] = []
    for i, topic in enumerate(topics):
        out.append(topic)
        if i % 100 == 50:
            out.append(f"{topic}_new")
    return out


@dataclass
class Sample:
    cpu: float
    wall: float
    faults: int


def timed(fn: Changes, body: bytes, base: array) -> tuple[Sample, table_pieces.TableChanges | None]:
    """One call: CPU seconds of this thread, wall seconds, minor page faults of this thread."""
    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    wall, cpu = time.perf_counter(), time.thread_time()
    got = fn(body, V, base)
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    return Sample(cpu, wall, resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - faults), got


def main(repeat: int, rev: str) -> None:
    keep_heap_thresholds()  # glibc as the name server sets it (page faults depend on it)
    old = old_table_changes(rev)
    new = table_pieces.table_changes
    topics = _fleet()[0][3]
    first = topics_body(topics)
    bodies = {"first registration": first, "unchanged, bumped": topics_body(topics, counter=2),
              "1% renamed": topics_body(_one_percent_changed(topics, 100), counter=100),
              "1% inserted": topics_body(inserted(topics), counter=101)}
    versions = {"old": old, "new": new}
    bases: dict[str, array] = {}
    for name, fn in versions.items():
        got = fn(first, V, array("q"))
        assert got is not None, f"{name} declined the fleet body"
        # The base a broker's re-registrations meet: its last one's (which carries the
        # blocks a walk needs), not its first registration's.
        again = fn(topics_body(topics, counter=1), V, got.hashes)
        assert again is not None and not again.changed, name
        bases[name] = again.hashes
    print(f"{len(topics)} topics, {len(first) / 1e6:.2f} MB body; old = {rev}; load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print("medians of CPU ms (wall ms) [minor page faults]")
    print(f"{'case':<20} {'old':>22} {'new':>22} {'new/old':>8}")
    for case, body in bodies.items():
        samples: dict[str, list[Sample]] = {"old": [], "new": []}
        answers: dict[str, table_pieces.TableChanges | None] = {}
        for _ in range(repeat):
            for name, fn in versions.items():
                base = array("q") if case == "first registration" else bases[name]
                sample, answers[name] = timed(fn, body, base)
                samples[name].append(sample)
        got_old, got_new = answers["old"], answers["new"]
        assert got_old is not None and got_new is not None, case
        # The new code may parse a few unchanged topics more (a block whose pieces shifted
        # past where the walk could place them); never fewer, and never another shape.
        assert got_old.changed.items() <= got_new.changed.items() and got_old.data_version == got_new.data_version, \
            case
        cpu = {k: statistics.median(s.cpu for s in v) * 1e3 for k, v in samples.items()}
        cells = {k: f"{cpu[k]:.2f} ({statistics.median(s.wall for s in v) * 1e3:.2f}) "
                    f"[{statistics.median(s.faults for s in v):.0f}]" for k, v in samples.items()}
        print(f"{case:<20} {cells['old']:>22} {cells['new']:>22} {cpu['new'] / cpu['old']:8.2f}"
              f"   {len(got_new.changed)} topics parsed")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--old", default=OLD, help="the commit whose table_pieces.py is the old code")
    args = parser.parse_args()
    main(args.repeat, args.old)
