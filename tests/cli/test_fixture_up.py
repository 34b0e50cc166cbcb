"""``mqadmin fixture up``: the banner states real (scaled) times, and Ctrl-C is 130."""

from __future__ import annotations

from tests.fixtures_sim.harness import FIXTURES, FixtureProcess


def test_banner_states_the_real_expiry_and_ctrl_c_exits_130() -> None:
    proc = FixtureProcess(FIXTURES / "wipe-perm-half-applied.yaml", "--speed", "10")
    try:
        proc.wait_ready()
        servers = [line for line in proc.lines if line.startswith("name server ")]
        assert len(servers) == 3
        assert all(line.endswith("brokers expire after 12 s (120 s fixture time))") for line in servers), servers
        brokers = [line for line in proc.lines if line.startswith("broker ")]
        assert brokers and all("registers every 3 s (30 s fixture time))" in line for line in brokers), brokers
        assert proc.interrupt() == 130  # stopped cleanly, but interrupted: 128 + SIGINT
        assert proc.lines[-1].startswith("stopped: 2 brokers unregistered, 3 name servers stopped")
    finally:
        proc.kill()
