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


#: glibc's mallopt parameters M_TRIM_THRESHOLD, M_MMAP_THRESHOLD and M_ARENA_MAX
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
#: Blocks at least this big get pages of their own; free space past this at the top of
#: the heap goes back to the OS (``keep_heap_thresholds``).
HEAP_THRESHOLD = 4 * 1024 * 1024


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


def keep_heap_thresholds(threshold: int = HEAP_THRESHOLD) -> bool:
    """Fix glibc's mmap and trim thresholds at ``threshold`` (``mallopt``); False where the
    C library cannot. By default glibc raises both to the largest block freed so far (the
    mmap one up to 32 MB, the trim one to twice that): after a fleet broker's first
    registration, its 1.5 MB body, buffers and parse stay in a heap that keeps its free
    space, among small objects that outlive them, and the process only grows (the fleet's
    32 registrations in process: ~24 MB resident growth; ~13 MB with fixed thresholds).
    At 4 MB a fleet body still comes from the heap, not from a fresh mapping whose page
    faults cost ~0.5 ms a body on this VM (a 256 KiB threshold: ~10 MB, but ~2 ms more for
    a 1%-changed re-registration).

    It also keeps every thread in one heap (``M_ARENA_MAX`` 1): the worker thread that
    parses bodies otherwise gets a heap of its own, where the parse's big blocks and the
    hash arrays that outlive it hold ~1 MB more of the fleet's growth (8.2 -> 7.5 MB). The
    threads take turns under the GIL anyway, so they hardly ever wait for the heap's lock."""
    if _MALLOPT is None:
        return False
    return _MALLOPT(_M_MMAP_THRESHOLD, threshold) == 1 and _MALLOPT(_M_TRIM_THRESHOLD, threshold) == 1 \
        and _MALLOPT(_M_ARENA_MAX, 1) == 1


def release_free_memory() -> bool:
    """Return free heap pages to the OS; False where the C library cannot."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
