"""What divergent routes do to clients: consumer rebalancing and producer queue choice.

Consumers (spec 8.4): each consumer of a group computes its own share from the route of
the name server it happens to use, but the consumer ids come from a broker, so all of
them count the same k. When their queue lists differ, some queues get no owner and
others get two. Which consumer asks which server is chance (spec 8.1), so we report the
worst assignment of the N consumers over the views: the one maximising
``unassigned + doubly_assigned`` queues.

Producers (spec 8.3): each producer round-robins over its view's write-queue list, so a
broker's share of writes is its fraction of that list; ``hash % len(list)`` selectors
break as soon as two lists differ.

The search uses one integer bitmask per (consumer, view) over the union of queues, so an
assignment costs N OR/AND operations; and it is memoised on the distinct queue lists,
because a broker lost on one server makes thousands of topics differ in the same shape.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from typing import Callable, Mapping, Sequence

from mqnamesrv.protocol.bodies import TopicRouteData
from mqnamesrv.protocol.codes import MASTER_ID, PERM_READ, PERM_WRITE

from .canonical import RouteCanon, canonical_route, route_from_key, route_key, route_mappings
from .impact_model import (
    BrokerShare, ConsumerAssignment, ConsumerImpact, ProducerImpact, ProducerView, Queue, TopicImpact,
)

Allocator = Callable[[Sequence[Queue], int, int], tuple[Queue, ...]]

#: Exhaustive search up to this many assignments (views ** consumers): 2 views x 12
#: consumers, 3 x 7, 4 x 6 or 5 x 5. It keeps one topic's search at a few milliseconds;
#: larger spaces use the local search of ``_local_search`` and report ``exact=False``.
EXACT_LIMIT = 4096


def _check_index(index: int, count: int) -> None:
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"consumer index {index} out of range for {count} consumers")


def allocate_averagely(queues: Sequence[Queue], index: int, count: int) -> tuple[Queue, ...]:
    """AllocateMessageQueueAveragely: the queues consumer ``index`` of ``count`` takes from
    ``queues`` (already sorted, as RebalanceImpl sorts them). Contiguous blocks; the
    first ``n % count`` consumers take one extra queue."""
    _check_index(index, count)
    n = len(queues)
    rest = n % count
    if n <= count:
        size = 1
    else:
        size = n // count + 1 if rest > 0 and index < rest else n // count
    start = index * size if rest > 0 and index < rest else index * size + rest
    take = min(size, n - start)
    return tuple(queues[start:start + take]) if take > 0 else ()


def allocate_by_circle(queues: Sequence[Queue], index: int, count: int) -> tuple[Queue, ...]:
    """AllocateMessageQueueAveragelyByCircle: queues index, index+count, index+2*count..."""
    _check_index(index, count)
    return tuple(queues[index::count])


STRATEGIES: dict[str, Allocator] = {"averagely": allocate_averagely, "circle": allocate_by_circle}


def consumer_queues(route: TopicRouteData | None) -> tuple[Queue, ...]:
    """A consumer's queues, sorted (spec 8.4): every QueueData with the READ bit gives
    ``brokerName/0 .. readQueueNums-1``; masters are not required. No route, no queues."""
    return _read_queues(canonical_route(route))


def producer_queues(route: TopicRouteData | None) -> tuple[Queue, ...]:
    """A producer's write queues in its round-robin order (spec 8.3).

    A non-empty orderTopicConf wins (``broker:count;...`` in written order, perms and
    masters unchecked). A malformed one gives no queues: Java's parser throws and the
    producer keeps no usable route from that answer. Otherwise QueueDatas sorted by
    broker name with the WRITE bit whose BrokerData has a master (id 0).
    """
    return _write_queues(canonical_route(route))


#: 5.x MixAll.LOGICAL_QUEUE_MOCK_BROKER_PREFIX: the "broker" of a static topic's logical queues.
LOGICAL_QUEUE_BROKER_PREFIX = "__syslo__"


def _logical_queues(route: RouteCanon) -> tuple[Queue, ...]:
    """A static topic's queues as 5.x clients see them (ClientMetadata.
    topicRouteData2EndpointsForStaticTopic): per scope, logical ids 0 .. the largest
    totalQueues - 1 under a mock broker name, whatever the physical queues are."""
    totals: dict[str, int] = {}
    for _, scope, total, _, _, _, _ in route_mappings(route):
        if scope is not None:
            totals[scope] = max(totals.get(scope, 0), total)
    out: list[Queue] = []
    for scope, total in totals.items():
        # TopicQueueMappingUtils.getMockBrokerName drops the global scope's leading "__"
        mock = LOGICAL_QUEUE_BROKER_PREFIX + (scope[2:] if scope == "__global__" else scope)
        out.extend((mock, i) for i in range(total))
    return tuple(sorted(out, key=lambda q: (q[1], q[0])))


def _read_queues(route: RouteCanon | None) -> tuple[Queue, ...]:
    if route is None:
        return ()
    if route_mappings(route):
        return tuple(sorted(_logical_queues(route)))
    # A set, as Java's topicRouteData2TopicSubscribeInfo builds a HashSet.
    return tuple(sorted({(name, i) for name, perm, read, _, _ in route[0] if perm & PERM_READ for i in range(read)}))


def _write_queues(route: RouteCanon | None) -> tuple[Queue, ...]:
    if route is None:
        return ()
    if route[3]:
        return _order_conf_queues(route[3])
    if route_mappings(route):
        return _logical_queues(route)  # sorted by queue id, as 5.x producers sort them
    # Java takes the first BrokerData of that name; a name server never sends two, and
    # the canonical form has lost list order, so "first" here is first in sorted order.
    masters: dict[str, bool] = {}
    for name, _, addrs, *_ in route[1]:
        masters.setdefault(name, any(broker_id == MASTER_ID for broker_id, _ in addrs))
    out: list[Queue] = []
    for name, perm, _, write, _ in route[0]:  # already sorted by broker name
        if perm & PERM_WRITE and masters.get(name, False):
            out.extend((name, i) for i in range(write))
    return tuple(out)


def _order_conf_queues(conf: str) -> tuple[Queue, ...]:
    items = conf.split(";")
    while items and not items[-1]:  # Java's split drops trailing empty strings
        items.pop()
    out: list[Queue] = []
    for item in items:
        parts = item.split(":")
        try:
            count = int(parts[1])
        except (IndexError, ValueError):
            return ()
        out.extend((parts[0], i) for i in range(count))
    return tuple(out)


# ---------------------------------------------------------------- consumers ----

_Worst = tuple[tuple[int, ...], tuple[Queue, ...], tuple[Queue, ...], bool, int]


def _score(masks: Sequence[Sequence[int]], choice: Sequence[int], full: int) -> int:
    once = twice = 0
    for consumer, view in enumerate(choice):
        mask = masks[consumer][view]
        twice |= once & mask
        once |= mask
    return (full & ~once).bit_count() + twice.bit_count()


def _local_search(masks: Sequence[Sequence[int]], views: int, full: int) -> tuple[tuple[int, ...], int]:
    """Hill climbing, one consumer's server at a time, from every all-on-one-server start
    and every rotation (consumer i on view (i + s) % views); keeps the best local maximum.
    Deterministic, and at most a few hundred evaluations per start in practice."""
    n = len(masks)
    starts = [[d] * n for d in range(views)] + [[(i + s) % views for i in range(n)] for s in range(views)]
    best: tuple[int, ...] = tuple(starts[0])
    best_score, checked = -1, 0
    for choice in starts:
        score = _score(masks, choice, full)
        checked += 1
        improved = True
        while improved:
            improved = False
            for consumer in range(n):
                for view in range(views):
                    if view == choice[consumer]:
                        continue
                    old, choice[consumer] = choice[consumer], view
                    new = _score(masks, choice, full)
                    checked += 1
                    if new > score:
                        score, improved = new, True
                    else:
                        choice[consumer] = old
        if score > best_score:
            best, best_score = tuple(choice), score
    return best, checked


@functools.lru_cache(maxsize=1024)
def _worst_case(lists: tuple[tuple[Queue, ...], ...], consumers: int, strategy: str) -> _Worst:
    """Worst assignment of ``consumers`` over the distinct sorted queue ``lists``:
    (view index per consumer, unassigned, doubly assigned, exact, assignments checked).
    Ties keep the first assignment in lexicographic order of view indices."""
    allocate = STRATEGIES[strategy]
    universe = sorted(set().union(*lists))
    bit = {q: 1 << i for i, q in enumerate(universe)}
    # Both strategies give consumer i nothing from a list of at most i queues, so only the
    # first (longest list) consumers take part: a group far larger than the topic's queue
    # count costs no more to search than one consumer per queue. The others stay on view 0,
    # which keeps the lexicographic tie-break.
    active = min(consumers, max(len(lst) for lst in lists))
    masks = [[sum(bit[q] for q in allocate(lst, i, consumers)) for lst in lists] for i in range(active)]
    full = (1 << len(universe)) - 1
    if len(lists) ** active <= EXACT_LIMIT:
        best: tuple[int, ...] = ()
        best_score = -1
        for choice in itertools.product(range(len(lists)), repeat=active):
            score = _score(masks, choice, full)
            if score > best_score:
                best, best_score = choice, score
        exact, checked = True, len(lists) ** active
    else:
        best, checked = _local_search(masks, len(lists), full)
        exact = False
    best = best + (0,) * (consumers - active)
    counts = Counter(q for i, d in enumerate(best[:active]) for q in allocate(lists[d], i, consumers))
    unassigned = tuple(q for q in universe if counts[q] == 0)
    doubly = tuple(q for q in universe if counts[q] > 1)
    return best, unassigned, doubly, exact, checked


def _consumer_impact(servers: Sequence[str], reads: Sequence[tuple[Queue, ...]], consumers: int,
                     strategy: str) -> ConsumerImpact:
    holders: dict[tuple[Queue, ...], list[str]] = {}
    for server, queues in zip(servers, reads):
        holders.setdefault(queues, []).append(server)
    universe = tuple(sorted(set().union(*reads)))
    if len(holders) < 2:
        return ConsumerImpact(universe, (), (), (), True, 0)
    lists = tuple(holders)
    choice, unassigned, doubly, exact, checked = _worst_case(lists, consumers, strategy)
    allocate = STRATEGIES[strategy]
    worst = tuple(
        ConsumerAssignment(f"c{i + 1}", tuple(holders[lists[d]]), allocate(lists[d], i, consumers))
        for i, d in enumerate(choice)
    )
    return ConsumerImpact(universe, unassigned, doubly, worst, exact, checked)


# ---------------------------------------------------------------- producers ----


def _shares(queues: Sequence[Queue], brokers: Sequence[str], agreed: Mapping[str, float]) -> tuple[BrokerShare, ...]:
    counts = Counter(b for b, _ in queues)
    total = len(queues)
    out = []
    for broker in brokers:
        share = round(counts[broker] / total, 4) if total else 0.0
        out.append(BrokerShare(broker, counts[broker], share, round(share - agreed.get(broker, share), 4)))
    return tuple(out)


def _producer_impact(servers: Sequence[str], writes: Sequence[tuple[Queue, ...]]) -> ProducerImpact:
    holders: dict[tuple[Queue, ...], list[str]] = {}
    for server, queues in zip(servers, writes):
        holders.setdefault(queues, []).append(server)
    # Most servers, then the longer list; max() keeps the first (earliest server) on ties.
    agreed = max(holders, key=lambda lst: (len(holders[lst]), len(lst)))
    brokers = sorted({b for lst in holders for b, _ in lst})
    agreed_rows = _shares(agreed, brokers, {})
    agreed_share = {row.broker: row.share for row in agreed_rows}
    rows = {lst: _shares(lst, brokers, agreed_share) for lst in holders}
    views = tuple(
        ProducerView(server, queues, rows[queues], queues == agreed) for server, queues in zip(servers, writes)
    )
    return ProducerImpact(
        tuple(holders[agreed]), 2 * len(holders[agreed]) > len(servers), agreed, agreed_rows, views, len(holders) > 1,
    )


def check_arguments(consumers: int, strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown allocation strategy {strategy!r}; expected one of {sorted(STRATEGIES)}")
    if consumers < 1:
        raise ValueError(f"consumers must be at least 1, got {consumers}")


def impact(topic: str, routes_by_server: Mapping[str, TopicRouteData | None], consumers: int = 2,
           strategy: str = "averagely") -> TopicImpact:
    """Client impact of one topic's routes, one entry per answering server (None = the
    server answered TOPIC_NOT_EXIST: its clients get no queues; a long-running client
    would keep its previous route, spec 8.2, so this is the fresh-client case).

    Cheap when the views agree: no search is run. Raises ValueError for an unknown
    ``strategy`` (see ``STRATEGIES``), ``consumers < 1`` or no servers.
    """
    answers = tuple((server, route_key(route)) for server, route in routes_by_server.items())
    return impact_canonical(topic, answers, consumers, strategy)


def impact_canonical(topic: str, answers: Sequence[tuple[str, bytes | None]], consumers: int = 2,
                     strategy: str = "averagely") -> TopicImpact:
    """``impact`` over ``(server, route key)`` pairs (canonical.route_key), as diff_views
    and ``compare.differing_routes`` hold them."""
    check_arguments(consumers, strategy)
    if not answers:
        raise ValueError(f"no server answered for topic {topic!r}")
    shape = _impact_of(tuple(answers), consumers, strategy)
    return TopicImpact(topic, shape.strategy, shape.consumers, shape.servers, shape.consumer, shape.producer)


@functools.lru_cache(maxsize=4096)
def _impact_of(answers: tuple[tuple[str, bytes | None], ...], consumers: int, strategy: str) -> TopicImpact:
    """The impact with an empty topic name, memoised on the answers: topics that differ
    in the same way (same brokers, same queue counts) share one computation."""
    servers = tuple(server for server, _ in answers)
    queues: dict[bytes | None, tuple[tuple[Queue, ...], tuple[Queue, ...]]] = {}
    for _, key in answers:
        if key not in queues:
            route = route_from_key(key)
            queues[key] = (_read_queues(route), _write_queues(route))
    reads = [queues[key][0] for _, key in answers]
    writes = [queues[key][1] for _, key in answers]
    return TopicImpact(
        "", strategy, consumers, servers,
        _consumer_impact(servers, reads, consumers, strategy),
        _producer_impact(servers, writes),
    )
