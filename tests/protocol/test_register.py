"""The REGISTER_BROKER builder sends what a 4.9.8 broker sends (golden capture 03)."""

from __future__ import annotations

from pathlib import Path

from nameserver.protocol.frame import decode, encode
from nameserver.protocol.register import next_port, register_request

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
