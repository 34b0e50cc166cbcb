"""Progress of analyze: step lines in order, and task counts read from Spark's own
status tracker while a real job runs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mqadmin.pipeline.progress import StepProgress
from mqadmin.pipeline.session import task_counter

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def test_steps_and_task_counts_of_a_running_job(spark: Any, tmp_path: Any) -> None:
    from mqadmin.pipeline.job import JobOptions, run
    from mqadmin.pipeline.synth import SynthPlan, synthesize

    synthesize(SynthPlan(tmp_path / "captures", servers=2, brokers=4, topics=30, hours=0.5, every=300))
    written: list[str] = []
    counts = task_counter(spark)
    with StepProgress(counts, written.append, prefix="analyze: ", tty=False, every=0.02) as progress:
        run(spark, JobOptions(str(tmp_path / "captures"), str(tmp_path / "out"), report=False), echo=progress.step)
    assert counts() is None  # nothing runs once the job is over
    text = "".join(written)
    steps = [line for line in text.splitlines() if not line.startswith("analyze:   ")]
    assert steps[0] == "analyze: ingest: reading captures, chain by chain"
    assert steps[-1] == "analyze: windows, summary"
    moved = re.findall(r"^analyze:   (\d+)/(\d+) tasks, (\d+) s$", text, re.M)
    assert moved, text
    assert all(0 <= int(done) <= int(total) for done, total, _ in moved)
    # A log gets a line only when the count moved (within a step: a step line restarts).
    for block in re.split(r"^analyze: \S.*$", text, flags=re.M):
        lines = [line for line in block.splitlines() if line.startswith("analyze:   ")]
        assert all(a != b for a, b in zip(lines, lines[1:])), block


def test_terminal_line_is_rewritten_and_cleared(spark: Any) -> None:
    written: list[str] = []
    with StepProgress(task_counter(spark), written.append, prefix="x: ", tty=True,
                      every=0.02) as progress:
        progress.step("counting")
        spark.range(0, 3_000_000, numPartitions=4).selectExpr("sum(id * id)").collect()
        progress.step("done")
    text = "".join(written)
    assert text.startswith("x: counting\n")
    assert re.search(r"\rx:   \d+/4 tasks, \d+ s\x1b\[K", text), repr(text)
    # A step line first clears the progress line, and leaving clears any line drawn
    # after it (Spark's tracker can still list the finished job's last stage): the
    # terminal shows the two steps and nothing else.
    assert "\r\x1b[Kx: done\n" in text
    assert terminal(text) == ["x: counting", "x: done", ""]


def terminal(text: str) -> list[str]:
    """The lines a terminal shows after ``text``: CR returns to column 0, ESC[K erases
    to the end of the line, anything else overwrites."""
    lines, column = [""], 0
    for token in re.findall(r"\x1b\[K|\r|\n|[^\r\n\x1b]+", text):
        if token == "\n":
            lines.append("")
            column = 0
        elif token == "\r":
            column = 0
        elif token == "\x1b[K":
            lines[-1] = lines[-1][:column]
        else:
            lines[-1] = lines[-1][:column] + token + lines[-1][column + len(token):]
            column += len(token)
    return lines
