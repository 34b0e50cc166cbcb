"""Read commands against three real name servers: agreement, disagreement, outages."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tests.cli.conftest import Run
from tests.cli.fakes import RUNTIME_INFO, FakeBroker, unused_addr
from tests.cli.helpers import row
from tests.nsprocess import NameServerProcess

Brokers = Callable[..., Any]
Cli = Callable[..., Run]


def ns(addrs: list[str]) -> str:
    return ";".join(addrs)


# ---------------------------------------------------------------- topicRoute ----

def test_topic_route_agreement_in_three_formats(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "rt-a", "127.0.0.1:20911", {"rt_orders": 4})
    brokers(addrs, "rt-a", "127.0.0.1:20921", {}, broker_id=1)
    table = cli("topicRoute", "-t", "rt_orders", "-n", ns(addrs))
    assert table.code == 0 and table.err == ""
    assert row(table.out, "Broker", "Cluster", "Addresses (id=addr)", "Read", "Write", "Perm")
    assert row(table.out, "rt-a", "DefaultCluster", "0=127.0.0.1:20911, 1=127.0.0.1:20921", "4", "4", "RW")
    assert table.out.rstrip().endswith("3/3 name servers agree")

    doc = cli("topicRoute", "-t", "rt_orders", "-n", ns(addrs), "-o", "json").json()
    expected_answer = {
        "brokerDatas": [{"brokerAddrs": {"0": "127.0.0.1:20911", "1": "127.0.0.1:20921"},
                         "brokerName": "rt-a", "cluster": "DefaultCluster"}],
        "filterServerTable": {},
        "queueDatas": [{"brokerName": "rt-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}],
    }
    assert list(doc) == ["schema_version", "command", "args", "status", "exit_status", "error", "answer", "steps"]
    assert {k: doc[k] for k in ("schema_version", "command", "args", "status", "exit_status", "error", "answer")} == {
        "schema_version": 1, "command": "topicRoute", "args": {"topic": "rt_orders"}, "status": "ok", "exit_status": 0,
        "error": None, "answer": expected_answer,
    }
    [step] = doc["steps"]
    assert {k: step[k] for k in ("request", "code", "target", "kind", "skipped")} == {
        "request": "GET_ROUTEINFO_BY_TOPIC", "code": 105, "target": "namesrv", "kind": "read", "skipped": None}
    assert [s["addr"] for s in step["servers"]] == addrs
    for server in step["servers"]:
        assert set(server) == {"addr", "broker_name", "ok", "answered", "latency_ms", "answer", "error", "group"}
        assert server["ok"] and server["answered"] and server["error"] is None and server["group"] == 0
        assert server["answer"] == expected_answer and server["latency_ms"] > 0
    assert step["agreement"] == {"agree": True, "compared": 3, "total": 3,
                                 "groups": [{"servers": addrs, "absent": False}]}

    as_yaml = cli("topicRoute", "-t", "rt_orders", "-n", ns(addrs), "-o", "yaml")
    # The agreed answer is written out in full, not as an anchor the servers' entries alias.
    assert "&id" not in as_yaml.out and "*id" not in as_yaml.out
    doc_yaml = as_yaml.yaml()
    assert doc_yaml["answer"] == expected_answer and doc_yaml["status"] == "ok"
    assert doc_yaml["steps"][0]["agreement"]["groups"] == [{"servers": addrs, "absent": False}]


def test_topic_route_disagreement_shows_each_answer(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    # rt-b serves rt_split everywhere; rt-c only on the first two servers; the first server
    # has rt-b's write permission wiped; the third server never heard of rt-c.
    brokers(addrs, "rt-b", "127.0.0.1:21911", {"rt_split": 4})
    brokers(addrs[:2], "rt-c", "127.0.0.1:22911", {"rt_split": 2})
    assert cli("wipeWritePerm", "-b", "rt-b", "-n", addrs[0]).code == 0
    run = cli("topicRoute", "-t", "rt_split", "-n", ns(addrs))
    assert run.code == 4
    lines = run.out.splitlines()
    assert lines[0] == "Name servers disagree: 3 different answers from 3/3 name servers:"
    assert lines[1:4] == [f"  A  {addrs[0]}", f"  B  {addrs[1]}", f"  C  {addrs[2]}"]
    assert row(run.out, "A", "rt-b", "DefaultCluster", "0=127.0.0.1:21911", "4", "4", "R-")
    assert row(run.out, "B,C", "rt-b", "DefaultCluster", "0=127.0.0.1:21911", "4", "4", "RW")
    assert row(run.out, "A,B", "rt-c", "DefaultCluster", "0=127.0.0.1:22911", "2", "2", "RW")
    assert run.err_lines == ["mqadmin: warning: name servers disagree on GET_ROUTEINFO_BY_TOPIC (105): "
                             "3 different answers from 3 name servers"]
    doc = cli("topicRoute", "-t", "rt_split", "-n", ns(addrs), "-o", "json").json()
    assert doc["status"] == "disagree" and doc["exit_status"] == 4 and doc["answer"] is None
    step = doc["steps"][0]
    assert [s["group"] for s in step["servers"]] == [0, 1, 2]
    assert step["servers"][0]["answer"]["queueDatas"][0]["perm"] == 4
    assert step["agreement"]["agree"] is False and len(step["agreement"]["groups"]) == 3


def test_topic_missing_on_one_server_is_a_disagreement(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs[:1], "rt-d", "127.0.0.1:23911", {"rt_lonely": 4})
    run = cli("topicRoute", "-t", "rt_lonely", "-n", ns(addrs))
    assert run.code == 4
    # the largest group is A
    assert run.out.splitlines()[1:3] == [f"  A  {addrs[1]}, {addrs[2]}  (not found: TOPIC_NOT_EXIST)", f"  B  {addrs[0]}"]
    assert row(run.out, "B", "rt-d", "DefaultCluster", "0=127.0.0.1:23911", "4", "4", "RW")
    doc = cli("topicRoute", "-t", "rt_lonely", "-n", ns(addrs), "-o", "json").json()
    missing = doc["steps"][0]["servers"][1]
    assert missing["ok"] is False and missing["answered"] is True and missing["answer"] is None
    assert missing["error"] == {
        "type": "response", "code": 17, "name": "TOPIC_NOT_EXIST",
        "remark": "No topic route info in name server for the topic: rt_lonely\n"
                  "See http://rocketmq.apache.org/docs/faq/ for further details.",
        "message": f"{addrs[1]}: GET_ROUTEINFO_BY_TOPIC (105) for topic 'rt_lonely': TOPIC_NOT_EXIST (17): "
                   "No topic route info in name server for the topic: rt_lonely",
    }
    assert doc["steps"][0]["agreement"]["groups"] == [
        {"servers": addrs[1:], "absent": True}, {"servers": addrs[:1], "absent": False}]


def test_topic_route_with_a_server_down(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "rt-e", "127.0.0.1:24911", {"rt_partial": 8})
    dead = unused_addr()
    run = cli("topicRoute", "-t", "rt_partial", "-n", ns([*addrs[:2], dead]))
    assert run.code == 3
    assert row(run.out, "rt-e", "DefaultCluster", "0=127.0.0.1:24911", "8", "8", "RW")
    assert run.out.rstrip().endswith("2/3 name servers agree, 1 failed")
    assert run.err_lines == [f"mqadmin: error: {dead}: GET_ROUTEINFO_BY_TOPIC (105) for topic 'rt_partial': "
                             "connection refused"]
    doc = cli("topicRoute", "-t", "rt_partial", "-n", ns([*addrs[:2], dead]), "-o", "json").json()
    assert doc["status"] == "partial" and doc["answer"]["queueDatas"][0]["readQueueNums"] == 8
    down = doc["steps"][0]["servers"][2]
    assert (down["addr"], down["ok"], down["answered"], down["group"]) == (dead, False, False, None)
    assert down["error"]["type"] == "refused" and down["error"]["code"] is None


def test_topic_missing_everywhere(cli: Cli, addrs: list[str]) -> None:
    run = cli("topicRoute", "-t", "rt_nowhere", "-n", ns(addrs))
    assert run.code == 1
    assert run.out == ""  # said once, on stderr, not once per server
    assert run.err_lines == [
        "mqadmin: error: GET_ROUTEINFO_BY_TOPIC (105) for topic 'rt_nowhere': TOPIC_NOT_EXIST (17): "
        "No topic route info in name server for the topic: rt_nowhere (all 3 name servers)"
    ]
    dead = unused_addr()
    partial = cli("topicRoute", "-t", "rt_nowhere", "-n", ns([*addrs[:2], dead]))
    assert (partial.code, partial.out) == (3, "")
    assert partial.err_lines == [
        "mqadmin: error: GET_ROUTEINFO_BY_TOPIC (105) for topic 'rt_nowhere': TOPIC_NOT_EXIST (17): "
        "No topic route info in name server for the topic: rt_nowhere (2 of 3 name servers)",
        f"mqadmin: error: {dead}: GET_ROUTEINFO_BY_TOPIC (105) for topic 'rt_nowhere': connection refused"]
    single = cli("topicRoute", "-t", "rt_nowhere", "-n", addrs[0])
    assert single.err_lines == [f"mqadmin: error: {addrs[0]}: GET_ROUTEINFO_BY_TOPIC (105) for topic 'rt_nowhere': "
                                "TOPIC_NOT_EXIST (17): No topic route info in name server for the topic: rt_nowhere"]


def test_timeout_is_reported_per_server(cli: Cli, addrs: list[str], fake_server: Callable[..., Any]) -> None:
    silent = fake_server(lambda cmd: None)
    run = cli("topicList", "-n", f"{addrs[0]};{silent.addr}", "--timeout", "0.3", "-o", "json")
    assert run.code == 3
    slow = run.json()["steps"][0]["servers"][1]
    assert slow["answered"] is False and slow["error"]["type"] == "timeout" and slow["latency_ms"] >= 300
    assert run.err_lines == [f"mqadmin: error: {silent.addr}: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): "
                             "no answer within 0.3 s"]


# --------------------------------------------------------------- clusterList ----

def test_cluster_list_java_columns_and_broker_runtime(
    cli: Cli, addrs: list[str], brokers: Brokers, fake_broker: Callable[..., FakeBroker]
) -> None:
    live = fake_broker()
    brokers(addrs, "cl-a", live.addr, {"cl_t": 1}, cluster="CL1")
    brokers(addrs, "cl-b", "127.0.0.1:1", {"cl_t": 1}, cluster="CL1")  # nothing listens there
    run = cli("clusterList", "-c", "CL1", "-n", ns(addrs), "-o", "table")
    assert run.code == 0
    assert row(run.out, "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
               "#OutTPS(LOAD)", "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")
    hours = run.out.split(live.addr)[1].split()[5]
    assert row(run.out, "CL1", "cl-a", "0", live.addr, "V4_9_8", "12.50(0,0ms)", "3.00(1,2ms|N,Nms)", "-", "0",
               hours, "0.1234", "-")
    assert float(hours) > 400_000  # earliestMessageTimeStamp 0 = 1970
    assert row(run.out, "CL1", "cl-b", "0", "127.0.0.1:1", *["-"] * 8)
    assert run.out.rstrip().endswith("3/3 name servers agree")
    assert run.err_lines == ["mqadmin: warning: 127.0.0.1:1: GET_BROKER_RUNTIME_INFO (28): connection refused"]
    doc = cli("clusterList", "-c", "CL1", "-n", ns(addrs), "-o", "json").json()
    assert doc["answer"] == {
        "brokerAddrTable": {
            "cl-a": {"brokerAddrs": {"0": live.addr}, "brokerName": "cl-a", "cluster": "CL1"},
            "cl-b": {"brokerAddrs": {"0": "127.0.0.1:1"}, "brokerName": "cl-b", "cluster": "CL1"},
        },
        "clusterAddrTable": {"CL1": ["cl-a", "cl-b"]},
    }
    probe = doc["steps"][1]
    assert (probe["request"], probe["kind"], probe["target"]) == ("GET_BROKER_RUNTIME_INFO", "probe", "broker")
    by_addr = {s["addr"]: s for s in probe["servers"]}
    assert by_addr[live.addr]["answer"]["brokerVersionDesc"] == "V4_9_8"
    assert by_addr["127.0.0.1:1"]["error"]["type"] == "refused"


def test_cluster_list_more_stats_prints_message_totals_like_java(
    cli: Cli, addrs: list[str], brokers: Brokers, fake_broker: Callable[..., FakeBroker]
) -> None:
    counters = {"msgPutTotalYesterdayMorning": "100", "msgPutTotalTodayMorning": "250", "msgPutTotalTodayNow": "260",
                "msgGetTotalYesterdayMorning": "40", "msgGetTotalTodayMorning": "90", "msgGetTotalTodayNow": "97"}
    live = fake_broker(runtime={**RUNTIME_INFO, **counters})
    brokers(addrs, "ms-a", live.addr, {"ms_t": 1}, cluster="MS1")
    brokers(addrs, "ms-b", "127.0.0.1:1", {"ms_t": 1}, cluster="MS1")  # nothing listens there
    run = cli("clusterList", "-m", "-c", "MS1", "-n", ns(addrs))
    assert run.code == 0
    assert row(run.out, "#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday",
               "#OutTotalToday")
    assert row(run.out, "MS1", "ms-a", "150", "50", "10", "7")
    assert row(run.out, "MS1", "ms-b", "0", "0", "0", "0")  # Java prints zeros for a silent broker
    assert "#BID" not in run.out


def test_cluster_list_disagreement_unknown_cluster_and_interval(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "cl-c", "127.0.0.1:25911", {"cl_x": 1}, cluster="CL2")
    brokers(addrs[:1], "cl-d", "127.0.0.1:25921", {"cl_x": 1}, cluster="CL2")
    run = cli("clusterList", "-c", "CL2", "-n", ns(addrs))
    assert run.code == 4
    assert row(run.out, "all", "CL2", "cl-c", "0", "127.0.0.1:25911", *["-"] * 8)
    assert row(run.out, "B", "CL2", "cl-d", "0", "127.0.0.1:25921", *["-"] * 8)
    assert "mqadmin: warning: name servers disagree on GET_BROKER_CLUSTER_INFO (106): " \
           "2 different answers from 3 name servers" in run.err_lines

    unknown = cli("clusterList", "-c", "NO_SUCH", "-n", ns(addrs))
    assert unknown.code == 1 and unknown.out == ""
    assert unknown.err_lines == ["mqadmin: error: GET_BROKER_CLUSTER_INFO (106): no cluster 'NO_SUCH' (all 3 name servers)"]

    rounds = cli("clusterList", "-c", "CL2", "-n", addrs[1], "-i", "0.01", "--count", "2", "-o", "yaml")
    assert rounds.code == 0
    docs = rounds.out.split("---\n")[1:]
    assert len(docs) == 2 and all("clusterAddrTable" in d for d in docs)


# ----------------------------------------------------------------- topicList ----

@pytest.fixture
def pair(start_namesrv: Callable[..., NameServerProcess]) -> list[str]:
    """Two fresh name servers: topic lists must not see other tests' brokers."""
    return [start_namesrv().addr, start_namesrv().addr]


def test_topic_list(cli: Cli, pair: list[str], brokers: Brokers) -> None:
    brokers(pair, "tl-a", "127.0.0.1:26911", {"tl_b": 1, "tl_a": 1}, cluster="TL1")
    agree = cli("topicList", "-n", ns(pair), "-o", "table")
    assert agree.code == 0
    assert agree.out.splitlines() == ["Topic", "─" * 5, "tl_a", "tl_b", "2/2 name servers agree"]
    assert cli("topicList", "-n", ns(pair)).out == "tl_a\ntl_b\n"  # Java's layout by default

    brokers(pair[1:], "tl-b", "127.0.0.1:26921", {"tl_c": 1}, cluster="TL2")
    differ = cli("topicList", "-n", ns(pair))
    assert differ.code == 4
    assert row(differ.out, "all", "tl_a") and row(differ.out, "B", "tl_c")
    doc = cli("topicList", "-n", ns(pair), "-o", "json").json()
    assert [s["answer"] for s in doc["steps"][0]["servers"]] == [
        {"topicList": ["tl_a", "tl_b"]}, {"topicList": ["tl_a", "tl_b", "tl_c"]}]

    by_cluster = cli("topicList", "-c", "-n", pair[1], "-o", "json").json()
    assert by_cluster["steps"][0]["request"] == "GET_TOPICS_BY_CLUSTER"
    assert by_cluster["answer"] == {"topicsByCluster": {"TL1": ["tl_a", "tl_b"], "TL2": ["tl_c"]}}
    table = cli("topicList", "-c", "-n", pair[1], "-o", "table")
    assert row(table.out, "TL1", "tl_a") and row(table.out, "TL2", "tl_c")


# ---------------------------------------------------------- KV and config ----

def test_get_kv_config(cli: Cli, addrs: list[str]) -> None:
    assert cli("updateKvConfig", "-s", "rd_ns", "-k", "k1", "-v", "v1", "-n", ns(addrs)).code == 0
    one = cli("getKvConfig", "-s", "rd_ns", "-k", "k1", "-n", ns(addrs), "-o", "table")
    assert one.code == 0 and row(one.out, "rd_ns", "k1", "v1") and "3/3 name servers agree" in one.out
    assert cli("getKvConfig", "-s", "rd_ns", "-k", "k1", "-n", ns(addrs), "-o", "json").json()["answer"] == {"value": "v1"}

    assert cli("updateKvConfig", "-s", "rd_ns", "-k", "k2", "-v", "v2", "-n", addrs[2]).code == 0
    whole = cli("getKvConfig", "-s", "rd_ns", "-n", ns(addrs))
    assert whole.code == 4
    assert row(whole.out, "all", "rd_ns", "k1", "v1") and row(whole.out, "B", "rd_ns", "k2", "v2")
    doc = cli("getKvConfig", "-s", "rd_ns", "-n", ns(addrs), "-o", "yaml").yaml()
    assert doc["steps"][0]["request"] == "GET_KVLIST_BY_NAMESPACE"
    assert doc["steps"][0]["servers"][2]["answer"] == {"table": {"k1": "v1", "k2": "v2"}}

    missing = cli("getKvConfig", "-s", "rd_ns", "-k", "nope", "-n", ns(addrs))
    assert missing.code == 1 and "QUERY_NOT_FOUND (22): No config item, Namespace: rd_ns Key: nope" in missing.err


def test_get_namesrv_config(cli: Cli, addrs: list[str], trio: list[NameServerProcess]) -> None:
    single = cli("getNamesrvConfig", "-n", addrs[0], "-o", "table")
    assert single.code == 0 and row(single.out, "kvConfigPath", str(trio[0].kv_file))
    assert row(single.out, "orderMessageEnable", "false") and single.out.endswith("1/1 name servers agree\n")
    # Servers on one host differ in their file paths only: they agree (as diff-namesrv --config
    # says), and Java's layout shows each server's block with its own paths.
    run = cli("getNamesrvConfig", "-n", ns(addrs))
    assert (run.code, run.err) == (0, "")
    blocks = run.out.split("============")
    assert [blocks[i] for i in range(1, len(blocks), 2)] == addrs
    for server, block in zip(trio, [blocks[i] for i in range(2, len(blocks), 2)]):
        assert "%-50s=  %s\n" % ("kvConfigPath", server.kv_file) in block
        assert "%-50s=  %s\n" % ("listenPort", server.port) in block  # the port it listens on
        assert "%-50s=  %s\n" % ("orderMessageEnable", "false") in block
    assert cli("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", "-n", addrs[2]).code == 0
    try:
        differ = cli("getNamesrvConfig", "-n", ns(addrs))
        assert differ.code == 4 and row(differ.out, "B", "orderMessageEnable", "true")
        assert row(differ.out, "A", "orderMessageEnable", "false")
    finally:
        cli("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false", "-n", addrs[2])
    doc = cli("getNamesrvConfig", "-n", ns(addrs), "-o", "json").json()
    assert [s["answer"]["kvConfigPath"] for s in doc["steps"][0]["servers"]] == [str(n.kv_file) for n in trio]
