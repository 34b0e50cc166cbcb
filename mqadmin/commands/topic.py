"""``topicRoute``, ``topicClusterList``, ``topicList`` and ``deleteTopic``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer

from mqnamesrv.protocol.bodies import ClusterInfo, TopicRouteData
from mqnamesrv.protocol.codes import RequestCode as R

from ..core import (Common, Context, Interrupted, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt,
                    did_you_mean, read_command, required, run)
from ..errors import NotFound, Pending
from ..render import answers
from ..result import LOOKUP, WRITE, Result, Step
from ..transport.client import BrokerConnection, NamesrvConnection
from ..transport.fanout import Answer

TopicOpt = Annotated[str, typer.Option("-t", "--topic", help="Topic name.", show_default=False)]


def topic_route(
    topic: TopicOpt,
    java_list: Annotated[bool, typer.Option(
        "-l", "--list", help="Java's -l text layout instead of our table (no effect on -o json|yaml).")] = False,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Route of a topic (brokers, addresses, queues, perm) as every name server sees it.

    -l prints Java's `topicRoute -l` layout byte for byte (one line per broker, 158
    dashes, a Total: line) when every server gives the same answer; otherwise the same
    layout once per distinct answer, under a line naming the servers that gave it (exit
    codes as without -l). Where Java stops with a stack trace on a broker without queue
    data, that broker shows 0 0 and an empty perm. With -o json or yaml, -l changes
    nothing: the document is the same as without it.
    """
    topic = required(topic, "-t")
    read_command(
        Common(namesrv, output, timeout, profile, traceback), "topicRoute", {"topic": topic},
        R.GET_ROUTEINFO_BY_TOPIC, lambda c: c.get_route(topic), answers.ROUTE_LIST if java_list else answers.ROUTE,
        to_data=answers.route_data, detail=f"for topic {topic!r}",
    )


def topic_cluster_list(
    topic: TopicOpt,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Clusters a topic lives in, as every name server sees it.

    Per server, GET_BROKER_CLUSTER_INFO and GET_ROUTEINFO_BY_TOPIC: every cluster that
    holds any broker of the topic's route. Java looks only at the route's first broker,
    so a topic spread over two clusters shows one there and both here. A broker of the
    route that no cluster lists is left out (a note says so when that leaves none).
    """
    topic = required(topic, "-t")

    async def fetch(conn: NamesrvConnection) -> dict[str, Any]:
        route, info = await asyncio.gather(conn.get_route(topic), conn.get_cluster_info(), return_exceptions=True)
        # The route's TOPIC_NOT_EXIST first: it is this server's answer, whatever 106 did.
        for answer in (route, info):
            if isinstance(answer, BaseException):
                raise answer
        assert isinstance(route, TopicRouteData) and isinstance(info, ClusterInfo)
        return answers.topic_clusters(route, info)

    read_command(
        Common(namesrv, output, timeout, profile, traceback), "topicClusterList", {"topic": topic},
        R.GET_ROUTEINFO_BY_TOPIC, fetch, answers.TOPIC_CLUSTERS, detail=f"for topic {topic!r}",
    )


def topic_list(
    cluster_model: Annotated[bool, typer.Option(
        "-c", "--clusterModel", help="Topics per cluster (GET_TOPICS_BY_CLUSTER); no consumer groups.")] = False,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Every topic each name server has a route for (system topics included)."""

    async def by_cluster(conn: NamesrvConnection) -> dict[str, Any]:
        names = sorted((await conn.get_cluster_info()).cluster_addr_table)
        lists = await asyncio.gather(*(conn.get_topics_by_cluster(c) for c in names))  # pipelined
        return {"topicsByCluster": {c: sorted(ts) for c, ts in zip(names, lists)}}

    async def all_topics(conn: NamesrvConnection) -> dict[str, Any]:
        return {"topicList": sorted(await conn.get_all_topics())}

    read_command(
        Common(namesrv, output, timeout, profile, traceback), "topicList", {"cluster_model": cluster_model},
        R.GET_TOPICS_BY_CLUSTER if cluster_model else R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        by_cluster if cluster_model else all_topics, answers.TOPICS_BY_CLUSTER if cluster_model else answers.TOPICS,
    )


def delete_topic(
    topic: TopicOpt,
    cluster: Annotated[str, typer.Option("-c", "--clusterName", help="Cluster whose brokers drop the topic.",
                                         show_default=False)],
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Delete a topic from a cluster's brokers, then from every name server.

    DELETE_TOPIC_IN_BROKER goes to every master of the cluster that any name server
    knows; only when all of them succeeded does DELETE_TOPIC_IN_NAMESRV go to every
    name server (otherwise the routes stay, so the topic remains visible). Every step
    is reported per target. A topic no name server has a route for, or a cluster none
    knows, is an error (exit 1) and nothing is sent. Ctrl-C during the deletes prints
    what each target had answered by then (done, failed, no answer yet) and exits 130.
    """
    topic, cluster = required(topic, "-t"), required(cluster, "-c")
    args = {"topic": topic, "cluster": cluster}

    async def masters(conn: NamesrvConnection) -> dict[str, Any]:
        info = await conn.get_cluster_info()
        if cluster not in info.cluster_addr_table:
            raise NotFound(conn.addr, R.GET_BROKER_CLUSTER_INFO, f"no cluster {cluster!r}")
        return {"masters": answers.cluster_masters(answers.cluster_data(info, cluster), cluster)}

    async def build(ctx: Context) -> Result:
        found, routes = await asyncio.gather(ctx.ask(masters, R.GET_BROKER_CLUSTER_INFO),
                                             ctx.ask(lambda c: c.get_route(topic), R.GET_ROUTEINFO_BY_TOPIC,
                                                     detail=f"for topic {topic!r}"))
        lookup = Step.from_answers(R.GET_BROKER_CLUSTER_INFO, LOOKUP, found, table=answers.MASTERS)
        targets = {a: n for o in lookup.outcomes if o.ok for n, a in o.data["masters"].items()}
        error = await _nothing_to_delete(ctx, topic, cluster, lookup, routes)
        if error is not None or not targets:
            why = error or ("no name server answered" if not lookup.groups
                            else f"no name server knows a master of cluster {cluster!r}")
            return Result("deleteTopic", args, [lookup], error=f"deleteTopic {topic!r}: {why}; nothing was deleted")
        done: list[Step] = [lookup]
        brokers = await _interruptible(ctx, done, args, R.DELETE_TOPIC_IN_BROKER, sorted(targets), targets,
                                       lambda c: c.delete_topic_in_broker(topic), detail=f"for topic {topic!r}")
        if brokers.failed:
            reason = f"{len(brokers.failed)} of {len(targets)} brokers failed; the routes are kept so the topic stays visible"
            done.append(Step.not_sent(R.DELETE_TOPIC_IN_NAMESRV, WRITE, ctx.addrs, reason))
        else:
            await _interruptible(ctx, done, args, R.DELETE_TOPIC_IN_NAMESRV, list(ctx.addrs), None,
                                 lambda c: c.delete_topic_in_namesrv(topic, cluster))
        return Result("deleteTopic", args, done)

    run(Common(namesrv, output, timeout, profile, traceback), build)


async def _nothing_to_delete(ctx: Context, topic: str, cluster: str, lookup: Step,
                             routes: dict[str, Answer[Any]]) -> str | None:
    """Why deleteTopic must send nothing: every name server that answered has no route
    for the topic, or none knows the cluster (with a "did you mean" from their clusters)."""
    if lookup.groups and all(g.absent for g in lookup.groups):
        infos = await ctx.ask(lambda c: c.get_cluster_info(), R.GET_BROKER_CLUSTER_INFO)
        known = {c for a in infos.values() if a.ok and a.value is not None for c in a.value.cluster_addr_table}
        return f"no name server knows cluster {cluster!r}{did_you_mean(cluster, known)}"
    answered = [a for a in routes.values() if a.answered]
    if answered and all(a.error is not None and a.error.absent for a in answered):
        return f"no name server has a route for topic {topic!r}"
    return None


async def _interruptible(ctx: Context, done: list[Step], args: dict[str, Any], request: int, addrs: list[str],
                         broker_names: dict[str, str] | None, send: Any, detail: str = "") -> Step:
    """One write step of deleteTopic, appended to ``done``. Ctrl-C under way ends the
    command with ``done`` plus this step as far as it got (targets still silent:
    NO ANSWER YET) and, after the brokers' step, the name servers' step as not sent."""
    progress: dict[str, Answer[Any]] = {}
    broker = broker_names is not None
    try:
        answers = await ctx.ask(send, request, addrs=addrs, detail=detail, progress=progress,
                                connection=BrokerConnection if broker else NamesrvConnection)
    except asyncio.CancelledError:
        answers = {a: progress.get(a) or Answer(a, error=Pending(a, request, detail)) for a in addrs}
        done.append(Step.from_answers(request, WRITE, answers, target="broker" if broker else "namesrv",
                                      broker_names=broker_names))
        if broker:
            done.append(Step.not_sent(R.DELETE_TOPIC_IN_NAMESRV, WRITE, ctx.addrs, "interrupted"))
        raise Interrupted(Result("deleteTopic", args, done)) from None
    step = Step.from_answers(request, WRITE, answers, target="broker" if broker else "namesrv",
                             broker_names=broker_names)
    done.append(step)
    return step
