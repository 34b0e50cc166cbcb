"""Resident size of a registry of N topics x B brokers, against the msgpack size of the same
tables. Run as ``python -m mqadmin.bench.memory TOPICS BROKERS [registry|decode]``;
prints JSON. Each mode needs a fresh interpreter.

``registry`` fills the registry with each broker's topics directly: the size of the
registry itself. ``decode`` fills it the way the server does, each broker's JSON
registration body through the server's decode: that adds what the JSON parser leaves
resident (orjson keeps a cache of short keys, topic names among them, and each cached
string pins the allocator arena it sits in). Both hand freed memory back to the OS
as the server's periodic scan does before the size is read.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import msgpack

from mqnamesrv.protocol.bodies import DataVersion, QueueShape, RegisterBrokerBody, TopicConfig
from mqnamesrv.registry.routes import RouteTable
from mqnamesrv.server.memtrim import release_free_memory

SHAPE: QueueShape = (8, 8, 6, 0)


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def names(topics: int) -> list[str]:
    return [f"topic_{i:07d}" for i in range(topics)]


def main(topics: int, brokers: int, mode: str = "registry") -> None:
    if mode == "decode":
        bodies = [RegisterBrokerBody(DataVersion(1, b), {t: TopicConfig(t, *SHAPE[:2]) for t in names(topics)}).encode()
                  for b in range(brokers)]
    elif mode != "registry":
        raise SystemExit(f"unknown mode {mode!r}: registry or decode")
    gc.collect()
    release_free_memory()
    before = rss()  # everything below, topic names included, counts against the registry
    table = RouteTable()
    for b in range(brokers):
        if mode == "decode":
            data_version, shapes, _ = RegisterBrokerBody.decode_queues(bodies[b], 409)
        else:
            data_version, shapes = DataVersion(1, b), {t: SHAPE for t in names(topics)}
        table.register_broker("MemCluster", f"broker-{b}", f"10.0.0.{b}:10911", 0, f"10.0.0.{b}:10912",
                              data_version, shapes)
        del shapes
    gc.collect()
    release_free_memory()
    after = rss()
    packed = msgpack.packb(table.export_state(), use_bin_type=True)
    print(json.dumps({"rss_bytes": after - before, "msgpack_bytes": len(packed),
                      "queue_layouts": table.queue_maps()}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:4])
