"""Each shipped fixture brought up with ``mqadmin fixture up --speed`` against our name
servers, checking what every server holds as the timeline moves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from mqnamesrv.protocol.bodies import TopicList
from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from tests.nsprocess import RawClient
from tests.fixtures_sim.harness import FIXTURES, FixtureProcess, kv_namespace, listed, queues, wait_for


@pytest.fixture
def running() -> Iterator[list[FixtureProcess]]:
    procs: list[FixtureProcess] = []
    yield procs
    for proc in procs:
        proc.kill()


def up(running: list[FixtureProcess], file: Path, *args: str) -> FixtureProcess:
    proc = FixtureProcess(file, *args)
    running.append(proc)
    return proc


def allocate_averagely(queues: list[tuple[str, int]], index: int, count: int) -> list[tuple[str, int]]:
    """AllocateMessageQueueAveragely (Java), for the consumer-side check of the split."""
    n, rest = len(queues), len(queues) % count
    size = 1 if n <= count else (n // count + 1 if rest > 0 and index < rest else n // count)
    start = index * size if rest > 0 and index < rest else index * size + rest
    return queues[start:start + min(size, n - start)]


def read_queues(addr: str, topic: str) -> list[tuple[str, int]]:
    return sorted((b, i) for b, q in queues(addr, topic).items() for i in range(q.read_queue_nums))


@pytest.fixture(scope="module")
def split() -> Iterator[FixtureProcess]:
    """order-topic-split, up once for the checks and the diff; Ctrl-C must stop it cleanly."""
    proc = FixtureProcess(FIXTURES / "order-topic-split.yaml", "--speed", "20")
    try:
        proc.wait_ready()
        yield proc
        assert proc.interrupt() == 130
        assert proc.lines[-1] == "stopped: 2 brokers unregistered, 2 name servers stopped"
    finally:
        proc.kill()


def test_order_topic_split(split: FixtureProcess) -> None:
    ns1, ns2 = split.servers["ns1"], split.servers["ns2"]
    assert f"NAMESRV_ADDR={ns1};{ns2}" in split.lines
    assert "[t=     0.0s] partition broker-b/0 from ns2 (before the first registration)" in split.lines
    # From the start ns2 never hears of broker-b.
    assert set(listed(ns1)) == {"broker-a", "broker-b"} and set(listed(ns2)) == {"broker-a"}
    assert {b: q.read_queue_nums for b, q in queues(ns1, "order_topic").items()} == {"broker-a": 4, "broker-b": 4}
    assert {b: q.read_queue_nums for b, q in queues(ns2, "order_topic").items()} == {"broker-a": 4}
    for addr in (ns1, ns2):
        assert kv_namespace(addr, ORDER_TOPIC_CONFIG) == {"order_topic": "broker-a:4;broker-b:4"}
    # One consumer of a group per side: b/0-b/3 unassigned, a/2 and a/3 doubly assigned.
    first = allocate_averagely(read_queues(ns1, "order_topic"), 0, 2)
    second = allocate_averagely(read_queues(ns2, "order_topic"), 1, 2)
    every = read_queues(ns1, "order_topic")
    assert [q for q in every if q not in first + second] == [("broker-b", i) for i in range(4)]
    assert [q for q in every if q in first and q in second] == [("broker-a", 2), ("broker-a", 3)]
    # Still split several register periods later.
    assert not wait_for(lambda: "broker-b" in listed(ns2), timeout=2)


def test_diff_namesrv_on_the_split(split: FixtureProcess) -> None:
    from mqadmin.cli import app

    if "diff-namesrv" not in {c.name for c in app.registered_commands}:
        pytest.skip("mqadmin diff-namesrv is not registered yet")
    addrs = f"{split.servers['ns1']};{split.servers['ns2']}"
    result = CliRunner().invoke(app, ["diff-namesrv", "-n", addrs, "-t", "order_topic", "-o", "json"])
    assert result.exit_code == 4, result.output  # ExitStatus.DISAGREE
    (impact,) = json.loads(result.stdout)["impacts"]
    assert impact["consumer"]["unassigned"] == ["broker-b/0", "broker-b/1", "broker-b/2", "broker-b/3"]
    assert impact["consumer"]["doubly_assigned"] == ["broker-a/2", "broker-a/3"]
    table = CliRunner().invoke(app, ["diff-namesrv", "-n", addrs, "-t", "order_topic"])
    assert table.exit_code == 4
    assert "unassigned: broker-b/0-3" in table.stdout and "assigned twice: broker-a/2-3" in table.stdout


def at(line: re.Match[str]) -> float:
    """Fixture time of a runner line matched with a ``(?P<t>...)`` group."""
    return float(line.group("t"))


T = r"^\[t=\s*(?P<t>[\d.]+)s\] "


def test_rolling_restart(running: list[FixtureProcess]) -> None:
    # Transient states (a server empty for < 30 s) are read from the runner's own
    # timestamped observations, which do not lag when the test machine is busy; direct
    # queries check states that last until the next event or for good.
    proc = up(running, FIXTURES / "rolling-restart.yaml", "--speed", "20", "--duration", "100000")
    proc.wait_ready()
    ns1, ns2 = proc.servers["ns1"], proc.servers["ns2"]
    everyone = {"broker-a": {0: proc.brokers["broker-a/0"], 1: proc.brokers["broker-a/1"]},
                "broker-b": {0: proc.brokers["broker-b/0"]}}
    assert listed(ns1) == everyone and listed(ns2) == everyone
    assert kv_namespace(ns1, ORDER_TOPIC_CONFIG) == {"orders": "broker-a:8;broker-b:8"}
    members = [f"broker-a/0 \\({everyone['broker-a'][0]}\\)", f"broker-a/1 \\({everyone['broker-a'][1]}\\)",
               f"broker-b/0 \\({everyone['broker-b'][0]}\\)"]

    restart = proc.expect(T + r"restart ns1$")
    # Back on the same port, empty, until each broker's next registration (<= 30 s later).
    gone = proc.expect_all([T + f"ns1: {m} gone$" for m in members])
    back = proc.expect_all([T + f"ns1: {m} listed$" for m in members])
    assert all(at(restart) <= at(g) < at(b) <= at(restart) + 30 + 3 for g, b in zip(gone, back))
    assert listed(ns1) == everyone and listed(ns2) == everyone
    assert set(queues(ns1, "orders")) == {"broker-a", "broker-b"} and set(queues(ns1, "payments")) == {"broker-a"}
    assert kv_namespace(ns1, ORDER_TOPIC_CONFIG) is None  # restarted without its KV file

    restart = proc.expect(T + r"restart ns2 \(KV file kept\)$")
    proc.expect_all([T + f"ns2: {m} gone$" for m in members])
    back = proc.expect_all([T + f"ns2: {m} listed$" for m in members])
    assert all(at(b) <= at(restart) + 30 + 3 for b in back)
    assert listed(ns2) == everyone
    assert kv_namespace(ns2, ORDER_TOPIC_CONFIG) == {"orders": "broker-a:8;broker-b:8"}
    assert proc.interrupt() == 130
    assert proc.lines[-1] == "stopped: 3 brokers unregistered, 2 name servers stopped"


def test_wipe_perm_half_applied(running: list[FixtureProcess]) -> None:
    proc = up(running, FIXTURES / "wipe-perm-half-applied.yaml", "--speed", "30")
    proc.wait_ready()
    servers = [proc.servers[n] for n in ("ns1", "ns2", "ns3")]

    def perms(addr: str, topic: str) -> dict[str, int]:
        return {b: q.perm for b, q in queues(addr, topic).items()}

    for addr in servers:  # the wipe comes at 45 s: 1.5 s from now
        assert perms(addr, "orders") == {"broker-a": 6, "broker-b": 6}
    proc.expect(r"\] wipe-write-perm broker-a on ns1,ns2$")
    proc.expect(r"WIPE_WRITE_PERM_OF_BROKER broker-a: ns1 wipeTopicCount=\d+, ns2 wipeTopicCount=\d+$")
    wiped = {"broker-a": 4, "broker-b": 6}
    for topic in ("orders", "payments"):
        assert perms(servers[0], topic) == wiped and perms(servers[1], topic) == wiped
        assert perms(servers[2], topic) == {"broker-a": 6, "broker-b": 6}
    # The increment registration carries only the new topic: writable everywhere, the rest
    # stays wiped (registrations with an unchanged DataVersion never rewrite queue data).
    proc.expect(r"\] add-topic refunds broker-a$", timeout=5)
    assert wait_for(lambda: all(perms(a, "refunds") == {"broker-a": 6} for a in servers), timeout=3)
    for topic in ("orders", "payments"):
        assert perms(servers[0], topic) == wiped and perms(servers[1], topic) == wiped
    assert proc.interrupt() == 130


EXPIRY_FIXTURE = """\
name: partition-expiry-heal
description: broker-b loses ns2 mid-run; crash, restart and unregister follow.
nameServers:
  - name: ns1
    brokerExpiry: 30s
  - name: ns2
    run: process
    brokerExpiry: 30s
brokerDefaults:
  registerPeriod: 10s
brokers:
  - name: broker-a
  - name: broker-b
topics:
  - name: orders
    queues: 4
timeline:
  - {at: 5s, do: partition, broker: broker-b, servers: [ns2]}
  - {at: 80s, do: heal, broker: broker-b, servers: ns2}
  - {at: 100s, do: crash, broker: broker-a}
  - {at: 120s, do: start, broker: broker-a}
  - {at: 140s, do: unregister, broker: broker-b}
  - {at: 160s, do: restart, server: ns2}
"""


#: Speed of the expiry timeline: one fixture second is 0.1 s, so the few fixture seconds
#: of slack below (a poll, a register period) stay longer than a loaded machine's
#: scheduling lag, and every state checked by a direct query lasts 3 s or more.
EXPIRY_SPEED = 10
#: Bound on each wait for the runner's next line (real seconds): met at once on an idle
#: machine, reached only when the line never comes.
LINE_WAIT = 30.0


def test_partition_expiry_heal_crash_restart(running: list[FixtureProcess], tmp_path: Path) -> None:
    file = tmp_path / "expiry.yaml"
    file.write_text(EXPIRY_FIXTURE)
    proc = up(running, file, "--speed", str(EXPIRY_SPEED))
    proc.wait_ready(timeout=LINE_WAIT)
    ns1, ns2 = proc.servers["ns1"], proc.servers["ns2"]
    a, b = rf"broker-a/0 \({proc.brokers['broker-a/0']}\)", rf"broker-b/0 \({proc.brokers['broker-b/0']}\)"
    both = {"broker-a", "broker-b"}

    def said() -> str:
        """The runner's output so far, for a failed assertion's message."""
        return "\n".join(proc.lines)

    assert "ready: every broker has registered with every name server it can reach" in proc.lines, said()
    # Until t=30 at least (3 s from the start).
    assert (set(listed(ns1)), set(listed(ns2))) == (both, both), said()

    partition = proc.expect(T + r"partition broker-b/0 from ns2$", LINE_WAIT)
    # Expired by time: its connection stayed open and silent, its last registration was at t=0.
    gone = proc.expect(T + f"ns2: {b} gone$", LINE_WAIT)
    # The partition is due at 5 (stamped when it happens, a little later on a busy machine):
    # before broker-b's next registration at 10, so its last one on ns2 was at 0.
    assert 5 <= at(partition) < 10 and 30 <= at(gone), said()
    # Until the heal at 80 (4 s or more from the expiry).
    assert (set(listed(ns2)), set(listed(ns1))) == ({"broker-a"}, both), said()
    assert (set(queues(ns2, "orders")), set(queues(ns1, "orders"))) == ({"broker-a"}, both), said()

    heal = proc.expect(T + r"heal broker-b/0 from ns2$", LINE_WAIT)
    assert at(proc.expect(T + f"ns2: {b} listed$", LINE_WAIT)) <= at(heal) + 10 + 3, said()

    # A crash closes the connections: both servers drop it at once, not 30 s later by expiry.
    crash = proc.expect(T + r"crash broker-a/0$", LINE_WAIT)
    assert all(at(m) < at(crash) + 10
               for m in proc.expect_all([T + f"ns1: {a} gone$", T + f"ns2: {a} gone$"], LINE_WAIT))
    start = proc.expect(T + r"start broker-a/0$", LINE_WAIT)
    assert all(at(m) < at(start) + 10
               for m in proc.expect_all([T + f"ns1: {a} listed$", T + f"ns2: {a} listed$"], LINE_WAIT))

    unregister = proc.expect(T + r"unregister broker-b/0$", LINE_WAIT)
    assert all(at(m) < at(unregister) + 10
               for m in proc.expect_all([T + f"ns1: {b} gone$", T + f"ns2: {b} gone$"], LINE_WAIT))
    # Until the unregister, ns1 never lost broker-b: the partition was from ns2 only.
    assert len([line for line in proc.lines if re.search(f"ns1: {b} gone$", line)]) == 1

    # ns2 runs as a child process: killed, started again on the same port, empty, refilled.
    proc.expect(T + r"restart ns2$", LINE_WAIT)
    proc.expect_all([T + r"ns2: unreachable", T + r"ns2: answering again"], LINE_WAIT)
    # Refilled by broker-a's next registration (which may beat the runner's next look).
    assert wait_for(lambda: set(listed(ns2)) == {"broker-a"}, timeout=LINE_WAIT)
    assert set(listed(ns1)) == {"broker-a"}
    assert proc.interrupt(LINE_WAIT) == 130
    assert proc.lines[-1] == "stopped: 1 broker unregistered, 2 name servers stopped"


def _alive_children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` and that have not ended (zombies count as ended)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue  # ended while we looked
        if int(ppid) == pid and state not in "ZX":
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def test_teardown_ends_the_name_servers_run_as_child_processes(tmp_path: Path) -> None:
    """A failed test's teardown kills ``fixture up``; its child name servers must go too,
    not linger holding their ports."""
    file = tmp_path / "child.yaml"
    file.write_text("nameServers:\n  - name: ns1\n    run: process\nbrokers:\n  - name: broker-a\n")
    proc = FixtureProcess(file)
    try:
        proc.wait_ready(LINE_WAIT)
        children = _alive_children(proc.proc.pid)
        assert len(children) == 1 and set(listed(proc.servers["ns1"])) == {"broker-a"}
    finally:
        proc.kill()
    assert wait_for(lambda: not any(_alive(pid) for pid in children), timeout=10), children


def test_cannot_listen_is_one_clear_error(running: list[FixtureProcess], tmp_path: Path) -> None:
    file = tmp_path / "bad-address.yaml"
    file.write_text("nameServers:\n  - name: ns1\nbrokers:\n  - name: broker-a\n    address: 192.0.2.1:10911\n")
    proc = up(running, file)
    assert proc.wait(20) == 1
    assert proc.proc.stderr is not None
    assert re.search(r"^mqadmin fixture: broker broker-a/0 cannot listen on 192\.0\.2\.1:10911", proc.proc.stderr.read(),
                     re.M)


def test_large_fleet_smoke(running: list[FixtureProcess]) -> None:
    """Bounded: up once at real speed (nothing is due for 30 s), count, Ctrl-C."""
    proc = up(running, FIXTURES / "large-fleet.yaml")
    proc.wait_ready(timeout=30)
    assert len(proc.brokers) == 32
    for addr in proc.servers.values():
        groups = listed(addr)
        assert len(groups) == 16 and all(set(ids) == {0, 1} for ids in groups.values())
        with RawClient(addr, timeout=5) as client:
            topics = TopicList.decode(client.call(request(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body).topics
        assert sum(1 for t in topics if t.startswith("app_")) == 10_000
    assert proc.interrupt(30) == 130
    assert proc.lines[-1] == "stopped: 32 brokers unregistered, 3 name servers stopped"
