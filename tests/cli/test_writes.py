"""Write commands: every server gets the write, one result per server, exit 0/1/3."""

from __future__ import annotations

from typing import Any, Callable

from mqnamesrv.protocol.codes import ResponseCode
from tests.cli.conftest import Run
from tests.cli.fakes import FakeBroker, unused_addr
from tests.cli.helpers import flat, row
from tests.nsprocess import NameServerProcess

Brokers = Callable[..., Any]
Cli = Callable[..., Run]


def ns(addrs: list[str]) -> str:
    return ";".join(addrs)


def test_update_and_delete_kv_reach_every_server(cli: Cli, addrs: list[str]) -> None:
    dead = unused_addr()
    run = cli("updateKvConfig", "-s", "wr_ns", "-k", "color", "-v", "blue", "-n", ns([*addrs, dead]))
    assert run.code == 3
    assert row(run.out, "Name server", "Result", "Latency")
    for addr in addrs:
        assert row(run.out, addr, "OK", run.out.split(addr)[1].split()[1], "ms")
    assert row(run.out, dead, "FAILED (refused)", run.out.split(dead)[1].split()[2], "ms")
    assert run.out.rstrip().endswith("3/4 name servers OK")
    assert run.err_lines == [f"mqadmin: error: {dead}: PUT_KV_CONFIG (100) for key wr_ns/color: connection refused"]

    assert cli("getKvConfig", "-s", "wr_ns", "-k", "color", "-n", ns(addrs)).code == 0
    doc = cli("deleteKvConfig", "-s", "wr_ns", "-k", "color", "-n", ns(addrs), "-o", "json").json()
    assert (doc["command"], doc["status"], doc["exit_status"], doc["args"]) == (
        "deleteKvConfig", "ok", 0, {"namespace": "wr_ns", "key": "color"})
    [step] = doc["steps"]
    assert (step["request"], step["code"], step["kind"], step["agreement"]) == ("DELETE_KV_CONFIG", 102, "write", None)
    assert [(s["addr"], s["ok"], s["answer"], s["error"]) for s in step["servers"]] == [(a, True, None, None) for a in addrs]
    assert cli("getKvConfig", "-s", "wr_ns", "-k", "color", "-n", ns(addrs)).code == 1


def test_write_perm_commands_report_each_servers_topic_count(cli: Cli, addrs: list[str], brokers: Brokers) -> None:
    brokers(addrs, "wp-a", "127.0.0.1:30911", {"wp_t1": 4, "wp_t2": 4})
    brokers(addrs[:1], "wp-a-extra", "127.0.0.1:30912", {"wp_t3": 4})  # another broker; not counted
    brokers(addrs[:1], "wp-a", "127.0.0.1:30911", {"wp_t1": 4, "wp_t2": 4, "wp_t4": 4}, counter=2)
    wipe = cli("wipeWritePerm", "-b", "wp-a", "-n", ns(addrs))
    assert wipe.code == 0
    assert row(wipe.out, "Name server", "Result", "Topics", "Latency")
    counts = [wipe.out.split(a)[1].split()[1] for a in addrs]
    assert counts == ["3", "2", "2"]
    route = cli("topicRoute", "-t", "wp_t1", "-n", ns(addrs))
    assert route.code == 0 and row(route.out, "wp-a", "DefaultCluster", "0=127.0.0.1:30911", "4", "4", "R-")

    doc = cli("addWritePerm", "-b", "wp-a", "-n", ns(addrs), "-o", "json").json()
    assert [s["answer"] for s in doc["steps"][0]["servers"]] == [
        {"addTopicCount": 3}, {"addTopicCount": 2}, {"addTopicCount": 2}]
    assert doc["steps"][0]["request"] == "ADD_WRITE_PERM_OF_BROKER"
    assert row(cli("topicRoute", "-t", "wp_t1", "-n", ns(addrs)).out,
               "wp-a", "DefaultCluster", "0=127.0.0.1:30911", "4", "4", "RW")


def test_writes_with_a_stopped_server(cli: Cli, start_namesrv: Callable[..., NameServerProcess], brokers: Brokers) -> None:
    up, down = start_namesrv(), start_namesrv()
    both = f"{up.addr};{down.addr}"
    brokers([up.addr, down.addr], "st-a", "127.0.0.1:31911", {"st_t": 2})
    down.stop()
    run = cli("wipeWritePerm", "-b", "st-a", "-n", both, "-o", "yaml")
    assert run.code == 3
    doc = run.yaml()
    assert doc["status"] == "partial"
    ok, failed = doc["steps"][0]["servers"]
    assert (ok["addr"], ok["ok"], ok["answer"]) == (up.addr, True, {"wipeTopicCount": 1})
    assert (failed["addr"], failed["ok"], failed["answered"], failed["error"]["type"]) == (down.addr, False, False, "refused")
    assert run.err_lines == [
        f"mqadmin: error: {down.addr}: WIPE_WRITE_PERM_OF_BROKER (205) for broker 'st-a': connection refused"]
    table = cli("addWritePerm", "-b", "st-a", "-n", both)
    assert table.code == 3
    assert row(table.out, up.addr, "OK", "1", table.out.split(up.addr)[1].split()[2], "ms")
    assert row(table.out, down.addr, "FAILED (refused)", "-", table.out.split(down.addr)[1].split()[3], "ms")
    assert table.out.endswith("1/2 name servers OK\n")
    # nothing succeeded: exit 1
    nothing = cli("updateKvConfig", "-s", "st", "-k", "k", "-v", "v", "-n", down.addr)
    assert nothing.code == 1 and "FAILED (refused)" in nothing.out


def test_update_namesrv_config(
    cli: Cli, start_namesrv: Callable[..., NameServerProcess], brokers: Brokers
) -> None:
    servers = [start_namesrv().addr, start_namesrv().addr]
    run = cli("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", "-n", ns(servers))
    assert run.code == 0 and run.out.rstrip().endswith("2/2 name servers OK")
    conf = cli("getNamesrvConfig", "-n", ns(servers), "-o", "json").json()
    assert [s["answer"]["orderMessageEnable"] for s in conf["steps"][0]["servers"]] == ["true", "true"]
    # with orderMessageEnable the route carries the order conf; the table shows it under the rows
    brokers(servers, "uc-a", "127.0.0.1:33911", {"uc_t": 4})
    assert cli("updateOrderConf", "-t", "uc_t", "-m", "put", "-v", "uc-a:4", "-n", ns(servers)).code == 0
    route = cli("topicRoute", "-t", "uc_t", "-n", ns(servers))
    assert route.out.splitlines()[-2:] == ["orderTopicConf: uc-a:4", "2/2 name servers agree"]

    refused = cli("updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/evil", "-n", ns(servers))
    assert refused.code == 1
    assert "FAILED (NO_PERMISSION)" in refused.out.split(servers[0])[1].splitlines()[0]
    assert refused.err_lines == [
        f"mqadmin: error: {a}: UPDATE_NAMESRV_CONFIG (318) for kvConfigPath: NO_PERMISSION (16): "
        "Can not update config in black list." for a in servers
    ]


def test_update_order_conf(cli: Cli, addrs: list[str]) -> None:
    put = cli("updateOrderConf", "-t", "oc_t", "-m", "put", "-v", "broker-a:4;broker-b:4", "-n", ns(addrs))
    assert put.code == 0
    got = cli("updateOrderConf", "-t", "oc_t", "-m", "get", "-n", ns(addrs))
    assert got.code == 0 and row(got.out, "oc_t", "broker-a:4;broker-b:4")
    assert cli("getKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "oc_t", "-n", addrs[0], "-o", "json").json()[
        "answer"] == {"value": "broker-a:4;broker-b:4"}
    doc = cli("updateOrderConf", "-t", "oc_t", "-m", "delete", "-n", ns(addrs), "-o", "json").json()
    assert doc["steps"][0]["request"] == "DELETE_KV_CONFIG" and doc["status"] == "ok"
    assert cli("updateOrderConf", "-t", "oc_t", "-m", "get", "-n", ns(addrs)).code == 1
    # put without, or with a malformed, -v is a usage error; nothing is sent
    assert cli("updateOrderConf", "-t", "oc_t", "-m", "put", "-n", ns(addrs)).code == 2
    bad = cli("updateOrderConf", "-t", "oc_t", "-m", "put", "-v", "broker-a=4", "-n", ns(addrs))
    assert bad.code == 2 and "updateOrderConf: -v: put needs 'brokerName:queueCount;" in flat(bad.err)


# ---------------------------------------------------------------- deleteTopic ----

def test_delete_topic_brokers_then_name_servers(
    cli: Cli, addrs: list[str], brokers: Brokers, fake_broker: Callable[..., FakeBroker]
) -> None:
    a, b = fake_broker(), fake_broker()
    brokers(addrs, "dt-a", a.addr, {"dt_topic": 4, "dt_keep": 4}, cluster="DT1")
    brokers(addrs, "dt-a", "127.0.0.1:32921", {}, cluster="DT1", broker_id=1)  # a slave: not contacted
    brokers(addrs[:1], "dt-b", b.addr, {"dt_topic": 2}, cluster="DT1")        # known to one server only
    run = cli("deleteTopic", "-t", "dt_topic", "-c", "DT1", "-n", ns(addrs))
    assert run.code == 0, run.err
    out = run.out
    assert out.startswith("GET_BROKER_CLUSTER_INFO (106):\n")
    assert row(out, "all", "dt-a", a.addr) and row(out, "B", "dt-b", b.addr)
    assert "\nDELETE_TOPIC_IN_BROKER (215):\n" in out and "\nDELETE_TOPIC_IN_NAMESRV (216):\n" in out
    assert row(out, "Broker", "Address", "Result", "Latency")
    assert row(out, "dt-a", a.addr, "OK", out.split(a.addr + "   OK")[1].split()[0], "ms")
    assert "2/2 brokers OK" in out and "3/3 name servers OK" in out
    assert a.deleted_topics() == ["dt_topic"] and b.deleted_topics() == ["dt_topic"]
    # the lookup step disagreed (dt-b is known to one server): a warning, not a failure
    assert run.err_lines == ["mqadmin: warning: name servers disagree on GET_BROKER_CLUSTER_INFO (106): "
                             "2 different answers from 3 name servers; using every answer"]
    gone = cli("topicRoute", "-t", "dt_topic", "-n", ns(addrs))
    assert gone.code == 1 and gone.out == "" and gone.err.endswith("(all 3 name servers)\n")
    assert cli("topicRoute", "-t", "dt_keep", "-n", ns(addrs)).code == 0


def test_delete_topic_json_and_failures(
    cli: Cli, addrs: list[str], brokers: Brokers, fake_broker: Callable[..., FakeBroker]
) -> None:
    good, bad = fake_broker(), fake_broker(delete_code=ResponseCode.SYSTEM_ERROR)
    brokers(addrs, "df-a", good.addr, {"df_topic": 4}, cluster="DF1")
    brokers(addrs, "df-b", bad.addr, {"df_topic": 4}, cluster="DF1")
    run = cli("deleteTopic", "-t", "df_topic", "-c", "DF1", "-n", ns(addrs), "-o", "json")
    assert run.code == 3
    doc = run.json()
    assert doc["status"] == "partial" and doc["args"] == {"topic": "df_topic", "cluster": "DF1"}
    lookup, on_brokers, on_namesrvs = doc["steps"]
    assert (lookup["kind"], lookup["agreement"]["agree"]) == ("lookup", True)
    assert lookup["servers"][0]["answer"] == {"masters": {"df-a": good.addr, "df-b": bad.addr}}
    assert [(s["broker_name"], s["addr"], s["ok"]) for s in on_brokers["servers"]] == sorted(
        [("df-a", good.addr, True), ("df-b", bad.addr, False)], key=lambda t: t[1])
    failed = next(s for s in on_brokers["servers"] if not s["ok"])
    assert failed["error"]["type"] == "response" and failed["error"]["name"] == "SYSTEM_ERROR"
    assert on_brokers["target"] == "broker" and on_brokers["request"] == "DELETE_TOPIC_IN_BROKER"
    # a broker failed: the routes are kept, every name server is reported as not sent
    assert on_namesrvs["skipped"].startswith("1 of 2 brokers failed")
    assert [(s["addr"], s["answered"], s["error"]["type"]) for s in on_namesrvs["servers"]] == [
        (a, False, "skipped") for a in addrs]
    assert cli("topicRoute", "-t", "df_topic", "-n", ns(addrs)).code == 0
    assert run.err_lines == [
        f"mqadmin: error: {bad.addr}: DELETE_TOPIC_IN_BROKER (215) for topic 'df_topic': SYSTEM_ERROR (1): "
        "delete failed on purpose",
        "mqadmin: error: DELETE_TOPIC_IN_NAMESRV (216) not sent: 1 of 2 brokers failed; "
        "the routes are kept so the topic stays visible",
    ]
    table = cli("deleteTopic", "-t", "df_topic", "-c", "DF1", "-n", ns(addrs))
    assert "FAILED (SYSTEM_ERROR)" in table.out.split(bad.addr)[-1].splitlines()[0]
    assert row(table.out, addrs[0], "NOT SENT", "-")


def test_delete_topic_with_a_name_server_down_and_unknown_cluster(
    cli: Cli, addrs: list[str], brokers: Brokers, fake_broker: Callable[..., FakeBroker]
) -> None:
    broker = fake_broker()
    brokers(addrs, "dd-a", broker.addr, {"dd_topic": 4}, cluster="DD1")
    dead = unused_addr()
    run = cli("deleteTopic", "-t", "dd_topic", "-c", "DD1", "-n", ns([*addrs, dead]))
    assert run.code == 3
    assert broker.deleted_topics() == ["dd_topic"]
    assert "1/1 brokers OK" in run.out and "3/4 name servers OK" in run.out
    assert "FAILED (refused)" in run.out.split(dead)[1].splitlines()[0]

    unknown = cli("deleteTopic", "-t", "dd_topic", "-c", "NOPE", "-n", ns(addrs))
    assert unknown.code == 1
    assert unknown.err_lines[-1] == ("mqadmin: error: deleteTopic 'dd_topic': no name server knows "
                                     "cluster 'NOPE'; nothing was deleted")
    assert broker.deleted_topics() == ["dd_topic"]
    # a case slip gets a "did you mean"; a topic no name server has is not OK either
    brokers(addrs, "dd-b", broker.addr, {"dd_again": 4}, cluster="DD1")
    slip = cli("deleteTopic", "-t", "dd_again", "-c", "dd1", "-n", ns(addrs))
    assert slip.code == 1 and slip.err_lines[-1] == (
        "mqadmin: error: deleteTopic 'dd_again': no name server knows cluster 'dd1' (did you mean 'DD1'?); "
        "nothing was deleted")
    gone = cli("deleteTopic", "-t", "dd_never", "-c", "DD1", "-n", ns(addrs), "-o", "json")
    assert gone.code == 1 and gone.json()["error"] == ("deleteTopic 'dd_never': no name server has a route for "
                                                       "topic 'dd_never'; nothing was deleted")
    assert broker.deleted_topics() == ["dd_topic"]  # nothing sent for either
    nobody = cli("deleteTopic", "-t", "dd_again", "-c", "DD1", "-n", unused_addr())
    assert nobody.code == 1 and nobody.err_lines[-1] == (
        "mqadmin: error: deleteTopic 'dd_again': no name server answered; nothing was deleted")
