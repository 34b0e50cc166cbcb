"""``clusterList``: brokers per cluster, with runtime figures asked from the brokers."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from mqnamesrv.protocol.codes import RequestCode as R

from ..core import Common, Context, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt, run, seconds_option
from ..errors import NotFound
from ..render import answers
from ..result import PROBE, READ, Result, Step
from ..transport.client import BrokerConnection, NamesrvConnection

#: seconds; brokers are asked for runtime figures only as a courtesy, a dead one must not stall the table
BROKER_PROBE_TIMEOUT = 1.0


def cluster_list(
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="Only this cluster.",
                                                   show_default=False)] = None,
    more_stats: Annotated[bool, typer.Option(
        "-m", "--moreStats", help="Messages in and out yesterday and today instead of the runtime table.")] = False,
    interval: Annotated[Optional[float], typer.Option(
        "-i", "--interval", callback=seconds_option, show_default=False,
        help="Repeat every SECONDS until interrupted.")] = None,
    count: Annotated[Optional[int], typer.Option(
        "--count", min=1, show_default=False, help="With -i: stop after this many rounds.")] = None,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Brokers of every cluster as each name server sees them (Java's columns).

    Runtime columns come from each broker (GET_BROKER_RUNTIME_INFO, 1 s at most) and show
    '-' for brokers that do not answer; that is not an error. With -m, message totals
    from the same answers (0 when a broker does not answer, as in Java).
    """
    cluster = cluster.strip() if cluster else None

    async def fetch(conn: NamesrvConnection) -> dict[str, Any]:
        info = await conn.get_cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise NotFound(conn.addr, R.GET_BROKER_CLUSTER_INFO, f"no cluster {cluster!r}")
        return answers.cluster_data(info, cluster)

    async def build(ctx: Context) -> Result:
        read = Step.from_answers(R.GET_BROKER_CLUSTER_INFO, READ, await ctx.ask(fetch, R.GET_BROKER_CLUSTER_INFO),
                                 table=answers.CLUSTER_TOTALS if more_stats else answers.CLUSTER)
        brokers = sorted({a for o in read.outcomes if o.ok for a in answers.cluster_addrs(o.data)})
        runtime = await ctx.ask(lambda c: c.get_runtime_info(), R.GET_BROKER_RUNTIME_INFO, addrs=brokers,
                                connection=BrokerConnection, timeout=min(ctx.timeout, BROKER_PROBE_TIMEOUT))
        probe = Step.from_answers(R.GET_BROKER_RUNTIME_INFO, PROBE, runtime, target="broker")
        return Result("clusterList", {"cluster": cluster, "moreStats": more_stats}, [read, probe])

    run(Common(namesrv, output, timeout, profile, traceback), build, interval=interval, count=count)
