"""``diff-namesrv``: what every name server holds, side by side, and what the differences do to clients."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from ..core import Common, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt
from ..render.metrics import DEFAULT_TOP
from ..diff_run import DEFAULT_IGNORED_CONFIG, DiffOptions, run


class Strategy(str, Enum):
    averagely = "averagely"
    circle = "circle"


def diff_namesrv(
    topic: Annotated[Optional[list[str]], typer.Option(
        "-t", "--topic", metavar="TOPIC", show_default=False,
        help="Compare only this topic (repeatable). Default: every topic any name server lists.")] = None,
    cluster: Annotated[Optional[str], typer.Option(
        "-c", "--clusterName", show_default=False,
        help="Only this cluster: its brokers and its topics (GET_TOPICS_BY_CLUSTER).")] = None,
    kv: Annotated[Optional[list[str]], typer.Option(
        "--kv", metavar="NAMESPACE", show_default=False,
        help="KV namespace to compare (repeatable). Default: ORDER_TOPIC_CONFIG.")] = None,
    config: Annotated[bool, typer.Option(
        "--config", help="Compare the servers' configuration too (getNamesrvConfig).")] = False,
    ignore_config: Annotated[Optional[list[str]], typer.Option(
        "--ignore-config", metavar="KEY", show_default=False,
        help=f"With --config, a key expected to differ (repeatable; always: {', '.join(DEFAULT_IGNORED_CONFIG)}).",
    )] = None,
    consumers: Annotated[int, typer.Option(
        "--consumers", min=1, help="Consumers of a group spread over the views, for the impact.")] = 2,
    strategy: Annotated[Strategy, typer.Option(
        "--strategy", help="Consumers' queue allocation strategy.")] = Strategy.averagely,
    watch: Annotated[Optional[float], typer.Option(
        "--watch", metavar="SECONDS", show_default=False,
        help="Repeat every SECONDS and print only what changed, until Ctrl-C or --count rounds.")] = None,
    count: Annotated[Optional[int], typer.Option(
        "--count", metavar="K", show_default=False, help="With --watch: stop after K rounds.")] = None,
    concurrency: Annotated[int, typer.Option(
        "--concurrency", min=1, help="Route requests in flight per name server.")] = 64,
    metrics_port: Annotated[Optional[int], typer.Option(
        "--metrics-port", metavar="PORT", show_default=False,
        help="With --watch: serve Prometheus metrics on http://HOST:PORT/metrics (0 picks a port; it is logged).")] = None,
    metrics_host: Annotated[str, typer.Option(
        "--metrics-host", metavar="HOST", help="Address the metrics endpoint listens on.")] = "0.0.0.0",
    metrics_top: Annotated[int, typer.Option(
        "--metrics-top", metavar="N", help="Topics exported one by one (the worst by queue impact); totals cover all.",
    )] = DEFAULT_TOP,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Compare every name server's routes, cluster info, topic list and KV.

    One line per server (latency, brokers, topics, content hash: equal exactly
    when the route content is equal), then each difference by topic and broker,
    then for each topic that differs: the queues no consumer would own, those
    two would own, and each broker's share of writes per view. Exit 0 when all
    agree, 4 on any difference, 3 when only some servers or requests failed, 1
    when no server answered or a -t topic / -c cluster is known to none of them.

    With --watch and --metrics-port it is a monitor: Prometheus metrics of the last
    round (per server up, answered and content-hash age; differences by kind; the
    worst topics' unassigned and doubly-assigned queues with totals; the oldest
    unresolved difference's age). Alert rules: deploy/prometheus/diff-namesrv-rules.yml.
    """
    options = DiffOptions(
        topics=None if not topic else tuple(t.strip() for t in topic),
        cluster=cluster.strip() if cluster else None,
        kv=tuple(kv) if kv else ("ORDER_TOPIC_CONFIG",),
        config=config,
        ignore_config=DEFAULT_IGNORED_CONFIG + tuple(ignore_config or ()),
        consumers=consumers, strategy=strategy.value, concurrency=concurrency, watch=watch, count=count,
        metrics_port=metrics_port, metrics_host=metrics_host.strip(), metrics_top=metrics_top,
    )
    run(Common(namesrv, output, timeout, profile, traceback), options)
