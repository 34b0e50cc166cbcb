"""Body structures of the name-server requests, with fastjson-faithful encoders.

Every structure is a frozen dataclass holding plain values. Encoders write fields
in alphabetical order with nulls omitted, as fastjson does, so single-entry maps are
byte-identical to Java; decoders accept both fastjson dialects (see fastjson.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Mapping, Sequence

from .codes import VERSION_V3_0_11
from .errors import BodyDecodeError
from .fastjson import dumps_long_key_map, dumps_plain, dumps_str, dumps_str_list, lenient_loads
from .javahash import hashmap_order


def _load(body: bytes, what: str) -> Any:
    if not body:
        raise BodyDecodeError(f"{what}: empty body")
    try:
        return lenient_loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BodyDecodeError(f"{what}: body is not JSON: {exc}") from None


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BodyDecodeError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


def _int(obj: Mapping[str, Any], key: str, default: int, what: str) -> int:
    value = obj.get(key, default)
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise BodyDecodeError(f"{what}: field {key!r} is not a number: {value!r}") from None


def _bool(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


# --------------------------------------------------------------- DataVersion ----

@dataclass(frozen=True, slots=True)
class DataVersion:
    """A broker's topic-config version. ``state_version`` exists only on 5.x brokers
    (None when absent) and, when present, takes part in equality as in 5.x."""

    counter: int = 0
    timestamp: int = 0
    state_version: int | None = None

    def to_obj(self) -> dict[str, int]:
        obj = {"counter": self.counter}
        if self.state_version is not None:
            obj["stateVersion"] = self.state_version
        obj["timestamp"] = self.timestamp
        return obj

    def encode(self) -> bytes:
        return dumps_plain(self.to_obj()).encode()

    @classmethod
    def from_obj(cls, obj: Any, what: str = "DataVersion") -> DataVersion:
        obj = _obj(obj, what)
        sv = obj.get("stateVersion")
        return cls(
            counter=_int(obj, "counter", 0, what),
            timestamp=_int(obj, "timestamp", 0, what),
            state_version=None if sv is None else _int(obj, "stateVersion", 0, what),
        )

    @classmethod
    def decode(cls, body: bytes) -> DataVersion:
        return cls.from_obj(_load(body, "DataVersion"))


# ------------------------------------------------------------- TopicConfig ----

@dataclass(frozen=True, slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def to_obj(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @property
    def shape(self) -> QueueShape:
        """What a name server keeps of this config (spec 4.4: QueueData)."""
        return (self.read_queue_nums, self.write_queue_nums, self.perm, self.topic_sys_flag)

    @classmethod
    def from_obj(cls, name: str, obj: Any) -> TopicConfig:
        # Fast path: what every broker sends (a registration carries ~10^4 of these, and
        # the careful path below was most of the time of a re-registration).
        if type(obj) is dict:
            read, write, perm = obj.get("readQueueNums"), obj.get("writeQueueNums"), obj.get("perm")
            flag, order = obj.get("topicSysFlag", 0), obj.get("order", False)
            topic, kind = obj.get("topicName") or name, obj.get("topicFilterType") or "SINGLE_TAG"
            if (type(read) is int and type(write) is int and type(perm) is int and type(flag) is int
                    and type(order) is bool and type(topic) is str and type(kind) is str):
                return cls(topic, read, write, perm, kind, flag, order)
        what = f"TopicConfig {name!r}"
        obj = _obj(obj, what)
        return cls(
            topic_name=str(obj.get("topicName") or name),
            read_queue_nums=_int(obj, "readQueueNums", 16, what),
            write_queue_nums=_int(obj, "writeQueueNums", 16, what),
            perm=_int(obj, "perm", 6, what),
            topic_filter_type=str(obj.get("topicFilterType") or "SINGLE_TAG"),
            topic_sys_flag=_int(obj, "topicSysFlag", 0, what),
            order=_bool(obj.get("order", False)),
        )


#: A topic's queues on one broker as the name server keeps them:
#: (readQueueNums, writeQueueNums, perm, topicSysFlag).
QueueShape = tuple[int, int, int, int]


def queue_shapes(configs: Mapping[str, TopicConfig]) -> dict[str, QueueShape]:
    """Topic configs as the name server keeps them, keyed by the config's own topic name
    (4.9.8 registers ``TopicConfig.getTopicName()``, not the map key)."""
    return {tc.topic_name: tc.shape for tc in configs.values()}


@dataclass(frozen=True, slots=True)
class RegisterBrokerBody:
    """What a broker reports: its topic configs under a DataVersion, plus filter servers."""

    data_version: DataVersion = field(default_factory=DataVersion)
    topic_configs: Mapping[str, TopicConfig] = field(default_factory=dict)
    filter_server_list: Sequence[str] = ()
    #: 5.x static topics (``topicQueueMappingInfoMap``): topic -> this broker's mapping.
    topic_queue_mapping_info: Mapping[str, TopicQueueMappingInfo] = field(default_factory=dict)

    def encode(self) -> bytes:
        """RegisterBrokerBody JSON as a 4.9.8 broker sends it."""
        table = ",".join(
            f"{dumps_str(name)}:{dumps_plain(tc.to_obj())}" for name, tc in self.topic_configs.items()
        )
        return (
            '{"filterServerList":' + dumps_plain(list(self.filter_server_list))
            + ',"topicConfigSerializeWrapper":{"dataVersion":' + dumps_plain(self.data_version.to_obj())
            + ',"topicConfigTable":{' + table + "}}}"
        ).encode("utf-8")

    @classmethod
    def decode(cls, body: bytes, version: int) -> RegisterBrokerBody:
        """Decode by the request's version: below V3_0_11 (37) the body is a bare
        TopicConfigSerializeWrapper, as in Java's processor. No body = zero topics."""
        data_version, table, filters, mappings = _register_parts(body, version)
        return cls(
            data_version=data_version,
            topic_configs={name: TopicConfig.from_obj(name, tc) for name, tc in table.items()},
            filter_server_list=filters,
            topic_queue_mapping_info=_mapping_infos(mappings),
        )

    @staticmethod
    def decode_queues(body: bytes, version: int) -> tuple[DataVersion, dict[str, QueueShape], tuple[str, ...]]:
        """The name server's decode: only what it keeps of each topic, without building a
        TopicConfig per topic (a fleet broker re-registers 10^4 topics at a time, and
        the objects were most of that time). Same validation as ``decode``."""
        return RegisterBrokerBody.decode_queues_mapped(body, version)[:3]

    @staticmethod
    def decode_queues_mapped(body: bytes, version: int) -> tuple[
            DataVersion, dict[str, QueueShape], tuple[str, ...], dict[str, TopicQueueMappingInfo]]:
        """``decode_queues`` plus the 5.x static-topic mappings (empty from 4.x brokers)."""
        data_version, table, filters, mappings = _register_parts(body, version)
        return data_version, table_shapes(table), filters, _mapping_infos(mappings)


_SHAPE_FIELDS = itemgetter("readQueueNums", "writeQueueNums", "perm", "topicSysFlag")
_TOPIC_NAME = itemgetter("topicName")


def table_shapes(table: Mapping[str, Any]) -> dict[str, QueueShape]:
    """A parsed topicConfigTable's queue shapes, by topic name (a config's own
    ``topicName`` wins over its key, as in Java); BodyDecodeError for a bad config."""
    # What every broker sends: each config names itself and has the four fields as ints.
    # Then C loops do it (a fleet broker's 10^4 topics: ~1 ms instead of ~4); anything
    # else, the loop below, whose result is the same wherever both apply.
    configs = list(table.values())
    if all(type(tc) is dict for tc in configs):
        try:
            names, fields = list(map(_TOPIC_NAME, configs)), list(map(_SHAPE_FIELDS, configs))
            distinct = set(fields)
        except (KeyError, TypeError):  # a field missing, or one no number has (a list, an object)
            pass
        else:
            if names == list(table) and all(type(v) is int for shape in distinct for v in shape):
                return dict(zip(names, fields))
    shapes: dict[str, QueueShape] = {}
    for name, tc in table.items():
        if type(tc) is dict:
            read, write, perm = tc.get("readQueueNums"), tc.get("writeQueueNums"), tc.get("perm")
            flag, topic = tc.get("topicSysFlag", 0), tc.get("topicName") or name
            if type(read) is int and type(write) is int and type(perm) is int and type(flag) is int \
                    and type(topic) is str:
                shapes[topic] = (read, write, perm, flag)
                continue
        config = TopicConfig.from_obj(name, tc)  # the careful path: defaults, or a clear error
        shapes[config.topic_name] = config.shape
    return shapes


def _mapping_infos(raw: Mapping[str, Any]) -> dict[str, TopicQueueMappingInfo]:
    return {str(topic): TopicQueueMappingInfo.from_obj(info) for topic, info in raw.items() if info is not None}


def _register_parts(body: bytes, version: int) -> tuple[DataVersion, dict[str, Any], tuple[str, ...], dict[str, Any]]:
    """A registration body's DataVersion, raw topicConfigTable, filter servers and raw
    5.x topicQueueMappingInfoMap (TopicConfigAndMappingSerializeWrapper; empty from 4.x)."""
    if not body:
        return DataVersion(), {}, (), {}
    obj = _obj(_load(body, "RegisterBrokerBody"), "RegisterBrokerBody")
    if version >= VERSION_V3_0_11:
        wrapper = _obj(obj.get("topicConfigSerializeWrapper") or {}, "topicConfigSerializeWrapper")
        filters = obj.get("filterServerList") or []
        if not isinstance(filters, list):
            raise BodyDecodeError("RegisterBrokerBody: filterServerList is not an array")
    else:
        wrapper, filters = obj, []
    table = _obj(wrapper.get("topicConfigTable") or {}, "topicConfigTable")
    dv_raw = wrapper.get("dataVersion")
    mappings = _obj(wrapper.get("topicQueueMappingInfoMap") or {}, "topicQueueMappingInfoMap")
    return (DataVersion() if dv_raw is None else DataVersion.from_obj(dv_raw), table,
            tuple(str(f) for f in filters), mappings)


# ------------------------------------------------------------------ Routes ----

@dataclass(frozen=True, slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_obj(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    def _json(self, standard: bool) -> str:
        return (
            '{"brokerName":' + dumps_str(self.broker_name, standard=standard)
            + f',"perm":{self.perm},"readQueueNums":{self.read_queue_nums}'
            + f',"topicSysFlag":{self.topic_sys_flag},"writeQueueNums":{self.write_queue_nums}}}'
        )

    @classmethod
    def from_obj(cls, obj: Any) -> QueueData:
        what = "QueueData"
        obj = _obj(obj, what)
        return cls(
            broker_name=str(obj.get("brokerName")),
            read_queue_nums=_int(obj, "readQueueNums", 0, what),
            write_queue_nums=_int(obj, "writeQueueNums", 0, what),
            perm=_int(obj, "perm", 0, what),
            topic_sys_flag=_int(obj, "topicSysFlag", 0, what),
        )


@dataclass(frozen=True, slots=True)
class BrokerData:
    """One master/slave group: ``broker_addrs`` maps brokerId (0 = master) to address.

    ``enable_acting_master`` and ``zone_name`` are the 5.x fields. None means "not
    reported": a 4.x broker's group is written without them, byte-identical to 4.9.8
    (a Java 5 server would write ``"enableActingMaster":false`` there; clients read both
    the same). A 5.x broker's group always carries ``enableActingMaster``, as in Java 5.
    """

    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str]
    enable_acting_master: bool | None = None
    zone_name: str | None = None

    def to_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "brokerAddrs": {str(k): v for k, v in sorted(self.broker_addrs.items())},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }
        if self.enable_acting_master is not None:
            obj["enableActingMaster"] = self.enable_acting_master
        if self.zone_name is not None:
            obj["zoneName"] = self.zone_name
        return obj

    def _json(self, standard: bool) -> str:
        out = (
            '{"brokerAddrs":' + dumps_long_key_map(dict(self.broker_addrs), standard=standard)
            + ',"brokerName":' + dumps_str(self.broker_name, standard=standard)
            + ',"cluster":' + dumps_str(self.cluster, standard=standard)
        )
        if self.enable_acting_master is not None:
            out += ',"enableActingMaster":' + ("true" if self.enable_acting_master else "false")
        if self.zone_name is not None:
            out += ',"zoneName":' + dumps_str(self.zone_name, standard=standard)
        return out + "}"

    def member_group_json(self) -> str:
        """The same group as 5.x's BrokerMemberGroup (GET_BROKER_MEMBER_GROUP): no 5.x
        fields, integer keys unquoted."""
        return BrokerData(self.cluster, self.broker_name, self.broker_addrs)._json(False)

    @classmethod
    def from_obj(cls, obj: Any) -> BrokerData:
        what = "BrokerData"
        obj = _obj(obj, what)
        addrs = _obj(obj.get("brokerAddrs") or {}, "brokerAddrs")
        try:
            parsed = {int(k): str(v) for k, v in addrs.items() if v is not None}
        except ValueError:
            raise BodyDecodeError(f"{what}: brokerAddrs has a key that is not a broker id") from None
        eam, zone = obj.get("enableActingMaster"), obj.get("zoneName")
        return cls(cluster=str(obj.get("cluster")), broker_name=str(obj.get("brokerName")), broker_addrs=parsed,
                   enable_acting_master=None if eam is None else _bool(eam),
                   zone_name=None if zone is None else str(zone))


#: fastjson's BrowserCompatible mode writes longs outside JavaScript's safe range as strings.
_JS_SAFE = 9007199254740991


@dataclass(frozen=True, slots=True)
class TopicQueueMappingInfo:
    """RIP-21 static topics: one broker's share of a topic's logical queues, as the
    broker reports it in a 5.x registration and routes return it per broker name.
    ``curr_id_map`` maps logical queue id -> physical queue id on that broker."""

    topic: str | None
    bname: str | None
    total_queues: int = 0
    epoch: int = 0
    dirty: bool = False
    scope: str | None = "__global__"
    curr_id_map: Mapping[int, int] = field(default_factory=dict)

    def _json(self, standard: bool) -> str:
        def long(v: int) -> str:
            return f'"{v}"' if standard and abs(v) > _JS_SAFE else str(v)

        ids = sorted(self.curr_id_map.items())
        id_map = ",".join(f'"{k}":{v}' if standard else f"{k}:{v}" for k, v in ids)
        parts = []
        if self.bname is not None:
            parts.append('"bname":' + dumps_str(self.bname, standard=standard))
        parts.append('"currIdMap":{' + id_map + "}")
        parts.append('"dirty":' + ("true" if self.dirty else "false"))
        parts.append('"epoch":' + long(self.epoch))
        if self.scope is not None:
            parts.append('"scope":' + dumps_str(self.scope, standard=standard))
        if self.topic is not None:
            parts.append('"topic":' + dumps_str(self.topic, standard=standard))
        parts.append(f'"totalQueues":{self.total_queues}')
        return "{" + ",".join(parts) + "}"

    def to_obj(self) -> dict[str, Any]:
        return {"bname": self.bname, "currIdMap": {str(k): v for k, v in sorted(self.curr_id_map.items())},
                "dirty": self.dirty, "epoch": self.epoch, "scope": self.scope, "topic": self.topic,
                "totalQueues": self.total_queues}

    @classmethod
    def from_obj(cls, obj: Any) -> TopicQueueMappingInfo:
        what = "TopicQueueMappingInfo"
        obj = _obj(obj, what)
        raw_ids = obj.get("currIdMap")
        ids = {} if raw_ids is None else _obj(raw_ids, f"{what}.currIdMap")
        try:
            id_map = {int(k): int(v) for k, v in ids.items() if v is not None}
        except (TypeError, ValueError):
            raise BodyDecodeError(f"{what}: currIdMap is not a map of queue ids") from None
        topic, bname, scope = obj.get("topic"), obj.get("bname"), obj.get("scope", "__global__")
        return cls(
            topic=None if topic is None else str(topic), bname=None if bname is None else str(bname),
            total_queues=_int(obj, "totalQueues", 0, what), epoch=_int(obj, "epoch", 0, what),
            dirty=_bool(obj.get("dirty", False)), scope=None if scope is None else str(scope), curr_id_map=id_map,
        )


@dataclass(frozen=True, slots=True)
class TopicRouteData:
    queue_datas: Sequence[QueueData]
    broker_datas: Sequence[BrokerData]
    filter_server_table: Mapping[str, Sequence[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None
    #: 5.x static topics: broker name -> its TopicQueueMappingInfo; None (left out) for
    #: topics without logical queues, which is every topic of a 4.x fleet.
    topic_queue_mapping_by_broker: Mapping[str, TopicQueueMappingInfo] | None = None

    def to_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "brokerDatas": [b.to_obj() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in self.filter_server_table.items()},
        }
        if self.order_topic_conf is not None:
            obj["orderTopicConf"] = self.order_topic_conf
        obj["queueDatas"] = [q.to_obj() for q in self.queue_datas]
        if self.topic_queue_mapping_by_broker is not None:
            obj["topicQueueMappingByBroker"] = {k: v.to_obj() for k, v in self.topic_queue_mapping_by_broker.items()}
        return obj

    def encode(self, *, standard: bool) -> bytes:
        """The 105 body. ``standard`` selects fastjson's browser-compatible mode (quoted,
        sorted integer keys; ``\\/`` and ``\\uXXXX`` escapes) used for clients >= 4.9.4."""
        s = standard
        fst = ",".join(
            f"{dumps_str(k, standard=s)}:[{','.join(dumps_str(a, standard=s) for a in v)}]"
            for k, v in (sorted(self.filter_server_table.items()) if s else self.filter_server_table.items())
        )
        parts = [
            '{"brokerDatas":[', ",".join(b._json(s) for b in self.broker_datas),
            '],"filterServerTable":{', fst, "}",
        ]
        if self.order_topic_conf is not None:
            parts += [',"orderTopicConf":', dumps_str(self.order_topic_conf, standard=s)]
        parts += [',"queueDatas":[', ",".join(q._json(s) for q in self.queue_datas), "]"]
        mapping = self.topic_queue_mapping_by_broker
        if mapping is not None:
            # A HashMap in Java: sorted in standard mode (MapSortField), hash order otherwise.
            names = sorted(mapping) if s else hashmap_order(mapping)
            parts += [',"topicQueueMappingByBroker":{',
                      ",".join(f"{dumps_str(n, standard=s)}:{mapping[n]._json(s)}" for n in names), "}"]
        parts.append("}")
        return "".join(parts).encode("utf-8")

    @classmethod
    def decode(cls, body: bytes) -> TopicRouteData:
        obj = _obj(_load(body, "TopicRouteData"), "TopicRouteData")
        fst = _obj(obj.get("filterServerTable") or {}, "filterServerTable")
        otc = obj.get("orderTopicConf")
        tqm = obj.get("topicQueueMappingByBroker")
        return cls(
            queue_datas=tuple(QueueData.from_obj(q) for q in obj.get("queueDatas") or ()),
            broker_datas=tuple(BrokerData.from_obj(b) for b in obj.get("brokerDatas") or ()),
            filter_server_table={str(k): tuple(v or ()) for k, v in fst.items()},
            order_topic_conf=None if otc is None else str(otc),
            topic_queue_mapping_by_broker=None if tqm is None else {
                str(k): TopicQueueMappingInfo.from_obj(v)
                for k, v in _obj(tqm, "topicQueueMappingByBroker").items()},
        )


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    broker_addr_table: Mapping[str, BrokerData]
    cluster_addr_table: Mapping[str, Sequence[str]]

    def to_obj(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {k: v.to_obj() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": {k: list(v) for k, v in self.cluster_addr_table.items()},
        }

    def encode(self) -> bytes:
        """Always fastjson's default dialect (unquoted integer keys), whatever the client."""
        bat = ",".join(f"{dumps_str(k)}:{v._json(False)}" for k, v in self.broker_addr_table.items())
        cat = ",".join(f"{dumps_str(k)}:{dumps_plain(list(v))}" for k, v in self.cluster_addr_table.items())
        return ('{"brokerAddrTable":{' + bat + '},"clusterAddrTable":{' + cat + "}}").encode("utf-8")

    @classmethod
    def decode(cls, body: bytes) -> ClusterInfo:
        obj = _obj(_load(body, "ClusterInfo"), "ClusterInfo")
        bat = _obj(obj.get("brokerAddrTable") or {}, "brokerAddrTable")
        cat = _obj(obj.get("clusterAddrTable") or {}, "clusterAddrTable")
        return cls(
            broker_addr_table={str(k): BrokerData.from_obj(v) for k, v in bat.items()},
            cluster_addr_table={str(k): tuple(str(x) for x in (v or ())) for k, v in cat.items()},
        )


# -------------------------------------------------------- TopicList, KVTable ----

@dataclass(frozen=True, slots=True)
class TopicList:
    topics: Sequence[str]
    broker_addr: str | None = None

    def encode(self) -> bytes:
        head = "{" if self.broker_addr is None else '{"brokerAddr":' + dumps_str(self.broker_addr) + ","
        return (head + '"topicList":' + dumps_str_list(list(self.topics)) + "}").encode("utf-8")

    @classmethod
    def decode(cls, body: bytes) -> TopicList:
        obj = _obj(_load(body, "TopicList"), "TopicList")
        addr = obj.get("brokerAddr")
        return cls(topics=tuple(str(t) for t in obj.get("topicList") or ()), broker_addr=None if addr is None else str(addr))


def encode_kv_table(table: Mapping[str, str]) -> bytes:
    return ('{"table":' + dumps_plain(dict(table)) + "}").encode("utf-8")


def decode_kv_table(body: bytes) -> dict[str, str]:
    obj = _obj(_load(body, "KVTable"), "KVTable")
    table = _obj(obj.get("table") or {}, "KVTable.table")
    return {str(k): str(v) for k, v in table.items() if v is not None}
