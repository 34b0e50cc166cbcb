"""The REGISTER_BROKER builder sends what a 4.9.8 broker sends (golden capture 03)."""

from __future__ import annotations

from pathlib import Path

from mqnamesrv.protocol.frame import decode, encode
from mqnamesrv.protocol.register import next_port, register_request

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def test_builder_matches_a_real_brokers_registration_byte_for_byte() -> None:
    raw = (GOLDEN / "03-register-broker-b-master-rocketmq" / "request.bin").read_bytes()
    captured = decode(raw)
    ext = captured.ext or {}
    rebuilt = register_request(ext["clusterName"], ext["brokerName"], ext["brokerAddr"], int(ext["brokerId"]),
                               captured.body, ha_server_addr=ext["haServerAddr"], opaque=captured.opaque,
                               version=captured.version, serialize_type=captured.serialize_type)
    assert list(rebuilt.ext or {}) == list(ext)  # Java HashMap order
    assert rebuilt.ext == ext  # crc32 of the body included
    assert encode(rebuilt) == raw


def test_ha_address_defaults_to_the_next_port() -> None:
    assert next_port("10.0.0.1:10911") == "10.0.0.1:10912"
    cmd = register_request("C", "b", "[::1]:10911", 0, b"")
    assert (cmd.ext or {})["haServerAddr"] == "[::1]:10912"
    assert (cmd.ext or {})["bodyCrc32"] == "0"


# ------------------------------------------------------------ body key ----

def _body(counter: int, topics: dict[str, int], state_version: int | None = None) -> bytes:
    from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
    return RegisterBrokerBody(DataVersion(counter, 1000 + counter, state_version),
                              {t: TopicConfig(t, n, n) for t, n in topics.items()}).encode()


def test_body_key_ignores_the_data_version_and_returns_it() -> None:
    from mqnamesrv.protocol.bodies import DataVersion
    from mqnamesrv.protocol.body_key import register_body_key
    first, second = register_body_key(_body(1, {"a": 4}), 409), register_body_key(_body(7, {"a": 4}, 3), 409)
    assert first is not None and second is not None
    assert first[0] == second[0]
    assert (first[1], second[1]) == (DataVersion(1, 1001), DataVersion(7, 1007, 3))


def test_body_key_changes_with_the_topics_and_the_request_version() -> None:
    from mqnamesrv.protocol.body_key import register_body_key
    base = register_body_key(_body(1, {"a": 4}), 409)
    assert base is not None
    assert register_body_key(_body(1, {"a": 8}), 409)[0] != base[0]  # type: ignore[index]
    assert register_body_key(_body(1, {"a": 4, "b": 4}), 409)[0] != base[0]  # type: ignore[index]
    assert register_body_key(_body(1, {"a": 4}), 36)[0] != base[0]  # type: ignore[index]


def test_body_key_refuses_what_it_cannot_cut_safely() -> None:
    from mqnamesrv.protocol.body_key import register_body_key
    assert register_body_key(b'{"filterServerList":[]}', 409) is None
    assert register_body_key(b'{"x":{"dataVersion":{"counter":"1}"}}}', 409) is None
    assert register_body_key(b'{"x":{"dataVersion":{"counter":1,"nested":{"a":1}}}}', 409) is None
