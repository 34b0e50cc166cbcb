"""Where ``analyze`` runs Spark, and how the job's own code gets to Spark's Python workers.

Three places, one job:

* local (``--master local[*]``): the driver JVM is a child of this process. Spark starts
  its Python workers with ``PYSPARK_PYTHON``, or whatever ``python3`` is first on PATH,
  which on most machines cannot import our packages; the workers here run on this
  process's own interpreter unless the user named another;
* a cluster (``--master spark://…``, ``yarn``, ``k8s://…``, or ``spark-submit``): executors
  have their own Python, with pyspark (Spark ships it), pyarrow and a few libraries
  (``EXECUTOR_REQUIREMENTS``), and nothing of ours;
* Spark Connect (``--remote sc://HOST:PORT``): a thin client; the server's Python runs the
  job's functions and has, again, nothing of ours.

In every case the job ships its code the way Spark documents for Python dependencies: a
zip of our packages added to the session (``addPyFile``; ``addArtifacts(pyfile=True)``
over Connect), which Spark puts on every worker's ``sys.path``.

Spark's own output (log4j banners, "SparkUI could not bind", Python worker stderr) goes to
a log file beside the tables unless ``--verbose``: the driver JVM inherits this process's
stderr when it starts, so stderr is pointed at the log file for exactly that moment.
"""

from __future__ import annotations

import atexit
import importlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from .progress import task_counts

#: What an executor's Python needs besides Spark's own pyspark (README, "Spark anywhere";
#: tests/pipeline/test_anywhere.py builds a worker venv from exactly this list).
EXECUTOR_REQUIREMENTS = ("pyarrow>=18", "numpy>=1.24", "msgpack>=1.0", "orjson>=3.8")
#: Our packages the workers import (the zip holds every module of both, at its import name:
#: in a checkout mqnamesrv's folder is nameserver/mqnamesrv, installed it is mqnamesrv).
PACKAGES = ("mqadmin", "mqnamesrv")

#: The master URLs Spark itself accepts (checked before a JVM is started for nothing).
MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|spark://\S+|yarn|k8s://\S+")
#: A Spark Connect endpoint.
REMOTE = re.compile(r"sc://[^/\s:]+(:\d+)?(/;?\S*)?")

#: Capture bytes up to which a local run is "small": a one-off JVM that lives for seconds,
#: tuned for start-up rather than throughput (SMALL_CONF).
SMALL_INPUT = 64 << 20
#: For a small local run, most of the wall time is the JVM warming up (class loading,
#: JIT, code generation) and Spark's per-job overhead, not rows. The serial collector
#: (and the JIT's first tier only, as in every local run of a short input: LOCAL_JVM)
#: leave both cores to the job; without whole-stage code generation no Java source is
#: compiled per stage (and without adaptive execution, off for every local run, there are
#: a third fewer Spark jobs); two shuffle partitions and two file splits per pass are plenty.
#: Measured on 2 cores with 90 files (idle machine, class-data sharing on): 18.5-20.3 s
#: for the whole command, against 35-50 s before.
SMALL_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.files.minPartitionNum": "2",
}

SMALL_JVM = "-XX:+UseSerialGC"
#: A local run of up to FIRST_TIER_INPUT capture bytes: the JIT's first tier (C1) only.
#: The second (C2) compiles the hot code again, optimised, on compiler threads that take
#: the cores from the job, and a local driver's JVM lives for one run: at 1 M route rows
#: on 2 cores they used 10 of the JVM's 23 CPU seconds, and the job took 11-16 s without
#: them against 20-21 s with them (pairs, load ~4); at 4 M, 23-30 s against 25-51 s. A
#: long run earns C2's code back: the JMH fleet over 6 h (568 M route rows, ~91 GiB as
#: ``launch.capture_bytes`` counts) took 108-119 s with C1 only against 94-100 s with C2
#: (its summary step 28-36 s against 15-17 s; two pairs, load ~2.5).
LOCAL_JVM = "-XX:TieredStopAtLevel=1"
FIRST_TIER_INPUT = 4 << 30
#: Set to 0 to keep the driver JVM from using (and writing) a class-data sharing archive.
CDS_VARIABLE = "MQADMIN_SPARK_CDS"

#: Spark's log file in OUT (``_``: Spark skips it when it reads OUT's tables).
LOG_NAME = "_spark.log"


@dataclass(frozen=True)
class Place:
    """Where the job runs: ``master`` (a Spark master URL) or ``remote`` (Spark Connect)."""

    master: str | None = "local[*]"
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    #: Spark's own output goes here unless None (then it stays on stderr).
    log: Path | None = None
    #: The captures' size as ``launch.capture_bytes`` counts it (None: not known), which
    #: tunes a local run (``small``, ``first_tier``).
    input_bytes: int | None = None

    @property
    def small(self) -> bool:
        """A small input (SMALL_INPUT): a local run is tuned for start-up (SMALL_CONF)."""
        return self.input_bytes is not None and self.input_bytes <= SMALL_INPUT

    @property
    def first_tier(self) -> bool:
        """An input short enough (or of unknown size) that a local run's JVM is better off
        without the JIT's second tier (FIRST_TIER_INPUT, LOCAL_JVM)."""
        return self.input_bytes is None or self.input_bytes <= FIRST_TIER_INPUT

    @property
    def local(self) -> bool:
        """A local master (None: spark-submit's choice, which this process cannot see)."""
        return self.remote is None and self.master is not None and self.master.startswith("local")

    def describe(self) -> str:
        return f"--remote {self.remote}" if self.remote else f"--master {self.master or 'local[*]'}"


def parse_conf(items: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` items, as spark-submit takes them; ValueError names the bad one."""
    conf: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{item!r} is not KEY=VALUE")
        conf[key.strip()] = value
    return conf


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM, no SparkContext here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def worker_python(place: Place) -> str | None:
    """The interpreter Spark's Python workers should run, to be put in PYSPARK_PYTHON before
    the session starts (PySpark reads only that variable); None leaves Spark's choice.

    ``--conf spark.pyspark.python`` wins (spark-submit honours it the same way), then the
    user's PYSPARK_PYTHON; a local master gets this very interpreter, which has our
    packages and their dependencies, whatever ``python3`` on PATH is.
    """
    if "spark.pyspark.python" in place.conf:
        return place.conf["spark.pyspark.python"]
    if os.environ.get("PYSPARK_PYTHON"):
        return None
    return sys.executable if place.local else None


def builder(place: Place, app: str = "mqadmin-analyze") -> Any:
    """A SparkSession builder with the settings the job relies on (dynamic partition
    overwrite, UTC, no console progress bar), then ``place.conf`` on top."""
    from pyspark.sql import SparkSession

    b = SparkSession.builder
    if place.remote:
        b = b.remote(place.remote)
    else:
        b = b.appName(app)
        if place.master:
            b = b.master(place.master)
        if place.local:
            # The default 200 shuffle partitions make every small shuffle (there are many)
            # cost 200 outputs per task; on one machine one partition per core, without
            # adaptive execution's extra jobs, is fastest at every size measured (job at 1 M
            # route rows 19.6 s instead of 22.2, at 4 M 40.5 s instead of 44.1, against 4 per
            # core with AQE). Nobody opens the web UI of a one-off command; it costs start-up
            # time and a port.
            b = (b.config("spark.sql.shuffle.partitions", str(max(2, os.cpu_count() or 1)))
                 .config("spark.sql.adaptive.enabled", "false")
                 .config("spark.ui.enabled", "false"))
            if place.small:
                for key, value in SMALL_CONF.items():
                    b = b.config(key, value)
            jvm = " ".join(filter(None, (LOCAL_JVM if place.first_tier else "", SMALL_JVM if place.small else "",
                                         class_archive_options())))
            if jvm:
                b = b.config("spark.driver.extraJavaOptions", jvm)
        b = b.config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "4g")
    b = (b.config("spark.sql.sources.partitionOverwriteMode", "dynamic")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for key, value in place.conf.items():
        b = b.config(key, value)
    return b


def start(place: Place, app: str = "mqadmin-analyze") -> Any:
    """A session at ``place`` with our code shipped to its workers.

    Raises whatever Spark raises when it cannot start (the caller makes one line of it).
    """
    python = worker_python(place)
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    if place.local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no lookup of this host's name
    with _stderr_to(None if place.remote else place.log):
        spark = builder(place, app).getOrCreate()
    if not is_connect(spark):
        spark.sparkContext.setLogLevel("WARN" if place.log is not None else "ERROR")
    ship(spark)
    return spark


@contextmanager
def _stderr_to(path: Path | None) -> Iterator[None]:
    """File descriptor 2 points at ``path`` for the block: a JVM started in it keeps
    writing there (log4j, the JDK's warnings, Python workers' stderr) for its life."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


# ------------------------------------------------------- class-data sharing ----


def class_archive_options(cache: Path | None = None) -> str:
    """JVM options that let a local driver start from a class-data sharing archive of the
    classes Spark loads (JDK 13+ dynamic CDS), halving its start-up (5-6 s to 2.5-3.3 s
    here) and the first step's class loading.

    The first run claims the dump and writes the archive at its JVM's exit (about 190 MB,
    under the user's cache directory, named for this Java, this Spark and this environment)
    under a temporary name; the next run adopts a finished one and starts from it (runs
    meanwhile start without one). A stale or foreign archive is only ignored by the JVM
    (``-Xshare:auto``). Archives of other environments are kept for the ``CDS_KEEP_OTHERS``
    most recently used; the rest are removed, so fresh virtual environments (a CI clone
    each) do not fill the disk. The JVM's own log lines, which it prints on stdout, are
    limited to errors on stderr (Spark's log). ``MQADMIN_SPARK_CDS=0``: none.
    """
    if os.environ.get(CDS_VARIABLE, "1") == "0":
        return ""
    java = java_binary()
    if java is None:
        return ""
    import pyspark

    folder = cache or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mqadmin"
    stat = java.stat()
    key = zlib.crc32(f"{java}|{stat.st_size}|{stat.st_mtime_ns}|{pyspark.__version__}|{pyspark.__file__}".encode())
    final = folder / f"spark-cds-{key:08x}.jsa"
    quiet = "-Xlog:disable -Xlog:all=error:stderr"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _adopt_finished(folder, final)
        prune_class_archives(folder, final)
        if final.exists():
            os.utime(final)  # used now: pruning keeps the most recently used
            return f"-XX:SharedArchiveFile={final} {quiet}"
        if not _claim_dump(final):
            return ""  # another run is writing one: one dump at a time
    except OSError:
        return ""  # no cache directory to be had: start as Spark does
    return f"-XX:ArchiveClassesAtExit={final}.{os.getpid()} {quiet}"


#: Archives of this many other keys (other Javas, Sparks, environments) are kept, the most
#: recently used; each is about 190 MB.
CDS_KEEP_OTHERS = 2
#: A file of the cache untouched this long is finished: a JVM writes its dump in seconds.
CDS_SETTLED_S = 60
#: A claim this old whose dump never came (the JVM was killed, or exited before writing)
#: is abandoned and may be taken again.
CDS_CLAIM_STALE_S = 900
_CDS_FILE = re.compile(r"spark-cds-([0-9a-f]{8})\.jsa(\.(\d+|claim))?")


def java_binary() -> Path | None:
    """The java spark-class runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.access(found, os.X_OK) else None


def _age(path: Path) -> float:
    return time.time() - path.stat().st_mtime


def _adopt_finished(folder: Path, final: Path) -> None:
    """Rename a finished archive dump into place; remove leftovers once one is there.
    An empty dump that has not grown since its claim went stale was abandoned."""
    claim = final.with_name(final.name + ".claim")
    for dump in folder.glob(final.name + ".*"):
        if dump == claim:
            continue
        try:  # another run may adopt or remove it meanwhile
            age = _age(dump)
            if final.exists() and age > CDS_SETTLED_S:
                dump.unlink(missing_ok=True)
            elif not final.exists() and age > CDS_SETTLED_S and dump.stat().st_size > 0:
                os.replace(dump, final)
            elif age > CDS_CLAIM_STALE_S:
                dump.unlink(missing_ok=True)
        except FileNotFoundError:
            continue
    if final.exists() and claim.exists() and _age(claim) > CDS_SETTLED_S:
        claim.unlink(missing_ok=True)


def _claim_dump(final: Path) -> bool:
    """Whether this run may write ``final``'s dump: the claim file is created exclusively,
    so of runs starting together one dumps. A stale claim with no dump being written is
    taken over."""
    claim = final.with_name(final.name + ".claim")
    for _ in range(2):
        try:
            os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return True
        except FileExistsError:
            writing = any(p != claim and _age(p) <= CDS_CLAIM_STALE_S for p in claim.parent.glob(final.name + ".*"))
            if writing or _age(claim) <= CDS_CLAIM_STALE_S:
                return False
            claim.unlink(missing_ok=True)
    return False


def prune_class_archives(folder: Path, keep: Path) -> list[Path]:
    """Remove the archives, dumps and claims of every key but ``keep``'s and the
    ``CDS_KEEP_OTHERS`` most recently used others; files touched in the last minute (a
    run of another environment may be writing them) stay. Returns what was removed."""
    own = _CDS_FILE.fullmatch(keep.name)
    by_key: dict[str, list[Path]] = {}
    for path in folder.iterdir():
        m = _CDS_FILE.fullmatch(path.name)
        if m and (own is None or m.group(1) != own.group(1)):
            by_key.setdefault(m.group(1), []).append(path)
    last_use = {k: max(p.stat().st_mtime for p in paths) for k, paths in by_key.items()}
    removed = []
    for k in sorted(last_use, key=last_use.__getitem__, reverse=True)[CDS_KEEP_OTHERS:]:
        for path in by_key[k]:
            if _age(path) > CDS_SETTLED_S:
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


# ------------------------------------------------------------------ shipping code ----

_archive_lock = threading.Lock()
_archive: Path | None = None


def code_archive() -> Path:
    """A zip of our packages for Spark's Python path, built once per process.

    Packages imported from a zip already (``spark-submit --py-files``) are shipped as that
    zip. The file lives as long as the process: Spark serves it to executors from here.
    """
    global _archive
    with _archive_lock:
        if _archive is not None and _archive.exists():
            return _archive
        import mqadmin

        if not Path(mqadmin.__file__).parent.is_dir():  # imported from an archive: ship that one
            _archive = _containing_file(Path(mqadmin.__file__))
            return _archive
        folder = Path(tempfile.mkdtemp(prefix="mqadmin-job-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "mqadmin-job.zip"
        write_archive(path)
        _archive = path
        return path


def package_folders() -> dict[str, Path]:
    """Where each of PACKAGES is imported from, by import name."""
    return {name: Path(str(importlib.import_module(name).__file__)).resolve().parent for name in PACKAGES}


def write_archive(path: Path) -> Path:
    """Every module of PACKAGES into the zip ``path`` under its import name (nothing compiled)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for package, folder in package_folders().items():
            for file in sorted(folder.rglob("*.py")):
                if "__pycache__" not in file.parts:
                    zf.write(file, f"{package}/{file.relative_to(folder).as_posix()}")
    return path


def _containing_file(path: Path) -> Path:
    for parent in path.parents:
        if parent.is_file():
            return parent
    raise FileNotFoundError(f"no archive holds {path}")


def ship(spark: Any) -> None:
    """Put our code on the Python path of every worker of ``spark``."""
    archive = str(code_archive())
    if is_connect(spark):
        spark.addArtifacts(archive, pyfile=True)
    else:
        spark.sparkContext.addPyFile(archive)


# ------------------------------------------------------- what differs over Connect ----


def cancel_all(spark: Any) -> None:
    """Stop every running Spark job of this session (Ctrl-C)."""
    if is_connect(spark):
        spark.interruptAll()
    else:
        spark.sparkContext.cancelAllJobs()


def task_counter(spark: Any) -> Callable[[], tuple[int, int] | None]:
    """A function giving (completed, total) tasks of the running stages, or None when none
    runs: from the status tracker here, from the progress Connect sends otherwise."""
    if not is_connect(spark):
        tracker = spark.sparkContext.statusTracker()
        return lambda: task_counts(tracker)
    latest: list[tuple[int, int] | None] = [None]

    def handler(stages: Any, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        done_tasks = total = 0
        for stage in stages or ():
            done_tasks += stage.num_completed_tasks
            total += stage.num_tasks
        latest[0] = None if done or not total else (done_tasks, total)

    if hasattr(spark, "registerProgressHandler"):  # Spark 4.0 and later
        spark.registerProgressHandler(handler)
    return lambda: latest[0]


def computed_once(df: Any) -> Any:
    """``df`` computed once for the several reads that follow: a local checkpoint, which
    also cuts the plan; over Connect a cache, since the client cannot build the checkpoint
    command of a deep plan (the Python protobuf runtime parses it with a depth limit of 100)."""
    if is_connect(df.sparkSession):
        from pyspark import StorageLevel

        return df.persist(StorageLevel.MEMORY_AND_DISK)
    return df.localCheckpoint()


def default_parallelism(spark: Any) -> int:
    """Cores the job can count on: the context's figure, or over Connect the configured
    one (the client cannot ask the cluster), else 8."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    value = spark.conf.get("spark.default.parallelism", None)
    return int(value) if value and value.isdigit() else 8


def main(argv: list[str] | None = None) -> int:
    """``python -m mqadmin.pipeline.session FILE.zip``: the archive for ``spark-submit
    --py-files`` (the driver imports the job from it too)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m mqadmin.pipeline.session FILE.zip", file=sys.stderr)
        return 2
    path = write_archive(Path(args[0]))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
