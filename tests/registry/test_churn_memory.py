"""Broker churn leaves nothing behind (issue 17, item 9): the registry's per-broker
sharing pools, interned queue maps and transition caches are pruned when a broker
group leaves, so a long-lived server's memory follows the brokers it has now."""

from __future__ import annotations

import gc
import tracemalloc

from mqnamesrv.protocol.bodies import DataVersion
from mqnamesrv.registry.routes import RouteTable


def _churn(rt: RouteTable, first: int, count: int, *, expire: bool = False) -> None:
    for i in range(first, first + count):
        name, addr = f"broker-{i}", f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}:10911"
        topics = {"shared": (4, 4, 6, 0), f"own-{i}": (8, 8, 6, 0), f"own-{i}-ro": (8, 8, 4, 0)}
        rt.register_broker("DefaultCluster", name, addr, 0, addr, DataVersion(i, i), topics, (f"{addr}-fs",), conn=i)
        rt.wipe_write_perm(name)
        if i % 2:
            rt.unregister_broker("DefaultCluster", name, addr, 0)
        else:
            assert [r.broker_addr for r in rt.connection_closed(i)] == [addr]


def test_memory_returns_after_5000_brokers_come_and_go() -> None:
    rt = RouteTable(clock=lambda: 0)
    rt.register_broker("DefaultCluster", "resident", "10.9.9.9:10911", 0, "10.9.9.9:10912", DataVersion(1, 1),
                       {"shared": (4, 4, 6, 0)})
    _churn(rt, 1, 200)  # warm up: first-use allocations are not growth
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _churn(rt, 1000, 5000)
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert growth < 300_000, f"{growth / 5000:.0f} bytes left behind per broker"
    assert list(rt.broker_addr_table) == ["resident"] and rt.all_topics() == ["shared"]
    assert list(rt._pools) == ["resident"]


def test_wiping_an_unknown_broker_creates_nothing() -> None:
    rt = RouteTable(clock=lambda: 0)
    for i in range(100):
        assert rt.wipe_write_perm(f"typo-{i}") == 0
        assert rt.add_write_perm(f"typo-{i}") == 0
    assert rt._pools == {}
