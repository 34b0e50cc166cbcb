"""The job's shortcuts to its small inputs give what the longer way gives: the distinct
routes worked out on the driver."""

from __future__ import annotations

from mqadmin.pipeline.tables import distinct_routes


def test_distinct_routes_keeps_each_route_broker_once() -> None:
    a0 = {"route_key": b"a", "broker_seq": 0, "broker": "x"}
    a1 = {"route_key": b"a", "broker_seq": 1, "broker": "y"}
    b0 = {"route_key": b"b", "broker_seq": 0, "broker": "x"}
    assert distinct_routes([a0, a1, dict(a0), b0, dict(a1)]) == [a0, a1, b0]
