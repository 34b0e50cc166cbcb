"""The stall probe: one lone route query at a time on its own connection, in a process
of its own (so the load generator's work never delays it), until stdin closes; prints
the longest wait for an answer in seconds. Run as ``python -m mqadmin.bench.probe ADDR TOPIC``."""

from __future__ import annotations

import socket
import sys
import threading
import time

from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, encode


def main(addr: str, topic: str) -> None:
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    done = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    decoder, worst = FrameDecoder(), 0.0
    print("ready", flush=True)
    while not done.is_set():
        start = time.perf_counter()
        sock.sendall(encode(request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})))
        while decoder.next_frame() is NEED_DATA:
            decoder.feed(sock.recv(1 << 16))
        worst = max(worst, time.perf_counter() - start)
        time.sleep(0.0005)
    print(worst, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
