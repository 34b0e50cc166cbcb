"""Wire codes of RocketMQ remoting, named exactly as in Java.

Operators grep logs and captures for these names, so they keep Java's spelling
(``GET_ROUTEINFO_BY_TOPIC``, ``TOPIC_NOT_EXIST``) instead of Python style.
"""

from __future__ import annotations

from enum import IntEnum


class RequestCode(IntEnum):
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    # Sent by admin tools to brokers, never to a name server; listed so that the
    # admin client and the broker simulator share one table of names.
    UPDATE_AND_CREATE_TOPIC = 17
    GET_BROKER_RUNTIME_INFO = 28
    DELETE_TOPIC_IN_BROKER = 215
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_TOPIC_IN_NAMESRV = 216
    REGISTER_TOPIC_IN_NAMESRV = 217
    GET_KVLIST_BY_NAMESPACE = 219
    GET_TOPICS_BY_CLUSTER = 224
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    QUERY_DATA_VERSION = 322
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_BROKER_MEMBER_GROUP = 901
    BROKER_HEARTBEAT = 904


class ResponseCode(IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    QUERY_NOT_FOUND = 22
    GO_AWAY = 1500


class SerializeType(IntEnum):
    JSON = 0
    ROCKETMQ = 1


#: LanguageCode ordinals; the binary header carries the number, JSON the name.
LANGUAGE_CODES: dict[str, int] = {
    "JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6,
    "OTHER": 7, "HTTP": 8, "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12, "NODE_JS": 13,
}
LANGUAGE_NAMES: dict[int, str] = {v: k for k, v in LANGUAGE_CODES.items()}

#: Release ordinals that change behaviour on the wire (spec conventions).
VERSION_V3_0_11 = 37
VERSION_V4_9_4 = 401
VERSION_V4_9_8 = 409
VERSION_V5_0_0 = 413

#: flag bits of the command header
FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

#: topic permission bits (PermName)
PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1

#: topicSysFlag bits (TopicSysFlag)
FLAG_UNIT = 1
FLAG_UNIT_SUB = 2

MASTER_ID = 0
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


def code_name(code: int, *, response: bool = False) -> str:
    """Java name of a code, or the bare number when we do not know it."""
    table = ResponseCode if response else RequestCode
    try:
        return table(code).name
    except ValueError:
        return str(code)


def perm_to_string(perm: int) -> str:
    """Render perm like Java's PermName.perm2String: ``RW-`` for 6, ``R--`` for 4."""
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )
