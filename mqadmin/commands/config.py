"""``getNamesrvConfig`` and ``updateNamesrvConfig``."""

from __future__ import annotations

from typing import Annotated, Mapping

import typer

from mqnamesrv.protocol.codes import RequestCode as R

from ..render import answers
from ..core import (Common, Context, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt, did_you_mean,
                    read_command, required, write_command)
from ..result import Result


def get_namesrv_config(
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Every name server's configuration, in Java's layout: per server a
    ============host:port============ line and its key=  value lines.

    Per-host items (bindAddress, configStorePath, kvConfigPath, listenPort, rocketmqHome)
    are shown but not compared, as diff-namesrv --config ignores them; any other
    difference is a disagreement (a warning on stderr, exit 4).
    """
    read_command(Common(namesrv, output, timeout, profile, traceback), "getNamesrvConfig", {},
                 R.GET_NAMESRV_CONFIG, lambda c: c.get_config(), answers.CONFIG, to_data=answers.sorted_map,
                 same=answers.shared_config)


def update_namesrv_config(
    key: Annotated[str, typer.Option("-k", "--key", help="Config key, e.g. orderMessageEnable.", show_default=False)],
    value: Annotated[str, typer.Option("-v", "--value", help="New value.", show_default=False)],
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Change one config item on every name server.

    Path keys are refused by the servers (NO_PERMISSION). Most items take effect at
    once; listen settings need a restart. A name server accepts and drops a key it does
    not know: the config is read back, a warning names the servers that ignored it, and
    when every one did the command fails (exit 1).
    """
    key, value = required(key, "-k"), value.strip()

    async def check(ctx: Context, result: Result) -> None:
        # A name server answers SUCCESS for a key it does not know and drops it (as Java
        # does): read the config back and name the servers that have no such item.
        ok = [o.addr for o in result.steps[0].outcomes if o.ok]
        answers = await ctx.ask(lambda c: c.get_config(), R.GET_NAMESRV_CONFIG, addrs=ok) if ok else {}
        configs: dict[str, Mapping[str, str]] = {}
        for a in answers.values():
            if a.value is not None:
                configs[a.addr] = a.value
        ignored = [addr for addr, config in configs.items() if key not in config]
        if not ignored:
            return
        known = {k for config in configs.values() for k in config}
        what = f"{key!r} is not a config item{did_you_mean(key, known)}"
        if len(ignored) == len(configs):
            result.error = f"{what}: every name server that answered ignored it; nothing was changed"
        else:
            result.warnings.append(f"{what} of {', '.join(ignored)}: ignored there")

    write_command(Common(namesrv, output, timeout, profile, traceback), "updateNamesrvConfig",
                  {"key": key, "value": value}, R.UPDATE_NAMESRV_CONFIG, lambda c: c.update_config({key: value}),
                  answers.PLAIN, detail=f"for {key}", check=check)
