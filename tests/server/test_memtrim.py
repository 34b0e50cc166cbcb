"""Freed heap goes back to the OS where the C library allows it."""

from __future__ import annotations

import platform
import sys

import pytest

from mqnamesrv.server.memtrim import release_free_memory


@pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_release_free_memory_on_glibc() -> None:
    garbage = [bytearray(4096) for _ in range(20_000)]  # ~80 MB through malloc, then freed
    del garbage
    assert release_free_memory() is True
