"""Cancellation (Ctrl-C) ends a client call or a fan-out at once, closing every connection.

Python 3.11's ``asyncio.wait_for`` returns the result instead of raising when the
cancellation arrives in the loop iteration that completes its awaitable (gh-86296);
``CancelOnAnswerLoop`` makes that happen on purpose. Every wait here is bounded, so a
lost cancellation fails a test in seconds instead of hanging it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine

import pytest

from mqadmin.transport.client import NamesrvConnection
from mqadmin.transport.fanout import ask_all
from mqnamesrv.protocol.codes import ResponseCode
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, encode

#: seconds a cancelled call may take to end; the calls' own timeouts are far longer
BOUND = 3.0
#: per-call timeout of the clients under test: a lost cancellation would wait this long
LONG = 20.0
_CLUSTER_INFO = b'{"brokerAddrTable":{},"clusterAddrTable":{}}'


class _CancelOnAnswer(asyncio.Future[Any]):
    def set_result(self, result: Any) -> None:
        super().set_result(result)
        loop = self.get_loop()
        victim = getattr(loop, "victim", None)
        if victim is not None and isinstance(result, RemotingCommand):
            loop.victim = None  # type: ignore[attr-defined]
            victim.cancel()


class CancelOnAnswerLoop(asyncio.SelectorEventLoop):
    """An event loop whose futures cancel ``victim`` the moment one of them is given a
    RemotingCommand: the cancellation and the answer arrive in the same iteration."""

    victim: asyncio.Task[Any] | None = None

    def create_future(self) -> asyncio.Future[Any]:
        return _CancelOnAnswer(loop=self)


class Peer:
    """A remoting server on 127.0.0.1:0 in the test's own loop. It answers the first
    ``answers`` requests of each connection (SUCCESS, an empty cluster info), then stays
    silent. Plain protocol callbacks, no tasks: ``asyncio.all_tasks()`` shows only the
    client's."""

    def __init__(self, answers: int = 0) -> None:
        self.answers = answers
        self.accepted = 0
        self.closed = 0  # connections the client closed (EOF seen)
        self.requests: list[RemotingCommand] = []
        self.transports: list[asyncio.Transport] = []
        self._server: asyncio.AbstractServer | None = None
        self.addr = ""

    async def start(self) -> Peer:
        self._server = await asyncio.get_running_loop().create_server(lambda: _PeerConnection(self), "127.0.0.1", 0)
        self.addr = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    def push(self, cmd: RemotingCommand) -> None:
        """Send ``cmd`` on every open connection (a server's request to a broker)."""
        for transport in self.transports:
            transport.write(encode(cmd))

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for transport in self.transports:
            transport.close()
        await self._server.wait_closed()


class _PeerConnection(asyncio.Protocol):
    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.decoder = FrameDecoder()
        self.answered = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.peer.accepted += 1
        self.peer.transports.append(transport)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.decoder.feed(data)
        while (cmd := self.decoder.next_frame()) is not NEED_DATA:
            assert isinstance(cmd, RemotingCommand)
            if cmd.is_response:
                continue
            self.peer.requests.append(cmd)
            if self.answered < self.peer.answers:
                self.answered += 1
                self.transport.write(encode(cmd.response(ResponseCode.SUCCESS, body=_CLUSTER_INFO)))

    def connection_lost(self, exc: Exception | None) -> None:
        self.peer.closed += 1
        if self.transport in self.peer.transports:
            self.peer.transports.remove(self.transport)


async def until(predicate: Callable[[], bool], what: str) -> None:
    """Poll ``predicate`` for at most BOUND seconds."""
    try:
        async with asyncio.timeout(BOUND):
            while not predicate():
                await asyncio.sleep(0.01)
    except TimeoutError:
        pytest.fail(f"not within {BOUND:g} s: {what}")


async def cancelled_promptly(task: asyncio.Task[Any]) -> None:
    """``task`` (already cancelled) ends with CancelledError within BOUND seconds."""
    done, _ = await asyncio.wait([task], timeout=BOUND)
    assert done, f"the cancelled task still runs after {BOUND:g} s: the cancellation was lost"
    assert task.cancelled(), f"the cancelled task ended with {task.result()!r}: the cancellation was lost"


def no_tasks_left() -> None:
    others = asyncio.all_tasks() - {asyncio.current_task()}
    assert not others, f"tasks left running: {others}"


async def all_closed(peers: list[Peer]) -> None:
    """Every connection to ``peers`` was closed by the client and no client task is left;
    then the peers stop."""
    await until(lambda: all(p.closed == p.accepted for p in peers), "every connection closed (EOF)")
    no_tasks_left()
    for p in peers:
        await p.stop()


def run(main: Callable[[], Coroutine[Any, Any, None]], loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None) -> None:
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main())


Client = Callable[[list[str]], Coroutine[Any, Any, Any]]


async def two_requests(conn: NamesrvConnection) -> list[str]:
    """GET_BROKER_CLUSTER_INFO, then GET_ALL_TOPIC_LIST (which a ``Peer(answers=1)`` ignores)."""
    await conn.get_cluster_info()
    return await conn.get_all_topics()


async def one_call(addrs: list[str]) -> Any:
    async with await NamesrvConnection.connect(addrs[0], LONG) as conn:
        return await two_requests(conn)


async def fan_out(addrs: list[str]) -> Any:
    return await ask_all(addrs, two_requests, LONG)


CLIENTS: dict[str, Client] = {"connection": one_call, "fan-out": fan_out}


@pytest.mark.parametrize("client,servers", [(one_call, 1), (fan_out, 1), (fan_out, 3)],
                         ids=["connection", "fan-out-one-server", "fan-out-three-servers"])
def test_cancel_while_servers_are_silent(client: Client, servers: int) -> None:
    async def main() -> None:
        peers = [await Peer().start() for _ in range(servers)]
        task = asyncio.create_task(client([p.addr for p in peers]))
        await until(lambda: all(p.requests for p in peers), "requests sent")
        task.cancel()
        await cancelled_promptly(task)
        await all_closed(peers)

    run(main)


@pytest.mark.parametrize("client", CLIENTS.values(), ids=CLIENTS.keys())
def test_cancel_arriving_with_the_answer_is_not_lost(client: Client) -> None:
    """The first answer comes in the iteration the cancellation does; the second request
    is never answered, so a lost cancellation would wait LONG seconds for it."""
    async def main() -> None:
        peers = [await Peer(answers=1).start() for _ in range(2)]
        task = asyncio.create_task(client([p.addr for p in peers]))
        loop = asyncio.get_running_loop()
        assert isinstance(loop, CancelOnAnswerLoop)
        loop.victim = task
        await cancelled_promptly(task)
        assert loop.victim is None, "no answer came"
        await all_closed(peers)

    run(main, CancelOnAnswerLoop)

