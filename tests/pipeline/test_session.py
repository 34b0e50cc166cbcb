"""session.py's decisions: which Python the workers run, the class-data sharing archive's
life cycle, --conf parsing and the code archive (no JVM needed), and the options a local
driver's JVM runs with."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from mqadmin.pipeline import session


def test_local_workers_run_this_interpreter_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert session.worker_python(session.Place("local[*]")) == sys.executable
    assert session.worker_python(session.Place("spark://h:7077")) is None  # the cluster's own
    assert session.worker_python(session.Place("yarn", conf={"spark.pyspark.python": "/opt/py"})) == "/opt/py"
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3.11")
    assert session.worker_python(session.Place("local[2]")) is None  # the user's choice stands


def test_class_archive_is_dumped_once_then_adopted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(session.CDS_VARIABLE, raising=False)
    first = session.class_archive_options(tmp_path)
    assert first.startswith("-XX:ArchiveClassesAtExit=") and "-Xlog:disable" in first
    dump = Path(first.split()[0].split("=", 1)[1])
    assert dump.parent == tmp_path and dump.name.endswith(f".jsa.{os.getpid()}")
    dump.write_bytes(b"archive")
    # While a dump may still be being written, others start without one.
    assert session.class_archive_options(tmp_path) == ""
    old = dump.stat().st_mtime - 120
    os.utime(dump, (old, old))
    adopted = session.class_archive_options(tmp_path)
    final = dump.with_name(dump.name.rsplit(".", 1)[0])
    assert adopted.startswith(f"-XX:SharedArchiveFile={final} ")
    assert final.read_bytes() == b"archive" and not dump.exists()
    monkeypatch.setenv(session.CDS_VARIABLE, "0")
    assert session.class_archive_options(tmp_path) == ""


def _aged(path: Path, seconds: float, data: bytes = b"archive") -> Path:
    path.write_bytes(data)
    then = path.stat().st_mtime - seconds
    os.utime(path, (then, then))
    return path


def test_class_archive_claims_are_exclusive_and_go_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(session.CDS_VARIABLE, raising=False)
    assert session.class_archive_options(tmp_path).startswith("-XX:ArchiveClassesAtExit=")
    (claim,) = tmp_path.glob("*.claim")
    assert session.class_archive_options(tmp_path) == ""  # claimed, no dump yet: nobody else dumps
    # The claiming JVM died before writing anything: once the claim is stale, a run takes it over.
    _aged(claim, session.CDS_CLAIM_STALE_S + 5, b"")
    assert session.class_archive_options(tmp_path).startswith("-XX:ArchiveClassesAtExit=")
    assert claim.exists() and session.class_archive_options(tmp_path) == ""
    # An empty dump left by a killed JVM is removed once stale, and does not block a new claim.
    dump = _aged(claim.with_name(claim.name.replace(".claim", ".999999")), session.CDS_CLAIM_STALE_S + 5, b"")
    _aged(claim, session.CDS_CLAIM_STALE_S + 5, b"")
    assert session.class_archive_options(tmp_path).startswith("-XX:ArchiveClassesAtExit=")
    assert not dump.exists()


def test_class_archives_of_other_environments_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(session.CDS_VARIABLE, raising=False)
    # Four other keys, used 1 to 4 hours ago, one with two abandoned dumps; one just written.
    others = {k: _aged(tmp_path / f"spark-cds-{k}.jsa", hours * 3600) for hours, k in
              enumerate(("0000000a", "0000000b", "0000000c", "0000000d"), start=1)}
    dumps = [_aged(tmp_path / f"spark-cds-0000000d.jsa.{pid}", 5 * 3600) for pid in (11, 12)]
    fresh = (tmp_path / "spark-cds-0000000e.jsa.77")
    fresh.write_bytes(b"being written")
    unrelated = _aged(tmp_path / "notes.txt", 9 * 3600)
    first = session.class_archive_options(tmp_path)
    assert first.startswith("-XX:ArchiveClassesAtExit=")
    kept = {p.name for p in tmp_path.iterdir()}
    # e (fresh, and the most recent other key) and a (the next most recent) stay; b, c, d go.
    assert fresh.name in kept and others["0000000a"].name in kept and unrelated.name in kept
    assert not any(p.exists() for p in (others["0000000b"], others["0000000c"], others["0000000d"], *dumps))
    assert Path(first.split()[0].split("=", 1)[1]).parent == tmp_path


def test_conf_items() -> None:
    assert session.parse_conf(["a.b=1", "c= x=y"]) == {"a.b": "1", "c": " x=y"}
    for bad in ("nokey", "=v"):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            session.parse_conf([bad])


def test_code_archive_holds_every_module_of_ours(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    path = session.write_archive(tmp_path / "job.zip")
    names = set(zipfile.ZipFile(path).namelist())
    folders = session.package_folders()
    assert folders == {"mqadmin": root / "mqadmin", "mqnamesrv": root / "nameserver" / "mqnamesrv"}
    for package, folder in folders.items():
        expected = {f"{package}/{p.relative_to(folder).as_posix()}" for p in folder.rglob("*.py")
                    if "__pycache__" not in p.parts}
        assert expected and expected <= names
    assert "mqnamesrv/protocol/frame.py" in names and not any(n.startswith("nameserver/") for n in names)
    assert not any(n.startswith("tests/") or n.endswith(".pyc") for n in names)


def test_a_local_driver_runs_the_jits_first_tier_only(spark: Any) -> None:
    """A local session's JVM (the test session is one) is started without the JIT's
    second tier, whose compiler threads would take the cores from the job."""
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert session.LOCAL_JVM in arguments


def test_a_long_input_keeps_the_jits_second_tier() -> None:
    """Up to FIRST_TIER_INPUT a local driver runs C1 only; past it (a run long enough to
    earn C2's code back) the JVM keeps both tiers. The builder is inspected unstarted."""
    def jvm_options(place: session.Place) -> str:
        return str(session.builder(place)._options.get("spark.driver.extraJavaOptions", ""))

    assert session.LOCAL_JVM in jvm_options(session.Place())
    assert session.LOCAL_JVM not in jvm_options(session.Place(input_bytes=session.FIRST_TIER_INPUT + 1))
    assert session.SMALL_INPUT < session.FIRST_TIER_INPUT
