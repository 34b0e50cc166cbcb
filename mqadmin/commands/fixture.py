"""``mqadmin fixture up|check``: clusters of simulated brokers whose name servers disagree
in a known way (the format is documented in fixtures/README.md)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from mqadmin.fixture.loader import FixtureErrors, load_fixture
from mqadmin.fixture.model import Fixture, plural
from mqadmin.fixture.runner import FixtureRunError, FixtureRunner

from ..core import EXIT_INTERRUPTED

app = typer.Typer(help="Simulated RocketMQ clusters for runbooks, diffs and pipelines.", no_args_is_help=True)


def _load(file: Path) -> Fixture:
    try:
        return load_fixture(file)
    except FixtureErrors as exc:
        for problem in exc.problems:
            typer.echo(problem.render(exc.source), err=True)
        typer.echo(f"{exc.source}: {plural(len(exc.problems), 'error')}", err=True)
        raise typer.Exit(code=1) from None
    except OSError as exc:
        typer.echo(f"mqadmin fixture: cannot read {file}: {exc.strerror or exc}", err=True)
        raise typer.Exit(code=1) from None


@app.command("check")
def check(
    files: Annotated[list[Path], typer.Argument(help="Fixture files (YAML).", show_default=False)],
) -> None:
    """Validate fixtures; report every error as FILE:LINE: where: what. Exit 1 if any file has one."""
    failed = False
    for file in files:
        try:
            fx = _load(file)
        except typer.Exit:
            failed = True
            continue
        typer.echo(f"{file}: ok ({plural(len(fx.name_servers), 'name server')}, {plural(len(fx.brokers), 'broker')}, "
                   f"{plural(len({t.name for t in fx.topics}), 'topic')}, {plural(len(fx.timeline), 'event')})")
    if failed:
        raise typer.Exit(code=1)


@app.command("up")
def up(
    file: Annotated[Path, typer.Argument(help="Fixture file (YAML).", show_default=False)],
    speed: Annotated[float, typer.Option("--speed", min=0.001, help=(
        "Run the timeline, register periods and broker expiry this many times faster."))] = 1.0,
    duration: Annotated[Optional[float], typer.Option("--duration", min=0, help=(
        "Stop at this fixture time in seconds (divided by --speed like every time in the file); "
        "overrides the file's duration. Default: the file's, else run until Ctrl-C."))] = None,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Log name-server and broker details on stderr.")] = False,
) -> None:
    """Start the fixture's name servers and simulated brokers and run its timeline.

    Prints NAMESRV_ADDR=... once every broker has registered, then each event and each
    change in what the name servers list. Ctrl-C (or the end of the timeline) unregisters
    the brokers and stops the name servers.
    """
    fx = _load(file)
    if verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s - %(message)s")
    else:
        # Expiries and removals show up in the runner's own lines; keep stderr for errors.
        logging.getLogger("nameserver").setLevel(logging.ERROR)
        logging.getLogger("fixtures").setLevel(logging.ERROR)
    runner = FixtureRunner(fx, speed=speed, duration_ms=None if duration is None else round(duration * 1000),
                           echo=typer.echo)

    interrupted: list[bool] = []

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            interrupted.append(True)
            stop.set()
            # A second Ctrl-C interrupts the clean shutdown.
            loop.remove_signal_handler(signal.SIGINT)

        loop.add_signal_handler(signal.SIGINT, on_signal)
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        await runner.run(stop)

    try:
        try:
            import uvloop
        except ImportError:
            asyncio.run(main())
        else:
            uvloop.run(main())
    except FixtureRunError as exc:
        typer.echo(f"mqadmin fixture: {exc}", err=True)
        raise typer.Exit(code=1) from None
    if interrupted:  # Ctrl-C: stopped cleanly, but not done; 128 + SIGINT as every command
        raise typer.Exit(code=EXIT_INTERRUPTED)
