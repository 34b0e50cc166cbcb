"""Version 2 capture files back to version 1 captures, inside the Spark job.

A v2 delta can only be read after the files of its chain before it (delta.py), so the
files are first keyed by chain (server and keyframe round), gathered per chain in round
order, and decoded one after the other by ``DeltaDecoder``. What comes out has the
columns the job reads from ``binaryFile`` (path, modificationTime, content), so both of
its passes read a v2 history exactly as a v1 one. A file that cannot be rebuilt becomes
``delta.unreadable_marker``: the job lists it as unreadable, with the reason.

Work splits by chain: a task never holds more than one keyframe interval of a server.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import pyarrow as pa

from .delta import DeltaDecoder, read_header, unreadable_marker
from .schema import CaptureFormatError, check_location, in_round_directory

MTIME = pa.timestamp("us", tz="UTC")
#: The columns of ``binaryFile`` the job reads.
FILES = pa.schema([("path", pa.string()), ("modificationTime", MTIME), ("content", pa.binary())])
#: FILES keyed by chain; ``done``: content is already final (a marker).
KEYED = pa.schema([*FILES, ("chain", pa.string()), ("round", pa.int64()), ("done", pa.bool_())])


def _files_of(batch: pa.RecordBatch) -> tuple[list[str], pa.Array, list[bytes]]:
    return (batch.column("path").to_pylist(), batch.column("modificationTime").cast(MTIME),
            batch.column("content").to_pylist())


def map_keys(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: each v2 file with its chain key (``server`` NUL ``keyframe``) and
    round, read from its header only. A file whose header is unreadable, or that sits in
    another round's directory (a copy there would break its chain), is final at once."""
    for batch in batches:
        paths, mtimes, contents = _files_of(batch)
        chains: list[str] = []
        rounds: list[int] = []
        done: list[bool] = []
        for i, path in enumerate(paths):
            data = contents[i]
            try:
                header = read_header(data)
                if in_round_directory(path):
                    check_location(path, header["round"])
            except CaptureFormatError as exc:
                contents[i] = unreadable_marker(str(exc))
                chains.append(path)
                rounds.append(-1)
                done.append(True)
                continue
            chains.append(f"{header['server']}\0{header['keyframe']}")
            rounds.append(header["round"])
            done.append(False)
        yield pa.RecordBatch.from_arrays(
            [pa.array(paths, pa.string()), mtimes, pa.array(contents, pa.binary()), pa.array(chains, pa.string()),
             pa.array(rounds, pa.int64()), pa.array(done, pa.bool_())], schema=KEYED)


def map_rebuild(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` over KEYED rows sorted by chain then round: the v1 capture of each."""
    decoder = DeltaDecoder()
    for batch in batches:
        paths, mtimes, contents = _files_of(batch)
        done = batch.column("done").to_pylist()
        out: list[Any] = []
        for i, data in enumerate(contents):
            if done[i]:
                out.append(data)
                continue
            try:
                out.append(decoder.decode(data))
            except CaptureFormatError as exc:
                out.append(unreadable_marker(str(exc)))
        yield pa.RecordBatch.from_arrays([pa.array(paths, pa.string()), mtimes, pa.array(out, pa.binary())],
                                         schema=FILES)
