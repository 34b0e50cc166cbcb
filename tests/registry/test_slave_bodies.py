"""A 4.x slave re-registering the body it sent last (bar the DataVersion) is not parsed:
4.9.8 ignores a slave's topics, and its filter servers are in place already."""

from __future__ import annotations

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.register import register_body, register_request
from mqnamesrv.registry.config import NamesrvConfig
from mqnamesrv.registry.kv import KVStore
from mqnamesrv.registry.routes import RouteTable
from mqnamesrv.server import dispatch
from mqnamesrv.server.dispatch import Processor

SLAVE = "10.0.0.2:10911"


def slave_register(counter: int, filters: tuple[str, ...] = ("10.0.0.9:1",), acting: bool = False) -> object:
    body = register_body(RegisterBrokerBody(DataVersion(counter, counter), {f"t{i}": TopicConfig(f"t{i}", 8, 8)
                                                                             for i in range(3000)}, filters))
    extra = {"enableActingMaster": "false"} if acting else None
    return register_request("DefaultCluster", "broker-a", SLAVE, 1, body, extra=extra)


def test_the_same_body_again_needs_no_parse_and_still_counts_as_a_registration() -> None:
    routes = RouteTable(clock=lambda: 1)
    processor = Processor(routes, KVStore(), NamesrvConfig())
    assert len(slave_register(1).body) >= dispatch.OFF_LOOP_BODY_BYTES  # type: ignore[attr-defined]
    first = slave_register(1)
    job = processor.decode_off_loop(first)  # type: ignore[arg-type]
    assert callable(job)  # a slave's first body is parsed, on a worker thread
    assert processor.handle(first, "c", decoded=job()).code == 0  # type: ignore[arg-type, union-attr]
    bumped = slave_register(2)
    assert processor.decode_off_loop(bumped) is None  # type: ignore[arg-type]
    assert processor.handle(bumped, "c").code == 0  # type: ignore[arg-type, union-attr]
    assert routes.broker_live_table[SLAVE].data_version == DataVersion(2, 2)
    assert routes.filter_server_table[SLAVE] == ["10.0.0.9:1"]
    assert routes.topic_queue_table.get("t0") is None  # 4.9.8: a slave's topics make no route
    changed = slave_register(3, filters=())
    assert processor.decode_off_loop(changed) is not None  # type: ignore[arg-type]
    assert processor.handle(changed, "c").code == 0  # type: ignore[arg-type, union-attr]
    assert SLAVE not in routes.filter_server_table


def test_a_5x_slave_and_a_slave_that_left_are_parsed_again() -> None:
    routes = RouteTable(clock=lambda: 1)
    processor = Processor(routes, KVStore(), NamesrvConfig())
    assert processor.handle(slave_register(1), "c").code == 0  # type: ignore[arg-type, union-attr]
    assert processor.decode_off_loop(slave_register(2, acting=True)) is not None  # type: ignore[arg-type]
    routes.unregister_broker("DefaultCluster", "broker-a", SLAVE, 1)
    assert processor.decode_off_loop(slave_register(2)) is not None  # type: ignore[arg-type]
    assert processor.handle(slave_register(2), "c").code == 0  # type: ignore[arg-type, union-attr]
    assert routes.filter_server_table[SLAVE] == ["10.0.0.9:1"]
