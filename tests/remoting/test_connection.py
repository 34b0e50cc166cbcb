"""The connection core against raw peers on 127.0.0.1: answers matched by opaque in any
order, a close that fails every waiter, one mapping of connect errors, both directions
on one connection, and frames cut however the bytes arrive."""

from __future__ import annotations

import asyncio
import socket
from typing import Awaitable, Callable

import pytest

from mqnamesrv.protocol.codes import FLAG_RESPONSE
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, encode
from mqnamesrv.remoting import RemotingConnection, RemotingError, split_host_port

Peer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def answer(cmd: RemotingCommand, code: int = 0, body: bytes = b"") -> bytes:
    return encode(cmd.response(code, body=body))


async def read_frames(reader: asyncio.StreamReader, count: int) -> list[RemotingCommand]:
    decoder, out = FrameDecoder(), list[RemotingCommand]()
    while len(out) < count:
        data = await reader.read(65536)
        if not data:
            break
        decoder.feed(data)
        while (cmd := decoder.next_frame()) is not NEED_DATA:
            assert isinstance(cmd, RemotingCommand)
            out.append(cmd)
    return out


async def serve(peer: Peer) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(peer, "127.0.0.1", 0)
    return server, f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 10))


def test_answers_in_reverse_order_reach_their_callers() -> None:
    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = await read_frames(reader, 3)
        writer.write(b"".join(answer(f, body=f.ext_get("topic").encode()) for f in reversed(frames)))  # type: ignore[union-attr]

    async def go() -> None:
        server, addr = await serve(peer)
        conn = await RemotingConnection.connect(addr, 2.0)
        replies = await asyncio.gather(*(conn.call(request(105, {"topic": t}), 2.0) for t in ("a", "b", "c")))
        assert [r.body for r in replies] == [b"a", b"b", b"c"]
        assert conn.waiting == 0
        await conn.close()
        server.close()

    run(go())


def test_a_frame_arriving_one_byte_at_a_time_and_one_chunk_of_many() -> None:
    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first, *rest = await read_frames(reader, 3)
        for byte in answer(first, body=b"slow"):
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0)
        writer.write(b"".join(answer(f, body=b"fast") for f in rest))

    async def go() -> None:
        server, addr = await serve(peer)
        conn = await RemotingConnection.connect(addr, 2.0)
        replies = await asyncio.gather(*(conn.call(request(105, {"topic": "t"}), 5.0) for _ in range(3)))
        assert [r.body for r in replies] == [b"slow", b"fast", b"fast"]
        await conn.close()
        server.close()

    run(go())


def test_close_fails_every_waiter_and_later_calls_with_the_first_reason() -> None:
    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers

    async def go() -> None:
        server, addr = await serve(peer)
        conn = await RemotingConnection.connect(addr, 2.0)
        calls = [asyncio.ensure_future(conn.call(request(105, {"topic": "t"}), 5.0)) for _ in range(2)]
        called_back: list[RemotingCommand | Exception] = []
        conn.expect(424242, called_back.append)
        await asyncio.sleep(0.05)
        assert conn.waiting == 3
        await conn.close(RemotingError(addr, "closed", "going away"))
        for call in calls:
            with pytest.raises(RemotingError, match="going away"):
                await call
        assert len(called_back) == 1 and str(called_back[0]) == f"{addr}: going away"
        with pytest.raises(RemotingError, match="going away"):
            await conn.call(request(105), 1.0)
        assert conn.closed and conn.waiting == 0 and conn.lost.done()
        server.close()

    run(go())


def test_peer_closing_and_peer_sending_garbage() -> None:
    async def closer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frames(reader, 1)
        writer.close()

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        [cmd] = await read_frames(reader, 1)
        writer.write(answer(cmd, body=b"ok") + b"\x00\x00\x00\x02ab")  # a good frame, then none
        await reader.read()

    async def go() -> None:
        server1, addr1 = await serve(closer)
        server2, addr2 = await serve(garbage)
        conn = await RemotingConnection.connect(addr1, 2.0)
        with pytest.raises(RemotingError) as closed:
            await conn.call(request(106), 2.0)
        assert closed.value.kind == "closed" and closed.value.reason == "connection closed by the server"

        conn = await RemotingConnection.connect(addr2, 2.0)
        first = request(106)
        got: list[RemotingCommand | Exception] = []
        conn.expect(first.opaque, got.append)
        second = request(106)
        conn.expect(second.opaque, got.append)
        conn.send(first)
        await asyncio.wait_for(conn.wait_closed(), 2.0)
        assert isinstance(got[0], RemotingCommand) and got[0].body == b"ok"  # delivered before the bad frame
        assert isinstance(got[1], RemotingError) and got[1].kind == "protocol"
        assert "frame length 2 is shorter" in got[1].reason
        server1.close()
        server2.close()

    run(go())


def test_connect_errors_have_one_mapping() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        unused = f"127.0.0.1:{s.getsockname()[1]}"

    async def go() -> None:
        with pytest.raises(RemotingError) as refused:
            await RemotingConnection.connect(unused, 1.0)
        assert (refused.value.kind, str(refused.value)) == ("refused", f"{unused}: connection refused")
        with pytest.raises(RemotingError) as bad:
            await RemotingConnection.connect("no-port", 1.0)
        assert (bad.value.kind, bad.value.reason) == ("unreachable", "not a host:port address")

    run(go())
    assert split_host_port("[::1]:9876") == ("::1", 9876)
    with pytest.raises(ValueError):
        RemotingError("a:1", "lost", "no such kind")


def test_a_silent_peer_times_out_and_a_late_answer_is_dropped() -> None:
    late: list[RemotingCommand] = []

    class KeepsLate(RemotingConnection):
        """Keeps the answers nobody waits for (the hook the bench's connection overrides)."""

        def unmatched_answer(self, cmd: RemotingCommand) -> None:
            late.append(cmd)

    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        [cmd] = await read_frames(reader, 1)
        await asyncio.sleep(0.3)
        writer.write(answer(cmd))  # after the caller gave up
        [cmd2] = await read_frames(reader, 1)
        writer.write(answer(cmd2, body=b"second"))

    async def go() -> None:
        server, addr = await serve(peer)
        conn = await KeepsLate.connect(addr, 2.0)
        with pytest.raises(RemotingError) as timeout:
            await conn.call(request(105), 0.1)
        assert (timeout.value.kind, timeout.value.reason) == ("timeout", "no answer within 0.1 s")
        assert late == []  # nothing late yet: the peer waits 0.3 s
        reply = await conn.call(request(105), 2.0)
        assert reply.body == b"second" and len(late) == 1 and late[0].flag & FLAG_RESPONSE
        await conn.close()
        server.close()

    run(go())


def test_one_connection_asks_and_answers() -> None:
    """As a broker does on the connection it registered on: the peer's requests go to the
    handler, one-way requests get no answer, and our own calls still get theirs."""
    seen: list[RemotingCommand] = []

    async def handler(cmd: RemotingCommand) -> RemotingCommand | None:
        seen.append(cmd)
        return cmd.response(0, body=b"from-handler")

    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        [ours] = await read_frames(reader, 1)
        writer.write(encode(request(28, oneway=True)) + encode(request(28, opaque=777)))
        [handled] = await read_frames(reader, 1)
        writer.write(answer(ours, body=handled.body))

    async def go() -> None:
        server, addr = await serve(peer)
        conn = await RemotingConnection.connect(addr, 2.0, handler=handler)
        reply = await conn.call(request(105), 2.0)
        assert reply.body == b"from-handler"
        assert [c.is_oneway for c in seen] == [True, False]
        await conn.close()
        server.close()

    run(go())
