"""The ``mqadmin`` command: Typer app holding every sub-command."""

from __future__ import annotations

import typer

from .commands import namesrv
from .exit import EXIT_CODES_HELP

app = typer.Typer(
    name="mqadmin",
    help="RocketMQ name server and admin tool that talks to every name server.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(namesrv.app, name="namesrv")


def main() -> None:
    app()
