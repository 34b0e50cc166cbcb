"""A re-registration's changed topics, found without parsing the whole body.

A fleet broker's registration body is 1.5 MB for 10^4 topics, yet a bumped re-registration
usually changes a handful of them. fastjson writes the topic table as ``"name":{flat
object}`` members joined by ``,``. Split at ``}``, such a table falls into pieces that are
each one member with its closing brace dropped and the ``,`` before it kept (the first
member has none; its piece gets one, so that a member gives the same piece wherever it
stands). Hashing the pieces and comparing them with the hashes of the broker's last
application leaves only the new pieces to parse.

SOUNDNESS: why a piece stands for its topic wherever it appears.
- No piece holds a ``}``: that is where the body is cut.
- A piece is trusted only after the new pieces parsed together as exactly one member each,
  with an object value: K pieces (their leading ``,`` but the first's between them)
  joined by ``}`` and closed with ``}}`` hold exactly K + 1 closing braces, and K object
  values and the object around them need all of them. So no brace sits in a string, no
  value nests an object, and the i-th value closes where the i-th piece ends: each piece
  is ``,`` and one member, whatever else its bytes hold (escapes, whitespace).
- A first registration's pieces are all new and read at once: the table's members are
  parsed, and must be as many as the pieces; or, where every member is in a 4.9.8
  broker's layout, they are read by ``_read_layout``, which vouches for each piece as one
  member and reads from it exactly what the parse reads (its comments say why).
- Known pieces are known by their hash (xxh3, 64 bits, seeded per process), compared only
  with pieces this process trusted before: a piece is known where a block of the base's
  hashes equals the new ones at the matching places (equal arrays of 64-bit items hold
  equal hashes, place by place), or where its hash is among the base's left unmatched. So
  when every piece of a table is trusted, the table is exactly the object of those members.
- A re-registration walks the blocks of the last one (``Blocks``: runs of its pieces, each
  run's bytes as a seeded xxh3 and a length) instead of splitting the whole table. The walk
  stands only where a piece starts: the table's start, or just past a ``}`` it stepped
  over. A block is found there when that many bytes hash to it and a ``}`` follows: equal
  bytes split equally, so the new pieces there are the block's own, one by one, each the
  base piece at that place (as known as when that table was split and checked). Whatever
  is not found is split and hashed like the whole table, and a piece matched neither in
  place nor by the hashes its block lost is known only if its hash is among every base
  hash left unmatched: the whole split's rule. Blocks belong to the piece hashes they were
  worked out with; equal piece hashes are equal table bytes, so either's blocks serve both.
- The table ends at the first ``}}`` after the last ``},`` (no scan of the table for it).
  The head, the body without the table's members, is parsed and must hold the wrapper
  with an empty table at the cut. A second ``"topicConfigTable":{`` in the head declines
  the body (a full parse keeps the last table); none is searched for in the members,
  which, all trusted, lie inside the table (a topic may be named ``topicConfigTable``).
- A first registration's table may be answered by a ``TwinTable``: what the read of a
  table with the same member bytes gave (same seeded 64-bit hash of them, same length:
  the trust a piece hash gets). The read depends on those bytes only (the layout reader
  and the parse see nothing else of the body), so its pieces and topics are that
  read's. Only reads of a whole table, a topic per piece, become twins.
Bodies this cannot vouch for (a ``}`` in a name, a nested value such as 5.x's
``attributes``, a second table) get None, and the caller parses in full. One difference
remains: a body naming a topic twice, once in a known piece, keeps the new piece's shape
where a full parse keeps the last one; no broker sends a topic twice.
"""

from __future__ import annotations

import os
import re
import time
from array import array
from collections import deque
from dataclasses import dataclass
from itertools import accumulate, chain, compress, groupby, repeat
from operator import add, ne, sub
from typing import Generator, Mapping, TypeVar
from weakref import ReferenceType, ref

from xxhash import xxh3_64_digest, xxh3_64_intdigest

from .bodies import DataVersion, QueueShape, _register_parts, table_shapes
from .codes import VERSION_V3_0_11
from .errors import BodyDecodeError
from .fastjson import lenient_loads

_TABLE_KEY = b'"topicConfigTable":{'
#: Piece hashes are compared only with this process's own: a seed no broker knows makes a
#: collision as unlikely as a 64-bit one can be (one would only keep that broker's own topic
#: from being applied).
_SEED = int.from_bytes(os.urandom(8), "little")

# One member as a 4.9.8 broker's fastjson writes a TopicConfig: fields sorted by name, no
# whitespace, the config's topicName equal to its key (``\2``: then a full parse keys it by
# that name too). What a match reads is what orjson reads there: a name is a run of bytes
# holding no quote, backslash or control character (a JSON string holds those only escaped)
# and no ``}`` (its piece would not be the split's), decoded as UTF-8 as orjson decodes it;
# a number is an integer of at most 18 digits without leading zeros (which JSON refuses;
# and orjson reads integers past 64 bits as floats, never those). Possessive runs (``*+``):
# what follows each is a byte they cannot hold, so they give up nothing a match could use,
# and sre skips the bookkeeping. Groups: the piece (the member but for its closing brace),
# the name, the fields from perm to topicFilterType, the fields after topicName.
_INT = rb"-?(?:0|[1-9][0-9]{0,17}+)"
_MEMBER = (rb'"([^"\\\x00-\x1f}]*+)":\{"order":(?:true|false),"perm":(' + _INT + rb',"readQueueNums":' + _INT
           + rb',"topicFilterType":"(?:SINGLE_TAG|MULTI_TAG)"),"topicName":"\2","topicSysFlag":(' + _INT
           + rb',"writeQueueNums":' + _INT + rb")")
#: the table's first member, and each after it with the comma before it
_FIRST = re.compile(rb"(" + _MEMBER + rb")\}")
_NEXT = re.compile(rb"(," + _MEMBER + rb")\}")
#: a shape's numbers in the groups' bytes: perm, readQueueNums, topicSysFlag, writeQueueNums
_NUMBER = re.compile(_INT)


@dataclass(frozen=True, slots=True)
class TableChanges:
    """A body's DataVersion and filter servers, the hash of each of its topic pieces
    (body order), and the shapes of the topics whose pieces were not in the base."""

    data_version: DataVersion
    filters: tuple[str, ...]
    hashes: array
    changed: dict[str, QueueShape]
    #: a first registration's table bytes, as ``TwinTable``s are keyed (None: not one)
    table_key: tuple[int, int] | None = None


#: (seeded xxh3 of a topic table's member bytes, their length)
TableKey = tuple[int, int]


@dataclass(frozen=True, slots=True)
class WalkBound:
    """What a bounded ``table_changes`` may do (the event loop's share of a registration):
    walk a base's blocks meeting at most ``blocks`` changed ones, split at most
    ``rest_bytes`` past the last block found, and parse at most ``topics`` new pieces.
    Anything else (no blocks to walk, a first registration, a body to parse whole)
    raises ``BeyondBound``."""

    blocks: int
    topics: int
    rest_bytes: int


class BeyondBound(Exception):
    """A bounded ``table_changes`` stopped: the job is more than its ``WalkBound`` allows,
    and is to be done unbounded elsewhere (a worker thread), from the start."""


@dataclass(frozen=True, slots=True)
class TwinTable:
    """What reading a first registration's topic table gave, kept for the next body with
    the same table bytes: a cluster's brokers usually hold the same topics, so a broker
    joining a cluster sends the table another broker's first registration was read from.

    Equal table bytes (by ``table_key``: a seeded 64-bit hash and the length, the trust a
    piece hash gets) read the same, so that body's pieces hash to ``hashes`` and its
    topics are ``changed()``, with no read. Kept small: the names as one blob and the
    shapes run-length coded (146 KB for the fleet's 10^4 topics, where the dict is 817 KB),
    and the hashes only while the registry holds them (a weak reference to its shared
    array)."""

    names: bytes
    runs: tuple[tuple[int, QueueShape], ...]
    hashes: ReferenceType[array]

    @classmethod
    def of(cls, hashes: array, changed: Mapping[str, QueueShape]) -> TwinTable | None:
        """The twin of a read that gave ``hashes`` and ``changed`` (every topic of the
        table, one per piece); None where the blob could not give the names back (a
        name holding the separator)."""
        if len(changed) != len(hashes) or not changed:
            return None
        # This runs on the event loop, as the registration is published: C loops only
        # (the join, the count, the grouping), ~0.5 ms for 10^4 topics.
        blob = "\0".join(changed)
        if blob.count("\0") != len(changed) - 1:  # a name holds the separator
            return None
        runs = tuple((len(list(group)), shape) for shape, group in groupby(changed.values()))
        return cls(blob.encode("utf-8", "surrogatepass"), runs, ref(hashes))

    def read(self) -> tuple[array, dict[str, QueueShape]] | None:
        """The piece hashes and the topics, as the table's read gave them; None once the
        registry let go of the hashes."""
        hashes = self.hashes()
        if hashes is None:
            return None
        names = self.names.decode("utf-8", "surrogatepass").split("\0")
        shapes = list(chain.from_iterable(repeat(shape, n) for n, shape in self.runs))
        if len(names) != len(shapes) or len(names) != len(hashes):
            return None
        return hashes, dict(zip(names, shapes))


def table_key(body: bytes, opened: int, end: int) -> TableKey:
    """``body[opened:end + 1]``'s key: 0.03 ms for a 1.5 MB table."""
    with memoryview(body) as view:
        return xxh3_64_intdigest(view[opened:end + 1], _SEED), end + 1 - opened


T = TypeVar("T")
#: A computation that may stop to let the event loop serve others (``yield``), and gives
#: its result at the end.
Steps = Generator[None, None, T]
#: A walk yields when it has run this long since it was resumed (looked at every
#: ``_CLOCK_EVERY`` blocks): on the event loop, the loop's share is served a slice at a time.
SLICE_SECONDS = 0.0005
_CLOCK_EVERY = 16


def finished(steps: Steps[T]) -> T:
    """``steps`` run to their end at once (a worker thread's way: no one to yield to)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def table_changes(body: bytes, version: int, base: array, twins: Mapping[TableKey, TwinTable] | None = None,
                  bound: WalkBound | None = None) -> TableChanges | None:
    """The topics of ``body`` whose pieces are not among ``base`` (piece hashes of the
    last application; empty for a broker's first: then every topic is in ``changed``),
    or None when the body is not one this can split soundly. A first registration whose
    table bytes are a key of ``twins`` (read on another thread: only ``get`` is used) is
    answered from that twin without a read; every first registration's result carries
    its ``table_key``. With a ``bound``, only a walk of ``base``'s blocks within it is
    done (raises ``BeyondBound`` otherwise, as soon as that is known)."""
    return finished(table_changes_steps(body, version, base, twins, bound))


def table_changes_steps(body: bytes, version: int, base: array, twins: Mapping[TableKey, TwinTable] | None = None,
                        bound: WalkBound | None = None) -> Steps[TableChanges | None]:
    """``table_changes``, yielding every ``SLICE_SECONDS`` of a walk of ``base``'s blocks:
    the event loop's way, serving other clients between slices."""
    if bound is not None and (not base or getattr(base, "blocks", None) is None):
        raise BeyondBound("no blocks to walk")
    if version < VERSION_V3_0_11:
        return None
    start = body.find(_TABLE_KEY)
    if start < 0 or b"\\" in body[:start]:  # no string before it can hold the key, quotes and all
        return None
    opened = start + len(_TABLE_KEY)
    if body.startswith(b"}", opened):
        end = opened - 1  # body[end + 1] closes the (empty) table
        head = body
    else:
        # The table's last member closes at the first "}}" after the last "},"; what
        # follows is the head's to vouch for. (Searching "}}" from the table's start
        # would test every piece's brace: ~1.3 ms of 1.5 MB.)
        end = body.find(b"}}", max(body.rfind(b"},", opened) + 2, opened))
        if end < 0:
            return None
        head = body[:opened] + body[end + 1:]
    # A second table after the first: a full parse keeps the last. The head is all there
    # is to search: what is cut out of it is trusted members, which hold no key of the
    # wrapper's (~0.4 ms less than searching 1.5 MB).
    if head.find(_TABLE_KEY, opened) >= 0:
        return None
    try:
        # The key cut is the wrapper's own: the only one left in the head, and there.
        wrapper = lenient_loads(head).get("topicConfigSerializeWrapper")
        if type(wrapper) is not dict or wrapper.get("topicConfigTable") != {}:
            return None
        data_version, table, filters, mappings = _register_parts(head, version)
        if table or mappings:
            return None
        key = table_key(body, opened, end) if not base and end >= opened else None
        twin = twins.get(key) if twins is not None and key is not None else None
        found = twin.read() if twin is not None else None
        if found is None:
            found = (yield from _topics(body, opened, end, base, bound)) if end >= opened else (array("Q"), {})
    except (ValueError, AttributeError, BodyDecodeError):
        return None
    return None if found is None else TableChanges(data_version, filters, found[0], found[1], key)


def _topics(body: bytes, opened: int, end: int, base: array,
            bound: WalkBound | None = None) -> Steps[tuple[array, dict[str, QueueShape]] | None]:
    """The piece hashes of the table whose members are ``body[opened:end + 1]``, and the
    shapes of its topics whose pieces are not among ``base``; None if its pieces are not
    all trusted. Raises ValueError or BodyDecodeError where a parse does, BeyondBound
    past ``bound`` (see ``table_changes``).

    Every per-piece step is a C loop: one split of the body at ``}``, one xxh3 per piece
    (its digest's bytes joined into the array), a comparison with the base a block of
    hashes at a time."""
    if not base:
        read = _read_layout(body, opened, end + 1)
        if read is not None:
            hashes = _hashed(read[0])
            # Blocks for the broker's next registration that changes anything (the ones
            # between, unchanged, are not read at all): ~0.7 ms for 10^4 topics.
            hashes.blocks = _blocks(read[0], body, opened, True)
            return hashes, read[1]
    walked = (yield from _walk(body, opened, end, base, bound)) if base else None
    if walked is not None:
        hashes, new = walked
        if bound is not None and len(new) > bound.topics:
            raise BeyondBound(f"{len(new)} topics to parse")
    elif bound is not None:
        raise BeyondBound("no blocks to walk")
    else:
        pieces = _pieces(body, opened, end)
        hashes = _hashed(pieces)
        hashes.blocks = _blocks(pieces, body, opened, True)  # the next re-registration walks them
        if base:
            new = _new_pieces(pieces, hashes, base)
        del pieces
    if not base:  # a first registration not in the layout: the table the pieces form, parsed
        # The 10^4 pieces went before the parse makes its objects: the allocator's pages
        # then hold one of them at a time, not both (resident size after a fleet).
        shapes = _parsed_shapes(body, opened, end + 1, len(hashes))
    else:
        joined = b"}".join(new)
        if not new:
            shapes = {}
        elif not joined.startswith(b","):  # each piece is "," and a member; the first "," goes
            return None
        else:
            text = b"{" + joined[1:] + b"}}"
            shapes = _parsed_shapes(text, 1, len(text) - 1, len(new))
    return None if shapes is None else (hashes, shapes)


def _pieces(body: bytes, opened: int, end: int) -> list[bytes]:
    """The table's pieces: ``body[opened:end]`` split at ``}``, the first with a ``,`` put
    before it. The body is split whole (no 1.5 MB copy of the table first), then the pieces
    before the table's and from its last brace on go."""
    pieces = body.split(b"}")
    del pieces[len(pieces) - body.count(b"}", end):]
    del pieces[:body.count(b"}", 0, opened)]
    pieces[0] = b"," + pieces[0][opened - body.rfind(b"}", 0, opened) - 1:]
    return pieces


class PieceHashes(array):
    """A table's piece hashes (typecode ``Q``), and, once a re-registration worked them
    out, its ``Blocks``: what lets the next re-registration walk the table a block at a
    time. Equal piece hashes mean equal table bytes, so the blocks of one table serve
    any equal array (``RouteTable`` shares equal arrays)."""

    blocks: Blocks | None = None


@dataclass(frozen=True, slots=True)
class Blocks:
    """A table's pieces in runs (block ``k`` is ``counts[k]`` pieces, in order): each
    run's bytes in the body, from its first piece's start (the table's first piece
    without the ``,`` its piece gets) to its last piece's end (a ``}`` follows), as a
    seeded xxh3 (``hashes``) and a length (``lengths``)."""

    hashes: array
    lengths: array
    counts: array


def _hashed(pieces: list[bytes]) -> PieceHashes:
    """The pieces' seeded xxh3 hashes, as the digests' bytes read into an array: no int
    object per piece (~0.2 ms less for 10^4 than an array built from ints)."""
    hashes = PieceHashes("Q")
    hashes.frombytes(b"".join(map(xxh3_64_digest, pieces, repeat(_SEED))))
    return hashes


#: Pieces per block of ``Blocks``: a fleet broker's 10^4 topics are 625 blocks; with 1% of
#: them changed, about 100 blocks are split and their 16 pieces hashed one by one.
_RUN = 16
#: How far past a block's old length its pieces are looked for (a changed topic's piece
#: grows or shrinks by its name's and numbers' change).
_SLACK = 256
_CLOSE = ord("}")


def _blocks(pieces: list[bytes], body: bytes, start: int, first: bool) -> Blocks:
    """``Blocks`` of ``_RUN`` pieces for ``pieces``, the table's pieces from ``start`` in
    ``body`` on (``first``: from the table's first piece, which has the ``,`` put before
    it that the body does not hold there)."""
    # The i-th piece closes at the i-th "}" from start: start + (the pieces' lengths up to
    # it) + i, less the one "," that stands for no byte of the body. A block stops where
    # its last piece closes, and the next starts past that "}".
    n = len(pieces)
    ends = list(accumulate(map(len, pieces)))
    lead = 1 if first else 0
    stops = [start + ends[i] + i - lead for i in chain(range(_RUN - 1, n - 1, _RUN), (n - 1,))] if n else []
    starts = [start, *map((1).__add__, stops[:-1])]
    with memoryview(body) as view:
        block_hashes = array("Q", map(xxh3_64_intdigest, map(view.__getitem__, map(slice, starts, stops)),
                                      repeat(_SEED)))
    counts = array("I", repeat(_RUN, n // _RUN))
    if n % _RUN:
        counts.append(n % _RUN)
    return Blocks(block_hashes, array("I", map(sub, stops, starts)), counts)


def _walk(body: bytes, opened: int, end: int, base: array,
          bound: WalkBound | None = None) -> Steps[tuple[PieceHashes, list[bytes]] | None]:
    """The piece hashes of the table ``body[opened:end + 1]`` and its pieces not among
    ``base``, found by walking ``base``'s blocks (None: it has none). A block whose bytes
    are where the walk stands (by seeded hash and length), and end before a ``}``, holds
    ``base``'s pieces of that block again, one by one: the same bytes split the same. A
    block that is not there is split on its own, its pieces hashed and compared with the
    block's base pieces as ``_new_pieces`` does; where the next block does not follow as
    many pieces, up to ``_AHEAD`` more or fewer are tried (topics inserted or dropped
    there). Where blocks stop being found (more than half of those walked, or a block
    that cannot be placed), the rest of the table is split whole and compared with the
    rest of ``base``. One xxh3 of a block's bytes for 16 unchanged topics, instead of 16
    splits and hashes; a block changed in place costs a split of its bytes (~2 us) and
    its share of one batch (``_compared``): ~1.0 ms for a 1% rename, was ~1.15. Past
    ``bound``'s changed blocks, or before a longer rest than it allows, raises BeyondBound.
    Yields every ``SLICE_SECONDS`` (see ``table_changes_steps``)."""
    blocks = getattr(base, "blocks", None)
    if blocks is None:
        return None
    hashes, lengths, counts = blocks.hashes, blocks.lengths, blocks.counts
    total = len(hashes)
    new_hashes, new_lengths, new_counts = array("Q", hashes), array("I", lengths), array("I", counts)
    out = PieceHashes("Q")
    # Pieces not matched where they stand, and base hashes not matched where they stood:
    # a piece is new unless its hash is among the latter (a topic moved across blocks).
    loose: list[bytes] = []
    loose_hashes: list[int] = []
    stale: set[int] = set()
    # A block changed in place (as many pieces as before) is compared with its base
    # pieces place by place, in one batch with the others: its pieces, the base hashes
    # they stand against and their places in ``out`` (which takes the base's hashes
    # there meanwhile) wait in these until ``_compared``, before anything else is
    # added to ``loose`` (which keeps body order). One hashing and one comparison for
    # the ~100 blocks of a 1% change, not one each: ~0.3 ms less of ~1.3.
    queued: list[bytes] = []
    queued_old = array("Q")
    places = array("q")
    at = copied = 0  # base pieces walked past, and appended to ``out``
    spot = opened  # where the walk stands (a piece starts there)
    found = False  # block k is known to be at spot
    changed = 0
    k = 0
    clock = time.perf_counter
    resumed = clock()
    with memoryview(body) as view:
        while k < total:
            if not k % _CLOCK_EVERY and clock() - resumed > SLICE_SECONDS:
                yield
                resumed = clock()
            stop = spot + lengths[k]
            if found or (stop <= end and body[stop] == _CLOSE
                         and xxh3_64_intdigest(view[spot:stop], _SEED) == hashes[k]):
                spot, at, k, found = stop + 1, at + counts[k], k + 1, False
                continue
            changed += 1
            if bound is not None and changed > bound.blocks:
                raise BeyondBound(f"more than {bound.blocks} blocks changed")
            if changed > 4 + k // 2 or k + 1 == total:  # many differ, or the last: the rest is split
                break
            count = counts[k]
            # Mostly a topic changed in place or one inserted: as many pieces, or one more,
            # and the next block after them; failing that, other counts are tried further.
            region = body[spot:min(stop + _SLACK, end + 1)]
            parts = region.split(b"}", count + 1)
            want, length = hashes[k + 1], lengths[k + 1]
            take = 0
            # Where the count-th and (count + 1)-th pieces close, read from the region's
            # end: its last part runs past the last "}" split at, the one before it is
            # the (count + 1)-th piece (no running sum of 18 lengths).
            last = spot + len(region) - len(parts[-1]) - 1
            closes = (last - len(parts[-2]) - 1, last) if len(parts) == count + 2 else (last,)
            for tried, stop in zip(range(count, min(count + 2, len(parts))), closes):
                after = stop + 1 + length  # _block_at, inline: this runs for every changed block
                if after <= end and body[after] == _CLOSE and xxh3_64_intdigest(view[stop + 1:after], _SEED) == want:
                    take, found = tried, True
                    break
            if not take:
                placed = _placed(body, view, spot, count, 2 * lengths[k] + _SLACK, want, length, end)
                if placed is not None:
                    take, parts = placed
                    found = True
                elif len(parts) > count:  # not placed: as many pieces, the next block changed too
                    take = count
                else:
                    break
                stop = spot + sum(map(len, parts[:take])) + take - 1
            pieces = parts[:take]
            if spot == opened:
                pieces[0] = b"," + pieces[0]
            new_hashes[k] = xxh3_64_intdigest(view[spot:stop], _SEED)
            new_lengths[k], new_counts[k] = stop - spot, take
            if take == count:  # matched place by place, in the batch
                place = len(out) + at - copied
                places.extend(range(place, place + count))
                queued += pieces
                queued_old += base[at:at + count]
                spot, at, k = stop + 1, at + count, k + 1
                continue
            # inserted or dropped: matched by set
            got = _hashed(pieces)
            old = base[at:at + count]
            olds, gots = set(old), set(got)
            if len(olds) != count or len(gots) != take:
                break  # a hash twice: the whole split's matching decides
            out.extend(base[copied:at])
            _compared(queued, queued_old, places, out, loose, loose_hashes, stale)
            differ = [i for i in range(take) if got[i] not in olds]
            stale.update(olds - gots)
            loose.extend(map(pieces.__getitem__, differ))
            loose_hashes.extend(map(got.__getitem__, differ))
            out.extend(got)
            at += count
            copied = at
            spot, k = stop + 1, k + 1
    out.extend(base[copied:at])
    if bound is not None and end - spot > bound.rest_bytes:
        raise BeyondBound(f"{end - spot} bytes to split")
    _compared(queued, queued_old, places, out, loose, loose_hashes, stale)
    if spot <= end:  # the rest of the table, split whole
        rest = body[spot:end].split(b"}")
        if spot == opened:
            rest[0] = b"," + rest[0]
        rest_hashes = _hashed(rest)
        differ, gone = _unmatched(rest_hashes, base[at:])
        loose.extend(map(rest.__getitem__, differ))
        loose_hashes.extend(map(rest_hashes.__getitem__, differ))
        stale.update(gone)
        out.extend(rest_hashes)
        tail = _blocks(rest, body, spot, spot == opened)
        new_hashes, new_lengths, new_counts = (new_hashes[:k] + tail.hashes, new_lengths[:k] + tail.lengths,
                                               new_counts[:k] + tail.counts)
    elif k < total:  # the table ended before these blocks: their topics were dropped
        stale.update(base[at:])
        new_hashes, new_lengths, new_counts = new_hashes[:k], new_lengths[:k], new_counts[:k]
    out.blocks = Blocks(new_hashes, new_lengths, new_counts)
    return out, [piece for piece, h in zip(loose, loose_hashes) if h not in stale]


def _compared(queued: list[bytes], olds: array, places: array, out: array, loose: list[bytes],
              loose_hashes: list[int], stale: set[int]) -> None:
    """Compare the ``queued`` pieces of blocks changed in place with the base hashes they
    stand against (``olds``): the pieces that differ go to ``loose`` (their hashes to
    ``loose_hashes``, in ``out`` at their ``places``), the base hashes they replace to
    ``stale``. Empties the three queues."""
    if not queued:
        return
    got = _hashed(queued)
    differ = list(compress(range(len(got)), map(ne, got, olds)))
    stale.update(map(olds.__getitem__, differ))
    loose.extend(map(queued.__getitem__, differ))
    news = list(map(got.__getitem__, differ))
    loose_hashes.extend(news)
    deque(map(out.__setitem__, map(places.__getitem__, differ), news), maxlen=0)
    del queued[:], olds[:], places[:]


def _placed(body: bytes, view: memoryview, spot: int, count: int, reach: int, want: int, length: int,
            end: int) -> tuple[int, list[bytes]] | None:
    """(how many pieces from ``spot`` on, the pieces and what lies past them) where the
    block of hash ``want`` and ``length`` bytes follows that many, trying ``count``, then
    up to ``_AHEAD`` more or fewer (topics inserted or dropped) within ``reach`` bytes;
    None: after none."""
    parts = body[spot:min(spot + reach, end + 1)].split(b"}", count + _AHEAD)
    have = len(parts) - 1  # pieces in reach, each closed by a "}"
    ends = list(accumulate(map(len, parts)))
    for take in chain((count,), chain.from_iterable((count + d, count - d) for d in range(1, _AHEAD + 1))):
        if 1 <= take <= have and _block_at(body, view, spot + ends[take - 1] + take, length, want, end):
            return take, parts
    return None


def _block_at(body: bytes, view: memoryview, at: int, length: int, want: int, end: int) -> bool:
    """Whether the block of hash ``want`` and ``length`` bytes starts at ``at`` (a piece's
    start): those bytes hash to it and a ``}`` of the table follows them. (The walk's
    loop over found blocks tests the same inline: it is the hot path.)"""
    stop = at + length
    return stop <= end and body[stop] == _CLOSE and xxh3_64_intdigest(view[at:stop], _SEED) == want


def _new_pieces(pieces: list[bytes], hashes: array, base: array) -> list[bytes]:
    """The pieces whose hashes are not in ``base``. Each base hash matches at most one
    piece of the same hash: by position where it can (block by block; in a table of another
    length from its end, then from its start, stepping past topics inserted or dropped
    where the other side's hash shows up a few places on), the rest by set. A piece left
    over is known if its hash is among the base's left over; one whose hash only a matched
    base hash has is a topic named twice, and is parsed (its shape is the one it reports)."""
    loose, stale = _unmatched(hashes, base)
    return [pieces[i] for i in loose if hashes[i] not in stale]


def _unmatched(hashes: array, base: array) -> tuple[list[int], set[int]]:
    """``_new_pieces``' matching: the positions of ``hashes`` not matched to an equal hash
    of ``base``, and the hashes of ``base`` not matched."""
    if hashes == base:  # unchanged (the same typecode: one memcmp)
        return [], set()
    n, m = len(hashes), len(base)
    if hashes.typecode != base.typecode:  # the pairs of a full parse: no piece's hash among them
        return list(range(n)), set(base)
    if n == m:
        loose = _differing(hashes, base)
        return loose, set(map(base.__getitem__, loose))
    return _shifted(hashes, base)


#: Hashes compared at once, as two array slices (a C loop over the items): a fleet broker's
#: 10^4 pieces are 313 blocks, and 1% of its topics changed leaves about 100 of them to
#: compare one by one. 16 and 64 were slower (more blocks; longer descents).
_BLOCK = 32
#: How far past a mismatch the walk of ``_shifted`` looks for the other side's hash.
_AHEAD = 8


def _differing(new: array, old: array) -> list[int]:
    """The positions where two arrays of one length and typecode differ: block by block,
    and item by item only in blocks that differ."""
    n = len(new)
    cuts = list(map(slice, range(0, n, _BLOCK), range(_BLOCK, n + _BLOCK, _BLOCK)))
    out: list[int] = []
    for at in compress(range(0, n, _BLOCK), map(ne, map(new.__getitem__, cuts), map(old.__getitem__, cuts))):
        out.extend(compress(range(at, at + _BLOCK), map(ne, new[at:at + _BLOCK], old[at:at + _BLOCK])))
    return out


def _common(new: array, i: int, old: array, j: int, limit: int) -> int:
    """How many items ``new[i:]`` and ``old[j:]`` have in common from their starts, up to
    ``limit``: blocks doubling while they agree, then halving to the first that does not."""
    k, step = 0, _BLOCK
    while step <= limit - k and new[i + k:i + k + step] == old[j + k:j + k + step]:
        k += step
        step *= 2
    while step > 1:
        step //= 2
        if step <= limit - k and new[i + k:i + k + step] == old[j + k:j + k + step]:
            k += step
    return k


def _shifted(new: array, old: array) -> tuple[list[int], set[int]]:
    """The positions of ``new`` not matched to an equal hash of ``old``, and the hashes of
    ``old`` not matched, for arrays of different lengths (topics inserted or dropped shift
    the rest). The common end is matched first; then a walk from the start matches runs
    in common and, at a mismatch, takes the nearer of: the base hash a few places on in
    ``new`` (topics inserted there), the new hash a few places on in ``old`` (dropped),
    or neither (one topic changed in place). A table reordered at large would make the
    walk step piece by piece: past a budget of mismatches, the rest is left to the set."""
    n, m = len(new), len(old)
    shorter = min(n, m)
    trail = 0
    while trail < shorter:  # the common end, a block at a time
        step = min(_BLOCK, shorter - trail)
        if new[n - trail - step:n - trail] != old[m - trail - step:m - trail]:
            break
        trail += step
    while trail < shorter and new[n - trail - 1] == old[m - trail - 1]:
        trail += 1
    n, m = n - trail, m - trail
    loose: list[int] = []
    gone: list[slice] = []
    i = j = 0
    budget = 32 + (n + m) // 16
    while i < n and j < m and budget:
        run = _common(new, i, old, j, min(n - i, m - j))
        i, j = i + run, j + run
        if i == n or j == m:
            break
        budget -= 1
        ahead_new, ahead_old = new[i + 1:i + _AHEAD], old[j + 1:j + _AHEAD]
        inserted = ahead_new.index(old[j]) + 1 if old[j] in ahead_new else 0
        dropped = ahead_old.index(new[i]) + 1 if new[i] in ahead_old else 0
        if inserted and (not dropped or inserted <= dropped):
            loose.extend(range(i, i + inserted))
            i += inserted
        elif dropped:
            gone.append(slice(j, j + dropped))
            j += dropped
        else:
            loose.append(i)
            gone.append(slice(j, j + 1))
            i, j = i + 1, j + 1
    loose.extend(range(i, n))
    gone.append(slice(j, m))
    stale: set[int] = set()
    for cut in gone:
        stale.update(old[cut])
    return loose, stale


def _parsed_shapes(data: bytes, lo: int, hi: int, members: int) -> dict[str, QueueShape] | None:
    """The queue shapes of the object ``data[lo - 1:hi + 1]`` if it is exactly ``members``
    members with object values (None if not), as a full parse gives them. Raises
    ValueError or BodyDecodeError where that parse does."""
    with memoryview(data) as view:
        parsed = lenient_loads(view[lo - 1:hi + 1])
    if type(parsed) is not dict or len(parsed) != members or any(type(value) is not dict for value in parsed.values()):
        return None
    return table_shapes(parsed)


def _read_layout(body: bytes, lo: int, hi: int) -> tuple[list[bytes], dict[str, QueueShape]] | None:
    """The pieces and queue shapes of the members ``body[lo:hi]`` when they are distinct
    topics each in a 4.9.8 broker's layout, read without a parse; None when they are not
    all that. Each distinct shape is converted once and the names are decoded one by one:
    no 10^4 dicts from orjson (nor the fresh pages its output takes), and no split.

    ``_NEXT.split`` cuts the whole body (a pattern's split takes no bounds) into the gaps
    between matches and each match's four groups (piece, name, perm to topicFilterType,
    topicSysFlag and writeQueueNums). The members are exactly the ``_FIRST`` match and the
    ``_NEXT`` ones, joined by commas, when the first gap is the body up to ``lo`` followed
    by that ``_FIRST`` match, the last gap the body from ``hi``, and every other gap empty:
    then a parse of the table finds these members and nothing else, keys each by its
    topicName, and ``table_shapes`` gives what is read here. Each piece holds no ``}`` and
    is ``,`` and one member: what the split at ``}`` cuts, so a re-registration knows it."""
    first = _FIRST.match(body, lo, hi)
    if first is None:  # not that layout: no scan for nothing
        return None
    parts = _NEXT.split(body)
    tail = len(body) - hi
    if len(parts) == 1:  # one member: the body is all gap
        if first.end() != hi:
            return None
    elif len(parts[-1]) != tail or first.end() != len(parts[0]) or any(parts[5:-1:5]):
        return None
    pieces, names, fronts, backs = parts[1::5], parts[2::5], parts[3::5], parts[4::5]
    del parts
    pieces.insert(0, b"," + first[1])
    names.insert(0, first[2])
    fronts.insert(0, first[3])
    backs.insert(0, first[4])
    keys = list(map(add, fronts, backs))  # bytes, not tuples: 10^4 objects the GC never sees
    shapes: dict[bytes, QueueShape] = {}
    for key in set(keys):
        perm, read, flag, write = map(int, _NUMBER.findall(key))
        shapes[key] = (read, write, perm, flag)
    try:
        topics = dict(zip(map(bytes.decode, names), map(shapes.__getitem__, keys)))
    except UnicodeDecodeError:  # the parse refuses it, as the full parse does
        return None
    return (pieces, topics) if len(topics) == len(keys) else None  # a topic named twice: the parse decides
