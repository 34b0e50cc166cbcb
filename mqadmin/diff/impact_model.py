"""Results of the client-impact analysis: what consumers and producers would do per view.

Frozen dataclasses of plain values, like model.py; ``to_obj()`` is the JSON schema and
prints queues as ``"broker-b/0"`` labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: A message queue as clients name it: (brokerName, queueId).
Queue = tuple[str, int]


def queue_label(queue: Queue) -> str:
    """``("broker-b", 0)`` -> ``"broker-b/0"`` (RocketMQ broker names cannot contain '/')."""
    return f"{queue[0]}/{queue[1]}"


@dataclass(frozen=True, slots=True)
class ConsumerAssignment:
    """What consumer ``consumer`` (c1 < c2 < ... in consumer-id order) takes when it asks
    one of ``servers`` (all servers giving that same read-queue list)."""

    consumer: str
    servers: tuple[str, ...]
    queues: tuple[Queue, ...]

    def to_obj(self) -> dict[str, Any]:
        return {
            "consumer": self.consumer, "servers": list(self.servers), "queues": [queue_label(q) for q in self.queues],
        }


@dataclass(frozen=True, slots=True)
class ConsumerImpact:
    """Worst case of one consumer group over which consumer asks which server.

    ``queues`` is the union of read queues over the answering views (a queue one server
    still advertises is taken to exist). The worst case maximises
    ``len(unassigned) + len(doubly_assigned)``; ``worst_case`` is empty when all views
    give the same queue list (then every queue has exactly one owner).
    """

    queues: tuple[Queue, ...]
    unassigned: tuple[Queue, ...]
    doubly_assigned: tuple[Queue, ...]
    worst_case: tuple[ConsumerAssignment, ...]
    exact: bool  # False: the assignment space was too large and a local search was used
    assignments_checked: int

    def to_obj(self) -> dict[str, Any]:
        return {
            "queues": [queue_label(q) for q in self.queues],
            "unassigned": [queue_label(q) for q in self.unassigned],
            "doubly_assigned": [queue_label(q) for q in self.doubly_assigned],
            "worst_case": [a.to_obj() for a in self.worst_case],
            "exact": self.exact,
            "assignments_checked": self.assignments_checked,
        }


@dataclass(frozen=True, slots=True)
class BrokerShare:
    """A broker's write queues in one producer queue list, its share of round-robin
    sends (rounded to 4 places) and that share minus the agreed one."""

    broker: str
    queues: int
    share: float
    delta: float

    def to_obj(self) -> dict[str, Any]:
        return {"broker": self.broker, "queues": self.queues, "share": self.share, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class ProducerView:
    server: str
    queues: tuple[Queue, ...]  # write queues in the producer's order (spec 8.3)
    brokers: tuple[BrokerShare, ...]
    agrees: bool  # same ordered list as the agreed one

    def to_obj(self) -> dict[str, Any]:
        return {
            "server": self.server, "queues": [queue_label(q) for q in self.queues],
            "brokers": [b.to_obj() for b in self.brokers], "agrees": self.agrees,
        }


@dataclass(frozen=True, slots=True)
class ProducerImpact:
    """Producers' write-queue lists per view against the agreed list.

    Agreed = the ordered write-queue list held by the most answering servers (a client
    picks its name server at random, so this is what most producers use); ties go to the
    longer list (a missing broker or wiped perm is more often a lost update than the
    intended state), then to the earlier server. ``majority`` says whether more than half
    the servers hold it. ``key_hash_breaks``: the lists differ, so ``hash % size`` selectors
    (SelectMessageQueueByHash) send one key to different queues and per-key order breaks.
    """

    agreed_servers: tuple[str, ...]
    majority: bool
    agreed_queues: tuple[Queue, ...]
    agreed: tuple[BrokerShare, ...]
    views: tuple[ProducerView, ...]
    key_hash_breaks: bool

    def to_obj(self) -> dict[str, Any]:
        return {
            "agreed_servers": list(self.agreed_servers), "majority": self.majority,
            "agreed_queues": [queue_label(q) for q in self.agreed_queues],
            "agreed": [b.to_obj() for b in self.agreed],
            "views": [v.to_obj() for v in self.views], "key_hash_breaks": self.key_hash_breaks,
        }


@dataclass(frozen=True, slots=True)
class TopicImpact:
    topic: str
    strategy: str
    consumers: int
    servers: tuple[str, ...]  # answering servers, input order
    consumer: ConsumerImpact
    producer: ProducerImpact

    @property
    def affects_clients(self) -> bool:
        """False when the routes differ only where clients do not look (slave addresses,
        cluster names, perm bits that leave both queue lists unchanged)."""
        return bool(self.consumer.worst_case) or self.producer.key_hash_breaks

    def to_obj(self) -> dict[str, Any]:
        return {
            "topic": self.topic, "strategy": self.strategy, "consumers": self.consumers,
            "servers": list(self.servers), "consumer": self.consumer.to_obj(), "producer": self.producer.to_obj(),
        }
