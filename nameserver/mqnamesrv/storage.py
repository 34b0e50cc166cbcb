"""Durable files: the KV table and the config file, written as the Java server does
(previous content to ``<file>.bak``, new content to a temporary file, rename), plus
fsyncs so a write acknowledged to a client survives a crash of the process or host,
and the locks that keep two servers on one host off each other's files."""

from __future__ import annotations

import fcntl
import glob
import os
import tempfile
from pathlib import Path

from .registry.kv import KVConfigError, KVStore


#: Temporary files are ``<file>.tmp.<random>``, one per write.
TMP_INFIX = ".tmp."


class StorageError(Exception):
    """A file could not be read or written, or is locked by another server; the
    message names the file."""


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
    """Replace ``path`` with ``data``, the previous content kept as ``<file>.bak``.

    Each write goes through a temporary file of its own (``<file>.tmp.<random>``), so
    two writers never truncate or rename each other's half-written file; the lock
    (``PathLock``) keeps a second server off the path altogether."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            _replace_synced(target.with_name(target.name + ".bak"), target.read_bytes())
        _replace_synced(target, data)
        _fsync_dir(target.parent)
    except OSError as exc:
        raise StorageError(f"cannot write {target}: {exc.strerror or exc}") from None


def _replace_synced(target: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=target.name + TMP_INFIX, dir=target.parent)
    try:
        try:  # mkstemp makes it 0600; keep the mode the file had (or the usual 0644)
            mode = target.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        os.fchmod(fd, mode)
        with open(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_stale_temp_files(path: str | os.PathLike[str]) -> list[Path]:
    """Delete temporary files a killed writer left beside ``path`` (``<file>.tmp`` of
    older versions and of Java, ``<file>.tmp.<random>``); returns what was deleted.
    Only safe while holding the path's lock: nobody else may be writing it."""
    target = Path(path)
    try:
        candidates = list(target.parent.glob(glob.escape(target.name) + ".tmp*"))
    except OSError:
        return []
    removed = []
    for leftover in candidates:
        if leftover.name == target.name + ".tmp" or leftover.name.startswith(target.name + TMP_INFIX):
            try:
                if leftover.is_file():
                    leftover.unlink()
                    removed.append(leftover)
            except OSError:
                pass
    return removed


class PathLock:
    """An exclusive lock on a file path for the life of this process (``flock`` on
    ``<file>.lock``, which holds the owner's pid). The kernel drops it when the process
    ends, however it ends, so a crash never leaves a path locked."""

    def __init__(self, path: str | os.PathLike[str], what: str, hint: str) -> None:
        """Take the lock or raise StorageError naming ``what`` (e.g. "KV config"),
        the path, the process holding it and ``hint`` (how to give each its own)."""
        self.path = Path(path)
        #: why the path is not locked (None when it is): a lock file that cannot be
        #: created (a read-only config directory, e.g. a mounted Kubernetes ConfigMap) is
        #: no reason to refuse to start; no server can write there either.
        self.unlocked: str | None = None
        self._fd: int | None = None
        lock_file = self.path.with_name(self.path.name + ".lock")
        try:
            lock_file.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            self.unlocked = f"cannot create {lock_file}: {exc.strerror or exc}"
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.pread(self._fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            self.release()
            raise StorageError(f"{what} {self.path} is in use by another name server (pid {owner}); {hint}") from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


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
