"""allocateMQ: each consumer's queues under every name server's route of a topic."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from mqadmin.diff import allocate_averagely, consumer_queues
from mqnamesrv.protocol.bodies import BrokerData, QueueData, TopicRouteData
from tests.cli.conftest import Run
from tests.cli.fakes import unused_addr
from tests.cli.helpers import flat, row

Brokers = Callable[..., Any]
Cli = Callable[..., Run]


def ns(addrs: list[str]) -> str:
    return ";".join(addrs)


def mq(broker: str, queue_id: int, topic: str) -> dict[str, Any]:
    return {"brokerName": broker, "queueId": queue_id, "topic": topic}


def test_averagely_over_sorted_ids_in_three_formats(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "am-b", "127.0.0.1:43921", {"am_t": 2})
    brokers(addrs, "am-a", "127.0.0.1:43911", {"am_t": 4})
    # given out of order: the consumers sort their ids, so c1 takes the first block
    run = cli("allocateMQ", "-t", "am_t", "-i", "c3, c1,c2", "-n", ns(addrs))
    assert (run.code, run.err) == (0, "")
    assert row(run.out, "Client id", "Queues (broker:ids)", "Count")
    lines = run.out.splitlines()
    assert lines[2:] == ["c1          am-a:0-1              2", "c2          am-a:2-3              2",
                         "c3          am-b:0-1              2", "3/3 name servers agree"]

    doc = cli("allocatemq", "-t", "am_t", "-i", "c3,c1,c2", "-n", ns(addrs), "-o", "json").json()
    expected = {"result": {"c1": [mq("am-a", 0, "am_t"), mq("am-a", 1, "am_t")],
                           "c2": [mq("am-a", 2, "am_t"), mq("am-a", 3, "am_t")],
                           "c3": [mq("am-b", 0, "am_t"), mq("am-b", 1, "am_t")]}}
    assert {k: doc[k] for k in ("command", "args", "status", "exit_status", "error", "answer")} == {
        "command": "allocateMQ", "args": {"topic": "am_t", "client_ids": ["c3", "c1", "c2"], "strategy": "averagely"},
        "status": "ok", "exit_status": 0, "error": None, "answer": expected}
    assert list(doc["answer"]["result"]) == ["c1", "c2", "c3"]
    [step] = doc["steps"]
    assert (step["request"], step["kind"]) == ("GET_ROUTEINFO_BY_TOPIC", "read")
    assert [s["answer"] for s in step["servers"]] == [expected] * 3
    assert cli("allocateMQ", "-t", "am_t", "-i", "c3,c1,c2", "-n", ns(addrs), "-o", "yaml").yaml()["answer"] == expected


def test_the_allocation_is_the_diff_modules(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "am-c", "127.0.0.1:43931", {"am_odd": 5})
    brokers(addrs, "am-d", "127.0.0.1:43941", {"am_odd": 3})
    ids = ["10.0.0.2@1", "10.0.0.1@7", "10.0.0.10@3"]
    doc = cli("allocateMQ", "-t", "am_odd", "-i", ",".join(ids), "-n", addrs[0], "-o", "json").json()
    route = TopicRouteData((QueueData("am-c", 5, 5, 6), QueueData("am-d", 3, 3, 6)),
                           (BrokerData("DefaultCluster", "am-c", {0: "x:1"}), BrokerData("DefaultCluster", "am-d", {0: "x:2"})))
    queues = consumer_queues(route)
    ordered = sorted(ids)  # as Java's String order: '0' < '@', so "10.0.0.10@3" comes first
    assert ordered == ["10.0.0.10@3", "10.0.0.1@7", "10.0.0.2@1"]
    assert doc["answer"]["result"] == {
        cid: [mq(b, q, "am_odd") for b, q in allocate_averagely(queues, i, 3)] for i, cid in enumerate(ordered)}
    assert doc["answer"]["result"]["10.0.0.10@3"] == [mq("am-c", i, "am_odd") for i in range(3)]
    assert [len(v) for v in doc["answer"]["result"].values()] == [3, 3, 2]


def test_circle_strategy_and_more_consumers_than_queues(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "am-e", "127.0.0.1:43951", {"am_circle": 4})
    brokers(addrs, "am-f", "127.0.0.1:43961", {"am_circle": 2})
    circle = cli("allocateMQ", "-t", "am_circle", "-i", "c2,c1", "--strategy", "circle", "-n", ns(addrs))
    assert circle.code == 0
    assert row(circle.out, "c1", "am-e:0,2, am-f:0", "3") and row(circle.out, "c2", "am-e:1,3, am-f:1", "3")
    assert cli("allocateMQ", "-t", "am_circle", "-i", "c1,c2", "--strategy", "circle", "-n", addrs[0],
               "-o", "json").json()["args"]["strategy"] == "circle"
    many = cli("allocateMQ", "-t", "am_circle", "-i", ",".join(f"c{i}" for i in range(1, 9)), "-n", ns(addrs))
    assert many.code == 0
    assert row(many.out, "c1", "am-e:0", "1") and row(many.out, "c6", "am-f:1", "1")
    assert row(many.out, "c7", "-", "0") and row(many.out, "c8", "-", "0")


def test_servers_with_different_routes_give_different_allocations(
    cli: Cli, addrs: list[str], brokers: Brokers
) -> None:
    brokers(addrs, "am-g", "127.0.0.1:43971", {"am_split": 4})
    brokers(addrs[:1], "am-h", "127.0.0.1:43981", {"am_split": 4})
    run = cli("allocateMQ", "-t", "am_split", "-i", "c1,c2", "-n", ns(addrs))
    assert run.code == 4
    assert run.out.splitlines()[:3] == ["Name servers disagree: 2 different answers from 3/3 name servers:",
                                        f"  A  {addrs[1]}, {addrs[2]}", f"  B  {addrs[0]}"]
    assert row(run.out, "A", "c1", "am-g:0-1", "2") and row(run.out, "B", "c1", "am-g:0-3", "4")
    assert row(run.out, "A", "c2", "am-g:2-3", "2") and row(run.out, "B", "c2", "am-h:0-3", "4")
    assert run.err_lines == ["mqadmin: warning: name servers disagree on GET_ROUTEINFO_BY_TOPIC (105): "
                             "2 different answers from 3 name servers"]
    doc = cli("allocateMQ", "-t", "am_split", "-i", "c1,c2", "-n", ns(addrs), "-o", "json").json()
    assert (doc["status"], doc["exit_status"], doc["answer"]) == ("disagree", 4, None)
    assert [len(s["answer"]["result"]["c2"]) for s in doc["steps"][0]["servers"]] == [4, 2, 2]


def test_unknown_topic_and_a_server_down(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    unknown = cli("allocateMQ", "-t", "am_nowhere", "-i", "c1", "-n", ns(addrs))
    assert (unknown.code, unknown.out) == (1, "")  # "not found" said once, on stderr
    assert unknown.err_lines == ["mqadmin: error: GET_ROUTEINFO_BY_TOPIC (105) for topic 'am_nowhere': "
                                 "TOPIC_NOT_EXIST (17): No topic route info in name server for the topic: am_nowhere "
                                 "(all 3 name servers)"]
    brokers(addrs, "am-i", "127.0.0.1:43991", {"am_partial": 2})
    dead = unused_addr()
    partial = cli("allocateMQ", "-t", "am_partial", "-i", "c1", "-n", ns([addrs[0], dead]))
    assert partial.code == 3 and row(partial.out, "c1", "am-i:0-1", "2")
    assert partial.err_lines == [f"mqadmin: error: {dead}: GET_ROUTEINFO_BY_TOPIC (105) for topic 'am_partial': "
                                 "connection refused"]


@pytest.mark.parametrize("ids,message", [
    ("", "allocateMQ: -i: no client id given"),
    (" , ", "allocateMQ: -i: no client id given"),
    ("c1,,c2", "allocateMQ: -i: empty client id in 'c1,,c2'"),
    ("c1, ,c2", "allocateMQ: -i: empty client id in 'c1, ,c2'"),
    ("c1,c2,c1", "allocateMQ: -i: client id 'c1' given twice"),
], ids=["empty", "blank", "empty-element", "blank-element", "repeated"])
def test_bad_client_ids_are_usage_errors(cli: Cli, ids: str, message: str) -> None:
    run = cli("allocateMQ", "-t", "am_t", "-i", ids, "-n", "127.0.0.1:1")
    assert (run.code, run.out) == (2, "")
    assert message in flat(run.err)


def test_a_trailing_comma_is_dropped_as_java_drops_it(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs[:1], "am-j", "127.0.0.1:44911", {"am_trail": 2})
    doc = cli("allocateMQ", "-t", "am_trail", "-i", "c1,c2,", "-n", addrs[0], "-o", "json").json()
    assert doc["args"]["client_ids"] == ["c1", "c2"]
    assert doc["answer"] == {"result": {"c1": [mq("am-j", 0, "am_trail")], "c2": [mq("am-j", 1, "am_trail")]}}
