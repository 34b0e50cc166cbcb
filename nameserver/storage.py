"""Durable files: the KV table and the config file, written as the Java server does
(previous content to ``<file>.bak``, new content to ``<file>.tmp``, rename), plus
fsyncs so a write acknowledged to a client survives a crash of the process or host."""

from __future__ import annotations

import os
from pathlib import Path

from .registry.kv import KVConfigError, KVStore


class StorageError(Exception):
    """A file could not be read or written; the message names the file."""


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            previous = target.read_bytes()
            _write_synced(target.with_name(target.name + ".bak"), previous)
        tmp = target.with_name(target.name + ".tmp")
        _write_synced(tmp, data)
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except OSError as exc:
        raise StorageError(f"cannot write {target}: {exc.strerror or exc}") from None


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def load_kv(path: str | os.PathLike[str]) -> KVStore:
    """Load the KV file; a missing file is an empty table. A corrupt file is an error,
    never silently replaced: the operator decides (the ``.bak`` beside it may help)."""
    target = Path(path)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        return KVStore()
    except OSError as exc:
        raise StorageError(f"cannot read KV config {target}: {exc.strerror or exc}") from None
    if not data.strip():
        return KVStore()
    try:
        return KVStore.loads(data)
    except KVConfigError as exc:
        backup = target.with_name(target.name + ".bak")
        hint = f"; {backup} holds the previous version" if backup.is_file() else ""
        raise StorageError(f"KV config {target} is corrupt ({exc}); fix or move it away{hint}") from None
