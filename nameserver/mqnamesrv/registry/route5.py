"""What a 5.x name server does to a route after assembling it: acting masters and zones.

Pure functions over TopicRouteData. Java 5 does the first inside pickupTopicRouteData
(only with ``supportActingMaster``) and the second in ZoneRouteRPCHook, after the
processor, by decoding the response body and encoding it again in fastjson's default
dialect: a zone-filtered route therefore has unquoted integer keys whatever the client
version (the dispatcher encodes it that way).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..protocol.bodies import BrokerData, TopicRouteData
from ..protocol.codes import MASTER_ID, PERM_WRITE

#: 5.x TopicValidator.SYNC_BROKER_MEMBER_GROUP_PREFIX: brokers' own group topics, never rewritten.
SYNC_BROKER_MEMBER_GROUP_PREFIX = "rmq_sys_SYNC_BROKER_MEMBER_"
#: The request fields of 5.x's DynamicalExtFieldRPCHook (MixAll.ZONE_MODE / ZONE_NAME).
ZONE_MODE = "__ZONE_MODE"
ZONE_NAME = "__ZONE_NAME"


def with_acting_masters(route: TopicRouteData, topic: str) -> TopicRouteData:
    """5.x ``supportActingMaster``: in a group that lost its master, runs in acting-master
    mode and whose queues are read-only, the lowest-id slave is listed as brokerId 0, so
    that clients built for master/slave routes still find a "master" to read from."""
    if topic.startswith(SYNC_BROKER_MEMBER_GROUP_PREFIX) or not route.broker_datas or not route.queue_datas:
        return route
    if all(not b.broker_addrs or MASTER_ID in b.broker_addrs for b in route.broker_datas):
        return route
    brokers = []
    for b in route.broker_datas:
        addrs = b.broker_addrs
        if addrs and MASTER_ID not in addrs and b.enable_acting_master:
            qd = next((q for q in route.queue_datas if q.broker_name == b.broker_name), None)
            if qd is not None and not qd.perm & PERM_WRITE:
                acting = min(addrs)
                moved = {k: v for k, v in addrs.items() if k != acting}
                moved[MASTER_ID] = addrs[acting]
                b = replace(b, broker_addrs=moved)
        brokers.append(b)
    return replace(route, broker_datas=tuple(brokers))


def requested_zone(get: Callable[[str], str | None]) -> str | None:
    """The client's zone when it asked for zone routing (``__ZONE_MODE`` true, in any
    case, as Java's Boolean.valueOf, and a non-blank ``__ZONE_NAME``), else None."""
    if (get(ZONE_MODE) or "").lower() != "true":
        return None
    zone = get(ZONE_NAME)
    return zone if zone is not None and zone.strip() else None


def filter_by_zone(route: TopicRouteData, zone: str) -> TopicRouteData:
    """ZoneRouteRPCHook: keep the groups of the client's zone (compared ignoring case)
    and any group without a master ("master down, consume from slave"); drop the
    others' queues and filter servers."""
    kept: list[BrokerData] = []
    dropped: list[BrokerData] = []
    for b in route.broker_datas:
        keep = MASTER_ID not in b.broker_addrs or (b.zone_name is not None and b.zone_name.lower() == zone.lower())
        (kept if keep else dropped).append(b)
    if not dropped:
        return route
    names = {b.broker_name for b in dropped}
    gone = {addr for b in dropped for addr in b.broker_addrs.values()}
    return replace(
        route,
        broker_datas=tuple(kept),
        queue_datas=tuple(q for q in route.queue_datas if q.broker_name not in names),
        filter_server_table={a: fs for a, fs in route.filter_server_table.items() if a not in gone},
    )
