"""session.py's decisions that need no JVM: which Python the workers run, the class-data
sharing archive's life cycle, --conf parsing and the code archive."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

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
