"""``topicRoute -l`` (Java's text layout) and ``topicClusterList`` against real name servers."""

from __future__ import annotations

from typing import Any, Callable

from mqnamesrv.protocol.bodies import BrokerData, ClusterInfo, QueueData, TopicRouteData
from mqnamesrv.protocol.codes import RequestCode, ResponseCode
from mqnamesrv.protocol.command import RemotingCommand
from tests.cli.conftest import Run
from tests.cli.fakes import ThreadedServer, unused_addr
from tests.cli.helpers import row

Brokers = Callable[..., Any]
Cli = Callable[..., Run]

# Java's topicRoute -l lines, byte for byte: "%-45s %-32s %-50s %-10s %-11s %-5s%n".
HEADER = ("#ClusterName                                  #BrokerName                      #BrokerAddrs"
          "                                       #ReadQueue #WriteQueue #Perm\n")
RL_A = ("RL1                                           rl-a                             "
        "{0=127.0.0.1:40911, 1=127.0.0.1:40912}             4          4           6    \n")
RL_B = ("RL2                                           rl-b                             "
        "{0=127.0.0.1:40921}                                2          2           6    \n")
DASHES = "-" * 158 + "\n"


def total(brokers: int, read: int, write: int) -> str:
    return f"Total:{' ' * 40}{brokers:<32} {'':<50} {read:<10} {write:<11} {'':<5}\n"


def ns(addrs: list[str]) -> str:
    return ";".join(addrs)


def fake_namesrv(route: TopicRouteData, cluster: ClusterInfo) -> Callable[[RemotingCommand], object]:
    """A name server peer answering 105 with ``route`` and 106 with ``cluster``: for
    answers a real server never gives (a BrokerData without QueueData, a broker that
    no cluster lists)."""

    def respond(cmd: RemotingCommand) -> object:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return cmd.response(ResponseCode.SUCCESS, body=route.encode(standard=True))
        if cmd.code == RequestCode.GET_BROKER_CLUSTER_INFO:
            return cmd.response(ResponseCode.SUCCESS, body=cluster.encode())
        return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED)

    return respond


# ------------------------------------------------------------ topicRoute -l ----

def test_list_prints_javas_layout_byte_for_byte(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "rl-b", "127.0.0.1:40921", {"rl_t": 2}, cluster="RL2")
    brokers(addrs, "rl-a", "127.0.0.1:40911", {"rl_t": 4}, cluster="RL1")
    brokers(addrs, "rl-a", "127.0.0.1:40912", {}, cluster="RL1", broker_id=1)
    expected = HEADER + RL_A + RL_B + DASHES + total(2, 6, 6)
    assert expected.splitlines()[-1] == "Total:" + " " * 40 + "2" + " " * 83 + "6" + " " * 10 + "6" + " " * 16
    for flag in ("-l", "--list"):
        run = cli("topicRoute", "-t", "rl_t", flag, "-n", ns(addrs))
        assert (run.code, run.out, run.err) == (0, expected, "")
    assert len(DASHES) == 159 and all(len(line) == 158 for line in expected.splitlines()[:4])


def test_list_changes_nothing_in_json_and_yaml(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "rl-c", "127.0.0.1:40931", {"rl_doc": 4}, cluster="RL1")

    def stable(doc: dict[str, Any]) -> dict[str, Any]:
        for server in doc["steps"][0]["servers"]:
            server.pop("latency_ms")
        return doc

    for fmt, load in (("json", Run.json), ("yaml", Run.yaml)):
        plain = cli("topicRoute", "-t", "rl_doc", "-n", ns(addrs), "-o", fmt)
        listed = cli("topicRoute", "-t", "rl_doc", "-l", "-n", ns(addrs), "-o", fmt)
        assert plain.code == listed.code == 0
        assert stable(load(listed)) == stable(load(plain))
        assert load(listed)["args"] == {"topic": "rl_doc"}


def test_list_shows_each_answer_under_its_servers_when_they_disagree(
    cli: Cli, addrs: list[str], brokers: Brokers
) -> None:
    brokers(addrs, "rl-a", "127.0.0.1:40911", {"rl_split": 4}, cluster="RL1")
    brokers(addrs, "rl-a", "127.0.0.1:40912", {}, cluster="RL1", broker_id=1)
    brokers(addrs[:1], "rl-b", "127.0.0.1:40921", {"rl_split": 2}, cluster="RL2")
    run = cli("topicRoute", "-t", "rl_split", "-l", "-n", ns(addrs))
    assert run.code == 4
    assert run.out == (
        "Name servers disagree: 2 different answers from 3/3 name servers:\n"
        f"\n  A  {addrs[1]}, {addrs[2]}\n" + HEADER + RL_A + DASHES + total(1, 4, 4)
        + f"\n  B  {addrs[0]}\n" + HEADER + RL_A + RL_B + DASHES + total(2, 6, 6)
    )
    assert run.err_lines == ["mqadmin: warning: name servers disagree on GET_ROUTEINFO_BY_TOPIC (105): "
                             "2 different answers from 3 name servers"]


def test_list_with_a_server_down_or_a_topic_nowhere(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs[:2], "rl-b", "127.0.0.1:40921", {"rl_partial": 2}, cluster="RL2")
    dead = unused_addr()
    run = cli("topicRoute", "-t", "rl_partial", "-l", "-n", ns([*addrs[:2], dead]))
    assert run.code == 3  # those that answered agree: Java's layout alone; stderr names the failed one
    assert run.out == HEADER + RL_B + DASHES + total(1, 2, 2)
    assert run.err_lines == [f"mqadmin: error: {dead}: GET_ROUTEINFO_BY_TOPIC (105) for topic 'rl_partial': "
                             "connection refused"]
    # the third server does not know the topic: a "not found" group, no layout under it
    missing = cli("topicRoute", "-t", "rl_partial", "-l", "-n", ns(addrs))
    assert missing.code == 4
    assert f"\n  B  {addrs[2]}  (not found: TOPIC_NOT_EXIST)\n" in missing.out
    assert missing.out.endswith("(not found: TOPIC_NOT_EXIST)\n") and missing.out.count("#ClusterName") == 1

    nowhere = cli("topicRoute", "-t", "rl_nowhere", "-l", "-n", ns(addrs))
    assert (nowhere.code, nowhere.out) == (1, "")  # "not found" said once, on stderr
    assert len(nowhere.err_lines) == 1 and "TOPIC_NOT_EXIST (17)" in nowhere.err and "(all 3 name servers)" in nowhere.err


def test_list_survives_a_broker_without_queue_data(cli: Cli, fake_server: Callable[..., ThreadedServer]) -> None:
    # Java's -l dies on this (null QueueData); we print 0, 0 and an empty perm.
    route = TopicRouteData(
        (QueueData("rl-a", 4, 4, 6), QueueData("rl-q", 8, 8, 4)),
        (BrokerData("RL1", "rl-a", {0: "127.0.0.1:40911", 1: "127.0.0.1:40912"}),
         BrokerData("RL9", "rl-z", {0: "127.0.0.1:40999"})),
    )
    server = fake_server(fake_namesrv(route, ClusterInfo({}, {})))
    run = cli("topicRoute", "-t", "rl_odd", "-l", "-n", server.addr)
    assert run.code == 0
    rl_z = ("RL9                                           rl-z                             "
            "{0=127.0.0.1:40999}                                0          0                \n")
    # Total: brokers with queue data (2, as Java's map), queues summed over the printed rows
    assert run.out == HEADER + RL_A + rl_z + DASHES + total(2, 4, 4)


# ---------------------------------------------------------- topicClusterList ----

def test_topic_cluster_list_shows_every_cluster_of_the_route(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "tc-b", "127.0.0.1:41921", {"tc_spread": 2}, cluster="TC2")
    brokers(addrs, "tc-a", "127.0.0.1:41911", {"tc_spread": 4, "tc_one": 4}, cluster="TC1")
    run = cli("topicClusterList", "-t", "tc_spread", "-n", ns(addrs))
    assert (run.code, run.err, run.out) == (0, "", "TC1\nTC2\n")  # Java's: one cluster per line
    table = cli("topicClusterList", "-t", "tc_spread", "-n", ns(addrs), "-o", "table")
    assert table.out.splitlines() == ["Cluster", "─" * 7, "TC1", "TC2", "3/3 name servers agree"]
    doc = cli("topicclusterlist", "-t", "tc_spread", "-n", ns(addrs), "-o", "json").json()
    assert {k: doc[k] for k in ("command", "args", "status", "exit_status", "error", "answer")} == {
        "command": "topicClusterList", "args": {"topic": "tc_spread"}, "status": "ok", "exit_status": 0,
        "error": None, "answer": {"clusters": ["TC1", "TC2"]}}
    [step] = doc["steps"]
    assert (step["request"], step["code"], step["kind"]) == ("GET_ROUTEINFO_BY_TOPIC", 105, "read")
    assert [s["answer"] for s in step["servers"]] == [{"clusters": ["TC1", "TC2"]}] * 3
    one = cli("topicClusterList", "-t", "tc_one", "-n", ns(addrs), "-o", "yaml").yaml()
    assert one["answer"] == {"clusters": ["TC1"]} and one["exit_status"] == 0


def test_topic_cluster_list_disagreement_partial_and_unknown(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "tc-c", "127.0.0.1:41931", {"tc_split": 4}, cluster="TC1")
    brokers(addrs[:1], "tc-d", "127.0.0.1:41941", {"tc_split": 4}, cluster="TC3")
    run = cli("topicClusterList", "-t", "tc_split", "-n", ns(addrs))
    assert run.code == 4
    assert run.out.splitlines()[:3] == ["Name servers disagree: 2 different answers from 3/3 name servers:",
                                        f"  A  {addrs[1]}, {addrs[2]}", f"  B  {addrs[0]}"]
    assert row(run.out, "all", "TC1") and row(run.out, "B", "TC3")
    assert run.err_lines == ["mqadmin: warning: name servers disagree on GET_ROUTEINFO_BY_TOPIC (105): "
                             "2 different answers from 3 name servers"]

    dead = unused_addr()
    partial = cli("topicClusterList", "-t", "tc_split", "-n", ns([*addrs[1:], dead]))
    assert partial.code == 3 and partial.out == "TC1\n"
    assert partial.err_lines == [f"mqadmin: error: {dead}: GET_ROUTEINFO_BY_TOPIC (105) for topic 'tc_split': "
                                 "connection refused"]

    unknown = cli("topicClusterList", "-t", "tc_nowhere", "-n", ns(addrs))
    assert (unknown.code, unknown.out) == (1, "")
    assert unknown.err_lines == [
        "mqadmin: error: GET_ROUTEINFO_BY_TOPIC (105) for topic 'tc_nowhere': TOPIC_NOT_EXIST (17): "
        "No topic route info in name server for the topic: tc_nowhere (all 3 name servers)"]
    doc = cli("topicClusterList", "-t", "tc_nowhere", "-n", ns(addrs), "-o", "json").json()
    assert doc["status"] == "error" and doc["answer"] is None
    assert doc["steps"][0]["agreement"]["groups"] == [{"servers": addrs, "absent": True}]


def test_topic_cluster_list_leaves_out_a_broker_in_no_cluster(
    cli: Cli, fake_server: Callable[..., ThreadedServer]
) -> None:
    a = BrokerData("TC1", "tc-a", {0: "127.0.0.1:41911"})
    ghost = BrokerData("TC9", "tc-ghost", {0: "127.0.0.1:41999"})  # in the route, in no cluster
    cluster = ClusterInfo({"tc-a": a}, {"TC1": ("tc-a",)})
    both = fake_server(fake_namesrv(TopicRouteData((QueueData("tc-a", 4, 4, 6), QueueData("tc-ghost", 4, 4, 6)),
                                                   (a, ghost)), cluster))
    run = cli("topicClusterList", "-t", "tc_t", "-n", both.addr, "-o", "table")
    assert (run.code, run.out.splitlines()) == (0, ["Cluster", "─" * 7, "TC1", "1/1 name servers agree"])
    only_ghost = fake_server(fake_namesrv(TopicRouteData((QueueData("tc-ghost", 4, 4, 6),), (ghost,)), cluster))
    alone = cli("topicClusterList", "-t", "tc_t", "-n", only_ghost.addr, "-o", "table")
    assert alone.code == 0
    assert alone.out.splitlines()[-2:] == ["no cluster of the cluster info holds a broker of this route",
                                           "1/1 name servers agree"]
    assert cli("topicClusterList", "-t", "tc_t", "-n", only_ghost.addr, "-o", "json").json()["answer"] == {
        "clusters": []}


def test_topic_cluster_list_reports_a_failed_cluster_info(cli: Cli, fake_server: Callable[..., ThreadedServer]) -> None:
    def respond(cmd: RemotingCommand) -> object:
        if cmd.code == RequestCode.GET_BROKER_CLUSTER_INFO:
            return cmd.response(ResponseCode.SYSTEM_ERROR, remark="busy elsewhere")
        route = TopicRouteData((QueueData("tc-a", 4, 4, 6),), (BrokerData("TC1", "tc-a", {0: "127.0.0.1:1"}),))
        return cmd.response(ResponseCode.SUCCESS, body=route.encode(standard=True))

    server = fake_server(respond)
    run = cli("topicClusterList", "-t", "tc_t", "-n", server.addr)
    assert (run.code, run.out) == (1, "0/1 name servers answered\n")
    assert run.err_lines == [f"mqadmin: error: {server.addr}: GET_BROKER_CLUSTER_INFO (106) for topic 'tc_t': "
                             "SYSTEM_ERROR (1): busy elsewhere"]


def test_help_documents_the_java_differences(cli: Cli) -> None:
    route = " ".join(cli("topicRoute", "-h").out.replace("│", " ").split())
    assert "-l --list" in route or "--list -l" in route
    assert "byte for byte" in route and "no effect on -o json|yaml" in route and "without queue data" in route
    clusters = " ".join(cli("topicClusterList", "-h").out.replace("│", " ").split())
    assert "Java looks only at the route's first broker" in clusters
