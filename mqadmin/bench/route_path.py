"""Route queries through a real Connection and Processor in this process, without sockets:
the Python cost of a route query that no kept answer matches (a topic's first query since
a write touched it) and of one answered from a kept answer (issue #19).

One cluster of ``bench fleet``'s fleet (8 brokers x 10,000 topics) is registered, then
pipelined route queries for every topic are fed to a Connection in reads of 8 frames (by default), as
the load generator sends them, over a transport that only counts what is written. CPU
time per request (``time.process_time``), the best of ``--repeat`` passes: first with
nothing kept (every query a miss; the route bodies by queue map stay cached), then the
same queries again (every one a hit), each as a ratio to the floor of ``bench fleet``'s
route CPU goal, its protocol echo, fed the same reads in the same run. The system calls
and the event loop's own work, which ``bench fleet`` includes, are not in these figures.

``--per-read N`` feeds N frames a read (a connection's cost per read shows as N falls);
``--buffered`` hands the reads over as uvloop does (``get_buffer`` and ``buffer_updated``,
the server's way) rather than as whole bytes (``data_received``).

    python -m mqadmin.bench.route_path [--topics 10000] [--repeat 3] [--per-read 8] [--buffered]
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from mqadmin.bench.echo import ProtocolEcho
from mqadmin.bench.load import master_request, topics_body
from mqnamesrv.protocol.codes import RequestCode
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.frame import encode
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.kv import KVStore
from mqnamesrv.registry.routes import RouteTable
from mqnamesrv.server.connection import Connection
from mqnamesrv.server.dispatch import Processor


class CountingTransport:
    """What a Connection calls on its transport; writes are counted and dropped."""

    def __init__(self) -> None:
        self.writes = 0

    def get_write_buffer_size(self) -> int:
        return 0

    def write(self, data: bytes) -> None:
        self.writes += 1

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else None

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


class Host:
    """The parts of a NameServer a Connection uses."""

    def __init__(self, processor: Processor, config: NamesrvConfig) -> None:
        self.processor, self.config = processor, config
        self.metrics = None
        self.write_limit, self.max_frame, self.max_header = config["writeBufferLimit"], config["frameMaxLength"], \
            config["headerMaxLength"]
        self.connections: set[Connection] = set()
        self.read_bytes = bytearray(256 * 1024)
        self.read_buffer = memoryview(self.read_bytes)

    def connection_closed(self, conn: Connection) -> None:
        self.connections.discard(conn)


def main(topics: int, repeat: int, per_read: int = 8, buffered: bool = False) -> None:
    config = NamesrvConfig()
    processor = Processor(RouteTable(), KVStore(), config)
    names = [f"c0_topic_{i:05d}" for i in range(topics)]
    for b in range(8):
        answer = processor.handle(master_request("FleetCluster0", f"fleet-c0-b{b}", f"127.0.0.1:{23000 + 2 * b}",
                                                 topics_body(names)), "broker")
        assert answer is not None and answer.code == 0
    conn = Connection(Host(processor, config))  # type: ignore[arg-type]
    conn.connection_made(CountingTransport())  # type: ignore[arg-type]
    frames = [encode(request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": t}, opaque=i + 1))
              for i, t in enumerate(names)]
    reads = [b"".join(frames[i:i + per_read]) for i in range(0, len(frames), per_read)]
    gc.collect()
    gc.freeze()

    def per_request() -> float:
        start = time.process_time()
        for data in reads:
            if buffered:  # as uvloop hands a read to a BufferedProtocol
                conn.get_buffer(-1)[:len(data)] = data
                conn.buffer_updated(len(data))
            else:
                conn.data_received(data)
        return (time.process_time() - start) / len(frames) * 1e6

    # The floor: bench fleet's protocol echo (parse each header, answer with its opaque)
    # fed the same reads, its answers as big as a route body.
    echo = ProtocolEcho()
    echo.connection_made(CountingTransport())
    ProtocolEcho.body = b"{" + b" " * 435 + b"}"

    def echo_per_request() -> float:
        start = time.process_time()
        for data in reads:
            echo.data_received(data)
        return (time.process_time() - start) / len(frames) * 1e6

    misses, hits, floors = [], [], []
    for _ in range(repeat):
        processor.route_answers.clear()
        misses.append(per_request())
        hits.append(per_request())
        floors.append(echo_per_request())
    floor = min(floors)
    print(f"route query, nothing kept (first query): {min(misses):.2f} us, {min(misses) / floor:.2f}x the floor  "
          f"(passes: {', '.join(f'{m:.2f}' for m in misses)})")
    print(f"route query, kept answer (again):        {min(hits):.2f} us, {min(hits) / floor:.2f}x the floor  "
          f"(passes: {', '.join(f'{h:.2f}' for h in hits)})")
    print(f"floor: the protocol echo's Python:       {floor:.2f} us  (passes: {', '.join(f'{f:.2f}' for f in floors)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--per-read", type=int, default=8)
    parser.add_argument("--buffered", action="store_true")
    args = parser.parse_args()
    main(args.topics, args.repeat, args.per_read, args.buffered)
