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


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Return free heap pages to the OS; False where the C library cannot."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
