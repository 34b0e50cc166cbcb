"""``analyze`` wherever Spark runs, as a user runs it: the installed ``mqadmin`` script with
a ``python3`` on PATH that cannot run anything, a real standalone cluster (master and
worker JVMs from the pyspark wheel's own ``spark-class``) whose executors run a separate
venv holding only ``session.EXECUTOR_REQUIREMENTS``, the job under ``spark-submit``, and
a real Spark Connect server. Every place must write the same rows in every table as the
in-process local run of the same history (conftest's ``hand_history``).

Everything listens on 127.0.0.1 and every JVM is stopped by PID."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pyspark
import pytest

from mqadmin.pipeline.job import TABLES
from mqadmin.pipeline.session import EXECUTOR_REQUIREMENTS, LOG_NAME

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

BIN = Path(sys.executable).parent
SPARK_HOME = Path(pyspark.__file__ or "").parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def no_python3(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose PATH starts with a ``python3`` (and ``python``) that exits 1,
    as on a machine whose own Python has none of our packages."""
    bad = tmp_path_factory.mktemp("bad-python")
    for name in ("python3", "python"):
        (bad / name).write_text("#!/bin/sh\necho 'not this python' >&2\nexit 1\n")
        (bad / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                                                             "VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PATH=f"{bad}{os.pathsep}{env.get('PATH', '')}", SPARK_LOCAL_IP="127.0.0.1")
    return env


@pytest.fixture(scope="module")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with exactly what docs/route-history.md says an executor needs, and nothing of ours."""
    venv = tmp_path_factory.mktemp("executor") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    *EXECUTOR_REQUIREMENTS], check=True, timeout=600)
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print([m for m in "
                            "('mqadmin', 'mqnamesrv', 'pyspark', 'typer') if u.find_spec(m)])"],
                           capture_output=True, text=True, timeout=60, cwd=venv)
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr
    return python


def _table_rows(out: Path, name: str) -> list[str]:
    import pyarrow.parquet as pq

    table = pq.read_table(out / name, partitioning="hive")
    rows = [repr(sorted((k, str(v)) for k, v in row.items())) for row in table.to_pylist()]
    return sorted(rows)


def _assert_same_tables(out: Path, reference: Path) -> None:
    for name in TABLES:
        mine, expected = _table_rows(out, name), _table_rows(reference, name)
        assert mine == expected, f"table {name}: {len(mine)} rows here, {len(expected)} in local mode"
    assert any(_table_rows(reference, "windows")), "the reference history must have windows to compare"


def _analyze(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "mqadmin"), "analyze", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _captures(hand: dict[str, Any]) -> Path:
    return Path(hand["out"]).parent / "captures"


def test_installed_script_runs_local_mode_when_python3_on_path_cannot(
        hand_history: dict[str, Any], no_python3: dict[str, str], tmp_path: Path) -> None:
    assert subprocess.run(["python3", "-c", "pass"], env=no_python3).returncode == 1
    done = _analyze([str(_captures(hand_history)), "--out", str(tmp_path / "out")], no_python3)
    assert done.returncode == 0, done.stderr
    _assert_same_tables(tmp_path / "out", hand_history["out"])
    # Our step lines on stderr; Spark's own lines in the log file beside the tables.
    lines = done.stderr.splitlines()
    assert lines[0] == "analyze: starting Spark (--master local[*])"
    assert all(line.startswith("analyze: ") for line in lines), done.stderr
    log = (tmp_path / "out" / LOG_NAME).read_text()
    assert "log4j" in log or "WARN" in log, log[:500]


def test_verbose_keeps_sparks_lines_on_stderr(hand_history: dict[str, Any], no_python3: dict[str, str],
                                              tmp_path: Path) -> None:
    done = _analyze([str(_captures(hand_history)), "--out", str(tmp_path / "out"), "--no-report", "-v",
                     "--conf", "spark.ui.enabled=false"], no_python3)
    assert done.returncode == 0, done.stderr
    assert any(not line.startswith("analyze: ") for line in done.stderr.splitlines()), done.stderr
    assert not (tmp_path / "out" / LOG_NAME).exists()


class Daemon:
    """A JVM started by the test, its output in a file, stopped by PID."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.log = name, log
        self._sink = open(log, "w")
        self.proc = subprocess.Popen(args, env=env, stdout=self._sink, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def wait_for(self, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{self.name} did not say {text!r}:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        self._sink.close()


def _spark_env(base: dict[str, str], **extra: str) -> dict[str, str]:
    return base | {"SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"} | extra


@pytest.fixture(scope="module")
def cluster(no_python3: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone cluster on 127.0.0.1: one master, one worker with 2 cores."""
    work = tmp_path_factory.mktemp("cluster")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    env = _spark_env(no_python3, SPARK_WORKER_DIR=str(work / "worker"))
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    daemons = [Daemon("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                 "--port", str(port), "--webui-port", str(_free_port())], env, work / "master.log")]
    try:
        daemons[0].wait_for("I have been elected leader")
        daemons.append(Daemon("worker", [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host",
                                         "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port",
                                         str(_free_port()), "--work-dir", str(work / "worker")],
                              env, work / "worker.log"))
        daemons[1].wait_for("Successfully registered with master")
        yield url
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


def test_standalone_cluster_whose_executors_have_nothing_of_ours(
        hand_history: dict[str, Any], cluster: str, executor_python: Path, no_python3: dict[str, str],
        tmp_path: Path) -> None:
    done = _analyze([str(_captures(hand_history)), "--out", str(tmp_path / "out"), "--master", cluster,
                     "--conf", f"spark.pyspark.python={executor_python}", "--conf", "spark.executor.memory=1g"],
                    no_python3)
    assert done.returncode == 0, done.stderr + (tmp_path / "out" / LOG_NAME).read_text()[-3000:]
    _assert_same_tables(tmp_path / "out", hand_history["out"])


def test_spark_submit_with_the_shipped_archive(hand_history: dict[str, Any], cluster: str, executor_python: Path,
                                               no_python3: dict[str, str], tmp_path: Path) -> None:
    import mqadmin.pipeline.job as job

    archive = tmp_path / "mqadmin-job.zip"
    made = subprocess.run([sys.executable, "-m", "mqadmin.pipeline.session", str(archive)], capture_output=True,
                          text=True, timeout=60)
    assert made.returncode == 0 and archive.exists(), made.stderr
    done = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster, "--py-files", str(archive),
         "--conf", f"spark.pyspark.python={executor_python}", "--conf", f"spark.pyspark.driver.python={sys.executable}",
         "--conf", "spark.executor.memory=1g", job.__file__, str(_captures(hand_history)),
         "--out", str(tmp_path / "out")],
        env=_spark_env(no_python3), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-5000:]
    _assert_same_tables(tmp_path / "out", hand_history["out"])


@pytest.fixture(scope="module")
def connect_server(no_python3: dict[str, str], executor_python: Path,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server on 127.0.0.1 whose Python workers run the executor venv."""
    work = tmp_path_factory.mktemp("connect")
    port = _free_port()
    server = Daemon("connect server", [
        str(SPARK_HOME / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master", "local[2]", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=4", "spark-internal"],
        _spark_env(no_python3, PYSPARK_PYTHON=str(executor_python)), work / "connect.log")
    try:
        server.wait_for("Spark Connect server started")
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.stop()


def test_spark_connect(hand_history: dict[str, Any], connect_server: str, no_python3: dict[str, str],
                       tmp_path: Path) -> None:
    done = _analyze([str(_captures(hand_history)), "--out", str(tmp_path / "out"), "--remote", connect_server],
                    no_python3)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == f"analyze: starting Spark (--remote {connect_server})"
    _assert_same_tables(tmp_path / "out", hand_history["out"])
    assert (tmp_path / "out" / "report.html").stat().st_size > 10_000


def test_a_second_connect_run_replaces_the_dates_it_covers(hand_history: dict[str, Any], connect_server: str,
                                                           no_python3: dict[str, str], tmp_path: Path) -> None:
    """Over Connect there is no JVM on this side: the dates a run covers are emptied by SQL.
    A stale partition planted in OUT must be gone after the run, as in local mode."""
    out = tmp_path / "out"
    shutil.copytree(hand_history["out"], out)
    (out / "_captures.txt").write_text(f"{_captures(hand_history).resolve()}\n")
    stale = next((out / "windows").glob("date=*"))
    shutil.copy(next(stale.glob("*.parquet")), stale / "part-stale.parquet")
    done = _analyze([str(_captures(hand_history)), "--out", str(out), "--remote", connect_server, "--no-report"],
                    no_python3)
    assert done.returncode == 0, done.stderr
    _assert_same_tables(out, hand_history["out"])


def test_usage_errors_name_the_option(no_python3: dict[str, str], tmp_path: Path) -> None:
    for args, option in ((["--master", "spark://a:1", "--remote", "sc://a:1"], "--remote"),
                         (["--remote", "http://a:1"], "--remote"), (["--conf", "nokey"], "--conf")):
        done = _analyze([str(tmp_path), "--out", str(tmp_path / "out"), *args], no_python3, timeout=60)
        assert done.returncode == 2, done.stderr
        assert option in done.stderr


def test_docs_list_what_an_executor_needs() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "route-history.md").read_text()
    section = page[page.index("## Spark anywhere"):]
    section = section.split("\n## ", 1)[0]
    for requirement in EXECUTOR_REQUIREMENTS:
        assert f"`{requirement}`" in section, requirement


def test_name_server_install_has_no_spark_and_analyze_says_what_to_install(tmp_path: Path) -> None:
    """The README's first command (``pip install -e .``) brings no Spark; analyze then
    says in one line what to install."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    root = Path(__file__).resolve().parents[2]
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "-e", str(root)],
                   check=True, timeout=600, capture_output=True)
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import importlib.util as u; print([m for m in "
                            "('pyspark', 'pyarrow', 'pandas', 'plotly') if u.find_spec(m)])"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr
    done = subprocess.run([str(venv / "bin" / "mqadmin"), "analyze", str(tmp_path), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == ("mqadmin: error: analyze needs pyspark, pyarrow, pandas, numpy, plotly: "
                           "pip install 'mqadmin[pipeline]'\n")
    helped = subprocess.run([str(venv / "bin" / "mqadmin"), "namesrv", "start", "--help"], capture_output=True,
                            text=True, timeout=60)
    assert helped.returncode == 0 and "--route-snapshot" in helped.stdout


def test_no_java_is_one_line_before_spark(hand_history: dict[str, Any], no_python3: dict[str, str],
                                          tmp_path: Path) -> None:
    done = _analyze([str(_captures(hand_history)), "--out", str(tmp_path / "out")],
                    no_python3 | {"JAVA_HOME": str(tmp_path / "no-jdk")}, timeout=60)
    assert done.returncode == 1
    assert done.stderr == f"mqadmin: error: analyze runs Spark, which needs Java 17: JAVA_HOME={tmp_path / 'no-jdk'} " \
                          "has no bin/java\n"
