"""A registration body's identity apart from its DataVersion, without parsing it.

Kept apart from ``bodies`` because only the name server asks it: ``bodies`` also runs on
Spark executors (the pipeline decodes captured routes with it), which need nothing but
what the README lists for them, and xxhash is not among those.
"""

from __future__ import annotations

import xxhash

from .bodies import DataVersion
from .codes import VERSION_V3_0_11
from .fastjson import lenient_loads

_DATA_VERSION_KEY = b'"dataVersion":{'
_DATA_VERSION_FIELDS = frozenset({"counter", "timestamp", "stateVersion"})


def register_body_key(body: bytes, version: int) -> tuple[bytes, DataVersion] | None:
    """A registration body's identity apart from its DataVersion, and that DataVersion,
    without parsing the rest: (xxh3-128 of the bytes around the dataVersion object, the
    DataVersion). xxh3 reads 1.5 MB in ~0.03 ms where sha256 took ~0.9 ms on the event
    loop; the key is only ever compared with keys of the same process, for a broker's
    own bodies, so 128 bits of a non-cryptographic hash do (a broker that forged a
    collision would only keep its own topics from being applied). Two bodies with the same key report the same topics, filter servers
    and mappings, so a name server that applied one can skip the other's 1.5 MB parse.

    The first ``"dataVersion":{`` is taken; the object must be flat and all numbers (so
    no brace can hide in a string). None when it is not found or not like that: the
    caller then parses the body, and should also check that the DataVersion it finds
    there is this one before trusting the key (a body whose first ``"dataVersion"`` is
    not the wrapper's gets no key)."""
    start = body.find(_DATA_VERSION_KEY)
    if start < 0:
        return None
    start += len(_DATA_VERSION_KEY) - 1
    end = body.find(b"}", start) + 1
    if end <= 0:
        return None
    try:
        obj = lenient_loads(body[start:end])
    except (ValueError, UnicodeDecodeError):
        return None
    if type(obj) is not dict or not obj.keys() <= _DATA_VERSION_FIELDS or any(type(v) is not int for v in obj.values()):
        return None
    view = memoryview(body)
    digest = xxhash.xxh3_128(b"%d:%d:" % (start, version >= VERSION_V3_0_11))
    digest.update(view[:start])
    digest.update(view[end:])
    return digest.digest(), DataVersion.from_obj(obj)
