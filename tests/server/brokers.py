"""Build broker requests for server tests."""

from __future__ import annotations

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.codes import SerializeType
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.register import register_body, register_request


def register(
    name: str = "broker-a",
    addr: str = "127.0.0.1:10911",
    broker_id: int = 0,
    topics: dict[str, int] | None = None,
    counter: int = 1,
    cluster: str = "DefaultCluster",
    compressed: bool = False,
    serialize_type: SerializeType = SerializeType.JSON,
    extra_ext: dict[str, str] | None = None,
) -> RemotingCommand:
    """REGISTER_BROKER as a 4.9.8 broker sends it; ``topics`` maps topic -> queue count."""
    body_obj = RegisterBrokerBody(
        data_version=DataVersion(counter=counter, timestamp=1_700_000_000_000 + counter),
        topic_configs={
            t: TopicConfig(topic_name=t, read_queue_nums=n, write_queue_nums=n)
            for t, n in (topics if topics is not None else {"order_topic": 4}).items()
        },
    )
    body = register_body(body_obj, compressed=compressed)
    return register_request(cluster, name, addr, broker_id, body, compressed=compressed, extra=extra_ext,
                            serialize_type=serialize_type)
