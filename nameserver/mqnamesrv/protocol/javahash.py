"""Java HashMap iteration order, for the few answers where Java's "first entry" shows.

GET_SYSTEM_TOPIC_LIST_FROM_NS reports the address of "the first broker group found",
which on the Java server is the first in HashMap bucket order. Reproducing that order
lets our answer match Java's instead of depending on registration order. The emulation
assumes the map only grew (HashMap never shrinks its table), which is the usual case.
"""

from __future__ import annotations

from typing import Iterable, TypeVar

T = TypeVar("T")


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: 31-polynomial over UTF-16 code units, as a 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def _bucket(key: str, capacity: int) -> int:
    h = java_string_hash(key)
    return (h ^ (h >> 16)) & (capacity - 1)


def hashmap_capacity(size: int) -> int:
    """Table size after ``size`` puts into a default HashMap (16, doubled past 0.75 load)."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def hashmap_order(keys: Iterable[str]) -> list[str]:
    """Keys in the order a Java HashMap that received them in this order iterates them."""
    keys = list(keys)
    capacity = hashmap_capacity(len(keys))
    return sorted(keys, key=lambda k: _bucket(k, capacity))  # stable: chains keep insertion order
