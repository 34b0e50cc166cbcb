"""Running ``diff-namesrv``: collect, compare, render, repeat with ``--watch``.

Each round is ``collect_views`` (one asyncio run, progress bar on a terminal's stderr),
``diff_views`` and the Tracker of diff/watch.py; the output is a table, one JSON or
YAML document, or with ``--watch`` one JSON line (or YAML document) per round. The
exit status is the last round's; errors go through ``core.guard`` like every command.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any, Iterator, NoReturn, Sequence, TextIO

import orjson
import typer

from mqnamesrv.protocol.bodies import ClusterInfo

from .core import Common, Environment, ErrorDocument, guard, is_seconds, repeat_rounds
from .diff import STRATEGIES, ServerView, UnknownName, diff_views, unknown_names, with_suggestions
from .diff.watch import Round, Tracker
from .errors import MqadminError
from .profiles import resolve
from .render.answers import PER_HOST_CONFIG
from .render.diff import diagnostics, render_report, render_round
from .render.metrics import DEFAULT_TOP, WatchMetrics, serve
from .render.output import dump_yaml
from .transport.client import DEFAULT_TIMEOUT, NamesrvConnection
from .transport.collect import Progress, collect_views
from .transport.fanout import ask_all

#: config items that differ per server by design, left out of --config comparisons
DEFAULT_IGNORED_CONFIG = PER_HOST_CONFIG


@dataclass(frozen=True)
class DiffOptions:
    topics: tuple[str, ...] | None = None
    cluster: str | None = None
    kv: tuple[str, ...] = ("ORDER_TOPIC_CONFIG",)
    config: bool = False
    ignore_config: tuple[str, ...] = DEFAULT_IGNORED_CONFIG
    consumers: int = 2
    strategy: str = "averagely"
    concurrency: int = 64
    watch: float | None = None
    count: int | None = None
    #: --metrics-port: serve Prometheus metrics while watching (0 picks a port)
    metrics_port: int | None = None
    metrics_host: str = "0.0.0.0"
    metrics_top: int = DEFAULT_TOP

    def check(self) -> None:
        """Usage errors (exit 2) before anything is sent."""
        if self.consumers < 1:
            raise typer.BadParameter("must be at least 1", param_hint="'--consumers'")
        if self.strategy not in STRATEGIES:
            raise typer.BadParameter(f"one of {', '.join(STRATEGIES)}", param_hint="'--strategy'")
        if self.concurrency < 1:
            raise typer.BadParameter("must be at least 1", param_hint="'--concurrency'")
        if self.watch is not None and not is_seconds(self.watch):
            raise typer.BadParameter("must be a positive number of seconds", param_hint="'--watch'")
        if self.count is not None and (self.count < 1 or self.watch is None):
            raise typer.BadParameter("needs --watch and must be at least 1", param_hint="'--count'")
        if self.metrics_port is not None and (self.watch is None or not 0 <= self.metrics_port <= 65535):
            raise typer.BadParameter("needs --watch and a TCP port (0-65535; 0 picks one)",
                                     param_hint="'--metrics-port'")
        if self.metrics_top < 1:
            raise typer.BadParameter("must be at least 1", param_hint="'--metrics-top'")

    def args(self) -> dict[str, Any]:
        return {
            "topics": None if self.topics is None else list(self.topics), "cluster": self.cluster,
            "kv": list(self.kv), "config": self.config,
            "ignore_config": list(self.ignore_config) if self.config else [],
            "consumers": self.consumers, "strategy": self.strategy,
            "watch": self.watch, "count": self.count,
        }


def run(common: Common, options: DiffOptions) -> NoReturn:
    """Rounds until done; exits with the last round's status (130 on Ctrl-C)."""

    document = ErrorDocument(common.output)

    def body() -> int:
        options.check()
        target = resolve(common.namesrv, common.profile)
        output = common.output.value if common.output is not None else (target.output or "table")
        document.output = output
        timeout = common.timeout or target.timeout or DEFAULT_TIMEOUT
        tracker = Tracker()
        printed: set[str] = set()
        with _monitor(options, Environment.current().stderr) as metrics:
            return rounds(target.addrs, output, timeout, tracker, printed, metrics)

    def rounds(addrs: Sequence[str], output: str, timeout: float, tracker: Tracker, printed: set[str],
               metrics: WatchMetrics | None) -> int:
        def one_round() -> int:
            nonlocal printed
            env = Environment.current()
            started_wall, started = time.time(), time.monotonic()
            with _progress_bar(env.stderr, enabled=output == "table", servers=len(addrs)) as progress:
                views = asyncio.run(_collect(addrs, options, timeout, progress))
            report = diff_views(views, consumers=options.consumers, strategy=options.strategy,
                                ignore_config=options.ignore_config if options.config else ())
            unknown = _unknown(views, options, timeout)
            rnd = tracker.add(views, report, started_wall=started_wall, started=started,
                              elapsed=time.monotonic() - started, unknown=unknown)
            if metrics is not None:
                metrics.update(rnd)
            _emit(rnd, options, output, env.stdout)
            document.written = True
            lines = diagnostics(rnd)
            # A watch repeats an error line only when it is new or back after a pause.
            for line in lines if options.watch is None else [x for x in lines if x not in printed]:
                env.stderr.write(line + "\n")
            env.stderr.flush()
            printed = set(lines)
            return int(rnd.status)

        return repeat_rounds(one_round, every=options.watch, count=options.count, paced_from_start=True)

    raise typer.Exit(code=guard(body, traceback=common.traceback, on_error=document))


@contextlib.contextmanager
def _monitor(options: DiffOptions, stderr: TextIO) -> Iterator[WatchMetrics | None]:
    """The Prometheus endpoint of --metrics-port for as long as the watch runs."""
    if options.metrics_port is None:
        yield None
        return
    metrics = WatchMetrics(options.metrics_top)
    try:
        server, port = serve(metrics, options.metrics_host, options.metrics_port)
    except OSError as exc:
        raise MqadminError(f"--metrics-port: cannot listen on {options.metrics_host}:{options.metrics_port}: "
                           f"{exc.strerror or exc}") from None
    stderr.write(f"mqadmin: metrics on http://{options.metrics_host}:{port}/metrics\n")
    stderr.flush()
    try:
        yield metrics
    finally:
        server.shutdown()
        server.server_close()


async def _collect(addrs: Sequence[str], options: DiffOptions, timeout: float,
                   progress: Progress | None) -> list[ServerView]:
    # collect_views' list has a short repr, which matters to asyncio.run (see transport/collect.py).
    return await collect_views(
        addrs, topics=options.topics, cluster=options.cluster, kv_namespaces=options.kv,
        include_config=options.config, timeout=timeout, concurrency=options.concurrency, progress=progress,
    )


def _unknown(views: Sequence[ServerView], options: DiffOptions, timeout: float) -> tuple[UnknownName, ...]:
    """The -t topics and -c cluster no answering server knows (exit 1, not a silent 0),
    with a did-you-mean hint. The views hold only what the filters selected, so the full
    topic list and cluster info are asked for the hint, and only when a name is unknown."""
    unknown = unknown_names(views, topics=options.topics, cluster=options.cluster)
    if all(u.suggestion is not None for u in unknown):
        return unknown
    answering = [v.addr for v in views if v.ok]
    return with_suggestions(unknown, asyncio.run(_all_names(answering, timeout)))


async def _all_names(addrs: Sequence[str], timeout: float) -> list[ServerView]:
    """Each server's unfiltered topic list and cluster info, for hints only: a server
    that fails here is left out without a word (the comparison has reported it)."""

    async def names(conn: NamesrvConnection) -> ServerView:
        topics, info = await asyncio.gather(conn.get_all_topics(), conn.get_cluster_info(), return_exceptions=True)
        return ServerView(conn.addr, cluster_info=info if isinstance(info, ClusterInfo) else None,
                          topic_list=tuple(topics) if isinstance(topics, list) else None)

    answers = await ask_all(addrs, names, timeout)
    return [a.value for a in answers.values() if a.value is not None]


def _emit(rnd: Round, options: DiffOptions, output: str, stdout: TextIO) -> None:
    watching = options.watch is not None
    if output == "json":
        # JSON Lines with --watch: one compact document per round.
        flags = orjson.OPT_NON_STR_KEYS | (0 if watching else orjson.OPT_INDENT_2)
        stdout.write(orjson.dumps(rnd.to_obj(options.args()), option=flags).decode() + "\n")
        stdout.flush()
    elif output == "yaml":
        stdout.write(dump_yaml(rnd.to_obj(options.args())))
        stdout.flush()
    elif watching:
        render_round(rnd, stdout, tty=stdout.isatty())
    else:
        render_report(rnd.report, stdout, tty=stdout.isatty(), unknown=rnd.unknown)


@contextlib.contextmanager
def _progress_bar(stderr: TextIO, *, enabled: bool, servers: int = 0) -> Iterator[Progress | None]:
    """A rich progress bar of routes fetched, on stderr, only when it is a terminal."""
    if not enabled or not stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

    counts: dict[str, tuple[int, int]] = {}
    with Bar(TextColumn("fetching routes from {task.fields[servers]} name servers"), BarColumn(),
             MofNCompleteColumn(), TimeElapsedColumn(), console=Console(file=stderr), transient=True) as bar:
        task = bar.add_task("routes", total=None, servers=servers)

        def update(addr: str, done: int, total: int) -> None:
            counts[addr] = (done, total)
            bar.update(task, completed=sum(d for d, _ in counts.values()), total=sum(t for _, t in counts.values()))

        yield update

