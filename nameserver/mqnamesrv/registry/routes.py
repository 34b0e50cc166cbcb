"""The route registry: clusters, broker groups, topic queues and broker liveness.

Pure state with an injected clock. Nothing here does I/O or logging of wire details;
connections are opaque hashable tokens supplied by the server. The behaviour follows
the 4.9.8 RouteInfoManager (spec 4.4-4.12, 6), with the deviations noted inline.
"""

from __future__ import annotations

import zlib
from array import array
from dataclasses import dataclass, field
from itertools import islice
from typing import AbstractSet, Any, Callable, Hashable, Iterable, Mapping, Sequence, cast
from weakref import WeakValueDictionary, ref

from ..protocol.bodies import (
    BrokerData, ClusterInfo, DataVersion, QueueData, QueueShape, TopicQueueMappingInfo, TopicRouteData,
)
from ..protocol.javahash import hashmap_order
from ..protocol.table_pieces import PieceHashes, TableKey, TwinTable
from ..protocol.codes import FLAG_UNIT, FLAG_UNIT_SUB, MASTER_ID, PERM_READ, PERM_WRITE
from .clock import Clock, system_clock
from .topic_table import TopicTable

#: Java's BROKER_CHANNEL_EXPIRED_TIME: a broker silent this long is dropped.
DEFAULT_BROKER_TIMEOUT_MS = 120_000

#: Distinct QueueData kept for sharing; beyond it new ones are still correct, just not shared.
QUEUE_DATA_POOL_LIMIT = 100_000
#: Cached map transitions; the cache is simply dropped when it grows past this.
TRANSITION_CACHE_LIMIT = 50_000


class QueueMap(dict[str, QueueData]):
    """One topic's queues, broker name -> QueueData, in registration order. Read-only:
    topics with the same queues share one instance (a fleet has 10^5 topics but a
    handful of distinct queue layouts), so a change makes a new map instead."""

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("QueueMap is shared between topics and read-only; RouteTable makes new ones")

    __setitem__ = __delitem__ = pop = popitem = clear = update = setdefault = __ior__ = _read_only  # type: ignore


_EMPTY = QueueMap()


@dataclass(slots=True)
class BrokerLive:
    last_update_ms: int
    data_version: DataVersion
    conn: Hashable | None
    ha_server_addr: str
    timeout_ms: int


@dataclass(slots=True)
class _Group:
    """Mutable twin of BrokerData; frozen copies are handed out in routes."""

    cluster: str
    broker_name: str
    addrs: dict[int, str] = field(default_factory=dict)
    #: 5.x: set by every registration, as Java 5 does (None: the last one was a 4.x broker's)
    enable_acting_master: bool | None = None
    zone_name: str | None = None

    def frozen(self) -> BrokerData:
        return BrokerData(self.cluster, self.broker_name, dict(self.addrs), self.enable_acting_master, self.zone_name)

    def master_gone(self) -> bool:
        """An acting-master group whose brokerId 0 is absent (5.x isNoMasterExists)."""
        return bool(self.enable_acting_master) and bool(self.addrs) and MASTER_ID not in self.addrs


@dataclass(frozen=True, slots=True)
class _Applied:
    """What a master's last application of its topics left in the table, kept while
    nothing else has touched that broker's queues: the next bumped re-registration
    then applies only the topics whose (name, shape) is not among ``hashes``, and one
    with the same body (``key``) applies nothing. A fleet broker re-registers 10^4
    topics of which almost none changed; 8 bytes a topic instead of a dict entry."""

    broker_addr: str
    key: bytes | None
    hashes: array


@dataclass(frozen=True, slots=True)
class TopicsDiff:
    """A master's topics against its last application (``RouteTable.applied_hashes``),
    worked out away from the registry (a server does it on a worker thread): ``base`` the
    hashes it was diffed against (None: none), ``hashes`` those of all of ``topics``,
    ``changed`` the topics whose pair is not in ``base``. Used only if ``base`` is
    still the application on record when the registration is applied."""

    base: array | None
    hashes: array
    changed: Mapping[str, QueueShape]
    #: a first registration's table bytes (``table_pieces.table_key``; None: not known)
    table_key: TableKey | None = None

    @classmethod
    def of(cls, topics: Mapping[str, QueueShape], base: array | None) -> TopicsDiff:
        # The items are hashed as they are made, never listed: 10^5 pairs alive at once
        # spread over pymalloc arenas that the table's long-lived allocations then pin
        # (``bench memory``: 10.8 MB resident for 10^5 topics x 2 brokers, 7.5 MB this
        # way), and the dict's iterator reuses one tuple when it is dropped at once.
        hashes = array("q", map(hash, topics.items()))
        if base is None:
            return cls(None, hashes, topics)
        seen = set(base)
        return cls(base, hashes, {topic: shape for (topic, shape), h in zip(topics.items(), hashes) if h not in seen})


def _notable(diff: TopicsDiff) -> bool:
    """Whether ``diff`` is a first registration's every topic, one per piece in piece
    order (``table_changes``' hashes, unsigned; a full parse's pair hashes are signed):
    equal hashes then mean the same topics in the same order."""
    return diff.base is None and diff.hashes.typecode == "Q" and len(diff.hashes) == len(diff.changed)


class StagedTopics:
    """A master's changed topics applied to a copy of the topic table a slice at a time
    (``step``), while the live table goes on answering readers and taking other writes.
    Publishing it (``RouteTable.register_broker(..., staged=)``) replays those writes on
    the copy, applies this registration again to the topics they touched, and swaps the
    copy in: readers see all of the registration or none of it, and the loop is never
    held for the whole of a 10^5-topic first registration (~5 us a topic).

    Until it ends, the live table records its writes for it: whoever holds a staging
    holds it in ``with``, which stops the recording however the registration ends
    (published, found stale and applied again in one piece, refused, abandoned)."""

    def __init__(self, routes: RouteTable, broker_name: str, broker_addr: str, diff: TopicsDiff) -> None:
        self.broker_name, self.broker_addr, self.diff = broker_name, broker_addr, diff
        self._routes = routes
        self.copy = routes.topic_queue_table.copy()
        #: the copy's entry numbering when copied: notes taken under it (see ``noted``)
        self.numbering = self.copy.numbering
        #: the entries of ``diff.changed``'s topics, in order, as another broker's
        #: application of the same pieces left them; None: each topic is looked up
        self._entries = routes._entries_noted(diff, self.numbering)
        #: the entries found by looking each topic up, for the next broker with these pieces
        self.noted: array | None = array("i") if self._entries is None and _notable(diff) else None
        self._at = 0
        #: writes to the live table since the copy (moved to the next live table by a
        #: staging published meanwhile; gone if the tables were replaced wholesale)
        self.journal = routes.topic_queue_table.watch()
        self._pending = iter(diff.changed.items())
        self._change = routes._topic_change(broker_name)
        self.slices = 0
        self.done = False
        #: swapped in as the live table (False: never, or not yet)
        self.published = False

    def __enter__(self) -> StagedTopics:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abandon()

    def step(self, count: int) -> bool:
        """Apply up to ``count`` more topics to the copy; True once all are applied."""
        batch = list(islice(self._pending, count))
        if batch:
            if self._entries is not None:
                self.copy.update_entries(self._entries[self._at:self._at + len(batch)], batch, self._change)
            else:
                self.copy.update_each(batch, self._change, self.noted)
            self._at += len(batch)
            self.slices += 1
        self.done = len(batch) < count
        return self.done

    def abandon(self) -> None:
        """Stop recording; the copy is dropped. Harmless after publishing."""
        self._routes.topic_queue_table.unwatch(self.journal)

    def usable(self, base: array | None) -> bool:
        """Still built on the table readers see, against the application on record."""
        return self.diff.base is base and self._routes.topic_queue_table.watching(self.journal)

    def finish(self) -> TopicTable[QueueMap]:
        """The copy with the rest applied and the journal replayed (the caller swaps it in)."""
        live = self._routes.topic_queue_table
        live.unwatch(self.journal)
        while not self.step(1 << 16):
            pass
        changed, copy = self.diff.changed, self.copy
        for topic in self.journal:
            value = live.get(topic)  # its latest write (a journal keeps the topics only)
            if value is None:
                copy.pop(topic, None)
            else:
                copy[topic] = value
            shape = changed.get(topic)
            if shape is not None:  # written meanwhile: this registration comes after that write
                copy.update_each(((topic, shape),), self._change)
        # Stagings still running were copied from the table this one replaces: what it
        # changed is, for them, writes made meanwhile.
        for journal in live.journals():
            # A journal's keys are what it holds (its values are never read), so this
            # registration's topics go in as they are: no dict of 10^4 Nones made first.
            journal.update(cast("dict[str, None]", changed))
            journal.update(self.journal)
            copy.adopt(journal)
        self.published = True
        return copy


class RouteChanges:
    """What writes to a RouteTable touched since its consumer last took them (``take``),
    so that answers computed from the table can be dropped one topic at a time: the
    topics whose queues or static-topic mappings were written, and the broker names whose
    group (addresses, acting-master flag, zone) or whose addresses' filter servers were
    written (every topic listing such a broker may answer differently). Pure
    bookkeeping, made by ``RouteTable.watch_changes``; the queue writes come from the
    topic table's journal (``TopicTable.watch``), which a staged registration's swap
    carries over to the new table."""

    __slots__ = ("_routes", "_table", "_journal", "topics", "brokers", "everything")

    def __init__(self, routes: RouteTable) -> None:
        self._routes = routes
        self._table = routes.topic_queue_table
        self._journal = self._table.watch()
        #: topics written other than through the topic table (static-topic mappings)
        self.topics: set[str] = set()
        self.brokers: set[str] = set()
        #: the tables were replaced wholesale (``import_state``)
        self.everything = False

    def take(self) -> tuple[AbstractSet[str] | None, set[str]]:
        """(topics, broker names) written since the last take, and forget them; topics
        None means anything may have changed. The topics are the caller's own (the
        journal's keys, handed over: a new journal records from now on)."""
        table = self._routes.topic_queue_table
        topics: AbstractSet[str] | None
        if self.everything or not table.watching(self._journal):
            topics = None
            self._table.unwatch(self._journal)
            self._table, self._journal = table, table.watch()
        else:
            journal = self._journal
            if journal:
                self._journal = table.renew(journal)
                topics = journal.keys() | self.topics if self.topics else journal.keys()
            else:
                topics = self.topics
            self._table = table  # a staged registration's swap moved the journal to its table
        brokers = self.brokers
        self.topics, self.brokers, self.everything = set(), set(), False
        return topics, brokers

    def close(self) -> None:
        """Stop recording."""
        self._routes.topic_queue_table.unwatch(self._journal)
        self._table.unwatch(self._journal)
        self._routes._watchers = [w for w in self._routes._watchers if w is not self]


@dataclass(frozen=True, slots=True)
class RegisterResult:
    """What a slave learns about its master (both None for masters)."""

    master_addr: str | None = None
    ha_server_addr: str | None = None


@dataclass(frozen=True, slots=True)
class Removal:
    """A broker address that left the registry, and why (for logs and metrics)."""

    broker_addr: str
    broker_name: str | None
    reason: str
    conn: Hashable | None = None
    #: the silence allowed to this broker (its own heartbeatTimeoutMillis or the default);
    #: for logs only, so not part of equality
    timeout_ms: int | None = field(default=None, compare=False)


def _read_only(topics: Mapping[str, QueueShape]) -> dict[str, QueueShape]:
    """A prime slave's topics as 5.x files them: write bit cleared."""
    return {t: (r, w, perm & ~PERM_WRITE, flag) for t, (r, w, perm, flag) in topics.items()}


class RouteTable:
    """All route state of one name server.

    ``generation`` increases whenever anything a route, the cluster info or a topic
    list shows has changed, so callers can cache encoded answers and drop them when
    it moves. A heartbeat re-registration with an unchanged DataVersion does not move it.
    """

    def __init__(self, clock: Clock = system_clock, default_timeout_ms: int = DEFAULT_BROKER_TIMEOUT_MS) -> None:
        self._clock = clock
        self.default_timeout_ms = default_timeout_ms
        #: topic -> its queues; the maps are shared between topics, never mutate them.
        self.topic_queue_table: TopicTable[QueueMap] = TopicTable()
        self.broker_addr_table: dict[str, _Group] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLive] = {}
        self.filter_server_table: dict[str, list[str]] = {}
        #: 5.x static topics: topic -> broker name -> mapping. As in Java 5, entries are
        #: replaced by later registrations but never removed.
        self.topic_mapping_table: dict[str, dict[str, TopicQueueMappingInfo]] = {}
        self._conn_addrs: dict[Hashable, set[str]] = {}
        # Sharing, so that memory follows the number of distinct layouts, not of topics:
        # QueueData per (broker, shape); QueueMaps interned by content (keyed by the ids
        # of their QueueData, which the interned map keeps alive); and a cache of
        # "map + this QueueData" / "map - this broker" results, whose entries hold their
        # operands so that no id in a key can be reused while the entry exists.
        self._pools: dict[str, dict[QueueShape, QueueData]] = {}
        self._pooled = 0
        self._maps: dict[tuple[tuple[str, int], ...], QueueMap] = {}
        self._maps_live_at_compaction = 0
        self._with_cache: dict[tuple[int, int], tuple[QueueMap, QueueData, QueueMap]] = {}
        self._without_cache: dict[tuple[int, str], tuple[QueueMap, QueueMap]] = {}
        #: broker name -> its master's last application (see _Applied); cleared
        #: whenever anything else writes queues (admin writes, removals: all rare).
        self._applied: dict[str, _Applied] = {}
        #: the applications' hash arrays by checksum, so that brokers with the same topic
        #: table (a cluster's brokers usually are) hold one array: 80 KB a 10k-topic broker
        self._hash_arrays: WeakValueDictionary[int, array] = WeakValueDictionary()
        #: by checksum as above: a shared hash array of a first registration's pieces, the
        #: table numbering and the entries its topics had when applied (``_note_entries``)
        self._entry_notes: dict[int, tuple[ref[array], object, array]] = {}
        #: what first registrations' tables read as, by their bytes, while their shared
        #: hash arrays live: a broker joining a cluster sends one of them, and its worker
        #: then reads nothing (``table_pieces.TwinTable``). Read by worker threads (get).
        self.twins: dict[TableKey, TwinTable] = {}
        #: 4.x slave address -> the key of the body it last registered with: 4.9.8 ignores
        #: a slave's topics, so the same body again (bar the DataVersion) changes nothing
        self._slave_bodies: dict[str, bytes] = {}
        self.generation = 0
        #: see watch_changes
        self._watchers: list[RouteChanges] = []

    def _changed(self) -> None:
        self.generation += 1

    def watch_changes(self) -> RouteChanges:
        """Start recording which topics and brokers writes touch (see RouteChanges)."""
        changes = RouteChanges(self)
        self._watchers.append(changes)
        return changes

    def _group_changed(self, broker_name: str) -> None:
        """A write to ``broker_name``'s group: every route listing the broker may change."""
        self._changed()
        for watcher in self._watchers:
            watcher.brokers.add(broker_name)

    def _filters_changed(self, broker_addr: str) -> None:
        """A write to ``broker_addr``'s filter servers, which routes list under the groups
        holding that address."""
        self._changed()
        names = [name for name, group in self.broker_addr_table.items() if broker_addr in group.addrs.values()]
        for watcher in self._watchers:
            watcher.brokers.update(names)

    # -------------------------------------------------------------- sharing ----

    def _pool(self, broker_name: str) -> dict[QueueShape, QueueData]:
        pool = self._pools.get(broker_name)
        if pool is None:
            pool = self._pools[broker_name] = {}
        return pool

    def _queue_data(self, broker_name: str, shape: QueueShape, pool: dict[QueueShape, QueueData] | None = None
                    ) -> QueueData:
        pool = self._pool(broker_name) if pool is None else pool
        qd = pool.get(shape)
        if qd is None:
            qd = QueueData(broker_name, *shape)
            if self._pooled < QUEUE_DATA_POOL_LIMIT:
                pool[shape] = qd
                self._pooled += 1
        return qd

    def _intern(self, items: Iterable[tuple[str, QueueData]]) -> QueueMap:
        m = QueueMap(items)
        key = tuple((name, id(qd)) for name, qd in m.items())
        found = self._maps.get(key)
        if found is not None:
            return found
        if len(self._maps) >= max(1024, 2 * self._maps_live_at_compaction):
            self._compact()
        self._maps[key] = m
        return m

    def _compact(self, live_maps: Iterable[QueueMap] | None = None) -> None:
        """Forget interned maps and cached transitions no topic uses any more; ``live_maps``,
        if given, are the maps the topics hold (else found by a pass over the topics)."""
        live = {id(m): m for m in (self.topic_queue_table.distinct_values() if live_maps is None else live_maps)}
        self._maps = {k: m for k, m in self._maps.items() if id(m) in live}
        self._maps_live_at_compaction = len(self._maps)
        self._with_cache.clear()
        self._without_cache.clear()

    def _with(self, queues: QueueMap, qd: QueueData) -> QueueMap:
        """``queues`` with ``qd`` set for its broker (appended if new, in place if not)."""
        key = (id(queues), id(qd))
        hit = self._with_cache.get(key)
        if hit is not None and hit[0] is queues and hit[1] is qd:
            return hit[2]
        out = self._intern([*queues.items(), (qd.broker_name, qd)] if qd.broker_name not in queues
                           else [(n, qd if n == qd.broker_name else q) for n, q in queues.items()])
        if len(self._with_cache) >= TRANSITION_CACHE_LIMIT:
            self._with_cache.clear()
        self._with_cache[key] = (queues, qd, out)
        return out

    def _without(self, queues: QueueMap, broker_name: str) -> QueueMap:
        key = (id(queues), broker_name)
        hit = self._without_cache.get(key)
        if hit is not None and hit[0] is queues:
            return hit[1]
        out = self._intern([(n, q) for n, q in queues.items() if n != broker_name])
        if len(self._without_cache) >= TRANSITION_CACHE_LIMIT:
            self._without_cache.clear()
        self._without_cache[key] = (queues, out)
        return out

    def queue_maps(self) -> int:
        """Distinct queue layouts in use (the memory benchmark reports it; O(topics))."""
        return len(self.topic_queue_table.distinct_values())

    # ------------------------------------------------------------ register ----

    def register_broker(
        self,
        cluster: str,
        broker_name: str,
        broker_addr: str,
        broker_id: int,
        ha_server_addr: str,
        data_version: DataVersion,
        topics: Mapping[str, QueueShape] | None,
        filter_servers: Sequence[str] | None = None,
        conn: Hashable | None = None,
        timeout_ms: int | None = None,
        enable_acting_master: bool | None = None,
        zone_name: str | None = None,
        mappings: Mapping[str, TopicQueueMappingInfo] | None = None,
        topics_key: bytes | None = None,
        topics_diff: TopicsDiff | None = None,
        staged: StagedTopics | None = None,
    ) -> RegisterResult:
        """REGISTER_BROKER, 4.9.8 semantics (spec 4.4 step 3), plus what 5.x adds for a
        5.x broker (one that sends ``enable_acting_master``; None means a 4.x broker):

        - the group keeps the last registration's acting-master flag and zone;
        - a slave with the group's lowest id ("prime slave", the master being gone)
          reports topics as a master would, with the write bit cleared;
        - with an unchanged DataVersion, topics the table lacks for this broker are
          still added (5.x isTopicConfigChanged); 4.9.8 ignores the whole body then;
        - ``mappings`` (static topics) are kept per topic and broker name.

        ``topics`` maps each topic to its queue shape (``TopicConfig.shape``;
        ``bodies.queue_shapes`` converts configs). ``filter_servers`` None means the body
        had no filter-server list at all (the pre-3.0.11 body), which leaves the
        filter-server table untouched.

        ``topics_key`` identifies the body apart from its DataVersion
        (``body_key.register_body_key``). ``topics`` None means "the body ``topics_key``
        names, which ``topics_applied`` said is in the table": nothing to apply, and
        the caller skipped parsing it (pass ``filter_servers`` None then).
        ``topics_diff``: ``topics`` diffed already (``TopicsDiff.of``), if it still applies.
        ``staged``: that diff applied to a copy of the table already (``stage_master_topics``),
        published here if it still applies (else applied again, in one piece); the caller
        holds it (``with staged:``).
        """
        if topics is None and not (broker_id == MASTER_ID and self.topics_applied(broker_name, broker_addr, topics_key)
                                   or broker_id != MASTER_ID and enable_acting_master is None
                                   and self.slave_body_applied(broker_addr, topics_key)):
            raise ValueError("topics None is only for a body topics_applied() or slave_body_applied() recognised")
        clusters = self.cluster_addr_table.get(cluster)
        if clusters is None:
            clusters = self.cluster_addr_table[cluster] = set()
        if broker_name not in clusters:
            clusters.add(broker_name)
            self._changed()

        first = False
        group = self.broker_addr_table.get(broker_name)
        if group is None:
            # An existing group keeps its original cluster even if this request names another.
            group = self.broker_addr_table[broker_name] = _Group(cluster, broker_name)
            first = True
            self._group_changed(broker_name)
        if (group.enable_acting_master, group.zone_name) != (enable_acting_master, zone_name):
            group.enable_acting_master, group.zone_name = enable_acting_master, zone_name
            self._group_changed(broker_name)
        addrs = group.addrs
        # A slave promoted to master moves from id 1 to id 0: drop its stale entry.
        stale = [bid for bid, addr in addrs.items() if addr == broker_addr and bid != broker_id]
        for bid in stale:
            del addrs[bid]
        previous = addrs.get(broker_id)
        if previous is None:
            first = True
        if previous != broker_addr or stale:
            addrs[broker_id] = broker_addr
            self._group_changed(broker_name)

        live = self.broker_live_table.get(broker_addr)
        five = enable_acting_master is not None
        prime_slave = five and broker_id != MASTER_ID and broker_id == min(addrs)
        if topics is None:
            pass  # the same topics as the application _applied remembers: all in place
        elif broker_id == MASTER_ID or prime_slave:
            if first or live is None or live.data_version != data_version:
                if prime_slave:
                    self._applied.pop(broker_name, None)
                    self._apply_topics(broker_name, _read_only(topics))
                else:
                    self._apply_master_topics(broker_name, broker_addr, topics, None if mappings else topics_key,
                                              topics_diff, staged)
                if mappings:
                    self._apply_mappings(mappings)
            elif five:
                missing = {t: shape for t, shape in topics.items()
                           if broker_name not in (self.topic_queue_table.get(t) or _EMPTY)}
                if missing:
                    self._applied.pop(broker_name, None)
                    self._apply_topics(broker_name, _read_only(missing) if prime_slave else missing)
            # Topics the broker no longer reports stay (4.9.8); delete them with deleteTopic.

        if live is not None and live.conn is not None and live.conn != conn:
            self._forget_conn(live.conn, broker_addr)
        self.broker_live_table[broker_addr] = BrokerLive(
            last_update_ms=self._clock(),
            data_version=data_version,
            conn=conn,
            ha_server_addr=ha_server_addr,
            timeout_ms=self.default_timeout_ms if timeout_ms is None else timeout_ms,
        )
        if conn is not None:
            self._conn_addrs.setdefault(conn, set()).add(broker_addr)

        if filter_servers is not None:
            if broker_id != MASTER_ID and enable_acting_master is None and topics_key is not None:
                self._slave_bodies[broker_addr] = topics_key
            else:
                self._slave_bodies.pop(broker_addr, None)
            if filter_servers:
                if self.filter_server_table.get(broker_addr) != list(filter_servers):
                    self.filter_server_table[broker_addr] = list(filter_servers)
                    self._filters_changed(broker_addr)
            elif self.filter_server_table.pop(broker_addr, None) is not None:
                self._filters_changed(broker_addr)

        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = self.broker_live_table.get(master_addr)
                if master_live is not None:
                    return RegisterResult(master_addr=master_addr, ha_server_addr=master_live.ha_server_addr)
        return RegisterResult()

    def topics_applied(self, broker_name: str, broker_addr: str, topics_key: bytes | None) -> bool:
        """Whether this master's last applied body was ``topics_key`` and nothing else
        has written the broker's queues since: re-applying it would change nothing."""
        applied = self._applied.get(broker_name)
        return (topics_key is not None and applied is not None and applied.key == topics_key
                and applied.broker_addr == broker_addr)

    def slave_body_applied(self, broker_addr: str, topics_key: bytes | None) -> bool:
        """Whether this 4.x slave's last registration had this body (bar the DataVersion):
        its filter servers are in place, and its topics count for nothing in 4.9.8."""
        return topics_key is not None and self._slave_bodies.get(broker_addr) == topics_key

    def applied_hashes(self, broker_name: str, broker_addr: str) -> array | None:
        """The pairs of this master's application on record, to diff a new body against
        (``TopicsDiff.of``) without the registry; never mutated, only replaced."""
        applied = self._applied.get(broker_name)
        return applied.hashes if applied is not None and applied.broker_addr == broker_addr else None

    def stage_master_topics(self, broker_name: str, broker_addr: str, broker_id: int, data_version: DataVersion,
                            diff: TopicsDiff) -> StagedTopics | None:
        """A staging of ``diff`` (see StagedTopics) for a master registration that will
        apply its topics, or None when it will not (same DataVersion as on record) or
        when ``diff`` is stale already (the registration then applies in one piece)."""
        group = self.broker_addr_table.get(broker_name)
        live = self.broker_live_table.get(broker_addr)
        registered = group is not None and group.addrs.get(broker_id) == broker_addr
        if broker_id != MASTER_ID or (registered and live is not None and live.data_version == data_version):
            return None
        if diff.base is not self.applied_hashes(broker_name, broker_addr):
            return None
        return StagedTopics(self, broker_name, broker_addr, diff)

    def _apply_master_topics(self, broker_name: str, broker_addr: str, topics: Mapping[str, QueueShape],
                             topics_key: bytes | None, diff: TopicsDiff | None,
                             staged: StagedTopics | None = None) -> None:
        """Apply only what changed since this master's last application: a (topic,
        shape) pair that was applied then and that nothing has overwritten since is
        in the table already. Hashes stand for the pairs (64-bit, salted per process)."""
        base = self.applied_hashes(broker_name, broker_addr)
        if staged is not None and staged.broker_name == broker_name and staged.usable(base):
            self.topic_queue_table = table = staged.finish()
            self._changed()
            shared = self._shared(staged.diff.hashes)
            self._applied[broker_name] = _Applied(broker_addr, topics_key, shared)
            noted = staged.noted
            if noted is not None and table.numbering is staged.numbering and (not noted or min(noted) >= 0):
                self._note_entries(shared, staged.numbering, noted)
            if staged.diff.table_key is not None and _notable(staged.diff):
                self._note_twin(staged.diff.table_key, shared, staged.diff.changed)
            return
        if diff is None or diff.base is not base:
            diff = TopicsDiff.of(topics, base)
        if diff.changed:
            self._apply_topics(broker_name, diff.changed)
        self._applied[broker_name] = _Applied(broker_addr, topics_key, self._shared(diff.hashes))

    def _note_entries(self, shared: array, numbering: object, entries: array) -> None:
        """Keep the entries a first registration's topics have in the table (in piece
        order), while its shared hash array lives: a broker joining the cluster next
        sends the same pieces (the same topics, in the same order) and finds them there
        without a lookup (``StagedTopics``). 4 bytes a topic per distinct table."""
        for key in [key for key, note in self._entry_notes.items() if note[0]() is None]:
            del self._entry_notes[key]
        self._entry_notes[zlib.crc32(shared)] = (ref(shared), numbering, entries)

    def _note_twin(self, key: TableKey, shared: array, changed: Mapping[str, QueueShape]) -> None:
        """Keep what a first registration's table read as, unless kept already; twins
        whose hash arrays are gone go (146 KB a 10^4-topic table)."""
        for gone in [k for k, twin in self.twins.items() if twin.hashes() is None]:
            del self.twins[gone]
        if key not in self.twins:
            twin = TwinTable.of(shared, changed)
            if twin is not None:
                self.twins[key] = twin

    def _entries_noted(self, diff: TopicsDiff, numbering: object) -> array | None:
        """The entries noted for ``diff``'s pieces under ``numbering`` (None: none)."""
        if not _notable(diff):
            return None
        note = self._entry_notes.get(zlib.crc32(diff.hashes))
        if note is None or note[1] is not numbering:
            return None
        shared = note[0]()
        return note[2] if shared is not None and shared == diff.hashes else None

    def _shared(self, hashes: array) -> array:
        """``hashes``, or an equal array another application holds already. An array
        only ever stands for its content (a diff against it is sound wherever the table
        holds every pair it hashes, which ``_applied`` being cleared on other writes
        keeps true), so equal ones are interchangeable; ~25 us for 10^4 topics. Equal
        piece hashes are equal table bytes, so the blocks worked out for one serve the
        other (``table_pieces.PieceHashes``): the kept array takes them if it has none."""
        key = zlib.crc32(hashes)
        known = self._hash_arrays.get(key)
        if known is not None and known == hashes:
            blocks = getattr(hashes, "blocks", None)
            if blocks is not None and isinstance(known, PieceHashes) and known.blocks is None:
                known.blocks = blocks
            return known
        self._hash_arrays[key] = hashes
        return hashes

    def _apply_topics(self, broker_name: str, topics: Mapping[str, QueueShape]) -> None:
        """The hot loop of a re-registration: a fleet broker reports 10^4 topics that
        mostly did not change, which costs a lookup and an identity check each."""
        if self.topic_queue_table.update_each(topics.items(), self._topic_change(broker_name)):
            self._changed()

    def _topic_change(self, broker_name: str) -> Callable[[QueueMap | None, QueueShape], QueueMap]:
        """A topic's queues with ``broker_name``'s set to a shape (for update_each).
        Topics share a handful of maps, so the answer for a (map, shape) seen before is
        looked up: a fleet broker's 10^4 topics make a few distinct transitions. The
        memo holds each map it keys by id, so no id in it can be reused meanwhile."""
        pool = self._pool(broker_name)
        memo: dict[tuple[int, QueueShape], tuple[QueueMap | None, QueueMap]] = {}

        def change(queues: QueueMap | None, shape: QueueShape) -> QueueMap:
            key = (id(queues), shape)
            hit = memo.get(key)
            if hit is not None and hit[0] is queues:
                return hit[1]
            qd = pool.get(shape)
            if qd is None:
                qd = self._queue_data(broker_name, shape, pool)
            if queues is None:
                out = self._with(_EMPTY, qd)
            else:
                old = queues.get(broker_name)
                out = queues if old is qd or (old is not None and old == qd) else self._with(queues, qd)
            memo[key] = (queues, out)
            return out

        return change

    def _apply_mappings(self, mappings: Mapping[str, TopicQueueMappingInfo]) -> None:
        """Java 5 files each mapping under the broker name the mapping itself names."""
        for topic, info in mappings.items():
            per_broker = self.topic_mapping_table.setdefault(topic, {})
            if per_broker.get(str(info.bname)) != info:
                per_broker[str(info.bname)] = info
                self._changed()
                for watcher in self._watchers:
                    watcher.topics.add(topic)

    def query_data_version(self, broker_addr: str, data_version: DataVersion) -> tuple[bool, DataVersion | None]:
        """QUERY_DATA_VERSION: (changed, stored version). Refreshes liveness only when
        unchanged, as 4.9.8 does: a changed broker must register in full to stay alive."""
        live = self.broker_live_table.get(broker_addr)
        if live is None:
            return True, None
        changed = live.data_version != data_version
        if not changed:
            live.last_update_ms = self._clock()
        return changed, live.data_version

    def heartbeat(self, broker_addr: str) -> bool:
        """BROKER_HEARTBEAT (5.x): refresh liveness; False when the broker is unknown."""
        live = self.broker_live_table.get(broker_addr)
        if live is None:
            return False
        live.last_update_ms = self._clock()
        return True

    # ------------------------------------------------------------- removal ----

    def unregister_broker(self, cluster: str, broker_name: str, broker_addr: str, broker_id: int) -> None:
        """UNREGISTER_BROKER, 4.9.8: the entry with key ``broker_id`` goes, whatever its address."""
        self._applied.clear()
        self._slave_bodies.pop(broker_addr, None)
        live = self.broker_live_table.pop(broker_addr, None)
        if live is not None and live.conn is not None:
            self._forget_conn(live.conn, broker_addr)
        if self.filter_server_table.pop(broker_addr, None) is not None:
            self._filters_changed(broker_addr)
        group = self.broker_addr_table.get(broker_name)
        if group is None:
            return
        if group.addrs.pop(broker_id, None) is not None:
            self._group_changed(broker_name)
        if not group.addrs:
            self._drop_group(broker_name, cluster)
        elif group.master_gone():
            self.wipe_write_perm(broker_name)

    def _drop_group(self, broker_name: str, cluster: str | None) -> None:
        del self.broker_addr_table[broker_name]
        names: Iterable[str] = [cluster] if cluster is not None else list(self.cluster_addr_table)
        for name in names:
            members = self.cluster_addr_table.get(name)
            if members is not None and broker_name in members:
                members.discard(broker_name)
                if not members:
                    del self.cluster_addr_table[name]
                if cluster is None:
                    break  # channel destroy: only the first cluster holding it (6.2 step 4)
        # Every map some topic holds goes through ``without`` once, so what it gives back
        # is every map the topics hold after: the compaction needs no pass of its own.
        held: dict[int, QueueMap] = {}

        def without(queues: QueueMap) -> QueueMap | None:
            out = (self._without(queues, broker_name) or None) if broker_name in queues else queues
            if out is not None:
                held[id(out)] = out
            return out

        self.topic_queue_table.remap(without)
        # No topic holds this broker's QueueData any more: forget its pool, and the maps
        # and transitions that held them, or broker churn grows the server for ever.
        self._pooled -= len(self._pools.pop(broker_name, ()))
        self._compact(held.values())
        self._group_changed(broker_name)

    def _remove_addr(self, broker_addr: str, reason: str, conn: Hashable | None) -> Removal:
        """The channel-destroy cascade (spec 6.2 steps 2-4) for one address."""
        self._applied.clear()
        self._slave_bodies.pop(broker_addr, None)
        live = self.broker_live_table.pop(broker_addr, None)
        timeout = None if live is None else live.timeout_ms
        if live is not None and live.conn is not None:
            self._forget_conn(live.conn, broker_addr)
        if self.filter_server_table.pop(broker_addr, None) is not None:
            self._filters_changed(broker_addr)
        for name, group in self.broker_addr_table.items():
            hit = next((bid for bid, addr in group.addrs.items() if addr == broker_addr), None)
            if hit is None:
                continue
            del group.addrs[hit]
            self._group_changed(name)
            if not group.addrs:
                self._drop_group(name, None)
            elif group.master_gone():
                # 5.x: nobody takes writes for this group now; clients see read-only queues
                # (the slave acts as master for reads) instead of failing sends.
                self.wipe_write_perm(name)
            return Removal(broker_addr, name, reason, conn, timeout)
        return Removal(broker_addr, None, reason, conn, timeout)

    def _forget_conn(self, conn: Hashable, broker_addr: str) -> None:
        addrs = self._conn_addrs.get(conn)
        if addrs is not None:
            addrs.discard(broker_addr)
            if not addrs:
                del self._conn_addrs[conn]

    def connection_closed(self, conn: Hashable) -> list[Removal]:
        """A connection closed, failed or idled out: remove the brokers registered on it.

        Deviation: 4.9.8 removes only the first broker found for the channel and leaves
        others on the same connection to expire 120 s later; we remove all of them.
        """
        addrs = self._conn_addrs.pop(conn, None)
        if not addrs:
            return []
        return [self._remove_addr(addr, "connection closed", conn) for addr in sorted(addrs)]

    def scan_not_active(self) -> list[Removal]:
        """Drop brokers whose last registration is older than their timeout. The caller
        closes the returned connections, as the Java scan does."""
        now = self._clock()
        dead = [
            (addr, live.conn)
            for addr, live in self.broker_live_table.items()
            if live.last_update_ms + live.timeout_ms < now
        ]
        return [self._remove_addr(addr, "expired", conn) for addr, conn in dead]

    # ---------------------------------------------------------------- reads ----

    def queues_of(self, topic: str) -> QueueMap | None:
        """The topic's queue map. Until ``generation`` moves, topics with the same map
        (by identity) have the same route, so callers may cache per map."""
        return self.topic_queue_table.get(topic)

    def pickup_route(self, topic: str) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC assembly (spec 4.6); None means TOPIC_NOT_EXIST."""
        queues = self.topic_queue_table.get(topic)
        if not queues:
            return None
        brokers = []
        filters: dict[str, list[str]] = {}
        for name in queues:
            group = self.broker_addr_table.get(name)
            if group is None:
                continue
            brokers.append(group.frozen())
            if self.filter_server_table:
                for addr in group.addrs.values():
                    fs = self.filter_server_table.get(addr)
                    if fs is not None:
                        filters[addr] = list(fs)
        if not brokers:
            return None
        mapping = self.topic_mapping_table.get(topic)
        return TopicRouteData(queue_datas=tuple(queues.values()), broker_datas=tuple(brokers),
                              filter_server_table=filters,
                              topic_queue_mapping_by_broker=None if mapping is None else dict(mapping))

    def has_mappings(self, topic: str) -> bool:
        """Whether the topic's route names static-topic mappings (so it is not shared)."""
        return topic in self.topic_mapping_table

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table={name: g.frozen() for name, g in self.broker_addr_table.items()},
            cluster_addr_table={name: tuple(members) for name, members in self.cluster_addr_table.items()},
        )

    def all_topics(self) -> list[str]:
        return self.topic_queue_table.names_where()

    def topics_by_cluster(self, cluster: str) -> list[str]:
        members = self.cluster_addr_table.get(cluster)
        if not members:
            return []
        return self.topic_queue_table.names_where(lambda queues: not members.isdisjoint(queues))

    def system_topics(self) -> tuple[list[str], str | None]:
        """Cluster and broker names (brokers auto-create topics named after both), plus
        one address of the first broker group, where admin tools ask for the rest.
        "First" follows Java's HashMap order so both servers name the same broker."""
        names: list[str] = []
        for cluster, members in self.cluster_addr_table.items():
            names.append(cluster)
            names.extend(members)
        broker_addr = None
        for name in hashmap_order(self.broker_addr_table):
            addrs = self.broker_addr_table[name].addrs
            if addrs:
                broker_addr = addrs[min(addrs)]
            break
        return hashmap_order(dict.fromkeys(names)), broker_addr

    def topics_by_sys_flag(self, want_unit: bool | None, want_unit_sub: bool | None) -> list[str]:
        """Unit topic lists (311-313): only the topic's first QueueData is examined, as in Java."""
        def wanted(queues: QueueMap) -> bool:
            flag = next(iter(queues.values())).topic_sys_flag
            return (want_unit is None or bool(flag & FLAG_UNIT) == want_unit) and \
                (want_unit_sub is None or bool(flag & FLAG_UNIT_SUB) == want_unit_sub)

        return self.topic_queue_table.names_where(wanted)

    # -------------------------------------------------------------- writes ----

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        """DELETE_TOPIC_IN_NAMESRV; with a cluster, only that cluster's queues go."""
        self._applied.clear()
        if not cluster:
            if self.topic_queue_table.pop(topic, None) is not None:
                self._changed()
            return
        queues = self.topic_queue_table.get(topic)
        members = self.cluster_addr_table.get(cluster)
        if queues is None or not members:
            return
        for name in members:
            if name in queues:
                queues = self._without(queues, name)
                self._changed()
        if queues:
            self.topic_queue_table[topic] = queues
        else:
            del self.topic_queue_table[topic]

    def _rewrite_perm(self, broker_name: str, wipe: bool) -> int:
        self._applied.clear()
        pool = self._pools.get(broker_name)  # no pool for a name no topic has (a mistyped -b)
        visited = self.topic_queue_table.count_where(lambda queues: broker_name in queues)

        def rewrite(queues: QueueMap) -> QueueMap:
            qd = queues.get(broker_name)
            if qd is None:
                return queues
            perm = qd.perm & ~PERM_WRITE if wipe else PERM_READ | PERM_WRITE
            if perm == qd.perm:
                return queues
            shape = (qd.read_queue_nums, qd.write_queue_nums, perm, qd.topic_sys_flag)
            return self._with(queues, self._queue_data(broker_name, shape, pool))

        if self.topic_queue_table.remap(rewrite):
            self._changed()
        return visited

    def wipe_write_perm(self, broker_name: str) -> int:
        """Clear the write bit of every topic of the broker; returns topics visited."""
        return self._rewrite_perm(broker_name, wipe=True)

    def add_write_perm(self, broker_name: str) -> int:
        """Set perm to exactly RW (6) on every topic of the broker; returns topics visited."""
        return self._rewrite_perm(broker_name, wipe=False)

    def register_topic(self, topic: str, queue_datas: Sequence[QueueData]) -> None:
        """REGISTER_TOPIC_IN_NAMESRV (5.x): add or replace QueueData per brokerName. As in
        5.x, an existing topic keeps what was applied before the first unknown broker,
        and a new topic is created only when every broker is known."""
        self._applied.clear()
        existing = self.topic_queue_table.get(topic)
        queues = existing if existing is not None else _EMPTY
        for given in queue_datas:
            if given.broker_name not in self.broker_addr_table:
                break
            if queues.get(given.broker_name) != given:
                qd = self._queue_data(given.broker_name, (given.read_queue_nums, given.write_queue_nums, given.perm,
                                                          given.topic_sys_flag))
                queues = self._with(queues, qd)
                if existing is not None:
                    self.topic_queue_table[topic] = queues
                    self._changed()
        else:
            if existing is None and queues:
                self.topic_queue_table[topic] = queues
                self._changed()

    # ----------------------------------------------------------- snapshot ----

    def export_state(self) -> dict[str, Any]:
        """The route tables as plain data (for msgpack), without connections or times:
        a restored entry counts as registered at import time."""
        return {
            "topics": {t: [[q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag]
                           for q in queues.values()] for t, queues in self.topic_queue_table.items()},
            "brokers": {n: [g.cluster, [[bid, addr] for bid, addr in g.addrs.items()], g.enable_acting_master,
                            g.zone_name] for n, g in self.broker_addr_table.items()},
            "mappings": {t: {b: info.to_obj() for b, info in per.items()} for t, per in self.topic_mapping_table.items()},
            "clusters": {c: sorted(members) for c, members in self.cluster_addr_table.items()},
            "live": {addr: [live.data_version.counter, live.data_version.timestamp, live.data_version.state_version,
                            live.ha_server_addr, live.timeout_ms] for addr, live in self.broker_live_table.items()},
            "filters": {addr: list(fs) for addr, fs in self.filter_server_table.items()},
        }

    def import_state(self, state: Mapping[str, Any]) -> None:
        """Replace the tables with an exported state; every broker is live as of now and
        expires like any other unless it registers again (on a new connection). All or
        nothing: malformed state raises (KeyError, TypeError, ValueError, IndexError)
        before any table is touched."""
        now = self._clock()
        topics: TopicTable[QueueMap] = TopicTable()
        for t, queues in state["topics"].items():
            m = _EMPTY
            for q in queues:
                m = self._with(m, self._queue_data(str(q[0]), (int(q[1]), int(q[2]), int(q[3]), int(q[4]))))
            topics[str(t)] = m
        groups = {
            # snapshots from before 5.x fields have two items per group
            str(n): _Group(str(g[0]), str(n), {int(bid): str(addr) for bid, addr in g[1]},
                           None if len(g) < 3 or g[2] is None else bool(g[2]),
                           None if len(g) < 4 or g[3] is None else str(g[3]))
            for n, g in state["brokers"].items()
        }
        mappings = {str(t): {str(b): TopicQueueMappingInfo.from_obj(info) for b, info in per.items()}
                    for t, per in state.get("mappings", {}).items()}
        clusters = {str(c): {str(m) for m in members} for c, members in state["clusters"].items()}
        live = {
            str(addr): BrokerLive(now, DataVersion(int(v[0]), int(v[1]), None if v[2] is None else int(v[2])),
                                  None, str(v[3]), int(v[4]))
            for addr, v in state["live"].items()
        }
        filters = {str(a): [str(x) for x in fs] for a, fs in state["filters"].items()}
        self.topic_queue_table, self.broker_addr_table, self.cluster_addr_table = topics, groups, clusters
        self.broker_live_table, self.filter_server_table = live, filters
        self.topic_mapping_table = mappings
        self._conn_addrs = {}
        self._applied.clear()
        self._slave_bodies.clear()
        for watcher in self._watchers:
            watcher.everything = True
        self._changed()

    def broker_member_group(self, cluster: str, broker_name: str) -> BrokerData:
        """GET_BROKER_MEMBER_GROUP: the group's addresses under the names the request
        gave (5.x builds the answer from the request's cluster and broker name)."""
        group = self.broker_addr_table.get(broker_name)
        return BrokerData(cluster=cluster, broker_name=broker_name, broker_addrs={} if group is None else dict(group.addrs))

