"""Per-command data and table specs: answer objects -> canonical JSON data -> table rows.

``*_data`` functions turn a decoded answer into plain data in standard JSON with
RocketMQ's own field names (``brokerDatas``, ``queueDatas``, ``topicList``, ...) and
every list sorted, so two servers holding the same state give equal data. The table
specs (output.ReadTable, WriteTable) say how render/output.py lays that data out as a table.
"""

from __future__ import annotations

import time
from typing import Any, Iterator, Mapping, Sequence

from mqnamesrv.protocol.bodies import ClusterInfo, TopicRouteData
from mqnamesrv.protocol.codes import MASTER_ID, PERM_READ, PERM_WRITE, RequestCode

from ..diff import Queue
from ..result import Result
from .output import ReadTable, Row, WriteTable

# ----------------------------------------------------------------- helpers ----


def perm2(perm: int) -> str:
    """Read/write bits as ``RW``, ``R-``, ``-W`` or ``--`` (the bits operators change)."""
    return ("R" if perm & PERM_READ else "-") + ("W" if perm & PERM_WRITE else "-")


def addrs_by_id(addrs: Mapping[str, str]) -> str:
    return ", ".join(f"{bid}={addr}" for bid, addr in sorted(addrs.items(), key=lambda kv: int(kv[0])))


# ------------------------------------------------------------------- route ----


def route_data(route: TopicRouteData) -> dict[str, Any]:
    obj = route.to_obj()
    obj["brokerDatas"] = sorted(obj["brokerDatas"], key=lambda b: b["brokerName"])
    obj["queueDatas"] = sorted(obj["queueDatas"], key=lambda q: q["brokerName"])
    obj["filterServerTable"] = {k: sorted(v) for k, v in sorted(obj["filterServerTable"].items())}
    return obj


def _route_rows(data: Any, result: Result) -> list[Row]:
    brokers = {b["brokerName"]: b for b in data["brokerDatas"]}
    queues = {q["brokerName"]: q for q in data["queueDatas"]}
    rows: list[Row] = []
    for name in sorted(set(brokers) | set(queues)):
        b, q = brokers.get(name), queues.get(name)
        rows.append((name, (
            name,
            b["cluster"] if b else "-",
            addrs_by_id(b["brokerAddrs"]) if b else "-",
            str(q["readQueueNums"]) if q else "-",
            str(q["writeQueueNums"]) if q else "-",
            perm2(q["perm"]) if q else "-",
        )))
    return rows


def _route_notes(data: Any) -> list[str]:
    notes = []
    if data.get("orderTopicConf") is not None:
        notes.append(f"orderTopicConf: {data['orderTopicConf']}")
    for addr, servers in data["filterServerTable"].items():
        notes.append(f"filter servers of {addr}: {', '.join(servers)}")
    return notes


ROUTE = ReadTable(("Broker", "Cluster", "Addresses (id=addr)", "Read", "Write", "Perm"), _route_rows, notes=_route_notes)

#: Java's ``topicRoute -l`` line (TopicRouteSubCommand.FORMAT); ``%-5s`` leaves trailing blanks
JAVA_ROUTE_FORMAT = "%-45s %-32s %-50s %-10s %-11s %-5s\n"


def java_addr_map(addrs: Mapping[str, str]) -> str:
    """``{0=10.0.0.1:10911, 1=10.0.0.2:10911}``: Java's ``HashMap<Long, String>.toString()``.
    Ids below the table size (16) iterate in ascending order, as every real group's do."""
    return "{" + addrs_by_id(addrs) + "}"


def java_route_list(data: Any, result: Result | None = None) -> str:
    """Java's ``topicRoute -l`` text for route data: header, one line per BrokerData by
    broker name, 158 dashes, the ``Total:`` line (brokers with queue data, queue sums).

    Java dereferences a missing QueueData and dies; a broker without one shows 0, 0 and
    an empty perm here and adds nothing to the totals.
    """
    queues = {q["brokerName"]: q for q in data["queueDatas"]}
    lines = [JAVA_ROUTE_FORMAT % ("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")]
    read = write = 0
    for broker in sorted(data["brokerDatas"], key=lambda b: b["brokerName"]):
        q = queues.get(broker["brokerName"])
        r, w, perm = (q["readQueueNums"], q["writeQueueNums"], q["perm"]) if q else (0, 0, "")
        read, write = read + r, write + w
        lines.append(JAVA_ROUTE_FORMAT % (broker["cluster"], broker["brokerName"], java_addr_map(broker["brokerAddrs"]),
                                          r, w, perm))
    lines.append("-" * 158 + "\n")
    lines.append(JAVA_ROUTE_FORMAT % ("Total:", len(queues), "", read, write, ""))
    return "".join(lines)


#: ``topicRoute -l``: Java's text instead of the table (the notes go under each answer
#: when the servers disagree); rows and columns stay ROUTE's
ROUTE_LIST = ReadTable(ROUTE.columns, _route_rows, notes=_route_notes, layout=java_route_list, always_layout=True)


def topic_clusters(route: TopicRouteData, info: ClusterInfo) -> dict[str, Any]:
    """``{"clusters": [...]}``: sorted names of the clusters holding any broker of the
    route's BrokerDatas (Java looks at the first BrokerData only). A broker that no
    cluster lists adds nothing."""
    names = {b.broker_name for b in route.broker_datas}
    return {"clusters": sorted(c for c, members in info.cluster_addr_table.items() if names.intersection(members))}


def lines(items: Sequence[str]) -> str:
    """Java's ``"%s%n"`` per item: topicList, topicClusterList."""
    return "".join(f"{item}\n" for item in items)


#: Java's topicClusterList: one cluster per line
TOPIC_CLUSTERS = ReadTable(
    ("Cluster",), lambda data, result: [(c, (c,)) for c in data["clusters"]],
    notes=lambda data: [] if data["clusters"] else ["no cluster of the cluster info holds a broker of this route"],
    layout=lambda data, result: lines(data["clusters"]),
)

# ----------------------------------------------------------------- cluster ----


def cluster_data(info: ClusterInfo, cluster: str | None = None) -> dict[str, Any]:
    """ClusterInfo as data, only ``cluster`` when given (the caller checked it exists)."""
    clusters = {c: sorted(names) for c, names in info.cluster_addr_table.items() if cluster in (None, c)}
    names = {n for ns in clusters.values() for n in ns}
    return {
        "brokerAddrTable": {
            n: info.broker_addr_table[n].to_obj() for n in sorted(info.broker_addr_table) if cluster is None or n in names
        },
        "clusterAddrTable": dict(sorted(clusters.items())),
    }


def cluster_addrs(data: Any) -> list[str]:
    """Every broker address (masters and slaves) listed in cluster data."""
    return [a for b in data["brokerAddrTable"].values() for a in b["brokerAddrs"].values()]


def cluster_masters(data: Any, cluster: str) -> dict[str, str]:
    """brokerName -> master address for the brokers of ``cluster`` (groups without id 0 skipped)."""
    bat = data["brokerAddrTable"]
    names = data["clusterAddrTable"].get(cluster, [])
    return {n: bat[n]["brokerAddrs"][str(MASTER_ID)] for n in sorted(names) if str(MASTER_ID) in bat.get(n, {}).get("brokerAddrs", {})}


def _first_number(text: str) -> float:
    return float(text.split()[0])


def runtime_cells(table: Mapping[str, str] | None, now_ms: float) -> list[str]:
    """Java 5.3.3 clusterList cells from GET_BROKER_RUNTIME_INFO; ``-`` when unknown."""
    t = table or {}

    def cell(fn: Any) -> str:
        try:
            return str(fn())
        except (KeyError, ValueError, IndexError, ZeroDivisionError):
            return "-"

    out_tps = t.get("getTransferredTps", t.get("getTransferedTps"))  # 4.x spelling
    return [
        cell(lambda: t["brokerVersionDesc"]),
        cell(lambda: "%.2f(%s,%sms)" % (_first_number(t["putTps"]), t["sendThreadPoolQueueSize"],
                                         t["sendThreadPoolQueueHeadWaitTimeMills"])),
        cell(lambda: "%.2f(%s,%sms|%s,%sms)" % (
            _first_number(out_tps or ""), t["pullThreadPoolQueueSize"], t["pullThreadPoolQueueHeadWaitTimeMills"],
            t.get("ackThreadPoolQueueSize", "N"), t.get("ackThreadPoolQueueHeadWaitTimeMills", "N"))),
        cell(lambda: "%d-%d(%.1fw, %.1f, %.1f)" % (
            int(t["timerReadBehind"]), int(t["timerOffsetBehind"]), float(t["timerCongestNum"]) / 10000,
            float(t["timerEnqueueTps"]), float(t["timerDequeueTps"]))),
        cell(lambda: t["pageCacheLockTimeMills"]),
        cell(lambda: "%.2f" % ((now_ms - float(t["earliestMessageTimeStamp"])) / 3_600_000)),
        cell(lambda: "%.4f" % float(t["commitLogDiskRatio"])),
        cell(lambda: t["brokerActive"]),
    ]


def _cluster_brokers(data: Any, result: Result) -> Iterator[tuple[str, str, str, str, Mapping[str, str] | None]]:
    """(cluster, broker name, id, address, its runtime table or None) in Java's order."""
    probe = result.step(RequestCode.GET_BROKER_RUNTIME_INFO)
    runtime = {o.addr: o.data for o in probe.outcomes if o.ok} if probe else {}
    for cluster, names in data["clusterAddrTable"].items():
        for name in names:
            broker = data["brokerAddrTable"].get(name)
            for bid, addr in sorted((broker or {}).get("brokerAddrs", {}).items(), key=lambda kv: int(kv[0])):
                yield cluster, name, bid, addr, runtime.get(addr)


def _cluster_rows(data: Any, result: Result) -> list[Row]:
    now_ms = time.time() * 1000
    return [((cluster, name, int(bid)), [cluster, name, bid, addr, *runtime_cells(table, now_ms)])
            for cluster, name, bid, addr, table in _cluster_brokers(data, result)]


def message_totals(table: Mapping[str, str] | None) -> list[int]:
    """Java's ``clusterList -m`` figures: messages in and out yesterday and today, from
    the broker's morning and current counters; zeros when a figure is missing, as Java."""
    t = table or {}
    try:
        put = [int(t[f"msgPutTotal{when}"]) for when in ("YesterdayMorning", "TodayMorning", "TodayNow")]
        get = [int(t[f"msgGetTotal{when}"]) for when in ("YesterdayMorning", "TodayMorning", "TodayNow")]
    except (KeyError, ValueError):
        return [0, 0, 0, 0]
    return [put[1] - put[0], get[1] - get[0], put[2] - put[1], get[2] - get[1]]


def _cluster_total_rows(data: Any, result: Result) -> list[Row]:
    return [((cluster, name, int(bid)), [cluster, name, *map(str, message_totals(table))])
            for cluster, name, bid, _addr, table in _cluster_brokers(data, result)]


#: Java 5.3.3's clusterList lines (ClusterListSubCommand): the header and the rows align differently
JAVA_CLUSTER_HEADER = "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %-11s  %-12s  %-8s  %-10s\n"
JAVA_CLUSTER_ROW = "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %11s  %-12s  %-8s  %10s\n"
JAVA_TOTALS_HEADER = "%-16s  %-32s %14s %14s %14s %14s\n"
JAVA_TOTALS_ROW = "%-16s  %-32s %14d %14d %14d %14d\n"
CLUSTER_COLUMNS = ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
                   "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")
TOTALS_COLUMNS = ("#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday")


def _num(t: Mapping[str, str], key: str) -> float:
    try:
        return float(str(t.get(key, "0")).split()[0])
    except (ValueError, IndexError):
        return 0.0


def java_runtime_cells(table: Mapping[str, str] | None, now_ms: float) -> list[str]:
    """The runtime cells as Java formats them, a silent broker included: Java reads a
    missing key as an empty string (text) or 0 (numbers), so its row shows
    ``0.00(,ms)`` and ``false`` where our table shows ``-``."""
    t = table or {}
    out_tps = t.get("getTransferredTps", t.get("getTransferedTps", "0"))
    earliest = _num(t, "earliestMessageTimeStamp")
    return [
        t.get("brokerVersionDesc", ""),
        "%9.2f(%s,%sms)" % (_num(t, "putTps"), t.get("sendThreadPoolQueueSize", ""),
                            t.get("sendThreadPoolQueueHeadWaitTimeMills", "")),
        "%9.2f(%s,%sms|%s,%sms)" % (_num({"v": out_tps}, "v"), t.get("pullThreadPoolQueueSize", ""),
                                     t.get("pullThreadPoolQueueHeadWaitTimeMills", ""),
                                     t.get("ackThreadPoolQueueSize", "N" if t else ""),
                                     t.get("ackThreadPoolQueueHeadWaitTimeMills", "N" if t else "")),
        "%d-%d(%.1fw, %.1f, %.1f)" % (int(_num(t, "timerReadBehind")), int(_num(t, "timerOffsetBehind")),
                                      _num(t, "timerCongestNum") / 10000, _num(t, "timerEnqueueTps"),
                                      _num(t, "timerDequeueTps")),
        t.get("pageCacheLockTimeMills", ""),
        "%2.2f" % ((now_ms - earliest) / 3_600_000 if earliest else 0.0),
        "%.4f" % _num(t, "commitLogDiskRatio"),
        t.get("brokerActive", "false"),
    ]


def java_cluster_list(data: Any, result: Result) -> str:
    """Java 5.3.3's ``clusterList`` text: header, one line per broker address."""
    now_ms = time.time() * 1000
    out = [JAVA_CLUSTER_HEADER % CLUSTER_COLUMNS]
    for cluster, name, bid, addr, table in _cluster_brokers(data, result):
        out.append(JAVA_CLUSTER_ROW % (cluster, name, bid, addr, *java_runtime_cells(table, now_ms)))
    return "".join(out)


def java_cluster_totals(data: Any, result: Result) -> str:
    """Java's ``clusterList -m`` text."""
    out = [JAVA_TOTALS_HEADER % TOTALS_COLUMNS]
    for cluster, name, _bid, _addr, table in _cluster_brokers(data, result):
        out.append(JAVA_TOTALS_ROW % (cluster, name, *message_totals(table)))
    return "".join(out)


CLUSTER = ReadTable(CLUSTER_COLUMNS, _cluster_rows, layout=java_cluster_list)
#: ``clusterList -m``: one row per broker address, as Java prints it.
CLUSTER_TOTALS = ReadTable(TOTALS_COLUMNS, _cluster_total_rows, layout=java_cluster_totals)

MASTERS = ReadTable(("Broker", "Master"), lambda data, result: [(n, (n, a)) for n, a in data["masters"].items()])

# ------------------------------------------------------------------ topics ----

#: Java's topicList: one topic per line
TOPICS = ReadTable(("Topic",), lambda data, result: [(t, (t,)) for t in data["topicList"]],
                  layout=lambda data, result: lines(data["topicList"]))


def java_topics_by_cluster(data: Any, result: Result) -> str:
    """Java's ``topicList -c`` text: its header, then rows in a wider format with each
    value cut to 20/64/64 characters (so columns do not line up, as in Java); retry and
    DLQ topics skipped as Java skips them. No consumer groups are asked: the column is empty."""
    out = ["%-20s  %-48s  %-48s\n" % ("#Cluster Name", "#Topic", "#Consumer Group")]
    for cluster, topics in data["topicsByCluster"].items():
        for topic in topics:
            if not topic.startswith(("%RETRY%", "%DLQ%")):
                out.append("%-20s  %-64s  %-64s\n" % (cluster[:20], topic[:64], ""))
    return "".join(out)


TOPICS_BY_CLUSTER = ReadTable(
    ("Cluster", "Topic"),
    lambda data, result: [((c, t), (c, t)) for c, ts in data["topicsByCluster"].items() for t in ts],
    layout=java_topics_by_cluster,
)

# ---------------------------------------------------------------- allocateMQ ----


def queue_ranges(queues: Sequence[Queue]) -> str:
    """``broker-a:0-3, broker-b:0,2``: a consumer's queues per broker, runs of
    consecutive ids as ``first-last``; ``-`` for none."""
    ids: dict[str, list[int]] = {}
    for broker, qid in queues:
        ids.setdefault(broker, []).append(qid)
    return ", ".join(f"{broker}:{_runs(sorted(qids))}" for broker, qids in ids.items()) or "-"


def _runs(ids: Sequence[int]) -> str:
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _allocation_rows(data: Any, result: Result) -> list[Row]:
    rows: list[Row] = []
    for cid, queues in data["result"].items():
        pairs = [(q["brokerName"], q["queueId"]) for q in queues]
        rows.append((cid, (cid, queue_ranges(pairs), str(len(pairs)))))
    return rows


ALLOCATION = ReadTable(("Client id", "Queues (broker:ids)", "Count"), _allocation_rows)

# ---------------------------------------------------------- kv and config ----

#: Java's ``key=  value`` line of getNamesrvConfig (GetNamesrvConfigCommand), also our KV listing's
JAVA_PROPERTY = "%-50s=  %s\n"

#: getKvConfig -k: the value alone on its line (``$(mqadmin getKvConfig ...)`` reads it)
KV_VALUE = ReadTable(
    ("Namespace", "Key", "Value"),
    lambda data, result: [(result.args["key"], (result.args["namespace"], result.args["key"], data["value"]))],
    layout=lambda data, result: f"{data['value']}\n",
)
#: getKvConfig without -k: Java's property line per key
KV_TABLE = ReadTable(
    ("Namespace", "Key", "Value"),
    lambda data, result: [(k, (result.args["namespace"], k, v)) for k, v in data["table"].items()],
    layout=lambda data, result: "".join(JAVA_PROPERTY % kv for kv in data["table"].items()),
)
ORDER_CONF = ReadTable(
    ("Topic", "Order conf"), lambda data, result: [(result.args["topic"], (result.args["topic"], data["value"]))]
)
#: config keys that differ per server by design (diff-namesrv --config ignores them too)
PER_HOST_CONFIG = ("bindAddress", "configStorePath", "kvConfigPath", "listenPort", "rocketmqHome")


def shared_config(data: Mapping[str, str]) -> dict[str, str]:
    """The config items that servers of one cluster should share (compared for agreement)."""
    return {k: v for k, v in data.items() if k not in PER_HOST_CONFIG}


def java_namesrv_config(data: Any, result: Result) -> str:
    """Java's getNamesrvConfig text: per server (each its own values, per-host paths
    and the listening port included) a ``====addr====`` line and its properties."""
    read = next(s for s in result.steps if s.request == RequestCode.GET_NAMESRV_CONFIG)
    out = []
    for o in read.outcomes:
        if o.ok:
            out.append(f"============{o.addr}============\n")
            out.extend(JAVA_PROPERTY % kv for kv in o.data.items())
    return "".join(out)


CONFIG = ReadTable(("Key", "Value"), lambda data, result: [(k, (k, v)) for k, v in data.items()],
                  layout=java_namesrv_config, per_server=True)


def sorted_map(table: Mapping[str, str]) -> dict[str, str]:
    return dict(sorted(table.items()))


# ------------------------------------------------------------------ writes ----

WIPE = WriteTable(("Topics",), lambda data: (str(data["wipeTopicCount"]),))
ADD = WriteTable(("Topics",), lambda data: (str(data["addTopicCount"]),))
PLAIN = WriteTable()
