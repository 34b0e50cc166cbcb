"""Fixture keys for 5.x acting-master brokers and zones."""

from __future__ import annotations

import pytest

from mqadmin.fixture.loader import FixtureErrors, parse_fixture


def test_acting_master_and_zone_reach_the_broker_spec() -> None:
    fx = parse_fixture("nameServers:\n  - name: n\nbrokers:\n  - name: a\n    version: 5.x\n"
                       "    actingMaster: true\n    zone: zoneA\n  - name: b\n    version: 5.x\n", source="f.yaml")
    a, b = fx.brokers
    assert (a.acting_master, a.zone) == (True, "zoneA")
    assert (b.acting_master, b.zone) == (False, None)


@pytest.mark.parametrize("key, message", [("actingMaster: true", "actingMaster needs version: 5.x"),
                                          ("zone: zoneA", "zone needs version: 5.x")], ids=["acting", "zone"])
def test_5x_keys_on_a_4x_broker_are_errors(key: str, message: str) -> None:
    with pytest.raises(FixtureErrors) as caught:
        parse_fixture(f"nameServers:\n  - name: n\nbrokers:\n  - name: a\n    {key}\n", source="f.yaml")
    assert any(p.line == 5 and message in p.message for p in caught.value.problems), str(caught.value)
