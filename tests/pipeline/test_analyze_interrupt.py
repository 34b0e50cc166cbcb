"""Ctrl-C during ``mqadmin analyze``: one line and exit 130, not py4j's tracebacks.

The signal goes to the whole process group, as a terminal's Ctrl-C does (PySpark's JVM
ignores it; the command cancels the Spark jobs itself)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mqadmin.pipeline.synth import SynthPlan, synthesize


def test_ctrl_c_stops_analyze_with_one_line(tmp_path: Path) -> None:
    synthesize(SynthPlan(tmp_path / "captures", servers=3, brokers=4, topics=50, hours=2, every=60, seed=3))
    err = tmp_path / "stderr"
    with open(err, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "mqadmin", "analyze", str(tmp_path / "captures"),
                                 "--out", str(tmp_path / "out")], stderr=sink, stdout=subprocess.DEVNULL,
                                start_new_session=True, env=os.environ | {"SPARK_LOCAL_IP": "127.0.0.1"})
        try:
            deadline = time.monotonic() + 240
            while "analyze: routes: fact intervals" not in err.read_text():
                assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
                time.sleep(0.2)
            os.killpg(proc.pid, signal.SIGINT)
            assert proc.wait(timeout=120) == 130
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    text = err.read_text()
    tail = text[text.index("analyze: routes: fact intervals"):]
    assert "analyze: interrupted: cancelling the Spark jobs" in tail
    assert tail.rstrip().endswith("may mix this run and an earlier one: run analyze again")
    assert "Traceback" not in tail and "py4j" not in tail.lower(), tail
