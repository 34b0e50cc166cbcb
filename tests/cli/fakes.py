"""Small real TCP peers for the CLI tests: a broker stand-in and misbehaving servers.

Each runs its own asyncio loop in a daemon thread, so the CLI under test (which runs
``asyncio.run`` in the test's thread) talks to it over a real socket.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Callable, Iterable, Self

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig, encode_kv_table
from mqnamesrv.protocol.codes import RequestCode, ResponseCode
from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, encode
from mqnamesrv.protocol.register import register_request as protocol_register_request
from tests.nsprocess import RawClient


def register_request(
    name: str, addr: str, topics: dict[str, int], *, cluster: str = "DefaultCluster", broker_id: int = 0,
    counter: int = 1,
) -> RemotingCommand:
    """REGISTER_BROKER as a 4.9.8 broker sends it; ``topics`` maps topic -> queue count."""
    body = RegisterBrokerBody(
        data_version=DataVersion(counter=counter, timestamp=1_700_000_000_000 + counter),
        topic_configs={t: TopicConfig(topic_name=t, read_queue_nums=n, write_queue_nums=n) for t, n in topics.items()},
    ).encode()
    return protocol_register_request(cluster, name, addr, broker_id, body)


def register(
    namesrv_addrs: Iterable[str], name: str, addr: str, topics: dict[str, int], **kw: object
) -> list[RawClient]:
    """Register a broker on each name server; the returned connections must stay open
    (closing one unregisters the broker from that server)."""
    clients = []
    for ns in namesrv_addrs:
        client = RawClient(ns)
        answer = client.call(register_request(name, addr, topics, **kw))  # type: ignore[arg-type]
        assert answer.code == ResponseCode.SUCCESS, answer
        clients.append(client)
    return clients


def unused_addr() -> str:
    """An address nothing listens on (port picked by the OS, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


#: what a responder returns for a frame: a command to send, raw bytes to send,
#: ``CLOSE`` to drop the connection, or None to stay silent
Responder = Callable[[RemotingCommand], "RemotingCommand | bytes | str | None"]
CLOSE = "close"


class ThreadedServer:
    """An asyncio TCP server on 127.0.0.1:0 in its own thread; ``respond`` answers each
    frame (see Responder). ``requests`` records every frame received."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests: list[RemotingCommand] = []
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        assert self._ready.wait(5), "fake server did not start"
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                decoder.feed(data)
                while (cmd := decoder.next_frame()) is not NEED_DATA:
                    assert isinstance(cmd, RemotingCommand)
                    self.requests.append(cmd)
                    answer = self.respond(cmd)
                    if answer == CLOSE:
                        return
                    if isinstance(answer, bytes):
                        writer.write(answer)
                    elif isinstance(answer, RemotingCommand):
                        writer.write(encode(answer))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


#: runtime figures a 4.9.8 broker reports (a subset; values as strings, as on the wire)
RUNTIME_INFO = {
    "brokerVersionDesc": "V4_9_8",
    "putTps": "12.5 10.0 8.0",
    "sendThreadPoolQueueSize": "0",
    "sendThreadPoolQueueHeadWaitTimeMills": "0",
    "getTransferedTps": "3.0 2.0 1.0",
    "pullThreadPoolQueueSize": "1",
    "pullThreadPoolQueueHeadWaitTimeMills": "2",
    "pageCacheLockTimeMills": "0",
    "earliestMessageTimeStamp": "0",
    "commitLogDiskRatio": "0.1234",
}


class FakeBroker(ThreadedServer):
    """Answers DELETE_TOPIC_IN_BROKER (SUCCESS, or ``delete_code``) and
    GET_BROKER_RUNTIME_INFO (a KVTable), like a broker's admin processor."""

    def __init__(self, delete_code: int = ResponseCode.SUCCESS, runtime: dict[str, str] | None = None) -> None:
        self.delete_code = delete_code
        self.runtime = RUNTIME_INFO if runtime is None else runtime
        super().__init__(self._answer)

    def _answer(self, cmd: RemotingCommand) -> RemotingCommand:
        if cmd.code == RequestCode.DELETE_TOPIC_IN_BROKER:
            remark = None if self.delete_code == ResponseCode.SUCCESS else "delete failed on purpose"
            return cmd.response(self.delete_code, remark=remark)
        if cmd.code == RequestCode.GET_BROKER_RUNTIME_INFO:
            return cmd.response(ResponseCode.SUCCESS, body=encode_kv_table(self.runtime))
        return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f" request type {cmd.code} not supported")

    def deleted_topics(self) -> list[str]:
        return [c.ext_get("topic") or "" for c in self.requests if c.code == RequestCode.DELETE_TOPIC_IN_BROKER]
