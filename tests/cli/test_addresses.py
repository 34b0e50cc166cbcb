"""Name-server lists: Java's syntax, validation before sending, and where lists come from."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable

import pytest

from mqadmin.errors import AddressError, ConfigError
from mqadmin.transport.fanout import ask_all, parse_addrs
from mqadmin.profiles import resolve
from tests.cli.conftest import Run
from tests.cli.fakes import ThreadedServer, unused_addr


@pytest.mark.parametrize("text,expected", [
    ("127.0.0.1:9876", ["127.0.0.1:9876"]),
    ("a:1;b:2", ["a:1", "b:2"]),
    ("a:1;b:2;", ["a:1", "b:2"]),                       # Java's trailing ';'
    ("a:1;;", ["a:1"]),
    (" a:1 ; b:2 ", ["a:1", "b:2"]),                    # trimmed (Java would keep the blank)
    ("a:1;b:2;a:1", ["a:1", "b:2"]),                    # one request per server
    ("ns-1.prod.example.com:9876", ["ns-1.prod.example.com:9876"]),
    ("[::1]:9876", ["[::1]:9876"]),
])
def test_valid_lists(text: str, expected: list[str]) -> None:
    assert parse_addrs(text) == expected


@pytest.mark.parametrize("text,why", [
    ("", "no name-server address"),
    (";", "no name-server address"),
    (";a:1", "empty address"),
    ("a:1;;b:2", "empty address"),
    ("127.0.0.1", "'127.0.0.1' is not host:port"),
    ("a:1,b:2", "separate name servers with ';'"),
    ("a:0", "port '0' of 'a:0' is not a TCP port"),
    ("a:70000", "is not a TCP port"),
    ("a:x", "port 'x'"),
    ("http://a:1", "is not a host name"),
    ("a b:1", "is not a host name"),
])
def test_malformed_lists_are_rejected(text: str, why: str) -> None:
    with pytest.raises(AddressError) as info:
        parse_addrs(text)
    assert why in str(info.value) and str(info.value).startswith("-n/--namesrvAddr: ")


def test_malformed_address_sends_nothing(cli: Callable[..., Run], fake_server: Callable[..., ThreadedServer]) -> None:
    listener = fake_server(lambda cmd: None)
    run = cli("updateKvConfig", "-s", "ns", "-k", "k", "-v", "v", "-n", f"{listener.addr};10.0.0.1")
    assert run.code == 1 and run.out == ""
    assert run.err == f"mqadmin: error: -n/--namesrvAddr: '10.0.0.1' is not host:port in '{listener.addr};10.0.0.1'; " \
                      "expected host:port;host:port\n"
    assert listener.connections == 0


def test_ask_all_keeps_every_server_and_never_raises(namesrv_pair: list[str]) -> None:
    dead = unused_addr()

    async def go() -> dict:
        return await ask_all([*namesrv_pair, dead], lambda c: c.get_all_topics(), 2.0, request=206)

    answers = asyncio.run(go())
    assert list(answers) == [*namesrv_pair, dead]
    assert [a.ok for a in answers.values()] == [True, True, False]
    assert answers[dead].answered is False and answers[dead].error is not None
    assert str(answers[dead].error) == f"{dead}: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): connection refused"
    assert all(a.latency_ms > 0 for a in answers.values())


@pytest.fixture
def namesrv_pair(addrs: list[str]) -> list[str]:
    return addrs[:2]


# ------------------------------------------------------------------ sources ----

PROFILES = """\
default_profile: prod
defaults:
  timeout: 4
profiles:
  prod:
    namesrv: "10.0.0.1:9876;10.0.0.2:9876"
    output: json
  staging:
    namesrv: [10.1.0.1:9876, "10.1.0.2:9876"]
    timeout: 1.5
"""


@pytest.fixture
def profiles(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "profiles.yaml"
    path.write_text(PROFILES)
    return {"MQADMIN_CONFIG": str(path)}


def test_precedence(profiles: dict[str, str], tmp_path: Path) -> None:
    env = {**profiles, "NAMESRV_ADDR": "10.9.0.1:9876"}
    assert resolve("1.1.1.1:1", None, env).addrs == ["1.1.1.1:1"]
    assert resolve(None, None, env).addrs == ["10.9.0.1:9876"]           # env beats the default profile
    staging = resolve(None, "staging", env)                               # an explicit --profile beats env
    assert (staging.addrs, staging.timeout, staging.output) == (["10.1.0.1:9876", "10.1.0.2:9876"], 1.5, None)
    prod = resolve(None, None, profiles)                                  # default_profile, defaults merged
    assert (prod.addrs, prod.timeout, prod.output) == (["10.0.0.1:9876", "10.0.0.2:9876"], 4.0, "json")
    assert resolve("1.1.1.1:1", "staging", env).addrs == ["1.1.1.1:1"]  # -n still wins, defaults kept
    assert "profile 'prod'" in prod.source


def test_xdg_location(tmp_path: Path) -> None:
    (tmp_path / "mqadmin").mkdir()
    (tmp_path / "mqadmin" / "profiles.yaml").write_text(PROFILES)
    assert resolve(None, "staging", {"XDG_CONFIG_HOME": str(tmp_path)}).addrs[0] == "10.1.0.1:9876"
    (tmp_path / "home" / ".config" / "mqadmin").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "mqadmin" / "profiles.yaml").write_text(PROFILES)
    assert resolve(None, "prod", {"HOME": str(tmp_path / "home")}).addrs[0] == "10.0.0.1:9876"


@pytest.mark.parametrize("text,profile,why", [
    (None, "prod", "profiles file does not exist"),
    ("profiles: [", "prod", "not valid YAML (line 1)"),
    ("- a\n- b\n", "prod", "the file must be a mapping"),
    (PROFILES, "qa", "no profile 'qa' (profiles: prod, staging)"),
    ("profiles:\n  p:\n    namesrv: a:1\n    timout: 3\n", "p", "profile 'p' has unknown key(s) 'timout'"),
    ("profiles:\n  p:\n    timeout: 3\n", "p", "profile 'p' needs 'namesrv: host:port;host:port'"),
    ("profiles:\n  p:\n    namesrv: a:1\n    timeout: -1\n", "p", "timeout must be a positive number"),
    ("profiles:\n  p:\n    namesrv: a:1\n    timeout: .nan\n", "p", "timeout must be a positive number"),
    ("profiles:\n  p:\n    namesrv: a:1\n    timeout: .inf\n", "p", "timeout must be a positive number"),
    ("profiles:\n  p:\n    namesrv: a:1\n    output: xml\n", "p", "output must be one of table, json, yaml"),
    ("profiles:\n  p:\n    namesrv: 'a:1;b'\n", "p", "profile 'p' in"),
])
def test_profile_errors(tmp_path: Path, text: str | None, profile: str, why: str) -> None:
    path = tmp_path / "p.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises((ConfigError, AddressError)) as info:
        resolve(None, profile, {"MQADMIN_CONFIG": str(path)})
    assert why in str(info.value) and "\n" not in str(info.value)


def test_no_server_configured(cli: Callable[..., Run], tmp_path: Path) -> None:
    run = cli("topicRoute", "-t", "orders")
    assert run.code == 1 and run.out == ""
    assert run.err_lines == [
        "mqadmin: error: no name server configured: pass -n 'host:port;host:port', set NAMESRV_ADDR, or use "
        f"--profile NAME with {tmp_path / 'absent-profiles.yaml'}"
    ]


def test_env_and_profile_reach_the_command(cli: Callable[..., Run], addrs: list[str], tmp_path: Path) -> None:
    run = cli("topicList", "-o", "json", env={"NAMESRV_ADDR": f"{addrs[0]};{addrs[1]};"})
    assert [s["addr"] for s in run.json()["steps"][0]["servers"]] == addrs[:2]
    path = tmp_path / "profiles.yaml"
    path.write_text(f"profiles:\n  local:\n    namesrv: [{addrs[2]}]\n    output: yaml\n")
    run = cli("topicList", "--profile", "local", env={"MQADMIN_CONFIG": str(path)})
    assert run.code == 0 and run.yaml()["steps"][0]["servers"][0]["addr"] == addrs[2]
