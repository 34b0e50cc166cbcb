"""wipeWritePerm / addWritePerm when servers report 0 topics: Java's ``OK, 0`` trap (spec 2.5)."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tests.cli.conftest import Run
from tests.cli.fakes import unused_addr
from tests.cli.helpers import row
from tests.nsprocess import NameServerProcess

Brokers = Callable[..., Any]
Cli = Callable[..., Run]


def ns(addrs: list[str]) -> str:
    return ";".join(addrs)


@pytest.fixture
def pair(start_namesrv: Callable[..., NameServerProcess]) -> list[str]:
    """Two fresh name servers: the hints list every broker they know."""
    return [start_namesrv().addr, start_namesrv().addr]


@pytest.mark.parametrize("command,field", [("wipeWritePerm", "wipeTopicCount"), ("addWritePerm", "addTopicCount")])
def test_a_broker_no_server_has_topics_of_is_an_error(
    cli: Cli, pair: list[str], brokers: Brokers, command: str, field: str
) -> None:
    brokers(pair, "pc-broker", "127.0.0.1:42911", {"pc_t": 4})
    run = cli(command, "-b", "pc-brokr", "-n", ns(pair))
    assert run.code == 1
    for addr in pair:  # the per-server report is unchanged
        assert row(run.out, addr, "OK", "0", run.out.split(addr)[1].split()[2], "ms")
    assert run.out.rstrip().endswith("2/2 name servers OK")
    message = "no name server has topics of broker 'pc-brokr' (did you mean 'pc-broker'?); nothing was changed"
    assert run.err_lines == [f"mqadmin: error: {message}"]

    doc = cli(command, "-b", "pc-brokr", "-n", ns(pair), "-o", "json").json()
    assert list(doc) == ["schema_version", "command", "args", "status", "exit_status", "error", "answer", "steps"]
    assert (doc["status"], doc["exit_status"], doc["error"], doc["answer"]) == ("error", 1, message, None)
    [step] = doc["steps"]
    assert [(s["addr"], s["ok"], s["answer"]) for s in step["servers"]] == [(a, True, {field: 0}) for a in pair]
    yaml_doc = cli(command, "-b", "pc-brokr", "-n", ns(pair), "-o", "yaml").yaml()
    assert (yaml_doc["exit_status"], yaml_doc["error"]) == (1, message)


@pytest.mark.parametrize("name,hint", [
    ("PC-A", " (did you mean 'pc-a'?)"),
    ("zzzz", " (known brokers: pc-a, pc-b, pc-empty)"),
    ("pc-empty", " (it is registered but has no topics)"),
], ids=["case-only", "nothing-close", "registered-without-topics"])
def test_the_hint_comes_from_the_servers_cluster_info(
    cli: Cli, pair: list[str], brokers: Brokers, name: str, hint: str
) -> None:
    brokers(pair, "pc-a", "127.0.0.1:42921", {"pc_t": 4})
    brokers(pair[:1], "pc-b", "127.0.0.1:42931", {"pc_t": 4})
    brokers(pair[1:], "pc-empty", "127.0.0.1:42941", {})
    run = cli("wipeWritePerm", "-b", name, "-n", ns(pair))
    assert run.code == 1
    assert run.err_lines == [f"mqadmin: error: no name server has topics of broker {name!r}{hint}; nothing was changed"]


def test_no_brokers_at_all_and_a_server_down(cli: Cli, pair: list[str]) -> None:
    run = cli("addWritePerm", "-b", "pc-x", "-n", ns(pair))
    assert run.code == 1
    assert run.err_lines == ["mqadmin: error: no name server has topics of broker 'pc-x' "
                             "(the name servers know no brokers); nothing was changed"]
    dead = unused_addr()
    partial = cli("addWritePerm", "-b", "pc-x", "-n", ns([pair[0], dead]))
    assert partial.code == 1
    assert row(partial.out, pair[0], "OK", "0", partial.out.split(pair[0])[1].split()[2], "ms")
    assert partial.err_lines == [
        f"mqadmin: error: {dead}: ADD_WRITE_PERM_OF_BROKER (327) for broker 'pc-x': connection refused",
        "mqadmin: error: no name server that answered has topics of broker 'pc-x' "
        "(the name servers know no brokers); nothing was changed",
    ]


def test_zero_on_some_servers_is_a_warning_naming_them(cli: Cli, pair: list[str], brokers: Brokers,
                                                       start_namesrv: Callable[..., NameServerProcess]) -> None:
    third = start_namesrv().addr
    brokers([pair[0], third], "pc-half", "127.0.0.1:42951", {"pc_t1": 4, "pc_t2": 4})
    servers = [pair[0], pair[1], third]
    run = cli("wipeWritePerm", "-b", "pc-half", "-n", ns(servers))
    assert run.code == 0
    assert [run.out.split(a)[1].split()[1] for a in servers] == ["2", "0", "2"]
    assert run.err_lines == [
        f"mqadmin: warning: broker 'pc-half' has no topics on 1 of the 3 name servers that answered: {pair[1]} "
        "(their routes differ from the others'; see topicRoute or diff-namesrv)"]
    doc = cli("addWritePerm", "-b", "pc-half", "-n", ns(servers), "-o", "json")
    assert doc.code == 0 and doc.json()["error"] is None and doc.json()["status"] == "ok"
    assert [s["answer"] for s in doc.json()["steps"][0]["servers"]] == [
        {"addTopicCount": 2}, {"addTopicCount": 0}, {"addTopicCount": 2}]
    assert len(doc.err_lines) == 1 and doc.err_lines[0].startswith("mqadmin: warning: broker 'pc-half' has no topics")

    dead = unused_addr()
    partial = cli("addWritePerm", "-b", "pc-half", "-n", ns([*pair, dead]))
    assert partial.code == 3
    assert partial.err_lines == [
        f"mqadmin: error: {dead}: ADD_WRITE_PERM_OF_BROKER (327) for broker 'pc-half': connection refused",
        f"mqadmin: warning: broker 'pc-half' has no topics on 1 of the 2 name servers that answered: {pair[1]} "
        "(their routes differ from the others'; see topicRoute or diff-namesrv)",
    ]


def test_help_says_what_a_zero_count_means(cli: Cli) -> None:
    for command in ("wipeWritePerm", "addWritePerm"):
        text = " ".join(cli(command, "-h").out.replace("│", " ").split())
        assert "A count of 0 from every server that answered" in text and "exit 1" in text
