"""Many connections at once, bounded in count and time, on loopback only."""

from __future__ import annotations

import asyncio

from mqnamesrv.protocol.bodies import TopicRouteData
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, encode
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register

CONNECTIONS = 1000


async def _one(host: str, port: int, topic: str, n: int, all_open: asyncio.Barrier) -> list[int]:
    reader, writer = await asyncio.open_connection(host, port)
    await all_open.wait()  # every connection is open before any sends
    reqs = [request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}) for _ in range(n)]
    writer.write(b"".join(encode(r) for r in reqs))
    await writer.drain()
    dec = FrameDecoder()
    got: list[int] = []
    while len(got) < n:
        cmd = dec.next_frame()
        if cmd is NEED_DATA:
            data = await reader.read(65536)
            assert data, "connection closed early"
            dec.feed(data)
            continue
        assert TopicRouteData.decode(cmd.body).queue_datas[0].broker_name == "broker-a"  # type: ignore[union-attr]
        got.append(cmd.opaque)  # type: ignore[union-attr]
    writer.close()
    assert sorted(got) == sorted(r.opaque for r in reqs)
    return got


def test_thousand_concurrent_connections(namesrv: NameServerProcess) -> None:
    with RawClient(namesrv.addr) as broker:
        assert broker.call(register("broker-a")).code == 0

        async def main() -> int:
            host, port = namesrv.addr.split(":")
            barrier = asyncio.Barrier(CONNECTIONS)
            results = await asyncio.wait_for(
                asyncio.gather(*(_one(host, int(port), "order_topic", 3, barrier) for _ in range(CONNECTIONS))), 60
            )
            return sum(len(r) for r in results)

        assert asyncio.run(main()) == CONNECTIONS * 3
