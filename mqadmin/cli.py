"""The ``mqadmin`` command: Typer app holding every sub-command."""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import typer
from typer._click import exceptions as click_errors  # typer's vendored click
from typer.core import TyperCommand, TyperGroup

from .commands import alloc, bench, cluster, config, kv, namesrv, perm, topic
from .commands import help as help_commands
from .commands import fixture as fixture_commands
from .commands import pipeline as pipeline_commands
from .commands import diff as diff_commands
from .core import silence_stdout
from .exit import EXIT_CODES_HELP, ExitStatus
from .usage import PlainCommand, PlainFlags, PlainGroup, error_document, output_format, reflow, usage_line, write_document

#: every command and group takes Java's -h as well as --help
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class JavaNamesGroup(PlainFlags, TyperGroup):
    """Sub-commands match whatever the case, as in Java's mqadmin, whose runbooks and
    fingers write ``clusterlist`` or ``TOPICROUTE`` as often as ``clusterList``."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:  # typer's own (vendored) click types
        command = super().get_command(ctx, cmd_name)
        if command is None:
            wanted = cmd_name.lower()
            for name in self.list_commands(ctx):
                if name.lower() == wanted:
                    return super().get_command(ctx, name)
        return command

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        """Click's main, with our manners: a usage error is one line on stderr (and, under
        ``-o json|yaml``, a document on stdout), exit 2; a reader that went away is 141."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as exc:  # the help is already printed
            code = exc.exit_code
        except click_errors.ClickException as exc:
            line = usage_line(exc)
            output = output_format(argv)
            if output is not None:
                command = next((a for a in argv if not a.startswith("-")), "")
                write_document(error_document(command, {}, exc.exit_code, line), output, sys.stdout)
            sys.stderr.write(f"mqadmin: error: {line}\n")
            code = exc.exit_code
        except typer.Abort:
            sys.stderr.write("mqadmin: error: aborted\n")
            code = int(ExitStatus.ERROR)
        except BrokenPipeError:
            silence_stdout()
            code = ExitStatus.BROKEN_PIPE
        except SystemExit as exc:
            # rich stops a help text whose reader went away with SystemExit(1)
            if not isinstance(exc.__context__, BrokenPipeError):
                raise
            silence_stdout()
            code = ExitStatus.BROKEN_PIPE
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="mqadmin",
    cls=JavaNamesGroup,
    help="RocketMQ name server and admin tool that talks to every name server.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    context_settings=HELP_OPTIONS,
    pretty_exceptions_enable=False,
)
app.add_typer(namesrv.app, name="namesrv")
app.add_typer(bench.app, name="bench")
app.add_typer(fixture_commands.app, name="fixture")

# Admin commands, top-level with Java mqadmin's names; -h works as in Java.
ADMIN_COMMANDS: dict[str, Callable[..., Any]] = {
    "clusterList": cluster.cluster_list,
    "topicRoute": topic.topic_route,
    "topicList": topic.topic_list,
    "topicClusterList": topic.topic_cluster_list,
    "getKvConfig": kv.get_kv_config,
    "getNamesrvConfig": config.get_namesrv_config,
    "wipeWritePerm": perm.wipe_write_perm,
    "addWritePerm": perm.add_write_perm,
    "updateKvConfig": kv.update_kv_config,
    "deleteKvConfig": kv.delete_kv_config,
    "updateNamesrvConfig": config.update_namesrv_config,
    "updateOrderConf": kv.update_order_conf,
    "deleteTopic": topic.delete_topic,
    "allocateMQ": alloc.allocate_mq,
    "diff-namesrv": diff_commands.diff_namesrv,
}
for _name, _command in ADMIN_COMMANDS.items():
    app.command(_name, epilog=EXIT_CODES_HELP)(_command)

# The route-history pipeline (mqadmin/pipeline/SCHEMA.md).
PIPELINE_COMMANDS: dict[str, Callable[..., Any]] = {
    "snapshot": pipeline_commands.snapshot, "analyze": pipeline_commands.analyze,
    "synth-history": pipeline_commands.synth_history,
}
for _name, _command in PIPELINE_COMMANDS.items():
    app.command(_name, epilog=EXIT_CODES_HELP)(_command)

# Java's `mqadmin help <command>`: the command's own --help.
app.command("help")(help_commands.help_command)


def _mannered(typer_app: typer.Typer) -> None:
    """Every command of ``typer_app`` and its sub-apps: -h, help reflowed to the terminal's
    width, plain metavars (usage.PlainCommand)."""
    for info in typer_app.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = PlainCommand
        info.context_settings = {**HELP_OPTIONS, **(info.context_settings or {})}
        info.help = reflow(info.help or (info.callback.__doc__ if info.callback else None))
    for group in typer_app.registered_groups:
        group.context_settings = {**HELP_OPTIONS, **(group.context_settings or {})}
        if group.typer_instance is not None:
            sub = group.typer_instance.info
            sub.context_settings = {**HELP_OPTIONS, **(sub.context_settings or {})}
            if not isinstance(sub.cls, type) or sub.cls is TyperGroup:  # unset: typer's DefaultPlaceholder
                sub.cls = PlainGroup
            _mannered(group.typer_instance)


_mannered(app)


def main() -> None:
    app()
