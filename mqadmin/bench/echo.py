"""A framed echo server: cuts remoting frames like a name server and answers each with a
frame of a given size. Its throughput is the ceiling any name server can reach with the
same client on the same machine. Run as ``python -m mqadmin.bench.echo BODY_SIZE [protocol]``.

Plain, it answers a read's frames with one write of canned bytes: the floor of the system
calls alone. ``protocol`` adds the least a name server must do per request: parse the JSON
header and answer with its opaque in a header of its own (the floor for CPU per request)."""

from __future__ import annotations

import asyncio
import struct
import sys
from typing import Any

import orjson

_LEN = struct.Struct(">I")


class Echo(asyncio.Protocol):
    answer = b""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buf = bytearray()

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        count = 0
        while len(buf) >= 4:
            (n,) = _LEN.unpack_from(buf)
            if len(buf) < 4 + n:
                break
            del buf[:4 + n]
            count += 1
        if count:
            self.transport.write(self.answer * count)


class ProtocolEcho(Echo):
    body = b""

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        answers = []
        view = memoryview(buf)
        done = 0
        while len(buf) - done >= 4:
            (n,) = _LEN.unpack_from(buf, done)
            if len(buf) - done < 4 + n:
                break
            (mark,) = _LEN.unpack_from(buf, done + 4)
            opaque = orjson.loads(view[done + 8:done + 8 + (mark & 0xFFFFFF)])["opaque"]
            header = b'{"code":0,"flag":1,"opaque":%d,"serializeTypeCurrentRPC":"JSON","version":409}' % opaque
            answers.append(struct.pack(">II", 4 + len(header) + len(self.body), len(header)) + header + self.body)
            done += 4 + n
        view.release()
        del buf[:done]
        if answers:
            self.transport.write(b"".join(answers))


async def main(size: int, protocol: bool = False) -> None:
    header = b'{"code":0,"flag":1}'
    body = b"{" + b" " * max(size - 2, 0) + b"}"
    Echo.answer = struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body
    ProtocolEcho.body = body
    server = await asyncio.get_running_loop().create_server(ProtocolEcho if protocol else Echo, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        import uvloop
        uvloop.run(main(int(sys.argv[1]), sys.argv[2:] == ["protocol"]))
    except ImportError:
        asyncio.run(main(int(sys.argv[1]), sys.argv[2:] == ["protocol"]))
