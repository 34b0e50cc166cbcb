"""Clocks for the registry: wall-clock milliseconds, injectable for tests."""

from __future__ import annotations

import time
from typing import Callable

Clock = Callable[[], int]


def system_clock() -> int:
    """Milliseconds since the epoch, like Java's System.currentTimeMillis()."""
    return time.time_ns() // 1_000_000


class ManualClock:
    """A clock tests step by hand: ``clock.advance(121_000)`` instead of sleeping."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = start_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        self.now_ms += ms
        return self.now_ms
