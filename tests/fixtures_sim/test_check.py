"""``mqadmin fixture check`` and the loader: valid files pass, broken ones report every
error with the line it is on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mqadmin.fixture.loader import FixtureErrors, load_fixture, parse_duration, parse_fixture, parse_perm
from mqadmin.cli import app
from tests.fixtures_sim.harness import FIXTURES, ROOT

SHIPPED = sorted(FIXTURES.glob("*.yaml"))

BROKEN = """\
name: broken
nameServers:
  - name: ns1
    port: 99999
  - name: ns1
clusters: [c1]
brokers:
  - name: broker-a
    cluster: c2
    version: 6.x
  - name: broker-b
    registerPeriod: soon
    heartbeatInterval: 1s
topics:
  - name: "bad topic"
    brokers: [broker-z]
  - name: t1
    perm: XYZ
kv:
  - namespace: ORDER_TOPIC_CONFIG
    key: t1
timeline:
  - at: 10s
    do: partitoin
    broker: broker-a
  - at: 20s
    do: heal
    broker: nobody
    colour: red
"""

# (line, text the message must contain), in file order.
EXPECTED = [
    (4, "nameServers[0].port: port 99999 is outside 0-65535"),
    (5, "name server 'ns1' is declared twice"),
    (9, "brokers[0].cluster: unknown cluster 'c2'"),
    (10, "version must be 4.x or 5.x, not '6.x'"),
    (12, "registerPeriod: 'soon' is not a duration"),
    (13, "heartbeatInterval needs version: 5.x"),
    (15, "topic name 'bad topic' is not valid"),
    (16, "unknown broker 'broker-z'"),
    (18, "'XYZ' is not a perm"),
    (20, "kv[0]: missing required key 'value'"),
    (24, "unknown action 'partitoin' (did you mean 'partition'?)"),
    (28, "unknown broker 'nobody'"),
    (29, "unknown key 'colour'"),
]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_fixtures_are_valid(path: Path) -> None:
    fixture = load_fixture(path)
    assert fixture.name == path.stem
    assert fixture.description


def test_check_command_passes_every_shipped_fixture() -> None:
    result = CliRunner().invoke(app, ["fixture", "check", *map(str, SHIPPED)])
    assert result.exit_code == 0, result.output
    assert result.output.count(": ok (") == len(SHIPPED)


def test_every_error_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    with pytest.raises(FixtureErrors) as caught:
        load_fixture(path)
    problems = caught.value.problems
    for line, text in EXPECTED:
        assert any(p.line == line and text in p.render(str(path)) for p in problems), (line, text, caught.value)
    assert [p.line for p in problems] == sorted(p.line for p in problems)


def test_check_command_prints_file_line_and_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    good = FIXTURES / "order-topic-split.yaml"
    result = CliRunner().invoke(app, ["fixture", "check", str(good), str(path)])
    assert result.exit_code == 1
    assert f"{good}: ok (2 name servers, 2 brokers, 1 topic, 1 event)" in result.stdout
    assert f"{path}:24: timeline[0].do: unknown action 'partitoin'" in result.stderr
    assert f"{path}: {len(caught_problems(path))} errors" in result.stderr


def caught_problems(path: Path) -> list[object]:
    try:
        load_fixture(path)
    except FixtureErrors as exc:
        return list(exc.problems)
    return []


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("nameServers:\n  - name: ns1\n  brokers: [\n", 3, "YAML syntax error"),
        ("- just\n- a list\n", 1, "must be a YAML mapping"),
        ("nameServers:\n  - name: ns1\n    name: ns2\nbrokers:\n  - name: a\n", 3, "duplicate key 'name'"),
        ("nameServers: []\nbrokers: []\n", 1, "declare at least one name server"),
        ("nameServers:\n  - name: n\nbrokers:\n  - name: a\ntimeline:\n  - at: 5s\n    do: crash\n", 6,
         "crash needs broker: or server:"),
        ("nameServers:\n  - name: n\nbrokers:\n  - name: a\nduration: 10s\ntimeline:\n  - at: 20s\n    do: heal\n"
         "    broker: a\n", 7, "after the fixture's duration"),
        ("nameServers:\n  - name: n\n    properties: {brokerChannelExpiredTime: 5}\nbrokers:\n  - name: a\n", 3,
         "use brokerExpiry:"),
        ("nameServers:\n  - name: n\nbrokers:\n  - name: a\n    version: 5.x\n    compressed: true\n", 6,
         "compressed bodies are 4.x only"),
        ("nameServers:\n  - name: n\nbrokers:\n  - name: a\ntopics:\n  - name: t\n  - name: t\n", 7,
         "already declared at line 6"),
    ],
    ids=["syntax", "not-a-mapping", "duplicate-key", "no-servers", "crash-without-target", "after-duration",
         "runner-owned-property", "compressed-5x", "topic-twice"],
)
def test_single_problem(text: str, line: int, message: str) -> None:
    with pytest.raises(FixtureErrors) as caught:
        parse_fixture(text, source="f.yaml")
    assert any(p.line == line and message in p.message for p in caught.value.problems), str(caught.value)


def test_defaults_and_expansion() -> None:
    fx = parse_fixture(
        "nameServers:\n  - name: n\n"
        "brokerDefaults:\n  registerPeriod: 5s\n  version: 5.x\n"
        "brokers:\n  - name: 'b{i}'\n    count: 3\n    start: 1\n"
        "topics:\n  - pattern: 't{i:03d}'\n    count: 4\n    spread: 2\n    perm: R--\n"
    )
    assert [b.key for b in fx.brokers] == ["b1/0", "b2/0", "b3/0"]
    assert {b.cluster for b in fx.brokers} == {"DefaultCluster"} and fx.clusters == ["DefaultCluster"]
    # Java clamps the register period into 10-60 s.
    assert {b.register_period_ms for b in fx.brokers} == {10_000}
    assert {b.style for b in fx.brokers} == {"5.x"}
    assert [(t.name, tuple(t.groups), t.perm) for t in fx.topics] == [
        ("t000", ("b1", "b2"), 4), ("t001", ("b2", "b3"), 4), ("t002", ("b1", "b3"), 4), ("t003", ("b1", "b2"), 4),
    ]


@pytest.mark.parametrize("text, ms", [(30, 30_000), (0.5, 500), ("500ms", 500), ("2m", 120_000), ("1m30s", 90_000),
                                      ("1h", 3_600_000)])
def test_durations(text: object, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["soon", "-1", "5 parsecs", True, "", "30s garbage"])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text, perm", [(6, 6), ("RW-", 6), ("R--", 4), ("rw", 6), ("-W-", 2), ("RWX", 7)])
def test_perms(text: object, perm: int) -> None:
    assert parse_perm(text) == perm


def test_help_runs_as_a_program() -> None:
    result = subprocess.run([sys.executable, "-m", "mqadmin", "fixture", "up", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "--speed" in result.stdout and "--duration" in result.stdout
