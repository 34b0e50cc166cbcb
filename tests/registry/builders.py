"""Small builders shared by the registry tests: topic configs, registrations, commands."""

from __future__ import annotations

from typing import Hashable, Iterable, Mapping, Sequence

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.register import next_port, register_body, register_request
from mqnamesrv.registry.routes import RegisterResult, RouteTable

CLUSTER = "DefaultCluster"
TS = 1_700_000_000_000

# broker-a: a master and its slave; broker-b: a lone master.
MASTER_A = "10.0.0.1:10911"
SLAVE_A = "10.0.0.2:10911"
MASTER_B = "10.0.0.3:10911"


def ha_of(addr: str) -> str:
    return next_port(addr)


def topic(name: str, queues: int = 4, perm: int = 6, sys_flag: int = 0) -> TopicConfig:
    return TopicConfig(
        topic_name=name, read_queue_nums=queues, write_queue_nums=queues, perm=perm, topic_sys_flag=sys_flag
    )


def dv(counter: int) -> DataVersion:
    return DataVersion(counter=counter, timestamp=TS + counter)


def register(
    table: RouteTable,
    name: str = "broker-a",
    addr: str = MASTER_A,
    broker_id: int = 0,
    topics: Iterable[TopicConfig] = (),
    counter: int = 1,
    cluster: str = CLUSTER,
    conn: Hashable | None = None,
    filters: Sequence[str] | None = (),
    timeout_ms: int | None = None,
) -> RegisterResult:
    """RouteTable.register_broker as a 4.9.8 broker's registration would call it."""
    return table.register_broker(
        cluster, name, addr, broker_id, ha_of(addr), dv(counter),
        {tc.topic_name: tc.shape for tc in topics}, filters, conn, timeout_ms,
    )


def broker_ext(name: str, addr: str, broker_id: int, cluster: str = CLUSTER) -> dict[str, str]:
    return {"clusterName": cluster, "brokerName": name, "brokerAddr": addr, "brokerId": str(broker_id)}


def register_cmd(
    name: str = "broker-a",
    addr: str = MASTER_A,
    broker_id: int = 0,
    topics: Mapping[str, int] | None = None,
    counter: int = 1,
    cluster: str = CLUSTER,
    *,
    compressed: bool = False,
    version: int = 409,
    body: bytes | None = None,
    crc: int | None = None,
    oneway: bool = False,
    filters: Sequence[str] = (),
    extra_ext: Mapping[str, str] | None = None,
) -> RemotingCommand:
    """REGISTER_BROKER as a 4.9.8 broker sends it; ``topics`` maps topic -> queue count."""
    if body is None:
        reg = RegisterBrokerBody(
            data_version=dv(counter),
            topic_configs={t: topic(t, n) for t, n in (topics if topics is not None else {"order_topic": 4}).items()},
            filter_server_list=tuple(filters),
        )
        body = register_body(reg, compressed=compressed)
    return register_request(cluster, name, addr, broker_id, body, compressed=compressed, crc=crc, extra=extra_ext,
                            version=version, oneway=oneway)
