"""Cancellation ends a ``Link`` call, a broker's registration and its answers at once.

The peers and the race-making loop are those of ``tests/cli/test_cancel.py``.
"""

from __future__ import annotations

import asyncio

from mqadmin.fixture.broker_sim import BrokerConfig, SimulatedBroker
from mqadmin.fixture.link import Link
from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.command import RemotingCommand, request
from tests.cli.test_cancel import LONG, CancelOnAnswerLoop, Peer, all_closed, cancelled_promptly, run, until


async def two_calls(addr: str) -> None:
    link = await Link.open(addr)
    try:
        await link.call(request(RequestCode.GET_BROKER_CLUSTER_INFO), LONG)
        await link.call(request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), LONG)
    finally:
        await link.close()


def test_cancel_while_the_peer_is_silent() -> None:
    async def main() -> None:
        peer = await Peer().start()
        task = asyncio.create_task(two_calls(peer.addr))
        await until(lambda: bool(peer.requests), "request sent")
        task.cancel()
        await cancelled_promptly(task)
        assert peer.accepted == 1
        await all_closed([peer])

    run(main)


def test_cancel_arriving_with_the_answer_is_not_lost() -> None:
    async def main() -> None:
        peer = await Peer(answers=1).start()
        task = asyncio.create_task(two_calls(peer.addr))
        loop = asyncio.get_running_loop()
        assert isinstance(loop, CancelOnAnswerLoop)
        loop.victim = task
        await cancelled_promptly(task)
        assert loop.victim is None, "no answer came"
        assert peer.accepted == 1
        await all_closed([peer])

    run(main, CancelOnAnswerLoop)


def test_close_drops_requests_still_being_answered() -> None:
    """A request from the server whose handler never returns does not outlive the link."""
    async def main() -> None:
        peer = await Peer().start()
        started = asyncio.Event()

        async def stuck(cmd: RemotingCommand) -> RemotingCommand | None:
            started.set()
            await asyncio.Event().wait()
            return None

        link = await Link.open(peer.addr, stuck)
        await until(lambda: peer.accepted == 1, "connected")
        peer.push(request(RequestCode.GET_BROKER_RUNTIME_INFO))
        await until(started.is_set, "handler called")
        await link.close()
        await all_closed([peer])

    run(main)


def test_broker_cancelled_while_registering_stops_and_crash_closes_its_links() -> None:
    async def main() -> None:
        peers = [await Peer().start() for _ in range(2)]
        broker = SimulatedBroker(BrokerConfig(listen=False, request_timeout=LONG), namesrv_addrs=[p.addr for p in peers])
        task = asyncio.create_task(broker.start())
        await until(lambda: all(p.requests for p in peers), "REGISTER_BROKER sent")
        task.cancel()
        await cancelled_promptly(task)
        await broker.crash()
        assert [p.accepted for p in peers] == [1, 1]
        await all_closed(peers)

    run(main)
