"""A framed echo server: cuts remoting frames like a name server and answers each with a
frame of a given size. Its throughput is the ceiling any name server can reach with the
same client on the same machine. Run as ``python -m mqadmin.bench.echo BODY_SIZE``."""

from __future__ import annotations

import asyncio
import struct
import sys
from typing import Any

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


async def main(size: int) -> None:
    header = b'{"code":0,"flag":1}'
    body = b"{" + b" " * max(size - 2, 0) + b"}"
    Echo.answer = struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body
    server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        import uvloop
        uvloop.run(main(int(sys.argv[1])))
    except ImportError:
        asyncio.run(main(int(sys.argv[1])))
