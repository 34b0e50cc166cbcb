"""diff-namesrv with a -t topic or -c cluster that no name server knows: exit 1 and say
so, never "no differences" (an operator's typo once read as an all-clear)."""

from __future__ import annotations

import json
from typing import Any, Callable

from tests.cli.conftest import Run
from tests.diffcli.conftest import Brokers, ns

Cli = Callable[..., Run]
A_ADDR = "127.0.0.1:10911"
PAYMENTS_HINT = "no name server knows topic 'Payments' (did you mean 'payments'?)"


def diff(cli: Cli, addrs: list[str], *args: str) -> Run:
    return cli("diff-namesrv", "-n", ns(addrs), *args)


def envelope(doc: Any) -> tuple[str, int, str | None]:
    return doc["status"], doc["exit_status"], doc["error"]


def test_unknown_topic_is_exit_1_with_a_case_hint(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"payments": 4})
    table = diff(cli, addrs, "-t", "Payments")
    assert table.code == 1
    assert table.err_lines == [f"mqadmin: error: {PAYMENTS_HINT}"]
    assert "No differences" not in table.out
    assert "3/3 name servers answered" in table.out  # the server table still shows who answered

    run = diff(cli, addrs, "-t", "Payments", "-o", "json")
    doc = run.json()
    assert run.code == 1 and envelope(doc) == ("error", 1, PAYMENTS_HINT)
    assert doc["findings"] == [] and doc["args"]["topics"] == ["Payments"]
    assert envelope(diff(cli, addrs, "-t", "Payments", "-o", "yaml").yaml()) == ("error", 1, PAYMENTS_HINT)
    assert diff(cli, addrs, "-t", "payments").code == 0  # the real name still agrees


def test_unknown_topic_without_a_near_miss(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"payments": 4})
    run = diff(cli, addrs, "-t", "refunds", "-t", "payments", "-o", "json")
    assert run.code == 1 and envelope(run.json()) == ("error", 1, "no name server knows topic 'refunds'")
    assert run.err_lines == ["mqadmin: error: no name server knows topic 'refunds'"]


def test_unknown_cluster_is_exit_1_with_a_case_hint(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"in_a": 4})
    message = "no name server knows cluster 'defaultcluster' (did you mean 'DefaultCluster'?)"
    table = diff(cli, addrs, "-c", "defaultcluster")
    assert table.code == 1 and table.err_lines == [f"mqadmin: error: {message}"]
    assert "No differences" not in table.out
    run = diff(cli, addrs, "-c", "defaultcluster", "-o", "json")
    assert run.code == 1 and envelope(run.json()) == ("error", 1, message)
    plain = diff(cli, addrs, "-c", "NoCluster", "-o", "json").json()
    assert plain["error"] == "no name server knows cluster 'NoCluster'"
    assert diff(cli, addrs, "-c", "DefaultCluster").code == 0


def test_topic_on_one_server_only_stays_a_difference(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"shared": 4})
    brokers(addrs[2:], "broker-a", A_ADDR, {"shared": 4, "lonely": 4}, counter=2)
    run = diff(cli, addrs, "-t", "lonely", "-o", "json")
    doc = run.json()
    assert run.code == 4 and envelope(doc) == ("disagree", 4, None)
    assert [(f["kind"], f["topic"]) for f in doc["findings"]] == [
        ("topic_list_missing", "lonely"), ("route_missing", "lonely")]
    assert not any("no name server knows" in line for line in diff(cli, addrs, "-t", "lonely").err_lines)


def test_watch_reports_the_unknown_topic_every_round(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    """The watch goes on (the topic may yet be created); every JSON line carries the
    error, stderr says it once, as it does any repeated error line."""
    brokers(addrs, "broker-a", A_ADDR, {"payments": 4})
    run = diff(cli, addrs, "-t", "Payments", "--watch", "0.05", "--count", "2", "-o", "json")
    rounds = [json.loads(line) for line in run.out.splitlines()]
    assert run.code == 1
    assert [(r["round"], *envelope(r)) for r in rounds] == [(1, "error", 1, PAYMENTS_HINT),
                                                            (2, "error", 1, PAYMENTS_HINT)]
    assert run.err_lines == [f"mqadmin: error: {PAYMENTS_HINT}"]
