"""Freed heap goes back to the OS where the C library allows it."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from mqnamesrv.server.memtrim import release_free_memory


@pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_release_free_memory_on_glibc() -> None:
    garbage = [bytearray(4096) for _ in range(20_000)]  # ~80 MB through malloc, then freed
    del garbage
    assert release_free_memory() is True


_BIG_BLOCKS = """
import sys
from mqadmin.bench.runs import rss
from mqnamesrv.server.memtrim import keep_heap_thresholds
import os
if sys.argv[1] == "fixed":
    assert keep_heap_thresholds() is True
block = bytearray(16 << 20)  # freed: by default glibc now serves blocks up to 16 MB from the heap
del block
keep = [bytearray(100) for _ in range(1000)]  # small objects, as a server makes between requests
before = rss(os.getpid())
block = bytearray(6 << 20)  # zero-filled: resident
pinned = [bytearray(100) for _ in range(1000)]  # ...and some allocated after it, which outlive it
del block
print(round((rss(os.getpid()) - before) / 2**20, 1))
"""


@pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_big_blocks_freed_go_back_to_the_os_once_the_thresholds_are_fixed() -> None:
    """After a big block was freed, glibc serves the next big ones from its heap, where
    what is allocated after them keeps their pages resident once they are freed;
    ``keep_heap_thresholds`` keeps blocks past 4 MB on pages of their own, unmapped on free."""
    def growth(mode: str) -> float:
        done = subprocess.run([sys.executable, "-c", _BIG_BLOCKS, mode], capture_output=True, text=True, check=True)
        return float(done.stdout)
    assert growth("default") >= 5.0
    assert growth("fixed") < 1.0


_THREAD_HEAPS = """
import sys, threading
from mqnamesrv.server.memtrim import keep_heap_thresholds
if sys.argv[1] == "fixed":
    assert keep_heap_thresholds() is True
def heaps():  # glibc maps a thread's heap at a 64 MiB boundary: its usable part, then a reserve
    spans = [line.split()[0].split("-") for line in open("/proc/self/maps")]
    return sum(1 for lo, hi in spans if int(lo, 16) % (64 << 20) == 0 and int(hi, 16) - int(lo, 16) < (64 << 20)
               and any(int(l2, 16) == int(hi, 16) for l2, _ in spans))
before = heaps()
kept = []
def work():
    kept.extend(bytearray(1000) for _ in range(2000))  # blocks past pymalloc's, from malloc
threads = [threading.Thread(target=work) for _ in range(2)]
for t in threads:
    t.start()
    t.join()
print(heaps() - before)
"""


@pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_worker_threads_allocate_from_the_one_heap_once_the_thresholds_are_fixed() -> None:
    """A thread's first malloc gets it a heap of its own by default (kept for good, and
    its leftovers with it); ``keep_heap_thresholds`` keeps every thread in one."""
    def new_heaps(mode: str) -> int:
        done = subprocess.run([sys.executable, "-c", _THREAD_HEAPS, mode], capture_output=True, text=True, check=True)
        return int(done.stdout)
    assert new_heaps("default") >= 1
    assert new_heaps("fixed") == 0
