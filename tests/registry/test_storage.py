"""Durable files: atomic_write (.bak, tmp + rename) and load_kv (spec 7.3)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mqnamesrv.registry.kv import KVStore
from mqnamesrv.storage import PathLock, StorageError, atomic_write, load_kv

JAVA_KV = b'{"configTable":{"ORDER_TOPIC_CONFIG":{"order_topic":"broker-a:4;broker-b:4"}}}'


def test_first_write_creates_parent_directories_and_no_backup(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "kvConfig.json"
    atomic_write(path, b"one")
    assert path.read_bytes() == b"one"
    assert sorted(p.name for p in path.parent.iterdir()) == ["kvConfig.json"]


def test_previous_content_goes_to_bak_and_no_tmp_is_left(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    atomic_write(path, b"one")
    atomic_write(path, b"two")
    assert path.read_bytes() == b"two"
    assert (tmp_path / "kvConfig.json.bak").read_bytes() == b"one"
    atomic_write(path, b"three")
    assert (tmp_path / "kvConfig.json.bak").read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kvConfig.json", "kvConfig.json.bak"]


def test_write_accepts_a_string_path(tmp_path: Path) -> None:
    atomic_write(str(tmp_path / "x.properties"), b"k=v\n")
    assert (tmp_path / "x.properties").read_bytes() == b"k=v\n"


def test_write_failure_names_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")
    target = blocker / "kvConfig.json"
    with pytest.raises(StorageError) as info:
        atomic_write(target, b"x")
    assert str(info.value).startswith(f"cannot write {target}: ")


def test_load_missing_kv_file_is_empty(tmp_path: Path) -> None:
    kv = load_kv(tmp_path / "nope" / "kvConfig.json")
    assert kv.table == {}


@pytest.mark.parametrize("content", [b"", b"  \n"], ids=["empty", "blank"])
def test_load_empty_kv_file_is_empty(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_bytes(content)
    assert load_kv(path).table == {}


def test_load_java_kv_file(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_bytes(JAVA_KV)
    assert load_kv(path).table == {"ORDER_TOPIC_CONFIG": {"order_topic": "broker-a:4;broker-b:4"}}


def test_kv_round_trip_through_the_file(tmp_path: Path) -> None:
    kv = KVStore()
    kv.put("ORDER_TOPIC_CONFIG", "order_topic", "broker-a:4;broker-b:4")
    path = tmp_path / "kvConfig.json"
    atomic_write(path, kv.dumps())
    assert path.read_bytes() == JAVA_KV
    assert load_kv(path).table == kv.table


@pytest.mark.parametrize("content", [b"{not json", b"[1,2]", b"\xff\xfe"], ids=["not-json", "array", "not-utf8"])
def test_corrupt_kv_file_is_an_error_naming_the_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_bytes(content)
    with pytest.raises(StorageError) as info:
        load_kv(path)
    message = str(info.value)
    assert message.startswith(f"KV config {path} is corrupt (")
    assert message.endswith("; fix or move it away")  # no .bak beside it: none is named
    assert path.read_bytes() == content  # never replaced behind the operator's back


def test_corrupt_kv_file_names_the_backup_when_there_is_one(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    atomic_write(path, JAVA_KV)
    atomic_write(path, b"{not json")  # the previous, good version goes to .bak
    with pytest.raises(StorageError) as info:
        load_kv(path)
    assert str(info.value).endswith(f"; fix or move it away; {path}.bak holds the previous version")
    assert load_kv(tmp_path / "kvConfig.json.bak").table  # and it does


def test_unreadable_kv_path_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as info:
        load_kv(tmp_path)
    assert str(info.value).startswith(f"cannot read KV config {tmp_path}: ")


def test_path_lock_excludes_a_second_holder_and_names_the_first(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    first = PathLock(path, "KV config", "use another")
    with pytest.raises(StorageError) as info:
        PathLock(path, "KV config", "use another")
    assert str(info.value) == f"KV config {path} is in use by another name server (pid {os.getpid()}); use another"
    first.release()
    PathLock(path, "KV config", "use another").release()


def test_path_that_cannot_hold_a_lock_file_is_used_unlocked(tmp_path: Path) -> None:
    """A read-only config directory (a mounted ConfigMap) must not stop the start."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")
    lock = PathLock(blocker / "namesrv.properties", "config file", "use another")
    assert lock.unlocked is not None and "not-a-dir" in lock.unlocked
    lock.release()
