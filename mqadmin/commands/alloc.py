"""``allocateMQ``: which queues each consumer would take under each name server's route.

The allocation is the consumers' own (spec P8.4), computed by ``mqadmin.diff``'s
allocators over its consumer queue list, so this command, ``diff-namesrv`` and the
pipeline agree on what a consumer takes.
"""

from __future__ import annotations

from typing import Annotated, Any, Sequence

import typer

from mqnamesrv.protocol.bodies import TopicRouteData
from mqnamesrv.protocol.codes import RequestCode as R

from ..render import answers
from ..core import Common, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt, read_command, required
from ..diff import STRATEGIES, consumer_queues
from .diff import Strategy


def allocate_mq(
    topic: Annotated[str, typer.Option("-t", "--topic", help="Topic name.", show_default=False)],
    ip_list: Annotated[str, typer.Option(
        "-i", "--ipList", show_default=False,
        help="Consumer client ids of one group, comma-separated (as the broker lists them, e.g. 10.0.0.5@12345).")],
    strategy: Annotated[Strategy, typer.Option(
        "--strategy", help="Allocation strategy (AllocateMessageQueueAveragely / ...AveragelyByCircle).")
    ] = Strategy.averagely,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Queues each consumer of a group would take, per name server's route of the topic.

    Read queues of the route, sorted by broker and queue id, shared out over the client
    ids sorted as strings, as the consumers' rebalance does it. Java's allocateMQ keeps
    the -i order and the route's hash-set order instead, so its answer can differ from
    what the consumers really take. Servers with different routes give different
    allocations: shown per server, exit 4. JSON: {"result": {"<id>": [{"brokerName",
    "queueId", "topic"}]}} per server.
    """
    topic, ids = required(topic, "-t"), client_ids(ip_list)
    read_command(
        Common(namesrv, output, timeout, profile, traceback), "allocateMQ",
        {"topic": topic, "client_ids": ids, "strategy": strategy.value},
        R.GET_ROUTEINFO_BY_TOPIC, lambda c: c.get_route(topic), answers.ALLOCATION,
        to_data=lambda route: allocation(topic, route, ids, strategy.value), detail=f"for topic {topic!r}",
    )


def client_ids(text: str) -> list[str]:
    """The ``-i`` list, trimmed. A trailing comma is dropped, as Java's split drops it;
    an empty or repeated id is a usage error (a group's ids are distinct)."""
    ids = [part.strip() for part in text.split(",")]
    while ids and not ids[-1]:
        ids.pop()
    if not ids:
        raise typer.BadParameter("no client id given", param_hint="'-i'")
    if "" in ids:
        raise typer.BadParameter(f"empty client id in {text!r}", param_hint="'-i'")
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise typer.BadParameter(f"client id {repeated[0]!r} given twice", param_hint="'-i'")
    return ids


def allocation(topic: str, route: TopicRouteData, ids: Sequence[str], strategy: str) -> dict[str, Any]:
    """``{"result": {id: [MessageQueue, ...]}}`` with ids in the consumers' (sorted) order."""
    queues, allocate, ordered = consumer_queues(route), STRATEGIES[strategy], sorted(ids)
    return {"result": {
        cid: [{"brokerName": broker, "queueId": qid, "topic": topic} for broker, qid in allocate(queues, i, len(ordered))]
        for i, cid in enumerate(ordered)
    }}
