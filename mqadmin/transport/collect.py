"""Ask every name server for everything ``diff-namesrv`` compares: one ServerView each.

Shared by ``diff-namesrv`` and ``snapshot``. Per server, the few whole-server
questions (cluster info 106, topic list 206 or 224, KV lists 219, config 319) go
through ``NamesrvConnection``'s typed calls, and the routes (105, one request per
topic, so tens of thousands) through a ``RoutePump`` pipelining them on a second
connection (route_pump.py says why it is a connection of its own).

Failures follow the absence rule of ``mqadmin.diff.model``: a question that failed
leaves its key out of the view and adds a line to ``ServerView.failures``; only a
server that cannot be reached (connect or first request), or that failed every
question, gets ``error``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Callable, Iterable, Sequence

from mqnamesrv.protocol.bodies import ClusterInfo, TopicRouteData
from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG, RequestCode

from .client import NamesrvConnection
from ..diff import ServerView
from ..errors import QueryNotFound, ServerFailure
from .route_pump import RouteBodies, RoutePump

#: progress(addr, routes answered, routes to ask) while routes arrive
Progress = Callable[[str, int, int], None]


async def collect_views(
    addrs: Sequence[str],
    *,
    topics: Sequence[str] | None = None,
    cluster: str | None = None,
    kv_namespaces: Sequence[str] = (ORDER_TOPIC_CONFIG,),
    include_config: bool = False,
    timeout: float = 3.0,
    concurrency: int = 64,
    progress: Progress | None = None,
    route_bodies: RouteBodies | None = None,
) -> list[ServerView]:
    """What each of ``addrs`` holds, one ServerView per address in the given order.

    ``topics=None`` asks the route of every topic in that server's topic list plus, so
    that servers are comparable, of every topic in any server's list (a topic unknown to
    one server is then ``topics[t] = None`` there). ``cluster`` takes the topic lists
    from GET_TOPICS_BY_CLUSTER and keeps only that cluster in the cluster info. Given
    ``topics``, exactly those routes are asked and ``topic_list`` keeps only them.
    A KV namespace the server never saw is an empty table.

    ``timeout`` bounds each connect and whole-server question, and the silence of the
    route requests: a server that leaves every route request in flight unanswered for
    ``timeout`` seconds is given up on for the rest (a budget for the whole collection
    would have to grow with the topic count). ``latency_ms`` is the round trip of the
    first request (cluster info), connect excluded. ``progress(addr, done, total)`` is
    called as routes arrive (about every 0.5 % of them, and at the end).
    ``route_bodies`` decodes each distinct route body once; a caller asking again
    (``snapshot``, each round) passes the same one, so that unchanged routes are not
    decoded again and come back as the same objects.

    Never raises for a server's failure; raises ValueError for a bad argument.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    union = None if topics is not None else _TopicUnion(len(addrs))
    asked = None if topics is None else list(dict.fromkeys(topics))
    bodies = RouteBodies() if route_bodies is None else route_bodies  # shared: equal bodies decoded once in all
    servers = [
        _Server(addr, asked, union, cluster, tuple(kv_namespaces), include_config, timeout, concurrency, progress,
                bodies)
        for addr in addrs
    ]
    return _Views(await asyncio.gather(*(s.collect() for s in servers)))


class _Views(list[ServerView]):
    """The result list, with a short repr.

    On Python 3.11 ``asyncio.run(main())`` ends with ``signal.getsignal(SIGINT)``, which
    formats a ValueError holding the repr of the main task, result included: a full
    repr of 10,000 routes x 5 servers costs seconds. ``asyncio.run(collect_views(...))``
    pays nothing for it with this repr.
    """

    def __repr__(self) -> str:
        return f"<{len(self)} ServerViews: {', '.join(v.addr for v in self)}>"


class _TopicUnion:
    """The union of every server's topic list, known once each server has given its
    own (or failed to). Servers start on their own topics before it is known."""

    def __init__(self, servers: int) -> None:
        self._waiting = servers
        self._topics: dict[str, None] = {}
        self._ready = asyncio.Event()
        if servers == 0:
            self._ready.set()

    async def contribute(self, topics: Iterable[str] | None) -> list[str]:
        """Add one server's list (None: it has none) and wait for everyone else's."""
        if topics is not None:
            self._topics.update(dict.fromkeys(topics))
        self._waiting -= 1
        if self._waiting == 0:
            self._ready.set()
        await self._ready.wait()
        return list(self._topics)


class _Server:
    """One server's collection: its connections, its answers, its failures."""

    def __init__(self, addr: str, topics: list[str] | None, union: _TopicUnion | None, cluster: str | None,
                 kv_namespaces: tuple[str, ...], include_config: bool, timeout: float, concurrency: int,
                 progress: Progress | None, bodies: RouteBodies) -> None:
        self.addr = addr
        self.topics = topics
        self.union = union
        self.cluster = cluster
        self.kv_namespaces = kv_namespaces
        self.include_config = include_config
        self.timeout = timeout
        self.concurrency = concurrency
        self.progress = progress
        self.bodies = bodies
        self.failures: list[str] = []
        self.contributed = False

    async def collect(self) -> ServerView:
        try:
            return await self._collect()
        finally:
            if not self.contributed:  # never leave the other servers waiting for us
                await self._contribute(None)

    async def _contribute(self, topics: Iterable[str] | None) -> list[str]:
        self.contributed = True
        return [] if self.union is None else await self.union.contribute(topics)

    async def _collect(self) -> ServerView:
        try:
            conn = await NamesrvConnection.connect(self.addr, self.timeout)
        except ServerFailure as exc:
            return ServerView(self.addr, error=exc.with_request(RequestCode.GET_BROKER_CLUSTER_INFO).message)
        async with conn:
            opening = asyncio.ensure_future(self._open_pump())
            start = time.perf_counter()
            try:
                cluster_info: ClusterInfo | None = await conn.get_cluster_info()
            except ServerFailure as exc:
                if not exc.answered:
                    opening.cancel()
                    [pump] = await asyncio.gather(opening, return_exceptions=True)
                    if isinstance(pump, RoutePump):
                        pump.close()
                    return ServerView(self.addr, error=exc.message, latency_ms=_ms(start))
                self.failures.append(exc.message)
                cluster_info = None
            latency = _ms(start)
            if cluster_info is not None and self.cluster is not None:
                cluster_info = _only_cluster(cluster_info, self.cluster)
            side = asyncio.gather(*(self._kv(conn, ns) for ns in self.kv_namespaces), self._config(conn))
            pump = await opening
            try:
                topic_list = await self._ask_routes(conn, pump)
                if pump is not None:
                    await pump.wait()
            finally:
                if pump is not None:
                    pump.close()
            *kvs, config = await side
        routes: dict[str, TopicRouteData | None] = {}
        if pump is not None:
            routes = pump.routes
            self.failures.extend(pump.failure_lines())
        kv = {ns: table for ns, table in zip(self.kv_namespaces, kvs) if table is not None}
        failures = tuple(self.failures)
        if failures and cluster_info is None and topic_list is None and not routes and not kv and config is None:
            return ServerView(self.addr, error=failures[0], latency_ms=latency, failures=failures)
        return ServerView(self.addr, latency_ms=latency, cluster_info=cluster_info, topic_list=topic_list,
                          topics=routes, kv=kv, config=config, failures=failures)

    async def _open_pump(self) -> RoutePump | None:
        try:
            return await RoutePump.open(self.addr, timeout=self.timeout, concurrency=self.concurrency,
                                        bodies=self.bodies, progress=self._progress)
        except ServerFailure as exc:
            self.failures.append(exc.with_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, "(route connection)").message)
            return None

    async def _ask_routes(self, conn: NamesrvConnection, pump: RoutePump | None) -> tuple[str, ...] | None:
        """Feed the pump: the topics asked, or this server's list then the union's
        extras. Returns the topic list to keep in the view."""
        add = (lambda topics: None) if pump is None else pump.add
        listed = await self._topic_list(conn)
        if self.topics is not None:
            add(self.topics)
            wanted = set(self.topics)
            topic_list = None if listed is None else tuple(t for t in listed if t in wanted)
        else:
            own = dict.fromkeys(listed or ())
            add(own)
            add([t for t in await self._contribute(listed) if t not in own])
            topic_list = None if listed is None else tuple(listed)
        if pump is not None:
            pump.finish()
        return topic_list

    def _progress(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(self.addr, done, total)

    async def _topic_list(self, conn: NamesrvConnection) -> list[str] | None:
        try:
            if self.cluster is not None:
                return await conn.get_topics_by_cluster(self.cluster)
            return await conn.get_all_topics()
        except ServerFailure as exc:
            self.failures.append(exc.message)
            return None

    async def _kv(self, conn: NamesrvConnection, namespace: str) -> dict[str, str] | None:
        try:
            return await conn.get_kvlist(namespace)
        except QueryNotFound:  # a namespace the server never saw is an empty one
            return {}
        except ServerFailure as exc:
            self.failures.append(exc.message)
            return None

    async def _config(self, conn: NamesrvConnection) -> dict[str, str] | None:
        if not self.include_config:
            return None
        try:
            return await conn.get_config()
        except ServerFailure as exc:
            self.failures.append(exc.message)
            return None


def _only_cluster(info: ClusterInfo, cluster: str) -> ClusterInfo:
    """The part of ``info`` about ``cluster``: its member list and those brokers."""
    members = tuple(info.cluster_addr_table.get(cluster, ()))
    brokers = {name: b for name, b in info.broker_addr_table.items() if name in members or b.cluster == cluster}
    return ClusterInfo(brokers, {cluster: members} if cluster in info.cluster_addr_table else {})


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
