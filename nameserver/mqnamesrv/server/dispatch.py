"""Request processing: one RemotingCommand in, its response out. No sockets here.

Each handler mirrors the 4.9.8 DefaultRequestProcessor (spec 4). Handlers raise
RequestError for answers that are errors by design; anything else escaping a handler
is a bug, logged with its traceback and answered SYSTEM_ERROR so one bad request
never takes the server down.
"""

from __future__ import annotations

import ipaddress
import logging
from array import array
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable, Mapping, Sequence, Union

from zlib_ng.zlib_ng import crc32

from ..protocol.bodies import (
    DataVersion, QueueShape, RegisterBrokerBody, TopicList, TopicQueueMappingInfo, TopicRouteData, encode_kv_table,
    queue_shapes,
)
from ..protocol.body_key import register_body_key
from ..protocol.codes import (
    FLAG_ONEWAY, FLAG_RESPONSE, MASTER_ID, ORDER_TOPIC_CONFIG, VERSION_V3_0_11, VERSION_V4_9_4, RequestCode, ResponseCode, SerializeType,
    code_name,
)
from ..protocol.command import RemotingCommand
from ..protocol.compressed import decode_compressed
from ..protocol.errors import BodyDecodeError
from ..protocol.header import encode_json_header
from ..protocol.table_pieces import (
    BeyondBound, Steps, TableChanges, TableKey, TwinTable, WalkBound, table_changes, table_changes_steps,
)
from ..registry.config import ConfigError, NamesrvConfig, parse_allow_list, parse_properties
from ..registry.kv import KVStore
from ..registry.route5 import SYNC_BROKER_MEMBER_GROUP_PREFIX, ZONE_MODE, ZONE_NAME, filter_by_zone, requested_zone, \
    with_acting_masters
from ..registry.routes import QueueMap, RouteTable, StagedTopics, TopicsDiff
from .route_answers import REFUSED, Cut, RouteAnswers, answer_frame, cut_topic, form_holds

log = logging.getLogger("nameserver")

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
FAQ_URL = "http://rocketmq.apache.org/docs/faq/"
#: 5.x answers GET_BROKER_MEMBER_GROUP with the remark its response factory starts with.
MEMBER_GROUP_REMARK = "not set any response code"
ROUTE_CACHE_LIMIT = 200_000
#: A registration body at least this big is parsed on a worker thread (see
#: Processor.decode_off_loop): a fleet broker's 1.5 MB takes ~15 ms to parse, and
#: every request behind it on the event loop would wait that long.
OFF_LOOP_BODY_BYTES = 256 * 1024
#: The whole topic list of a table at least this big is built on a worker thread from
#: names frozen on the loop (``TopicTable.frozen_names``): at 7 x 10^4 topics, building it
#: on the loop held every other request 15-25 ms (issue #19: ~10 ms at most).
OFF_LOOP_TOPIC_LIST = 16_384
#: The same for a compressed body: 100,000 topics deflate to ~250 KB.
OFF_LOOP_COMPRESSED_BYTES = 16 * 1024
#: Topics a master registration applies per turn of the event loop when it has more than
#: this many to apply (``Processor.stage_register``): ~5 us each, so ~5 ms a slice.
STAGE_SLICE_TOPICS = 1024
#: A big master re-registration is first diffed on the event loop, by a walk of its last
#: application's blocks within these bounds (``Processor.decode_off_loop``); past them, or
#: with no blocks to walk (a first registration), the worker thread does the job from the
#: start. A fleet broker's 1% change (bench fleet's) is ~100 changed blocks and 200 topics:
#: ~1.0 ms on the loop, where the handoff to the worker and back cost ~0.3-0.5 ms more. At
#: the bounds (10^4 topics, CPU medians): 160 blocks of 3 changed topics 1.75 ms; 160
#: blocks with more than 512 topics to parse ~1.4-2.1 ms before giving up; the 161st
#: changed block ~0.8 ms. Walked in slices (``table_pieces.SLICE_SECONDS``) and applied
#: (at most 512 topics) at a turn of the loop of its own: others are served between.
QUICK_WALK = WalkBound(blocks=160, topics=512, rest_bytes=64 * 1024)


class RequestError(Exception):
    def __init__(self, code: int, remark: str | None, ext: dict[str, str] | None = None) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark
        self.ext = ext


def _required(cmd: RemotingCommand, key: str) -> str:
    value = cmd.ext_get(key)
    if value is None:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"the custom field <{key}> is null")
    return value


def _int_field(cmd: RemotingCommand, key: str, default: int | None = None) -> int:
    value = cmd.ext_get(key)
    if value is None:
        if default is None:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"the custom field <{key}> is null")
        return default
    try:
        return int(value)
    except ValueError:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"the custom field <{key}> is not a number: {value!r}") from None


def _lookup_key(cmd: RemotingCommand, key: str) -> str:
    """A read's key as 4.9.8 sees it: it does not enforce required fields (golden 44/45),
    so an absent one is looked up, and reported, as Java's ``null``."""
    value = cmd.ext_get(key)
    return "null" if value is None else value


def _flag(cmd: RemotingCommand, key: str) -> bool:
    return (cmd.ext_get(key) or "").lower() == "true"


#: what a route answer depends on in the request besides its topic: the standard-JSON
#: dialect, and the zone asked for (5.x)
RouteForm = tuple[bool, Union[str, None]]


def _route_form(cmd: RemotingCommand) -> RouteForm:
    zone = requested_zone(cmd.ext_get) if cmd.ext is not None and ZONE_MODE in cmd.ext else None
    # 5.x's zone hook re-encodes the answer in the default dialect
    standard = zone is None and (cmd.version >= VERSION_V4_9_4 or _flag(cmd, "acceptStandardJsonOnly"))
    return standard, zone


Handler = Callable[[RemotingCommand, Hashable], RemotingCommand]

#: Requests by which a broker joins, stays or leaves (``brokerAllowList``).
BROKER_WRITES = frozenset({
    RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.BROKER_HEARTBEAT,
    RequestCode.QUERY_DATA_VERSION,  # refreshes a broker's liveness, as a heartbeat does
})


@dataclass(frozen=True, slots=True)
class BuiltBody:
    """A read's answer body built off the loop (``decode_off_loop``), from what the
    registry held when the request was read: the answer is as of then, as if read then."""

    body: bytes


@dataclass(frozen=True, slots=True)
class RegisterParts:
    """What REGISTER_BROKER uses of its body. ``key`` (``register_body_key``) is set
    only when its DataVersion is the one the full parse found."""

    key: bytes | None
    data_version: DataVersion
    topics: dict[str, QueueShape]
    filters: tuple[str, ...] | None
    mappings: dict[str, TopicQueueMappingInfo]
    #: the topics diffed against the master's application on record (worker thread)
    diff: TopicsDiff | None = None
    #: ``topics`` holds only ``diff.changed`` (``table_changes``): usable only while
    #: ``diff.base`` is the application on record
    partial: bool = False


def body_key(cmd: RemotingCommand) -> tuple[bytes, DataVersion] | None:
    """``register_body_key`` of an uncompressed REGISTER_BROKER body (None otherwise)."""
    return None if _flag(cmd, "compressed") or not cmd.body else register_body_key(cmd.body, cmd.version)


#: What a request's job off the loop gives ``Processor.handle`` (``decoded=``): a
#: registration's parts, its body refused, or a read's answer body.
OffLoop = Union[RegisterParts, BodyDecodeError, BuiltBody]
#: The job itself (``Processor.decode_off_loop``), for a worker thread.
OffLoopJob = Callable[[], OffLoop]


def decode_register(cmd: RemotingCommand, known: tuple[bytes, DataVersion] | None, *, max_inflated: int,
                    max_topics: int) -> RegisterParts:
    """Parse a REGISTER_BROKER body whose ``body_key`` is ``known``. Pure (reads only
    ``cmd``), so a worker thread may run it while the event loop serves others; raises
    BodyDecodeError, also past the limits (``frameMaxLength`` of inflated data,
    ``maxTopicsPerRegistration``)."""
    if _flag(cmd, "compressed"):
        body = decode_compressed(cmd.body, max_inflated=max_inflated, max_topics=max_topics)
        return RegisterParts(None, body.data_version, queue_shapes(body.topic_configs),
                             tuple(body.filter_server_list), dict(body.topic_queue_mapping_info))
    data_version, topics, listed, mappings = RegisterBrokerBody.decode_queues_mapped(cmd.body, cmd.version)
    if len(topics) > max_topics:
        raise BodyDecodeError(f"RegisterBrokerBody: {len(topics)} topics exceed the limit of {max_topics}")
    filters = listed if cmd.body and cmd.version >= VERSION_V3_0_11 else None
    key = known[0] if known is not None and known[1] == data_version else None
    return RegisterParts(key, data_version, topics, filters, mappings)


_NO_PIECES = array("q")


def _splits(cmd: RemotingCommand, master: bool) -> bool:
    """Whether ``table_changes`` may diff this registration's body (a 4.x master's, as sent)."""
    return master and not _flag(cmd, "compressed") and cmd.ext_get("enableActingMaster") is None


def _changed_parts(changes: TableChanges, known: tuple[bytes, DataVersion] | None, base: Any) -> RegisterParts:
    """The parts of a body ``table_changes`` diffed against ``base``."""
    key = known[0] if known is not None and known[1] == changes.data_version else None
    return RegisterParts(key, changes.data_version, changes.changed, changes.filters, {},
                         TopicsDiff(base, changes.hashes, changes.changed, changes.table_key),
                         partial=base is not None)


def walk_register(cmd: RemotingCommand, known: tuple[bytes, DataVersion] | None, base: Any, *, max_topics: int,
                  bound: WalkBound) -> Steps[RegisterParts]:
    """A 4.x master re-registration diffed against ``base`` within ``bound``, a slice of
    the walk at a time (``table_changes_steps``); BeyondBound for anything else."""
    changes = yield from table_changes_steps(cmd.body, cmd.version, base, None, bound)
    if changes is None or len(changes.hashes) > max_topics:
        raise BeyondBound("a full parse")
    return _changed_parts(changes, known, base)


@dataclass(slots=True)
class RegisterWalk:
    """A master re-registration diffed on the event loop a slice at a time
    (``Processor.decode_off_loop``), and the worker thread's job for it should the walk
    go past its bound (done there from the start)."""

    steps: Steps[RegisterParts]
    job: Callable[[], RegisterParts | BodyDecodeError]

    def step(self) -> RegisterParts | Callable[[], RegisterParts | BodyDecodeError] | None:
        """Walk on for a slice: the parts once done, the job once past the bound, else None."""
        try:
            next(self.steps)
        except StopIteration as done:
            return done.value
        except BeyondBound:
            return self.job
        except Exception:  # a bug: say so, and leave it to the worker's full job
            log.exception("walking a registration's blocks failed; parsing it on a worker thread")
            return self.job
        return None

    def run(self) -> RegisterParts | BodyDecodeError:
        """What the loop's slices and (past the bound) the worker give, at once."""
        while True:
            done = self.step()
            if isinstance(done, RegisterParts):
                return done
            if done is not None:
                return done()


def decode_register_safely(cmd: RemotingCommand, known: tuple[bytes, DataVersion] | None, base: Any = None,
                           master: bool = False, *, max_inflated: int, max_topics: int,
                           twins: Mapping[TableKey, TwinTable] | None = None) -> RegisterParts | BodyDecodeError:
    """``decode_register`` for a worker thread, plus (for a master) the diff of its topics
    against ``base`` (``RouteTable.applied_hashes`` when the job was made): a refused
    body comes back as a value, to be raised where the request is answered. ``twins``:
    ``RouteTable.twins``, for a first registration with a table read before. (On the
    event loop, ``walk_register`` does a bounded walk a slice at a time instead.)"""
    if _splits(cmd, master):
        # 4.x: parse only the changed topics; a first registration (no base) parses them
        # all, but records piece hashes, which its next re-registration is diffed against.
        changes = table_changes(cmd.body, cmd.version, _NO_PIECES if base is None else base, twins)
        if changes is not None and len(changes.hashes) <= max_topics:
            return _changed_parts(changes, known, base)
    try:
        parts = decode_register(cmd, known, max_inflated=max_inflated, max_topics=max_topics)
    except BodyDecodeError as exc:
        return exc
    return replace(parts, diff=TopicsDiff.of(parts.topics, base)) if master else parts

#: Requests that change what the name server holds on an operator's behalf (brokers'
#: own registrations are not admin writes; ``adminAllowList``).
ADMIN_WRITES = frozenset({
    RequestCode.PUT_KV_CONFIG, RequestCode.DELETE_KV_CONFIG, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.UPDATE_NAMESRV_CONFIG,
    RequestCode.REGISTER_TOPIC_IN_NAMESRV,
})


class Processor:
    """Dispatches requests to handlers over the registry, the KV store and the config.

    ``persist_kv`` and ``persist_config`` are the server's storage callbacks; a write is
    answered SUCCESS only after its callback returned, so an acknowledged write is on disk.
    """

    def __init__(
        self,
        routes: RouteTable,
        kv: KVStore,
        config: NamesrvConfig,
        *,
        persist_kv: Callable[[bytes], None] = lambda data: None,
        persist_config: Callable[[str], None] = lambda text: None,
        version: int = 409,
    ) -> None:
        self.routes = routes
        self.kv = kv
        self.config = config
        self.persist_kv = persist_kv
        self.persist_config = persist_config
        self.version = version
        # Two caches, two keys. ``_route_cache``: encoded route bodies by queue map, shared by
        # every topic with the same queues (a fleet's 10^5 topics have a handful), so a topic
        # asked for the first time since a change still skips building its route.
        # ``route_answers``: whole answer frames by request bytes, one per topic and client
        # dialect, so a repeat skips decoding and encoding too. Neither key can stand for the
        # other. Both drop only what a write touched (``_sync_answers``), all on a config change.
        self._route_cache: dict[tuple[object, ...], tuple[QueueMap, bytes, tuple[str, ...]]] = {}
        self.route_cache_hits = 0
        #: whole answers to route queries, reused with the next request's opaque
        self.route_answers = RouteAnswers(ROUTE_CACHE_LIMIT)
        #: what writes touched since the caches last dropped it (see _sync_answers)
        self._route_changes = routes.watch_changes()
        self._kv_changes = kv.watch()
        self._answers_seen = self.answers_epoch()
        #: config items every route query reads, as of the config generation in _answers_seen
        self._order_enabled, self._acting_enabled = config["orderMessageEnable"], config["supportActingMaster"]
        #: (request, topic, queue map) of the last route answered: what a kept answer depends on
        self._route_source: tuple[RemotingCommand, str, QueueMap | None] | None = None
        #: a route answer's JSON header before and after its opaque's digits (route_frame)
        plain = encode_json_header(ResponseCode.SUCCESS, "JAVA", version, 0, FLAG_RESPONSE, None, None)
        at = plain.index(b'"opaque":0') + len(b'"opaque":')
        self._route_header = plain[:at], plain[at + 1:]
        self.route_answers.build_with(self._formed, self._form_body, self._route_header)
        self.admin_allow_list = parse_allow_list(config["adminAllowList"])
        self.broker_allow_list = parse_allow_list(config["brokerAllowList"], "brokerAllowList")
        R = RequestCode
        self.handlers: dict[int, Handler] = {
            R.PUT_KV_CONFIG: self.put_kv_config,
            R.GET_KV_CONFIG: self.get_kv_config,
            R.DELETE_KV_CONFIG: self.delete_kv_config,
            R.GET_KVLIST_BY_NAMESPACE: self.get_kvlist_by_namespace,
            R.REGISTER_BROKER: self.register_broker,
            R.UNREGISTER_BROKER: self.unregister_broker,
            R.QUERY_DATA_VERSION: self.query_data_version,
            R.BROKER_HEARTBEAT: self.broker_heartbeat,
            R.GET_ROUTEINFO_BY_TOPIC: self.get_route,
            R.GET_BROKER_CLUSTER_INFO: self.get_cluster_info,
            R.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm,
            R.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm,
            R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.topic_list(lambda c: TopicList(self.routes.all_topics())),
            R.GET_TOPICS_BY_CLUSTER: self.topic_list(
                lambda c: TopicList(self.routes.topics_by_cluster(_required(c, "cluster")))
            ),
            R.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.topic_list(lambda c: TopicList(*self.routes.system_topics())),
            R.GET_UNIT_TOPIC_LIST: self.topic_list(lambda c: TopicList(self.routes.topics_by_sys_flag(True, None))),
            R.GET_HAS_UNIT_SUB_TOPIC_LIST: self.topic_list(
                lambda c: TopicList(self.routes.topics_by_sys_flag(None, True))
            ),
            R.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.topic_list(
                lambda c: TopicList(self.routes.topics_by_sys_flag(False, True))
            ),
            R.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
            R.REGISTER_TOPIC_IN_NAMESRV: self.register_topic,
            R.GET_BROKER_MEMBER_GROUP: self.get_broker_member_group,
            R.UPDATE_NAMESRV_CONFIG: self.update_config,
            R.GET_NAMESRV_CONFIG: self.get_config,
        }

    # ----------------------------------------------------------------- entry ----

    def decode_off_loop(self, cmd: RemotingCommand, client_host: str | None = None
                        ) -> OffLoopJob | RegisterWalk | None:
        """For a request whose body is big enough to be worth parsing on a worker thread
        first, the job to run there (its result goes to ``handle(..., decoded=)``); else
        None. None too when the body is the one its master last sent: that needs no
        parse at all, and when ``client_host`` is not on ``brokerAllowList``: ``handle``
        refuses it before anything reads its body. A 4.x master's re-registration is
        first walked on the loop, a slice at a time, within ``QUICK_WALK`` (a
        ``RegisterWalk``, whose job the worker does past it): for a fleet broker's 1%
        change, the handoff to a worker thread and back cost more than the walk. A big
        table's whole topic list is a job too (``OFF_LOOP_TOPIC_LIST``), built from its
        names as of now."""
        if cmd.code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER and not cmd.is_response and \
                len(self.routes.topic_queue_table) >= OFF_LOOP_TOPIC_LIST:
            names = self.routes.topic_queue_table.frozen_names()
            return lambda: BuiltBody(TopicList(names()).encode())
        if cmd.code != RequestCode.REGISTER_BROKER or cmd.is_response or len(cmd.body) < (
                OFF_LOOP_COMPRESSED_BYTES if _flag(cmd, "compressed") else OFF_LOOP_BODY_BYTES):
            return None
        if self.broker_allow_list and not self._allowed(client_host, self.broker_allow_list):
            return None
        name, addr, bid = cmd.ext_get("brokerName"), cmd.ext_get("brokerAddr"), cmd.ext_get("brokerId")
        master = name is not None and addr is not None and bid == str(MASTER_ID)
        known = body_key(cmd)
        if known is not None and name is not None and addr is not None and bid is not None and \
                self._body_in_place(cmd, name, addr, MASTER_ID if master else -1, known[0]):
            return None
        base = self.routes.applied_hashes(name, addr) if master else None  # type: ignore[arg-type]
        limits = self._body_limits()
        twins = self.routes.twins if master and base is None else None
        job = lambda: decode_register_safely(cmd, known, base, master, **limits, twins=twins)  # noqa: E731
        if base is None or not _splits(cmd, master):
            return job
        return RegisterWalk(walk_register(cmd, known, base, max_topics=limits["max_topics"], bound=QUICK_WALK), job)

    def stage_register(self, cmd: RemotingCommand, decoded: OffLoop | None) -> StagedTopics | None:
        """For a master registration parsed off the loop with more than a slice of topics
        to apply, its topics applied to a copy of the table, ``STAGE_SLICE_TOPICS`` per
        ``step``; the server steps it between other requests, then answers it with
        ``handle(..., staged=)``, which publishes it in one atomic swap. None: apply in
        ``handle`` in one piece (small, refused, or nothing to apply)."""
        if not isinstance(decoded, RegisterParts) or decoded.diff is None or \
                len(decoded.diff.changed) <= STAGE_SLICE_TOPICS:
            return None
        name, addr, bid = cmd.ext_get("brokerName"), cmd.ext_get("brokerAddr"), cmd.ext_get("brokerId")
        if name is None or addr is None or bid != str(MASTER_ID):
            return None
        return self.routes.stage_master_topics(name, addr, MASTER_ID, decoded.data_version, decoded.diff)

    def _body_in_place(self, cmd: RemotingCommand, name: str, addr: str, broker_id: int, key: bytes | None) -> bool:
        """Whether the registry holds all this body could change already: the body its
        master applied last, or (4.x) the one its slave sent last, bar the DataVersion."""
        if broker_id == MASTER_ID:
            return self.routes.topics_applied(name, addr, key)
        return cmd.ext_get("enableActingMaster") is None and self.routes.slave_body_applied(addr, key)

    def _body_limits(self) -> dict[str, int]:
        """What a registration body may hold (decode_register)."""
        return {"max_inflated": self.config["frameMaxLength"], "max_topics": self.config["maxTopicsPerRegistration"]}

    def handle(self, cmd: RemotingCommand, conn: Hashable = None, client_host: str | None = None, *,
               decoded: OffLoop | None = None,
               staged: StagedTopics | None = None) -> RemotingCommand | None:
        """The response to send, or None when nothing must be sent (one-way requests,
        stray responses). One-way requests are still processed. ``client_host`` is the
        peer's IP, checked against ``adminAllowList`` for admin writes. ``decoded`` is
        ``cmd``'s body as ``decode_register_safely`` parsed it on a worker thread; the
        registration itself is applied here, in one piece, or (``staged``, from
        ``stage_register``) published here in one swap."""
        if cmd.is_response:
            return None
        handler = self.handlers.get(cmd.code)
        try:
            if self.admin_allow_list and cmd.code in ADMIN_WRITES:
                self._check_allowed(cmd, client_host, self.admin_allow_list, "adminAllowList")
            elif self.broker_allow_list and cmd.code in BROKER_WRITES:
                self._check_allowed(cmd, client_host, self.broker_allow_list, "brokerAllowList")
            if handler is None:
                raise RequestError(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported")
            # Off the loop: a REGISTER_BROKER's body parsed, or a read's answer built (decode_off_loop).
            if decoded is None:
                response = handler(cmd, conn)
            elif isinstance(decoded, BuiltBody):
                response = self._ok(cmd, body=decoded.body)
            else:
                response = self.register_broker(cmd, conn, decoded, staged)
            if cmd.code != RequestCode.GET_ROUTEINFO_BY_TOPIC and self.answers_epoch() != self._answers_seen:
                # A write: drop what it touched now, so that what it recorded (a registration's
                # topics) is not held until the next route query.
                self._sync_answers()
        except RequestError as exc:
            response = cmd.response(exc.code, remark=exc.remark, ext=exc.ext, version=self.version)
        except BodyDecodeError as exc:
            log.warning("refused %s from %s: %s", code_name(cmd.code), client_host, exc)
            response = cmd.response(ResponseCode.SYSTEM_ERROR, remark=str(exc), version=self.version)
        except Exception as exc:  # a bug: keep serving, but say so loudly
            log.exception("%s (%d) failed", code_name(cmd.code), cmd.code)
            response = cmd.response(
                ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}", version=self.version
            )
        return None if cmd.is_oneway else response

    @staticmethod
    def _allowed(client_host: str | None, networks: Sequence[Network]) -> bool:
        try:
            ip = None if client_host is None else ipaddress.ip_address(client_host)
        except ValueError:
            return False
        return ip is not None and any(ip in net for net in networks)

    @classmethod
    def _check_allowed(cls, cmd: RemotingCommand, client_host: str | None, networks: Sequence[Network],
                       name: str) -> None:
        """Raise NO_PERMISSION unless ``client_host`` is in one of ``networks``."""
        if not cls._allowed(client_host, networks):
            log.warning("refused %s from %s: not in %s", code_name(cmd.code), client_host, name)
            raise RequestError(ResponseCode.NO_PERMISSION,
                               f"{code_name(cmd.code)} from {client_host} refused: not in {name}")

    def answers_epoch(self) -> tuple[int, int, int]:
        """Moves whenever anything a route answer is computed from changes (RouteAnswers)."""
        return self.routes.generation, self.kv.generation, self.config.generation

    def _sync_answers(self) -> None:
        """Drop the kept route answers and bodies that the writes since the last call can
        have changed: those of the topics written (queues, static-topic mappings, their
        ORDER_TOPIC_CONFIG entry) and of the topics whose queues name a broker whose group
        or filter servers were written; everything after a config change or when the
        tables were replaced wholesale. Other KV namespaces are in no route."""
        epoch = self.answers_epoch()
        topics, brokers = self._route_changes.take()
        order = {key for namespace, key in self._kv_changes if namespace == ORDER_TOPIC_CONFIG}
        self._kv_changes.clear()
        if topics is None or epoch[2] != self._answers_seen[2]:
            self.route_answers.clear()
            self._route_cache.clear()
            self._order_enabled = self.config["orderMessageEnable"]
            self._acting_enabled = self.config["supportActingMaster"]
        elif topics or brokers or order:
            if order:
                topics = topics | order
            self.route_answers.drop(topics, brokers)
            # Bodies are keyed by queue map, so a topic whose queues changed finds another
            # one; a broker's group or filter servers are in every body of a map naming it,
            # and a static topic's mappings in its own body.
            if brokers or topics:
                self._route_cache = {key: value for key, value in self._route_cache.items()
                                     if key[5] not in topics and brokers.isdisjoint(value[0])}
        self._answers_seen = epoch

    def _sync_if_written(self) -> None:
        """``_sync_answers`` if anything was written since it last ran (``answers_epoch``,
        spelled out: this runs for every route query or read of them)."""
        routes_seen, kv_seen, config_seen = self._answers_seen
        if self.routes.generation != routes_seen or self.kv.generation != kv_seen or \
                self.config.generation != config_seen:
            self._sync_answers()

    def kept_run(self, buf: bytearray, room: int, max_frame: int, max_header: int,
                 size: int | None = None) -> tuple[list[bytes], int, int, int]:
        """Answers to the route queries at the head of ``buf`` (a decoder's buffer, or
        the first ``size`` bytes of a read buffer) that need no decode (kept, or from
        their form), in one call (``RouteAnswers.run``): (answer frames, their bytes,
        bytes of ``buf`` answered, how many of the answers are TOPIC_NOT_EXIST)."""
        self._sync_if_written()
        frames, size, used, hits, not_found = self.route_answers.run(buf, room, max_frame, max_header, size)
        self.route_cache_hits += hits
        return frames, size, used, not_found

    @property
    def route_form_answers(self) -> int:
        """Route queries answered from their form and topic, undecoded."""
        return self.route_answers.formed

    def _formed(self, cut: Cut) -> bytes | None:
        """The answer frame to a route query no kept answer matched (``cut``), from its
        form and topic (``RouteAnswers.form``), kept for the same request again; None:
        decode it (a form not learnt yet, no route, or not cut)."""
        # A topic not asked for in this form since a write touched it: the form says what
        # a decode would have, so the answer is built without one.
        # (``RouteAnswers.run`` tried the form last answered from before asking.)
        answers = self.route_answers
        formed = cut_topic(cut[0])
        if formed is None:
            return None
        form = answers.form(formed[0])
        if form is None or form is REFUSED:
            return None
        answers.use_form(formed[0], form)
        topic = formed[1]
        built = self._form_body(topic, form)
        if built is None:
            return None
        body, queues = built
        head, tail = self._route_header
        answers.keep(cut[0], ResponseCode.SUCCESS, head, tail, body, (topic, queues))
        answers.formed += 1
        return answer_frame(head, cut[1], tail, body)

    def _form_body(self, topic: str, form: Hashable) -> tuple[bytes, tuple[str, ...]] | None:
        """``topic``'s route body for a request of ``form`` and the broker names of the queue
        map it was computed from; None: none (TOPIC_NOT_EXIST, answered the plain way) or a
        bug (answered, and logged, the plain way). The caches are in sync (``_sync_if_written``)."""
        try:
            _, body, names = self._route_entry(topic, self.routes.queues_of(topic), form)  # type: ignore[arg-type]
        except Exception:
            return None
        return body, names

    def remember_answer(self, cut: Cut, cmd: RemotingCommand, response: RemotingCommand, frame: bytes) -> None:
        """Offer ``frame``, the answer to ``cmd`` (whose frame was ``cut``), for reuse."""
        source = self._route_source
        if source is None or source[0] is not cmd or self.answers_epoch() != self._answers_seen:
            return  # not answered by get_route, or something moved since
        self.route_answers.remember(cut, cmd, response, frame, (source[1], source[2]))

    def close(self) -> None:
        """Stop recording the registry's writes (a processor dropped while they live on)."""
        self._route_changes.close()
        self.kv.unwatch(self._kv_changes)

    def _ok(self, cmd: RemotingCommand, *, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, ext=ext, body=body, version=self.version)

    # -------------------------------------------------------------------- KV ----

    def _persist_kv(self) -> None:
        self.persist_kv(self.kv.dumps())

    def put_kv_config(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        ns, key, value = cmd.ext_get("namespace"), cmd.ext_get("key"), cmd.ext_get("value")
        if ns is None or key is None:
            raise RequestError(ResponseCode.SYSTEM_ERROR, "namespace or key is null")
        if value is None:
            raise RequestError(ResponseCode.SYSTEM_ERROR, "the custom field <value> is null")
        previous = self.kv.get(ns, key)
        had_ns = self.kv.namespace(ns) is not None
        self.kv.put(ns, key, value)
        try:
            self._persist_kv()
        except Exception as exc:
            # Not on disk: take it back, so what clients read is what survives a restart.
            if previous is not None:
                self.kv.put(ns, key, previous)
            else:
                self.kv.delete(ns, key)
                if not had_ns:
                    self.kv.table.pop(ns, None)
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"KV config not saved: {exc}") from None
        log.info("KV put %s/%s=%s", ns, key, value)
        return self._ok(cmd)

    def get_kv_config(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        ns, key = _lookup_key(cmd, "namespace"), _lookup_key(cmd, "key")
        value = self.kv.get(ns, key)
        if value is None:
            raise RequestError(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {ns} Key: {key}", {})
        return self._ok(cmd, ext={"value": value})

    def delete_kv_config(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        ns, key = _required(cmd, "namespace"), _required(cmd, "key")
        previous = self.kv.get(ns, key)
        self.kv.delete(ns, key)
        try:
            self._persist_kv()
        except Exception as exc:
            if previous is not None:
                self.kv.put(ns, key, previous)
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"KV config not saved: {exc}") from None
        log.info("KV delete %s/%s", ns, key)
        return self._ok(cmd)

    def get_kvlist_by_namespace(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        ns = _lookup_key(cmd, "namespace")
        table = self.kv.namespace(ns)
        if table is None:
            raise RequestError(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {ns}")
        return self._ok(cmd, body=encode_kv_table(table))

    # --------------------------------------------------------------- brokers ----

    def register_broker(self, cmd: RemotingCommand, conn: Hashable,
                        decoded: RegisterParts | BodyDecodeError | None = None,
                        staged: StagedTopics | None = None) -> RemotingCommand:
        cluster = _required(cmd, "clusterName")
        broker_name = _required(cmd, "brokerName")
        broker_addr = _required(cmd, "brokerAddr")
        broker_id = _int_field(cmd, "brokerId")
        ha_addr = _required(cmd, "haServerAddr")
        crc = _int_field(cmd, "bodyCrc32", 0)
        if crc != 0 and (crc32(cmd.body) & 0x7FFFFFFF) != crc:  # zlib-ng: ~18x zlib's speed, on the loop
            raise RequestError(ResponseCode.SYSTEM_ERROR, "crc32 not match", {})
        timeout = cmd.ext_get("heartbeatTimeoutMillis")
        acting = cmd.ext_get("enableActingMaster")  # only 5.x brokers send it
        topics: dict[str, QueueShape] | None
        filters: tuple[str, ...] | None
        key: bytes | None
        if isinstance(decoded, BodyDecodeError):
            raise decoded
        parts: RegisterParts | None = decoded
        if parts is None:
            # A master re-sending the body it sent last (bar the DataVersion) changes
            # nothing the body holds: skip parsing 1.5 MB of a fleet broker's topics.
            known = body_key(cmd)
            if known is not None and self._body_in_place(cmd, broker_name, broker_addr, broker_id, known[0]):
                key, data_version, topics, filters, mappings = known[0], known[1], None, None, {}
            else:
                parts = decode_register(cmd, known, **self._body_limits())
        if parts is not None and parts.partial and (
                parts.diff is None or parts.diff.base is not self.routes.applied_hashes(broker_name, broker_addr)):
            # Diffed against an application that something has overwritten since (an
            # admin write, a removal): the unchanged topics are needed after all.
            parts = decode_register(cmd, body_key(cmd), **self._body_limits())
        if parts is not None:
            key, data_version, topics, filters, mappings = (
                parts.key, parts.data_version, parts.topics, parts.filters, parts.mappings)
            if key is not None and self._body_in_place(cmd, broker_name, broker_addr, broker_id, key):
                topics, filters = None, None  # parsed off the loop, but nothing to apply
        result = self.routes.register_broker(
            cluster, broker_name, broker_addr, broker_id, ha_addr,
            data_version, topics, filters, conn,
            timeout_ms=int(timeout) if timeout and timeout.isdigit() else self.config["brokerChannelExpiredTime"],
            enable_acting_master=None if acting is None else acting.lower() == "true",
            zone_name=cmd.ext_get(ZONE_NAME), mappings=mappings, topics_key=key,
            topics_diff=None if parts is None else parts.diff, staged=staged,
        )
        ext: dict[str, str] = {}
        if result.master_addr is not None and result.ha_server_addr is not None:
            ext["haServerAddr"] = result.ha_server_addr
            ext["masterAddr"] = result.master_addr
        reply = b""
        if self.config["returnOrderTopicConfigToBroker"]:
            order = self.kv.namespace(ORDER_TOPIC_CONFIG)
            if order is not None:
                reply = encode_kv_table(order)
        return self._ok(cmd, ext=ext, body=reply)

    def unregister_broker(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        self.routes.unregister_broker(
            _required(cmd, "clusterName"), _required(cmd, "brokerName"),
            _required(cmd, "brokerAddr"), _int_field(cmd, "brokerId"),
        )
        log.info("broker unregistered: %s %s id=%s", cmd.ext_get("brokerName"), cmd.ext_get("brokerAddr"),
                 cmd.ext_get("brokerId"))
        return self._ok(cmd)

    def query_data_version(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        broker_addr = _required(cmd, "brokerAddr")
        if not cmd.body:
            raise RequestError(ResponseCode.SYSTEM_ERROR, "QUERY_DATA_VERSION without a DataVersion body")
        changed, stored = self.routes.query_data_version(broker_addr, DataVersion.decode(cmd.body))
        return self._ok(
            cmd, ext={"changed": "true" if changed else "false"}, body=b"" if stored is None else stored.encode()
        )

    def broker_heartbeat(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        self.routes.heartbeat(_required(cmd, "brokerAddr"))
        return self._ok(cmd)

    def get_broker_member_group(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        group = self.routes.broker_member_group(_required(cmd, "clusterName"), _required(cmd, "brokerName"))
        body = b'{"brokerMemberGroup":' + group.member_group_json().encode() + b"}"
        return cmd.response(ResponseCode.SUCCESS, remark=MEMBER_GROUP_REMARK, body=body, version=self.version)

    def wipe_write_perm(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        count = self.routes.wipe_write_perm(_required(cmd, "brokerName"))
        log.info("wipe write perm of %s: %d topics", cmd.ext_get("brokerName"), count)
        return self._ok(cmd, ext={"wipeTopicCount": str(count)})

    def add_write_perm(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        count = self.routes.add_write_perm(_required(cmd, "brokerName"))
        log.info("add write perm of %s: %d topics", cmd.ext_get("brokerName"), count)
        return self._ok(cmd, ext={"addTopicCount": str(count)})

    # ---------------------------------------------------------------- topics ----

    def get_route(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        """The hot path: every client polls every topic every 30 s (see ``_route_body``;
        ``route_frame`` answers most of them without this command)."""
        return self._ok(cmd, body=self._route_body(cmd))

    def _route_body(self, cmd: RemotingCommand) -> bytes:
        """The body of a route answer (RequestError: TOPIC_NOT_EXIST). A route body does
        not name its topic, so topics sharing one queue map (the registry shares them; a
        fleet has a handful for 10^5 topics) share one encoded body, cached until a write
        touches what it shows (``_sync_answers``). Static topics (5.x) name their
        mappings, so their bodies are cached per topic."""
        if self.answers_epoch() != self._answers_seen:
            self._sync_answers()  # before the config items below are read from what it keeps
        topic = _lookup_key(cmd, "topic")
        queues = self.routes.queues_of(topic)
        self._route_source = (cmd, topic, queues)  # an error answer is kept too
        return self._body_of(topic, queues, _route_form(cmd))

    def _body_of(self, topic: str, queues: QueueMap | None, form: RouteForm) -> bytes:
        """``topic``'s route body for a request of ``form``, its queue map being ``queues``
        (RequestError: TOPIC_NOT_EXIST); the caches are in sync (``_sync_answers``)."""
        return self._route_entry(topic, queues, form)[1]

    def _route_entry(self, topic: str, queues: QueueMap | None,
                     form: RouteForm) -> tuple[QueueMap, bytes, tuple[str, ...]]:
        """``_body_of``'s cache entry: the queue map, the body and the map's broker names."""
        standard, zone = form
        if self._order_enabled or self._acting_enabled or self.routes.topic_mapping_table:
            order_conf = self.kv.get(ORDER_TOPIC_CONFIG, topic) if self._order_enabled else None
            acting = self._acting_enabled and not topic.startswith(SYNC_BROKER_MEMBER_GROUP_PREFIX)
            mapped = topic if self.routes.has_mappings(topic) else None
        else:  # the usual server: none of the three applies (a topic's first query asks this)
            order_conf, acting, mapped = None, False, None
        key = (id(queues), standard, order_conf, zone, acting, mapped)
        hit = self._route_cache.get(key)
        if hit is not None and hit[0] is queues:
            self.route_cache_hits += 1
            return hit
        if len(self._route_cache) > ROUTE_CACHE_LIMIT:
            self._route_cache.clear()
        route = self.routes.pickup_route(topic)
        if route is None:
            raise RequestError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {topic}\nSee {FAQ_URL} for further details.",
            )
        if acting:
            route = with_acting_masters(route, topic)
        if order_conf is not None:
            route = replace(route, order_topic_conf=order_conf)
        if zone is not None:
            route = filter_by_zone(route, zone)
        body = route.encode(standard=standard)
        assert queues is not None  # a route was found for it
        # the map is kept so its id cannot be reused meanwhile; its broker names go into kept
        # answers (RouteAnswers.keep), which then hold no map and so stay out of the GC's walks
        entry = self._route_cache[key] = (queues, body, tuple(queues))
        return entry

    def route_frame(self, cmd: RemotingCommand, cut: Cut) -> bytes | None:
        """The encoded answer to ``cmd``, a route query no kept answer matched (its frame
        ``cut`` by ``cut_opaque``), when it is a route: built from the body and the two
        header pieces every such answer has (``encode`` of ``get_route``'s answer, without
        making or encoding that command), and kept for the same request again. None:
        ``handle`` it (not a plain JSON two-way route query, or an error answer)."""
        if cmd.code != RequestCode.GET_ROUTEINFO_BY_TOPIC or cmd.flag & (FLAG_RESPONSE | FLAG_ONEWAY) or cmd.body or \
                cmd.serialize_type != SerializeType.JSON:
            return None
        try:
            body = self._route_body(cmd)
        except Exception:  # TOPIC_NOT_EXIST, or a bug: answered (and logged) the plain way
            return None
        digits = str(cmd.opaque).encode()
        head, tail = self._route_header
        source = self._route_source
        if digits == cut[1] and source is not None and source[0] is cmd:
            answers = self.route_answers
            answers.keep(cut[0], ResponseCode.SUCCESS, head, tail, body, (source[1], source[2]))
            # The first request of its form: once proven to read as its form and topic, later
            # ones are answered from those (kept_run); a form refused once is not
            # proven (decoded again) at every request in it.
            formed = cut_topic(cut[0])
            if formed is not None and answers.form(formed[0]) is None:
                answers.learn(formed[0], _route_form(cmd) if form_holds(cut, formed, cmd) else REFUSED)
        return answer_frame(head, digits, tail, body)

    def get_cluster_info(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        return self._ok(cmd, body=self.routes.cluster_info().encode())

    def topic_list(self, build: Callable[[RemotingCommand], TopicList]) -> Handler:
        def handler(cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
            return self._ok(cmd, body=build(cmd).encode())
        return handler

    def delete_topic(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        topic = _required(cmd, "topic")
        cluster = cmd.ext_get("clusterName")
        self.routes.delete_topic(topic, cluster)
        log.info("topic deleted: %s%s", topic, f" in cluster {cluster}" if cluster else "")
        return self._ok(cmd)

    def register_topic(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        topic = _required(cmd, "topic")
        if cmd.body:
            route = TopicRouteData.decode(cmd.body)
            self.routes.register_topic(topic, route.queue_datas)
        return self._ok(cmd)

    # ---------------------------------------------------------------- config ----

    def update_config(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        """318 (spec 4.11), except that a bad value refuses the whole request instead of
        being skipped: a value the server would not start with must not be applied or
        written to the ``-c`` file, where it would stop the next start."""
        if not cmd.body:
            return self._ok(cmd)
        try:
            props = parse_properties(cmd.body.decode("utf-8"))
        except (ConfigError, UnicodeDecodeError):
            raise RequestError(ResponseCode.SYSTEM_ERROR, "string2Properties error") from None
        blocked = sorted(set(props) & self.config.black_list())
        if blocked:
            log.warning("refused config update of black-listed %s", ", ".join(blocked))
            raise RequestError(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        try:
            candidate, changed, ignored = self.config.prepare(props)
        except ConfigError as exc:
            log.warning("refused config update: %s", exc)
            raise RequestError(ResponseCode.SYSTEM_ERROR, str(exc)) from None
        text = candidate.to_text()
        if parse_properties(text) != candidate.to_properties():  # to_text escapes; this proves it
            raise RequestError(ResponseCode.SYSTEM_ERROR, "config not saved: a value cannot be written back as read")
        try:
            self.persist_config(text)
        except Exception as exc:
            # Not live either: what clients read is what the next start will use.
            log.error("config update not saved, nothing changed: %s", exc)
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"config not saved, nothing changed: {exc}") from None
        self.config.commit(candidate)
        log.info("config updated: %s%s", ", ".join(changed) or "nothing changed",
                 f" (ignored: {', '.join(ignored)})" if ignored else "")
        return self._ok(cmd)

    def get_config(self, cmd: RemotingCommand, conn: Hashable) -> RemotingCommand:
        return self._ok(cmd, body=self.config.reported_text().encode("utf-8"))


__all__ = ["Processor", "RequestError"]
