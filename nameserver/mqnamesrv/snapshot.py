"""Route snapshots for warm restarts: the route tables in msgpack, written atomically.

A restarted name server otherwise answers TOPIC_NOT_EXIST for up to one broker register
period (30 s) until every broker has re-registered. Loading a recent snapshot serves
the old routes at once, each broker counted as just registered. The trade-off: a broker
that died while the server was down is served for up to one expiry period (120 s) after
the restart, as if the server had never been down. Off by default, as the Java server has
no such feature.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgpack

from .storage import StorageError, atomic_write

FORMAT = "mqadmin-route-snapshot"
VERSION = 1


def dumps(state: dict[str, Any], written_ms: int) -> bytes:
    return msgpack.packb({"format": FORMAT, "version": VERSION, "written_ms": written_ms, "state": state},
                         use_bin_type=True)


def write(path: str | os.PathLike[str], state: dict[str, Any], written_ms: int) -> None:
    atomic_write(path, dumps(state, written_ms))


def read(path: str | os.PathLike[str]) -> tuple[int, dict[str, Any]] | None:
    """(written_ms, state), or None when there is no snapshot. A file that is not a
    snapshot of this format raises StorageError naming it."""
    target = Path(path)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read route snapshot {target}: {exc.strerror or exc}") from None
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        raise StorageError(f"route snapshot {target} is not msgpack: {exc}") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise StorageError(f"route snapshot {target} is not a {FORMAT} file")
    if obj.get("version") != VERSION:
        raise StorageError(f"route snapshot {target} has version {obj.get('version')}, expected {VERSION}")
    state = obj.get("state")
    if not isinstance(state, dict) or not {"topics", "brokers", "clusters", "live", "filters"} <= set(state):
        raise StorageError(f"route snapshot {target} is incomplete")
    return int(obj["written_ms"]), state
