"""TopicTable: topic name -> queue map, packed so that a topic costs tens of bytes.

A Python ``dict[str, ...]`` costs ~120 bytes per topic before any value (a str object
of ~64 bytes and a dict slot of ~50), three times what the same table takes as
msgpack. Fleets register 10^5 topics whose values are a handful of shared queue maps,
so the names are the registry's memory. Here they live in one UTF-8 buffer with an
offset, a hash and a value slot each, and an open-addressing index over them.

Behaves like a dict where the registry uses one: insertion order, a re-added topic
goes to the end, values are replaced in place. A lookup costs about half a microsecond
instead of a dict's 0.07: a tenth of a route query, and most of a re-registration's
per-topic loop, which is the price of the memory.
"""

from __future__ import annotations

from array import array
from collections import deque
from itertools import compress, islice, repeat
from operator import is_, is_not, itemgetter, ne, or_
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

V = TypeVar("V")
A = TypeVar("A")

_EMPTY = -1
_MIN_INDEX = 8
#: The index grows (to twice the size) from this load on, a few entries per topic added
#: (``_GROW_STEP``): the whole re-index at once held the loop ~10 ms at 4 * 10^4 topics and
#: ~135 ms at 4 * 10^5. Entries added meanwhile go to the index in use, whose load then
#: peaks near 0.69 as the new one is done (``_GROW_AT`` * 8/7).
_GROW_AT = (3, 5)
_GROW_STEP = 8
#: Past this load of the index in use, a growth under way is finished at once (a safety
#: net: the steps finish it before).
_GROW_LIMIT = (4, 5)
#: Deleted entries (a share of all) past which a growth compacts instead, at once, as a
#: compaction renumbers every entry.
_DEAD_SHARE = 8
#: Per-entry readers step a run of equal values at a time while fewer than one entry in
#: this many starts a run (``TopicTable._runs``); past that, entry by entry in C loops.
_RUN_SHARE = 16
#: no value or argument seen yet (update_each's one-entry memo)
_NO_VALUE = object()


class TopicTable(Generic[V]):
    """A str -> V mapping (V not None) with the dict methods the registry uses. Names
    are kept with ``surrogatepass``, so any str a header decoder produced fits."""

    __slots__ = ("_names", "_starts", "_hashes", "_values", "_index", "_mask", "_live", "_layout", "_slot",
                 "_journals", "_numbering", "_growing")

    def __init__(self) -> None:
        self._names = bytearray()          # every name ever added, UTF-8, back to back
        self._starts = array("I", [0])     # entry i's name is _names[_starts[i]:_starts[i + 1]]
        self._hashes = array("q")          # hash(name) of entry i, kept to re-index without decoding
        self._values: list[V | None] = []  # None: deleted
        self._index = array("i", [_EMPTY]) * _MIN_INDEX
        self._mask = _MIN_INDEX - 1
        self._live = 0
        self._layout = 0  # moves when entries are appended or renumbered (iteration guard)
        self._slot = _prober(self._index, self._mask, self._hashes, self._starts, self._names)
        #: see watch(): each maps a topic written since to its value then (None: deleted)
        self._journals: list[dict[str, None]] = []
        self._numbering = object()
        #: the next index while it is built (``_grow``): [index, mask, entries indexed]
        self._growing: list[Any] | None = None

    def copy(self) -> TopicTable[V]:
        """An independent table with the same entries (values shared, not copied): a
        few array copies, so a 10^5-topic table copies in about a millisecond. Its
        journals are not copied. The copy takes over this table's ``numbering`` and this
        table gets a new one: the two may append different topics from now on."""
        other: TopicTable[V] = TopicTable.__new__(TopicTable)
        other._names, other._starts, other._hashes = bytearray(self._names), array("I", self._starts), \
            array("q", self._hashes)
        other._values, other._index, other._mask = list(self._values), array("i", self._index), self._mask
        other._live, other._layout, other._journals = self._live, 0, []
        other._numbering, self._numbering = self._numbering, object()
        growing = self._growing
        other._growing = None if growing is None else [array("i", growing[0]), growing[1], growing[2]]
        other._slot = _prober(other._index, other._mask, other._hashes, other._starts, other._names)
        return other

    def watch(self) -> dict[str, None]:
        """Start recording writes: the returned journal holds each topic written from now
        on (its keys, in the order topics were first written; a dict as an ordered set),
        until ``unwatch``. This is how a copy built meanwhile learns what changed here;
        a topic's latest value is the watched table's own (``get``), so none is kept."""
        journal: dict[str, None] = {}
        self._journals.append(journal)
        return journal

    def unwatch(self, journal: dict[str, None]) -> None:
        self._journals = [j for j in self._journals if j is not journal]

    def renew(self, journal: dict[str, None]) -> dict[str, None]:
        """A new, empty journal recording in ``journal``'s place from now on: its holder
        keeps what ``journal`` recorded without a copy (a broker's first registration
        writes 10^4 topics: ~0.5 ms to copy them into a set)."""
        fresh: dict[str, None] = {}
        self._journals = [fresh if j is journal else j for j in self._journals]
        return fresh

    def watching(self, journal: dict[str, None]) -> bool:
        return any(j is journal for j in self._journals)

    def journals(self) -> list[dict[str, None]]:
        """The journals recording this table's writes."""
        return list(self._journals)

    def adopt(self, journal: dict[str, None]) -> None:
        """Record into ``journal`` from now on (a table replacing the one it watched)."""
        self._journals.append(journal)

    def _record(self, topic: str) -> None:
        for journal in self._journals:
            journal[topic] = None

    # ---------------------------------------------------------------- lookup ----

    def get(self, topic: str, default: V | None = None) -> V | None:
        e = self._slot(topic.encode("utf-8", "surrogatepass"), hash(topic))[0]
        if e < 0:
            return default
        value = self._values[e]
        return default if value is None else value

    def __getitem__(self, topic: str) -> V:
        value = self.get(topic)
        if value is None:
            raise KeyError(topic)
        return value

    def __contains__(self, topic: object) -> bool:
        return isinstance(topic, str) and self.get(topic) is not None

    def __len__(self) -> int:
        return self._live

    # ---------------------------------------------------------------- writes ----

    def __setitem__(self, topic: str, value: V) -> None:
        if value is None:
            raise ValueError("TopicTable values cannot be None")
        key, h = topic.encode("utf-8", "surrogatepass"), hash(topic)
        e, slot = self._slot(key, h)
        if self._journals:
            self._record(topic)
        if e >= 0 and self._values[e] is not None:
            self._values[e] = value  # in place: order kept, as a dict does
            return
        # New, or re-added after a delete: a new entry at the end, as a dict does. A
        # deleted entry stays in the buffer (and in the index, so probing goes on past
        # it) until the next compaction.
        new = len(self._values)
        self._names += key
        self._starts.append(len(self._names))
        self._hashes.append(h)
        self._values.append(value)
        self._live += 1
        self._index[slot] = new  # for a re-added name: its slot now leads to the live entry
        self._layout += 1
        if len(self._values) * _GROW_AT[1] >= len(self._index) * _GROW_AT[0]:
            self._grow()

    def __delitem__(self, topic: str) -> None:
        if self.pop(topic, None) is None:
            raise KeyError(topic)

    def pop(self, topic: str, default: V | None = None) -> V | None:
        e = self._slot(topic.encode("utf-8", "surrogatepass"), hash(topic))[0]
        if e < 0 or self._values[e] is None:
            return default
        value = self._values[e]
        self._values[e] = None
        self._live -= 1
        if self._journals:
            self._record(topic)
        if self._live * 2 < len(self._values) - _MIN_INDEX:
            self._rebuild()
        return value

    @property
    def numbering(self) -> object:
        """A token for which entry holds which topic: it stays this table's while entries
        are only appended (no compaction renumbered them, no copy took it over), so entry
        numbers noted under it (``update_each``'s ``entries``) still name the same topics
        wherever it is this table's (``update_entries``)."""
        return self._numbering

    def update_each(self, pairs: Iterable[tuple[str, A]], change: Callable[[V | None, A], V],
                    entries: array | None = None) -> int:
        """For each (topic, arg): value = change(current value or None, arg), stored
        unless it is the current value itself; returns how many topics changed. One
        lookup per topic: this is a broker re-registering 10^4 topics. ``change`` must
        answer the same for the same value object and an equal arg: a topic whose
        current value is the one before's and whose arg equals that one's gets its
        answer without a call (fleet topics share a handful of values and come in runs).
        ``entries``, if given, gets each topic's entry number appended, in order."""
        changed = 0
        # ``_prober``'s loop inlined: the call was a third of a topic's cost.
        values, index, mask, hashes, starts, names = \
            self._values, self._index, self._mask, self._hashes, self._starts, self._names
        last_old: object = _NO_VALUE
        last_arg: object = _NO_VALUE
        last_new: Any = None
        added = 0  # new entries not yet counted in _live
        try:
            for topic, arg in pairs:
                key, h = topic.encode("utf-8", "surrogatepass"), hash(topic)
                i = h & mask
                e = index[i]
                while e != _EMPTY:
                    if hashes[e] == h and starts[e + 1] - starts[e] == len(key) and names.startswith(key, starts[e]):
                        break
                    i = (i + 1) & mask
                    e = index[i]
                old = None if e == _EMPTY else values[e]
                if old is last_old and (arg is last_arg or arg == last_arg):
                    new = last_new  # consecutive topics mostly share their value and argument
                else:
                    new = last_new = change(old, arg)
                    last_old, last_arg = old, arg
                if new is not old:
                    changed += 1
                    if self._journals:
                        self._record(topic)
                    if old is not None:
                        values[e] = new
                    else:
                        # Absent, or deleted (its entry stays until a compaction): a new entry at
                        # the end, indexed at the slot the probe stopped on, as ``__setitem__``
                        # does; inlined, a broker's first registration of 10^4 new topics
                        # encodes, hashes and probes each name once, not twice.
                        e = len(values)
                        names += key
                        starts.append(len(names))
                        hashes.append(h)
                        values.append(new)
                        index[i] = e
                        added += 1
                        if len(values) * _GROW_AT[1] >= len(index) * _GROW_AT[0]:
                            self._live, added = self._live + added, 0
                            if self._grow():  # swapped in a bigger index, or compacted (renumbering)
                                values, index, mask, hashes, starts, names = \
                                    self._values, self._index, self._mask, self._hashes, self._starts, self._names
                                e = len(values) - 1
                if entries is not None:
                    entries.append(e)  # -1: absent, and left so
        finally:  # counted however the loop ends
            if added:
                self._live += added
                self._layout += 1
        return changed

    def update_entries(self, entries: array, pairs: Iterable[tuple[str, A]],
                       change: Callable[[V | None, A], V]) -> int:
        """``update_each`` for topics whose entry numbers are known: ``entries[i]`` is
        the entry of the i-th pair's topic, noted under this table's ``numbering`` (the
        caller vouches that the topics are the ones noted then, in the same order, and
        that none was absent: no -1). No
        name is encoded, hashed or probed for: a fleet broker joining a cluster whose
        topics another broker registered. Where a journal records, or a topic was
        deleted since (its entry empty, or never added), every topic goes through
        ``update_each``."""
        pairs = list(pairs)
        if not self._journals and len(entries) == len(pairs):
            olds = list(map(self._values.__getitem__, entries))
            if None not in olds:
                return self._update_runs(entries, olds, list(map(itemgetter(1), pairs)), change)
        # A journal records, or a topic was deleted since: each looked up (rare).
        return self.update_each(pairs, change)

    def _update_runs(self, entries: array, olds: list[Any], args: list[Any], change: Callable[[V | None, A], V]) -> int:
        """``update_entries`` where every topic is present and no journal records: one
        ``change`` per run of topics with the same value and an equal arg, and each run's
        new value stored by a C loop (a fleet's topics are a few runs of one transition)."""
        n = len(olds)
        if not n:
            return 0
        if all(map(is_, olds, repeat(olds[0]))) and args.count(args[0]) == n:  # a C pass each
            cuts = [0, n]
        else:
            cuts = [0, *compress(range(1, n), map(or_, map(is_not, olds[1:], olds[:-1]),
                                                  map(ne, args[1:], args[:-1]))), n]
        changed = 0
        for start, stop in zip(cuts, cuts[1:]):
            old = olds[start]
            new = change(old, args[start])
            if new is not old:
                changed += stop - start
                deque(map(self._values.__setitem__, entries[start:stop], repeat(new)), maxlen=0)
        return changed

    def remap(self, change: Callable[[V], V | None]) -> int:
        """Replace every value with ``change(value)`` (None deletes the topic); returns how
        many topics changed. ``change`` is asked once per distinct value (by identity:
        it must answer the same for the same object), and every per-topic step is a C
        loop or a step per run (a Python step per topic held the loop 16-29 ms when a
        broker of a 4 x 10^4-topic fleet left; ~7 ms now)."""
        values = self._values
        news = self._per_entry(change, None)
        moved = list(compress(range(len(values)), map(is_not, news, values)))
        if moved:
            values[:] = news
            self._live -= sum(map(is_, map(news.__getitem__, moved), repeat(None)))
            if self._journals:
                written = dict.fromkeys(self._names_at(moved))
                for journal in self._journals:
                    journal.update(written)
        if self._live * 2 < len(values) - _MIN_INDEX:
            self._rebuild()
        return len(moved)

    def _runs(self) -> tuple[list[int] | None, list[V | None], list[V]]:
        """(where each run of entries holding the same value, by identity, starts, then the
        entry count; the value at each run's start; each distinct live value once). The
        cuts are None when runs are too short to be worth it (more than one entry in
        ``_RUN_SHARE`` starts one): the values are then every entry's. A broker's topics
        come in a few long runs (a fleet of 4 x 10^4 topics: a handful), which one C pass
        finds; per-entry work is then a step per run, not per topic."""
        values = self._values
        n = len(values)
        cuts: list[int] | None = [0, *compress(range(1, n), map(is_not, islice(values, 1, None), values)), n]
        if len(cuts) * _RUN_SHARE > n + _RUN_SHARE:  # type: ignore[arg-type]
            cuts, heads = None, values
        else:
            heads = list(map(values.__getitem__, cuts[:-1]))  # type: ignore[index]
        distinct = dict(zip(map(id, heads), heads))
        distinct.pop(id(None), None)
        return cuts, heads, list(distinct.values())  # type: ignore[arg-type]

    def distinct_values(self) -> list[V]:
        """Each value some topic holds, once (by identity: fleets share a handful), found
        by C loops: over the runs' first entries, or over every entry."""
        return self._runs()[2]

    def _per_entry(self, answer: Callable[[V], A], deleted: A) -> list[A]:
        """``answer(value)`` for each entry (``deleted`` for a deleted one), asked once per
        distinct value and spread over the entries a run at a time (``_runs``), or by a C
        loop over every entry. At 4 x 10^4 topics: ~0.8 ms against ~4.5 ms entry by entry
        (an id and a dict lookup each)."""
        cuts, heads, distinct = self._runs()
        of = {id(value): answer(value) for value in distinct}
        of[id(None)] = deleted
        if cuts is None:
            return list(map(of.__getitem__, map(id, self._values)))
        out: list[A] = []
        for start, stop, head in zip(cuts, cuts[1:], heads):
            out += repeat(of[id(head)], stop - start)
        return out

    def count_where(self, test: Callable[[V], bool]) -> int:
        """How many topics' values pass ``test``, asked once per distinct value and summed
        a run at a time (``_runs``), or by C loops over every entry."""
        cuts, heads, distinct = self._runs()
        passing = {id(value) for value in distinct if test(value)}
        if cuts is None:
            return sum(map(passing.__contains__, map(id, self._values)))
        return sum(stop - start for start, stop, head in zip(cuts, cuts[1:], heads) if id(head) in passing)

    def names_where(self, test: Callable[[V], bool] | None = None) -> list[str]:
        """The topics (in order) whose values pass ``test`` (every topic: None), asked
        once per distinct value; the names are decoded by C loops, not one by one."""
        values = self._values
        if test is None:
            if self._live == len(values):
                return self._names_at(None)  # none deleted: no list of 10^4-10^5 entry numbers
            kept = list(compress(range(len(values)), map(is_not, values, repeat(None))))
        else:
            kept = list(compress(range(len(values)), self._per_entry(test, False)))
        return self._names_at(kept)

    def frozen_names(self) -> Callable[[], list[str]]:
        """Every topic as of now, in order, worked out later (on any thread) by the function
        returned: what it reads is copied here (a few C copies: ~0.5 ms at 7 x 10^4 topics,
        against ~10 ms to cut the names), and this table is not touched again."""
        snapshot: TopicTable[V] = TopicTable.__new__(TopicTable)
        snapshot._names, snapshot._starts = bytes(self._names), array("I", self._starts)  # type: ignore[assignment]
        snapshot._values, snapshot._live = list(self._values), self._live
        return snapshot.names_where

    def _names_at(self, entries: list[int] | None) -> list[str]:
        """The names of ``entries`` (None: every entry): an ASCII buffer is decoded once
        and sliced."""
        starts, names = self._starts, self._names
        if entries is None or len(entries) == len(self._values):  # every entry: the starts as they are
            begins, ends = starts[:-1], starts[1:]
        elif entries and entries[-1] - entries[0] == len(entries) - 1:
            # ascending and contiguous (a broker's or cluster's topics usually are): a slice
            begins, ends = starts[entries[0]:entries[-1] + 1], starts[entries[0] + 1:entries[-1] + 2]
        else:
            begins = array("I", map(starts.__getitem__, entries))
            ends = array("I", map(starts.__getitem__, map((1).__add__, entries)))
        if names.isascii():
            # (a comprehension: half the time of mapping __getitem__ over slice objects,
            # whose making was most of it: ~4.7 ms against ~9 ms for 4 x 10^4 names)
            text = names.decode("ascii")
            return [text[b:e] for b, e in zip(begins, ends)]
        return [names[b:e].decode("utf-8", "surrogatepass") for b, e in zip(begins, ends)]

    def clear(self) -> None:
        journals = self._journals
        for topic in self:
            self._record(topic)
        self.__init__()  # type: ignore[misc]
        self._journals = journals

    def _grow(self) -> bool:
        """The index is getting full: index ``_GROW_STEP`` more entries into the next one
        (twice the size; started here if none is under way), and swap it in once it holds
        every entry. True when the index in use changed (swapped, or rebuilt by a
        compaction: many deleted entries), so callers holding it reload it.

        Until the swap every lookup and addition uses the index in use, which holds every
        entry: the next one is only written. It gets the entries in order, each live
        one at the first free slot from its home or at the slot of an earlier entry of
        the same name (deleted meanwhile, then added again: as ``__setitem__`` does in
        the index in use), so it ends up indexing what the index in use does."""
        values = self._values
        if (len(values) - self._live) * _DEAD_SHARE > len(values):
            self._rebuild()
            return True
        growing = self._growing
        if growing is None:
            size = len(self._index) * 2
            while size < len(values) * 2:
                size *= 2
            growing = self._growing = [array("i", [_EMPTY]) * size, size - 1, 0]
        index, mask, at = growing
        hashes, starts, names = self._hashes, self._starts, self._names
        total = len(values)
        full = len(values) * _GROW_LIMIT[1] >= len(self._index) * _GROW_LIMIT[0]
        stop = total if full else min(at + _GROW_STEP, total)
        for e in range(at, stop):
            if values[e] is None:
                continue  # deleted: found by no lookup (a name added again is a later entry)
            h = hashes[e]
            i = h & mask
            other = index[i]
            while other != _EMPTY:
                if hashes[other] == h and starts[other + 1] - starts[other] == starts[e + 1] - starts[e] and \
                        names[starts[other]:starts[other + 1]] == names[starts[e]:starts[e + 1]]:
                    break  # an earlier entry of this name, deleted since: this one takes its slot
                i = (i + 1) & mask
                other = index[i]
            index[i] = e
        if stop < total:
            growing[2] = stop
            return False
        self._index, self._mask, self._growing = index, mask, None
        self._slot = _prober(index, mask, hashes, starts, names)
        return True

    def _rebuild(self) -> None:
        """Drop deleted entries and size the index for twice the live entries, at once."""
        self._growing = None
        names, starts, hashes, values = self._names, self._starts, self._hashes, self._values
        if self._live < len(values):
            keep = [e for e, v in enumerate(values) if v is not None]
            packed = bytearray()
            new_starts, new_hashes = array("I", [0]), array("q")
            for e in keep:
                packed += names[starts[e]:starts[e + 1]]
                new_starts.append(len(packed))
                new_hashes.append(hashes[e])
            self._names, self._starts, self._hashes = packed, new_starts, new_hashes
            self._values = [values[e] for e in keep]
            self._numbering = object()
        size = _MIN_INDEX
        while size * 2 < len(self._values) * 4:  # load <= 1/2 after a rebuild
            size *= 2
        index, mask = array("i", [_EMPTY]) * size, size - 1
        for e, h in enumerate(self._hashes):
            i = h & mask
            while index[i] != _EMPTY:
                i = (i + 1) & mask
            index[i] = e
        self._index, self._mask = index, mask
        self._slot = _prober(index, mask, self._hashes, self._starts, self._names)
        self._layout += 1

    # ------------------------------------------------------------- iteration ----

    def _live_entries(self) -> Iterator[tuple[int, V]]:
        """Values may be replaced or deleted meanwhile, as in a dict; adding a topic or a
        compaction renumbers entries, and raises as a dict that changed size would."""
        layout = self._layout
        for e in range(len(self._values)):
            if self._layout != layout:
                break
            value = self._values[e]
            if value is not None:
                yield e, value
        if self._layout != layout:
            raise RuntimeError("TopicTable changed size during iteration")

    def _name(self, e: int) -> str:
        starts = self._starts
        return self._names[starts[e]:starts[e + 1]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self._name(e) for e, _ in self._live_entries())

    def keys(self) -> Iterator[str]:
        return iter(self)

    def values(self) -> Iterator[V]:
        return (v for _, v in self._live_entries())

    def items(self) -> Iterator[tuple[str, V]]:
        return ((self._name(e), v) for e, v in self._live_entries())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (TopicTable, dict)):
            return len(self) == len(other) and all(other.get(t) == v for t, v in self.items())
        return NotImplemented

    def __repr__(self) -> str:
        return f"TopicTable({dict(self.items())!r})"

    def memory_bytes(self) -> int:
        """What the packed parts take (the values are shared and not counted)."""
        growing = 0 if self._growing is None else self._growing[0].itemsize * len(self._growing[0])
        return (len(self._names) + self._starts.itemsize * len(self._starts) + self._hashes.itemsize * len(self._hashes)
                + 8 * len(self._values) + self._index.itemsize * len(self._index) + growing)


def _prober(index: array, mask: int, hashes: array, starts: array, names: bytearray
            ) -> Callable[[bytes, int], tuple[int, int]]:
    """The lookup over one set of arrays, as a closure: (entry, index slot) for a name's
    UTF-8 and hash; entry is -1 if absent (the slot is then free). A closure over locals
    is half the cost of a method reading them from ``self`` (a lookup is ~0.5 us), and
    the table makes a new one whenever it replaces an array."""
    def slot(key: bytes, h: int) -> tuple[int, int]:
        i = h & mask
        e = index[i]
        while e != -1:
            if hashes[e] == h:
                start = starts[e]
                if starts[e + 1] - start == len(key) and names.startswith(key, start):
                    return e, i
            i = (i + 1) & mask
            e = index[i]
        return -1, i
    return slot
