"""``mqadmin bench route|register|memory|fleet``: speed and memory as ratios to a floor
measured in the same run."""

from __future__ import annotations

import json
import sys
import tempfile
from typing import Annotated, Any, Callable, Optional

import typer
from rich.console import Console
from rich.table import Table

from ..bench import hostile, runs
from ..core import Output, guard
from ..errors import MqadminError
from ..transport.fanout import parse_addrs

app = typer.Typer(help="Benchmarks: throughput, latency, registration and memory, as ratios to a same-run floor.",
                  no_args_is_help=True)

NamesrvOpt = Annotated[Optional[str], typer.Option("-n", "--namesrvAddr",
                                                   help="Name server to measure (default: start our own).")]
OutputOpt = Annotated[Output, typer.Option("-o", "--output", help="table, json or yaml.")]
ConnsOpt = Annotated[int, typer.Option("--conns", min=1, help="Client connections.")]
InflightOpt = Annotated[int, typer.Option("--inflight", min=1, help="Requests in flight per connection.")]
RequestsOpt = Annotated[int, typer.Option("--requests", min=100, help="Route queries per run.")]


def _flatten(obj: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    rows = []
    for key, value in obj.items():
        if isinstance(value, dict):
            rows += _flatten(value, f"{prefix}{key}.")
        else:
            rows.append((prefix + key, "-" if value is None else str(value)))
    return rows


def _emit(result: dict[str, Any], output: Output) -> None:
    if output == Output.json:
        print(json.dumps(result, indent=2))
    elif output == Output.yaml:
        from ..render.output import dump_yaml
        print(dump_yaml(result), end="")
    else:
        table = Table(title=f"mqadmin bench {result['benchmark']}", show_header=True)
        table.add_column("figure")
        table.add_column("value", justify="right")
        for key, value in _flatten({k: v for k, v in result.items() if k != "benchmark"}):
            table.add_row(key, value)
        Console().print(table)


def _measure(namesrv: str | None, output: Output, work: Callable[[str, int | None, Callable[[str], None]], dict[str, Any]]) -> None:
    quiet = output != Output.table or not sys.stderr.isatty()

    def say(message: str) -> None:
        if not quiet:
            print(f"... {message}", file=sys.stderr)

    def body() -> int:
        if namesrv is not None:
            addr = parse_addrs(namesrv)[0]
            _emit(work(addr, None, say), output)
            return 0
        with tempfile.TemporaryDirectory() as tmp:
            say("starting a local name server")
            proc, addr = runs.start_local_server(tmp)
            try:
                _emit(work(addr, proc.pid, say), output)
            finally:
                proc.terminate()
                proc.wait(10)
        return 0

    raise typer.Exit(code=guard(body))


@app.command("route")
def route(namesrv: NamesrvOpt = None, topics: Annotated[int, typer.Option("--topics", min=1)] = 1000,
          conns: ConnsOpt = 8, inflight: InflightOpt = 64, requests: RequestsOpt = 100_000,
          no_setup: Annotated[bool, typer.Option("--no-setup", help="Use the brokers already registered.")] = False,
          output: OutputOpt = Output.table) -> None:
    """Route-query throughput and p50/p99 latency, against a framed echo server driven by
    the same client in the same run (goal for our server: ratio >= 0.7)."""
    _measure(namesrv, output, lambda addr, pid, say: runs.run(runs.bench_route(
        addr, topics=topics, conns=conns, inflight=inflight, requests=requests, setup=not no_setup, say=say)))


@app.command("register")
def register(namesrv: NamesrvOpt = None, topics: Annotated[int, typer.Option("--topics", min=1)] = 10_000,
             compressed: Annotated[bool, typer.Option("--compressed")] = False,
             repeat: Annotated[int, typer.Option("--repeat", min=1)] = 5,
             output: OutputOpt = Output.table) -> None:
    """Time to register a broker with N topics, against parsing the same body alone (goal <= 3x)."""
    _measure(namesrv, output, lambda addr, pid, say: runs.run(runs.bench_register(
        addr, topics=topics, compressed=compressed, repeat=repeat, say=say)))


@app.command("memory")
def memory(topics: Annotated[int, typer.Option("--topics", min=1)] = 100_000,
           brokers: Annotated[int, typer.Option("--brokers", min=1)] = 2,
           output: OutputOpt = Output.table) -> None:
    """Resident size of our registry against the msgpack size of the same tables (goal <= 2x)."""
    def body() -> int:
        _emit(runs.bench_memory(topics=topics, brokers=brokers, say=lambda m: None), output)
        return 0
    raise typer.Exit(code=guard(body))


@app.command("fleet")
def fleet(namesrv: NamesrvOpt = None, conns: ConnsOpt = 16, inflight: InflightOpt = 8,
          requests: RequestsOpt = 100_000, repeat: Annotated[int, typer.Option("--repeat", min=1)] = 5,
          vs: Annotated[Optional[str], typer.Option("--vs", help="Another name server (e.g. Java's) to measure the "
                                                    "same way; adds ours/theirs ratios.")] = None,
          vs_pid: Annotated[Optional[int], typer.Option("--vs-pid", help="Its process id, for memory growth.")] = None,
          settle: Annotated[float, typer.Option("--settle", min=0, help="Seconds to wait after the fleet registered "
                                                "before reading memory growth again (a name server's periodic scan, "
                                                "every 5 s by default, may give memory back).")] = 6.0,
          output: OutputOpt = Output.table) -> None:
    """RocketMQ's JMH route-benchmark fleet (4 clusters x 8 brokers, 40,000 topics): first
    registration (a broker joining a cluster, and the first broker of a new cluster),
    bumped re-registration (unchanged, 1% changed), route p50/p99 quiet and
    while one broker re-registers back to back, the longest stall of a lone request, route
    CPU per request against an echo floor, memory growth (when the process is known)."""
    _measure(namesrv, output, lambda addr, pid, say: runs.run(runs.bench_fleet(
        addr, pid=pid, conns=conns, inflight=inflight, requests=requests, repeat=repeat,
        vs=None if vs is None else parse_addrs(vs)[0], vs_pid=vs_pid, settle=settle, say=say)))


def _own_server(work: Callable[[str, int, Callable[[str], None]], dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    def measure(addr: str, pid: int | None, say: Callable[[str], None]) -> dict[str, Any]:
        if pid is None:
            raise MqadminError("this benchmark reads the server's resident size: run it without -n")
        return work(addr, pid, say)
    return measure


@app.command("slow-readers")
def slow_readers(clients: Annotated[int, typer.Option("--clients", min=1)] = 50,
                 requests: Annotated[int, typer.Option("--requests", min=1)] = 20_000,
                 brokers: Annotated[int, typer.Option("--brokers", min=1, help="Brokers in the route asked for.")] = 48,
                 output: OutputOpt = Output.table) -> None:
    """Clients that send route queries and never read: the server's resident growth against
    clients x writeBufferLimit, and a reading client's p99 against its p99 before (own server)."""
    _measure(None, output, _own_server(lambda addr, pid, say: runs.run(hostile.bench_slow_readers(
        addr, pid=pid, clients=clients, requests=requests, brokers=brokers, say=say))))


@app.command("churn")
def churn(brokers: Annotated[int, typer.Option("--brokers", min=1)] = 5000,
          output: OutputOpt = Output.table) -> None:
    """Brokers registering and leaving one after another: resident size after against
    before (goal: within a few MB; own server)."""
    _measure(None, output, _own_server(lambda addr, pid, say: runs.run(hostile.bench_churn(
        addr, pid=pid, brokers=brokers, say=say))))
