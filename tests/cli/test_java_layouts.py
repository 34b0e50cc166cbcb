"""Java's output, line for line, for the reads runbooks parse (topicList, clusterList,
topicClusterList, getKvConfig, getNamesrvConfig), against real name servers.

Expected lines are written from the spec's examples and format strings
(docs: mqadmin.md 2.1-2.7), not from our own constants."""

from __future__ import annotations

import time
from typing import Any, Callable

from tests.cli.conftest import Run
from tests.cli.fakes import FakeBroker
from tests.cli.helpers import row
from tests.nsprocess import NameServerProcess

Cli = Callable[..., Run]
Brokers = Callable[..., Any]

# The spec's 5.3.3 example rows (a healthy broker, then one that does not answer).
HEALTHY = ("DefaultCluster          broker-a                0     10.0.0.1:10911         V5_3_3                 "
           "0.00(0,0ms)               0.00(0,0ms|0,0ms)  0-0(0.0w, 0.0, 0.0)               0  0.50          "
           "0.1234          true")
SILENT = ("DefaultCluster          broker-b                0     10.0.0.3:10911                                  "
          "0.00(,ms)                   0.00(,ms|,ms)  0-0(0.0w, 0.0, 0.0)                  0.00          0.0000         "
          "false")
HEADER = "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %-11s  %-12s  %-8s  %-10s" % (
    "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
    "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")
RUNTIME_5 = {
    "brokerVersionDesc": "V5_3_3", "putTps": "0.0 0.0 0.0", "sendThreadPoolQueueSize": "0",
    "sendThreadPoolQueueHeadWaitTimeMills": "0", "getTransferredTps": "0.0 0.0 0.0", "pullThreadPoolQueueSize": "0",
    "pullThreadPoolQueueHeadWaitTimeMills": "0", "ackThreadPoolQueueSize": "0", "ackThreadPoolQueueHeadWaitTimeMills": "0",
    "timerReadBehind": "0", "timerOffsetBehind": "0", "timerCongestNum": "0", "timerEnqueueTps": "0.0",
    "timerDequeueTps": "0.0", "pageCacheLockTimeMills": "0", "commitLogDiskRatio": "0.1234", "brokerActive": "true",
}


def ns(addrs: list[str]) -> str:
    return ";".join(addrs)


def _swap(line: str, cells: dict[str, str]) -> str:
    """The spec's example line with our names and addresses in place of its own (padded alike)."""
    for theirs, ours in cells.items():
        line = line.replace(theirs.ljust(22), ours.ljust(22), 1)
    return line


def test_cluster_list_is_javas_text_when_the_servers_agree(
    cli: Cli, addrs: list[str], brokers: Brokers, fake_broker: Callable[..., FakeBroker]
) -> None:
    live = fake_broker(runtime={**RUNTIME_5, "earliestMessageTimeStamp": str(int(time.time() * 1000) - 1_800_000)})
    brokers(addrs, "jl-a", live.addr, {"jl_t": 1}, cluster="JL1")
    brokers(addrs, "jl-b", "127.0.0.1:1", {"jl_t": 1}, cluster="JL1")  # nothing listens there
    run = cli("clusterList", "-c", "JL1", "-n", ns(addrs))
    assert run.code == 0
    assert run.out.splitlines() == [
        HEADER,
        _swap(HEALTHY, {"DefaultCluster": "JL1", "broker-a": "jl-a", "10.0.0.1:10911": live.addr}),
        _swap(SILENT, {"DefaultCluster": "JL1", "broker-b": "jl-b", "10.0.0.3:10911": "127.0.0.1:1"}),
    ]
    totals = cli("clusterList", "-c", "JL1", "-m", "-n", ns(addrs))
    assert totals.out.splitlines() == [
        "%-16s  %-32s %14s %14s %14s %14s" % ("#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest",
                                              "#InTotalToday", "#OutTotalToday"),
        "%-16s  %-32s %14d %14d %14d %14d" % ("JL1", "jl-a", 0, 0, 0, 0),
        "%-16s  %-32s %14d %14d %14d %14d" % ("JL1", "jl-b", 0, 0, 0, 0),
    ]


def test_topic_list_lines_and_cluster_model(cli: Cli, start_namesrv: Callable[..., NameServerProcess],
                                            brokers: Brokers) -> None:
    pair = [start_namesrv().addr, start_namesrv().addr]
    brokers(pair, "jt-a", "127.0.0.1:27911", {"jt_b": 1, "jt_a": 1, "%RETRY%g1": 1}, cluster="JT1")
    plain = cli("topicList", "-n", ns(pair))
    assert (plain.code, plain.err) == (0, "")
    assert plain.out == "%RETRY%g1\njt_a\njt_b\n"  # `| wc -l` counts topics, `| grep` finds one
    model = cli("topicList", "-c", "-n", ns(pair))
    assert model.out.splitlines() == [
        "%-20s  %-48s  %-48s" % ("#Cluster Name", "#Topic", "#Consumer Group"),
        "%-20s  %-64s  %-64s" % ("JT1", "jt_a", ""),
        "%-20s  %-64s  %-64s" % ("JT1", "jt_b", ""),
    ]
    # a disagreement: the merged table (who holds what) on stdout, the verdict on stderr and in the code
    brokers(pair[1:], "jt-b", "127.0.0.1:27921", {"jt_c": 1}, cluster="JT2")
    differ = cli("topicList", "-n", ns(pair))
    assert differ.code == 4 and row(differ.out, "B", "jt_c") and row(differ.out, "all", "jt_a")
    assert differ.err_lines == ["mqadmin: warning: name servers disagree on GET_ALL_TOPIC_LIST_FROM_NAMESERVER "
                                "(206): 2 different answers from 2 name servers"]


def test_get_kv_config_value_and_namespace(cli: Cli, addrs: list[str]) -> None:
    assert cli("updateKvConfig", "-s", "jk_ns", "-k", "k1", "-v", "v 1", "-n", ns(addrs)).code == 0
    assert cli("updateKvConfig", "-s", "jk_ns", "-k", "k2", "-v", "v2", "-n", ns(addrs)).code == 0
    one = cli("getKvConfig", "-s", "jk_ns", "-k", "k1", "-n", ns(addrs))
    assert (one.code, one.out) == (0, "v 1\n")
    whole = cli("getKvConfig", "-s", "jk_ns", "-n", ns(addrs))
    assert whole.out == "%-50s=  %s\n%-50s=  %s\n" % ("k1", "v 1", "k2", "v2")


def test_get_namesrv_config_shows_the_port_listened_on(cli: Cli, trio: list[NameServerProcess]) -> None:
    """Started with --port 0 (as every test server is): listenPort is the real port, not 0."""
    run = cli("getNamesrvConfig", "-n", trio[0].addr)
    assert f"============{trio[0].addr}============\n" == run.out.splitlines(keepends=True)[0]
    assert "%-50s=  %s\n" % ("listenPort", trio[0].port) in run.out
    doc = cli("getNamesrvConfig", "-n", trio[0].addr, "-o", "json").json()
    assert doc["answer"]["listenPort"] == str(trio[0].port)
