"""Hand-written name-server views shared by the diff tests."""

from __future__ import annotations

from typing import Mapping

from mqadmin.diff import ServerView
from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, QueueData, TopicRouteData

CLUSTER = "DefaultCluster"
ADDRS = {"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.3:10911", "broker-c": "10.0.0.5:10911"}
SLAVES = {"broker-a": "10.0.0.2:10911", "broker-b": "10.0.0.4:10911", "broker-c": "10.0.0.6:10911"}


def qd(broker: str, queues: int = 4, perm: int = 6, write: int | None = None) -> QueueData:
    return QueueData(broker, queues, queues if write is None else write, perm)


def bd(broker: str, *ids: int) -> BrokerData:
    """BrokerData with the given ids (default: master and slave)."""
    addrs = {i: (ADDRS if i == 0 else SLAVES)[broker] for i in (ids or (0, 1))}
    return BrokerData(CLUSTER, broker, addrs)


def route(*brokers: str, queues: int = 4, perm: int = 6, order_conf: str | None = None) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=tuple(qd(b, queues, perm) for b in brokers),
        broker_datas=tuple(bd(b) for b in brokers),
        order_topic_conf=order_conf,
    )


def wiped(broker: str, *others: str) -> TopicRouteData:
    """A route after wipeWritePerm of ``broker`` (perm 6 -> 4), ``others`` untouched."""
    names = sorted((broker, *others))
    return TopicRouteData(tuple(qd(b, perm=4 if b == broker else 6) for b in names), tuple(bd(b) for b in names))


def with_addrs(broker: str, addrs: Mapping[int, str], cluster: str = CLUSTER) -> TopicRouteData:
    """A one-broker route whose BrokerData has exactly ``addrs``."""
    return TopicRouteData((qd(broker),), (BrokerData(cluster, broker, dict(addrs)),))


def cluster(*brokers: str) -> ClusterInfo:
    return ClusterInfo({b: bd(b) for b in brokers}, {CLUSTER: tuple(brokers)})


def view(addr: str, topics: Mapping[str, TopicRouteData | None], *, brokers: tuple[str, ...] = ("broker-a", "broker-b"),
         topic_list: tuple[str, ...] | None = None, kv: Mapping[str, Mapping[str, str]] | None = None,
         config: Mapping[str, str] | None = None) -> ServerView:
    """A view that answered everything: cluster info of ``brokers``, topic list = the
    topics with a route unless given."""
    listed = tuple(t for t, r in topics.items() if r is not None) if topic_list is None else topic_list
    return ServerView(addr, latency_ms=1.5, cluster_info=cluster(*brokers), topic_list=listed, topics=dict(topics),
                      kv=dict(kv or {}), config=None if config is None else dict(config))
