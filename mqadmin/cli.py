"""The ``mqadmin`` command: Typer app holding every sub-command."""

from __future__ import annotations

from typing import Any, Callable

import typer
from typer.core import TyperGroup

from .commands import alloc, bench, cluster, config, kv, namesrv, perm, topic
from .commands import help as help_commands
from .commands import fixture as fixture_commands
from .commands import pipeline as pipeline_commands
from .commands import diff as diff_commands
from .exit import EXIT_CODES_HELP


class JavaNamesGroup(TyperGroup):
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


app = typer.Typer(
    name="mqadmin",
    cls=JavaNamesGroup,
    help="RocketMQ name server and admin tool that talks to every name server.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
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
    app.command(_name, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)(_command)

# The route-history pipeline (mqadmin/pipeline/SCHEMA.md).
PIPELINE_COMMANDS: dict[str, Callable[..., Any]] = {
    "snapshot": pipeline_commands.snapshot, "analyze": pipeline_commands.analyze,
    "synth-history": pipeline_commands.synth_history,
}
for _name, _command in PIPELINE_COMMANDS.items():
    app.command(_name, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)(_command)

# Java's `mqadmin help <command>`: the command's own --help.
app.command("help", context_settings={"help_option_names": ["-h", "--help"]})(help_commands.help_command)


def main() -> None:
    app()
