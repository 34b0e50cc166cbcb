"""Resident size of a registry of N topics x B brokers, against the msgpack size of the same
tables. Run as ``python -m mqadmin.bench.memory TOPICS BROKERS``; prints JSON."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import msgpack

from nameserver.protocol.bodies import DataVersion, TopicConfig
from nameserver.registry.routes import RouteTable


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def main(topics: int, brokers: int) -> None:
    gc.collect()
    before = rss()  # everything below, topic names included, counts against the registry
    configs = {t: TopicConfig(t, 8, 8) for t in (f"topic_{i:07d}" for i in range(topics))}
    table = RouteTable()
    for b in range(brokers):
        table.register_broker("MemCluster", f"broker-{b}", f"10.0.0.{b}:10911", 0, f"10.0.0.{b}:10912",
                              DataVersion(1, 1), configs)
    del configs
    gc.collect()
    after = rss()
    packed = msgpack.packb(table.export_state(), use_bin_type=True)
    print(json.dumps({"registry_rss_bytes": after - before, "msgpack_bytes": len(packed)}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
