"""The route-capture file: one msgpack map per name server per round (SCHEMA.md).

Pure: bytes in, records out. ``snapshot`` and ``synth-history`` write these files, the
Spark job reads them back (flatten.py reads them faster, without building the view).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import msgpack

from ..diff import ServerView

#: ``schema`` of every capture file; a file with another value is not ours.
SCHEMA = "mqadmin-route-capture"
#: Bumped when a field changes meaning or disappears; readers refuse newer versions.
VERSION = 1
#: File name suffix; anything else under a capture directory is ignored.
SUFFIX = ".msgpack"
#: Name suffix of version 2 files (delta.py). Not ``.msgpack``: the job lists each version
#: with its own glob, so a v1 history is read exactly as before.
SUFFIX_V2 = ".msgpack2"


class CaptureFormatError(ValueError):
    """A file that is not a capture this version can read (wrong schema, newer version,
    truncated or not msgpack)."""


@dataclass(frozen=True, slots=True)
class Capture:
    """One server's answers in one round, as written to disk."""

    captured_ms: int  # when the round started (ms since the epoch, UTC); equal for every server of a round
    server: str
    round: int
    ok: bool
    error: str | None
    view: Mapping[str, Any]  # ServerView.to_obj()

    def to_obj(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "version": VERSION, "captured_ms": self.captured_ms, "server": self.server,
            "round": self.round, "ok": self.ok, "error": self.error, "view": dict(self.view),
        }

    def server_view(self) -> ServerView:
        return ServerView.from_obj(self.view)


def capture_of(view: ServerView, *, captured_ms: int, round: int) -> Capture:
    return Capture(captured_ms, view.addr, round, view.ok, view.error, view.to_obj())


def encode_capture(capture: Capture) -> bytes:
    return msgpack.packb(capture.to_obj(), use_bin_type=True)


def check_header(obj: Mapping[str, Any]) -> None:
    """Raise CaptureFormatError unless ``obj`` carries our schema and a version we read."""
    if obj.get("schema") != SCHEMA:
        raise CaptureFormatError(f"not a route capture (schema {obj.get('schema')!r}, expected {SCHEMA!r})")
    version = obj.get("version")
    if not isinstance(version, int) or not 1 <= version <= VERSION:
        raise CaptureFormatError(f"capture version {version!r} is not supported (this reader knows 1..{VERSION})")
    for key, kind in (("captured_ms", int), ("server", str), ("round", int), ("ok", bool)):
        if not isinstance(obj.get(key), kind):
            raise CaptureFormatError(f"capture field {key!r} is missing or not {kind.__name__}")


def in_round_directory(path: str) -> bool:
    """Whether ``path`` sits directly in a round directory (a name of digits only).
    Anything else under the capture directory (notes, a copy at the top, a sub-directory
    of a round) is not part of the history: it has no round to be compared in, and its
    modification time would become a round of its own."""
    parts = path.rstrip("/").rsplit("/", 2)
    return len(parts) > 1 and parts[-2].isdigit()


def check_location(path: str, round: int) -> None:
    """Raise CaptureFormatError when the file sits in another round's directory: the job
    compares the files of a directory with each other, so a file moved or copied into
    the wrong one would be compared with another round's captures."""
    parts = path.rstrip("/").rsplit("/", 2)
    directory = parts[-2] if len(parts) > 1 else ""
    if directory.isdigit() and int(directory) != round:
        raise CaptureFormatError(f"capture of round {round} in directory {directory!r} (round {int(directory)}); "
                                 f"move it to {round_dir_name(round)}/")


def decode_capture(data: bytes) -> Capture:
    """The capture in ``data``; raises CaptureFormatError."""
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise CaptureFormatError(f"not msgpack: {exc}") from None
    if not isinstance(obj, dict):
        raise CaptureFormatError("not a route capture (top level is not a map)")
    check_header(obj)
    view = obj.get("view")
    if not isinstance(view, dict):
        raise CaptureFormatError("capture field 'view' is missing or not a map")
    return Capture(obj["captured_ms"], obj["server"], obj["round"], obj["ok"], obj.get("error"), view)


def round_dir_name(round: int) -> str:
    return f"{round:06d}"


def file_name(server: str, version: int = 1) -> str:
    """``10.0.0.1:9876`` -> ``10.0.0.1_9876.msgpack`` (``.msgpack2`` for version 2; no ':'
    in names, for Windows and HDFS)."""
    return server.replace(":", "_").replace("/", "_") + (SUFFIX_V2 if version == 2 else SUFFIX)


def is_capture_name(name: str) -> bool:
    """A capture file's name, of either version (not a temporary file)."""
    return name.endswith((SUFFIX, SUFFIX_V2)) and not name.startswith(".")


def server_of_name(name: str) -> str:
    """``10.0.0.1_9876.msgpack2`` -> ``10.0.0.1_9876``."""
    return name.rsplit(".", 1)[0] if is_capture_name(name) else name
