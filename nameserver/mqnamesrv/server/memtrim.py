"""Give freed heap back to the operating system after big requests.

A fleet broker's registration is a ~1.5 MB JSON body that becomes ~10 MB of short-lived
Python objects. Once they are freed, glibc keeps the pages for later, so the process
stays as large as its largest burst. ``malloc_trim`` returns them; the server calls it
from its periodic scan when routes changed since the last call (at most once a scan
interval; a call measured well under a millisecond). Elsewhere (musl, macOS) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable


#: glibc's mallopt parameter M_MMAP_THRESHOLD
_M_MMAP_THRESHOLD = -3
#: Allocations at least this big get pages of their own (``keep_big_blocks_apart``).
MMAP_THRESHOLD = 256 * 1024


def _libc_function(name: str, argtypes: list[type]) -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function = getattr(libc, name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function


_TRIM = _libc_function("malloc_trim", [ctypes.c_size_t])
_MALLOPT = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])


def keep_big_blocks_apart(threshold: int = MMAP_THRESHOLD) -> bool:
    """Have glibc serve every allocation of ``threshold`` bytes or more with pages of its
    own, unmapped when it is freed (``mallopt(M_MMAP_THRESHOLD)``); False where the C
    library cannot. By default glibc raises that threshold to the largest block freed so
    far (up to 32 MB): after a fleet broker's first registration, its 1.5 MB body, read
    buffer and parse land in the heap among small objects that outlive them, and the heap
    never shrinks back (the fleet's 32 registrations: ~25 MB resident growth in process,
    ~10 MB with this). What it costs: a fresh mapping, and its page faults, per big block."""
    if _MALLOPT is None:
        return False
    return _MALLOPT(_M_MMAP_THRESHOLD, threshold) == 1


def release_free_memory() -> bool:
    """Return free heap pages to the OS; False where the C library cannot."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
