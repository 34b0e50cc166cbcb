"""diff-namesrv against three real name servers made to disagree on purpose."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from tests.cli.conftest import Run
from tests.cli.fakes import unused_addr
from tests.diffcli.conftest import Brokers, ns, row
from tests.nsprocess import NameServerProcess

Cli = Callable[..., Run]
A_ADDR, B_ADDR = "127.0.0.1:10911", "127.0.0.1:10921"


def diff(cli: Cli, addrs: list[str], *args: str) -> Run:
    return cli("diff-namesrv", "-n", ns(addrs), *args)


def diff_json(cli: Cli, addrs: list[str], *args: str) -> tuple[int, Any]:
    run = diff(cli, addrs, "-o", "json", *args)
    return run.code, run.json()


def kinds(doc: Any) -> list[tuple[str, str | None, str | None]]:
    return [(f["kind"], f["topic"], f["broker"]) for f in doc["findings"]]


@pytest.fixture
def kv_cleanup(cli: Cli, addrs: list[str]) -> Iterator[Callable[[str, str], None]]:
    """Remember (namespace, key) pairs written during a test; delete them afterwards."""
    written: list[tuple[str, str]] = []
    yield lambda namespace, key: written.append((namespace, key))
    for namespace, key in written:
        cli("deleteKvConfig", "-s", namespace, "-k", key, "-n", ns(addrs))


# ------------------------------------------------------------------ agree ----

def test_agreeing_servers_exit_0_with_equal_hashes(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"order_topic": 4, "t2": 8})
    brokers(addrs, "broker-b", B_ADDR, {"order_topic": 4})
    code, doc = diff_json(cli, addrs)
    assert code == 0
    assert list(doc) == ["schema_version", "command", "args", "status", "exit_status", "error", "round", "started_at",
                         "elapsed_ms", "servers", "findings", "unconfirmed", "impacts", "changes"]
    assert (doc["schema_version"], doc["command"], doc["status"], doc["exit_status"], doc["error"], doc["round"]) == (
        1, "diff-namesrv", "ok", 0, None, 1)
    assert (doc["findings"], doc["impacts"], doc["changes"]) == ([], [], None)
    assert [s["addr"] for s in doc["servers"]] == addrs
    assert [s["id"] for s in doc["servers"]] == ["A", "B", "C"]
    for s in doc["servers"]:
        assert (s["ok"], s["error"], s["brokers"], s["topics"], s["routes"], s["failures"]) == (
            True, None, 2, 2, 2, [])
        assert s["latency_ms"] > 0
    hashes = {s["content_hash"] for s in doc["servers"]}
    assert len(hashes) == 1 and len(hashes.pop()) == 64

    table = diff(cli, addrs)
    assert table.code == 0 and table.err == ""
    assert row(table.out, "Id", "Name server", "Status", "Latency", "Brokers", "Topics", "Routes", "Content hash")
    digest = doc["servers"][0]["content_hash"][:12]
    assert f"3/3 name servers answered; route content equal (hash {digest})" in table.out
    assert "No differences: the 3 name servers that answered agree" in table.out


# -------------------------------------------------------- the order_topic case ----

def test_broker_b_on_one_server_only(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    """Spec 8.4's example: c1 asks the server that knows broker-b, c2 one that lost it."""
    brokers(addrs, "broker-a", A_ADDR, {"order_topic": 4})
    brokers(addrs[:1], "broker-b", B_ADDR, {"order_topic": 4})
    code, doc = diff_json(cli, addrs)
    assert code == 4 and doc["status"] == "disagree" and doc["exit_status"] == 4
    assert kinds(doc) == [
        ("cluster_members", None, None),
        ("broker_missing", None, "broker-b"),
        ("broker_missing", "order_topic", "broker-b"),
    ]
    missing = doc["findings"][2]
    assert missing["subject"] == "route"
    assert missing["values"] == {addrs[0]: "present", addrs[1]: None, addrs[2]: None}
    assert missing["groups"] == [{"value": "present", "servers": addrs[:1]}, {"value": None, "servers": addrs[1:]}]
    assert doc["findings"][0]["values"] == {
        addrs[0]: "broker-a,broker-b", addrs[1]: "broker-a", addrs[2]: "broker-a"}

    [impact] = doc["impacts"]
    assert (impact["topic"], impact["strategy"], impact["consumers"], impact["servers"]) == (
        "order_topic", "averagely", 2, addrs)
    consumer = impact["consumer"]
    assert consumer["unassigned"] == ["broker-b/0", "broker-b/1", "broker-b/2", "broker-b/3"]
    assert consumer["doubly_assigned"] == ["broker-a/2", "broker-a/3"]
    assert consumer["worst_case"] == [
        {"consumer": "c1", "servers": addrs[:1], "queues": ["broker-a/0", "broker-a/1", "broker-a/2", "broker-a/3"]},
        {"consumer": "c2", "servers": addrs[1:], "queues": ["broker-a/2", "broker-a/3"]},
    ]
    producer = impact["producer"]
    assert (producer["agreed_servers"], producer["majority"], producer["key_hash_breaks"]) == (addrs[1:], True, True)
    assert producer["agreed"] == [{"broker": "broker-a", "queues": 4, "share": 1.0, "delta": 0.0},
                                  {"broker": "broker-b", "queues": 0, "share": 0.0, "delta": 0.0}]
    assert producer["views"][0]["brokers"] == [{"broker": "broker-a", "queues": 4, "share": 0.5, "delta": -0.5},
                                               {"broker": "broker-b", "queues": 4, "share": 0.5, "delta": 0.5}]
    assert len({s["content_hash"] for s in doc["servers"]}) == 2

    table = diff(cli, addrs)
    assert table.code == 4
    assert row(table.out, "order_topic", "broker-b", "broker", "present on A; missing on B,C")
    assert row(table.out, "broker-b", "broker in cluster info", "present on A; missing on B,C")
    assert row(table.out, "order_topic", "consumers", "unassigned: broker-b/0-3")
    assert row(table.out, "assigned twice: broker-a/2-3")
    assert row(table.out, "worst case: c1 -> A, c2 -> B/C")
    assert row(table.out, "producers", "agreed route (B,C; majority): broker-a 100%, broker-b 0%")
    assert row(table.out, "A: broker-a 50% (-50%), broker-b 50% (+50%)")
    assert "3/3 name servers answered; 2 different route contents" in table.out
    assert table.err_lines == ["mqadmin: warning: name servers disagree: 3 differences in 1 topic and the cluster info"]


def test_circle_strategy_and_more_consumers(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"order_topic": 4})
    brokers(addrs[:1], "broker-b", B_ADDR, {"order_topic": 4})
    code, doc = diff_json(cli, addrs, "--strategy", "circle", "--consumers", "3", "-t", "order_topic")
    assert code == 4
    [impact] = doc["impacts"]
    assert (impact["strategy"], impact["consumers"], len(impact["consumer"]["worst_case"])) == ("circle", 3, 3)
    # Circle deals queues out one by one, so views that only lack broker-b never give a
    # queue twice; the worst case is every consumer on a view without broker-b.
    assert impact["consumer"]["unassigned"] == ["broker-b/0", "broker-b/1", "broker-b/2", "broker-b/3"]
    assert impact["consumer"]["doubly_assigned"] == []
    assert doc["args"]["strategy"] == "circle" and doc["args"]["consumers"] == 3


# ------------------------------------------------------------ field findings ----

def test_write_perm_wiped_on_one_server(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"order_topic": 4})
    brokers(addrs, "broker-b", B_ADDR, {"order_topic": 4})
    assert cli("wipeWritePerm", "-b", "broker-b", "-n", addrs[1]).code == 0
    code, doc = diff_json(cli, addrs)
    assert code == 4
    assert kinds(doc) == [("perm", "order_topic", "broker-b")]
    perm = doc["findings"][0]
    assert perm["values"] == {addrs[0]: "6", addrs[1]: "4", addrs[2]: "6"}
    [impact] = doc["impacts"]
    assert impact["consumer"]["worst_case"] == []  # the READ bit is kept: consumers are fine
    assert [v["server"] for v in impact["producer"]["views"] if not v["agrees"]] == [addrs[1]]
    assert impact["producer"]["views"][1]["brokers"][1] == {"broker": "broker-b", "queues": 0, "share": 0.0,
                                                             "delta": -0.5}

    table = diff(cli, addrs)
    assert row(table.out, "order_topic", "broker-b", "perm", "RW (6) on A,C; R- (4) on B")
    assert row(table.out, "B: broker-a 100% (+50%), broker-b 0% (-50%)")


def test_different_queue_counts(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs[:2], "broker-a", A_ADDR, {"qc_topic": 8})
    brokers(addrs[2:], "broker-a", A_ADDR, {"qc_topic": 4})
    code, doc = diff_json(cli, addrs)
    assert code == 4
    assert kinds(doc) == [("read_queue_nums", "qc_topic", "broker-a"), ("write_queue_nums", "qc_topic", "broker-a")]
    assert doc["findings"][0]["values"] == {addrs[0]: "8", addrs[1]: "8", addrs[2]: "4"}
    [impact] = doc["impacts"]
    # c1 on an 8-queue view takes a/0-3, c2 on the 4-queue view a/2-3: a/4-7 are nobody's.
    assert impact["consumer"]["unassigned"] == ["broker-a/4", "broker-a/5", "broker-a/6", "broker-a/7"]
    assert impact["consumer"]["doubly_assigned"] == ["broker-a/2", "broker-a/3"]
    table = diff(cli, addrs)
    assert row(table.out, "qc_topic", "broker-a", "read queues", "8 on A,B; 4 on C")
    assert row(table.out, "broker-a", "write queues", "8 on A,B; 4 on C")


def test_topic_on_one_server_only_is_asked_everywhere(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"shared": 4})
    brokers(addrs[2:], "broker-a", A_ADDR, {"shared": 4, "lonely": 4}, counter=2)
    code, doc = diff_json(cli, addrs)
    assert code == 4
    assert kinds(doc) == [("topic_list_missing", "lonely", None), ("route_missing", "lonely", None)]
    assert doc["findings"][1]["values"] == {addrs[0]: None, addrs[1]: None, addrs[2]: "present"}
    assert [s["routes"] for s in doc["servers"]] == [1, 1, 2]
    table = diff(cli, addrs)
    assert row(table.out, "lonely", "-", "in topic list", "missing on A,B; present on C")
    assert row(table.out, "-", "route", "TOPIC_NOT_EXIST on A,B; present on C")


# ------------------------------------------------------------------ filters ----

def test_topic_filter(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs[:1], "broker-a", A_ADDR, {"same": 4, "differs": 8})
    brokers(addrs[1:], "broker-a", A_ADDR, {"same": 4, "differs": 4})
    code, doc = diff_json(cli, addrs, "-t", "same")
    assert code == 0 and doc["args"]["topics"] == ["same"]
    assert [(s["topics"], s["routes"]) for s in doc["servers"]] == [(1, 1)] * 3
    code, doc = diff_json(cli, addrs, "-t", "differs", "-t", "absent_everywhere")
    assert code == 1 and doc["error"] == "no name server knows topic 'absent_everywhere'"  # bad input wins over 4
    assert {f["topic"] for f in doc["findings"]} == {"differs"}
    assert [s["routes"] for s in doc["servers"]] == [1, 1, 1]
    code, doc = diff_json(cli, addrs)
    assert code == 4 and {f["topic"] for f in doc["findings"]} == {"differs"}


def test_cluster_filter(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"in_a": 4})
    brokers(addrs[:1], "broker-x", "127.0.0.1:10931", {"in_x": 4}, cluster="OtherCluster")
    code, doc = diff_json(cli, addrs, "-c", "DefaultCluster")
    assert code == 0, doc["findings"]
    assert [(s["brokers"], s["topics"]) for s in doc["servers"]] == [(1, 1)] * 3
    code, doc = diff_json(cli, addrs, "-c", "OtherCluster")
    assert code == 4
    assert ("broker_missing", "in_x", "broker-x") not in kinds(doc)  # only A has a route: route_missing instead
    assert ("route_missing", "in_x", None) in kinds(doc)
    assert ("broker_missing", None, "broker-x") in kinds(doc)


def test_order_topic_config_differs(cli: Cli, addrs: list[str], brokers: Brokers,
                                    kv_cleanup: Callable[[str, str], None]) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"kv_topic": 4})
    kv_cleanup("ORDER_TOPIC_CONFIG", "kv_topic")
    assert cli("updateKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "kv_topic", "-v", "broker-a:4",
               "-n", addrs[0]).code == 0
    code, doc = diff_json(cli, addrs, "--kv", "ORDER_TOPIC_CONFIG")
    assert code == 4
    kv = [f for f in doc["findings"] if f["kind"] == "kv_value"]
    assert [(f["topic"], f["subject"], f["values"]) for f in kv] == [
        ("kv_topic", "ORDER_TOPIC_CONFIG/kv_topic", {addrs[0]: "broker-a:4", addrs[1]: None, addrs[2]: None})]
    table = diff(cli, addrs)
    assert row(table.out, "kv_topic", "-", "KV ORDER_TOPIC_CONFIG/kv_topic", "broker-a:4 on A; unset on B,C")
    # Another namespace only: ORDER_TOPIC_CONFIG is then not compared.
    assert diff(cli, addrs, "--kv", "SOME_OTHER_NAMESPACE").code == 0


def test_config_comparison_ignores_per_server_keys(cli: Cli, addrs: list[str]) -> None:
    code, doc = diff_json(cli, addrs, "--config")
    assert code == 0 and doc["args"]["config"] is True
    assert cli("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", "-n", addrs[1]).code == 0
    try:
        code, doc = diff_json(cli, addrs, "--config")
        assert code == 4
        assert [(f["kind"], f["subject"], f["values"][addrs[1]]) for f in doc["findings"]] == [
            ("config_value", "orderMessageEnable", "true")]
        assert diff(cli, addrs, "--config", "--ignore-config", "orderMessageEnable").code == 0
        assert diff(cli, addrs).code == 0  # config is compared only when asked
    finally:
        cli("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false", "-n", addrs[1])


# ------------------------------------------------------------------ failures ----

def test_one_server_down_is_exit_3(cli: Cli, addrs: list[str], brokers: Brokers,
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"order_topic": 4})
    stopped = NameServerProcess(tmp_path_factory.mktemp("stopped")).start()
    dead = stopped.addr
    stopped.stop()
    code, doc = diff_json(cli, [*addrs[:2], dead])
    assert code == 3 and (doc["status"], doc["exit_status"]) == ("partial", 3)
    assert (doc["findings"], doc["impacts"]) == ([], [])
    down = doc["servers"][2]
    assert (down["addr"], down["ok"], down["content_hash"], down["routes"], down["latency_ms"]) == (
        dead, False, None, 0, None)
    assert down["error"] == f"{dead}: GET_BROKER_CLUSTER_INFO (106): connection refused"
    assert doc["servers"][0]["content_hash"] == doc["servers"][1]["content_hash"]

    table = diff(cli, [*addrs[:2], dead])
    assert table.code == 3
    assert row(table.out, "C", dead, "failed", "-", "-", "-", "-", "-")
    assert "2/3 name servers answered, 1 failed; route content equal" in table.out
    assert table.err_lines == [f"mqadmin: error: {dead}: GET_BROKER_CLUSTER_INFO (106): connection refused"]


def test_disagreement_wins_over_a_server_down(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs[:1], "broker-a", A_ADDR, {"order_topic": 4})
    code, doc = diff_json(cli, [*addrs[:2], unused_addr()])
    assert code == 4 and doc["status"] == "disagree"


def test_all_unreachable_is_exit_1(cli: Cli) -> None:
    dead = [unused_addr(), unused_addr()]
    code, doc = diff_json(cli, dead)
    assert code == 1
    assert (doc["status"], doc["exit_status"], doc["error"]) == ("error", 1, "no name server answered")
    assert [s["ok"] for s in doc["servers"]] == [False, False]
    run = diff(cli, dead)
    assert run.code == 1
    assert run.err_lines[-1] == "mqadmin: error: no name server answered"


def test_usage_errors(cli: Cli, addrs: list[str]) -> None:
    assert diff(cli, addrs, "--consumers", "0").code == 2
    assert diff(cli, addrs, "--strategy", "random").code == 2
    assert diff(cli, addrs, "--count", "2").code == 2  # --count needs --watch
    assert diff(cli, addrs, "--watch", "0").code == 2
    bad = cli("diff-namesrv", "-n", "localhost")
    assert bad.code == 1 and "not host:port" in bad.err


def test_yaml_is_the_json_document(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "broker-a", A_ADDR, {"order_topic": 4, "other_topic": 4})
    brokers(addrs[:1], "broker-b", B_ADDR, {"order_topic": 4, "other_topic": 4})
    run = diff(cli, addrs, "-o", "yaml")
    assert run.code == 4
    # Both topics have the same impact, built once: written out twice, not as an alias.
    assert "&id" not in run.out and "*id" not in run.out
    doc = run.yaml()
    _, json_doc = diff_json(cli, addrs)
    for volatile in ("started_at", "elapsed_ms"):
        doc.pop(volatile), json_doc.pop(volatile)
    for s in doc["servers"] + json_doc["servers"]:
        s.pop("latency_ms")
    for f in doc["findings"] + json_doc["findings"]:
        f.pop("first_seen"), f.pop("lasted_s")
    assert doc == json_doc
