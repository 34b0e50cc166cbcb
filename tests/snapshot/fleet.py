"""A few brokers registered on real name servers, changed between snapshot rounds."""

from __future__ import annotations

from typing import Sequence

from mqadmin.bench.load import master_request, topics_body
from mqadmin.transport.client import NamesrvConnection

CLUSTER = "SnapCluster"


class Broker:
    """One master registered on some name servers; the connections stay open (closing
    one unregisters the broker), and ``register`` again replaces its topics."""

    def __init__(self, name: str, port: int) -> None:
        self.name = name
        self.addr = f"127.0.0.1:{port}"
        self.conns: dict[str, NamesrvConnection] = {}
        self.counter = 0

    async def register(self, namesrvs: Sequence[str], topics: Sequence[str], queues: int = 8) -> None:
        self.counter += 1
        body = topics_body(topics, queues, counter=self.counter)
        for ns in namesrvs:
            if ns not in self.conns:
                self.conns[ns] = await NamesrvConnection.connect(ns, 10.0)
            resp = await self.conns[ns].call(master_request(CLUSTER, self.name, self.addr, body), 10.0)
            assert resp.code == 0, (ns, resp.code, resp.remark)

    async def close(self) -> None:
        for conn in self.conns.values():
            await conn.close()
        self.conns.clear()


async def delete_topics(namesrv: str, topics: Sequence[str]) -> None:
    async with await NamesrvConnection.connect(namesrv, 10.0) as conn:
        for topic in topics:
            await conn.delete_topic_in_namesrv(topic)


async def put_kv(namesrv: str, namespace: str, key: str, value: str) -> None:
    async with await NamesrvConnection.connect(namesrv, 10.0) as conn:
        await conn.put_kv(namespace, key, value)
