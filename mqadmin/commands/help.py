"""``mqadmin help [COMMAND...]``: Java's ``mqadmin help <command>``, for fingers that type it.

The help is printed by the command's own ``--help`` (so the two never differ), and the
name is looked up like any sub-command name, whatever its case.
"""

from __future__ import annotations

from typing import Annotated, Any, NoReturn, Optional

import typer

from ..core import did_you_mean, error_line
from ..exit import ExitStatus


def help_command(
    ctx: typer.Context,
    command: Annotated[Optional[list[str]], typer.Argument(
        metavar="COMMAND", show_default=False,
        help="Command (any case), or a group and its sub-command: 'help fixture up'.")] = None,
) -> None:
    """Show a command's help (as Java's `mqadmin help <command>`)."""
    root = ctx.find_root()
    target: Any = root.command
    target_ctx = root  # the context `target` runs in, for the usage line "mqadmin fixture up"
    for word in command or []:
        if not hasattr(target, "get_command"):
            _unknown(f"{target_ctx.command_path!r} has no sub-command {word!r}")
        found = target.get_command(target_ctx, word)
        if found is None:
            hint = did_you_mean(word, (n for n in target.list_commands(target_ctx) if n != "help"))
            _unknown(f"unknown command {word!r}{hint}; '{target_ctx.command_path} --help' lists them")
        target, target_ctx = found, typer.Context(found, info_name=found.name or word, parent=target_ctx)
    # Exactly what `mqadmin COMMAND --help` does: print the help, then exit 0 (typer.Exit).
    target.make_context(target_ctx.info_name, ["--help"], parent=target_ctx.parent)


def _unknown(message: str) -> NoReturn:
    error_line(message)
    raise typer.Exit(code=int(ExitStatus.USAGE))
