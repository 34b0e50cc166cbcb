"""``getNamesrvConfig`` and ``updateNamesrvConfig``."""

from __future__ import annotations

from typing import Annotated

import typer

from nameserver.protocol.codes import RequestCode as R

from .. import views
from ..core import (Common, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt, read_command, required,
                    write_command)


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
                 R.GET_NAMESRV_CONFIG, lambda c: c.get_config(), views.CONFIG, to_data=views.sorted_map,
                 same=views.shared_config)


def update_namesrv_config(
    key: Annotated[str, typer.Option("-k", "--key", help="Config key, e.g. orderMessageEnable.", show_default=False)],
    value: Annotated[str, typer.Option("-v", "--value", help="New value.", show_default=False)],
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Change one config item on every name server.

    Path keys are refused by the servers (NO_PERMISSION). Most items take effect at
    once; listen settings need a restart.
    """
    key, value = required(key, "-k"), value.strip()
    write_command(Common(namesrv, output, timeout, profile, traceback), "updateNamesrvConfig",
                  {"key": key, "value": value}, R.UPDATE_NAMESRV_CONFIG, lambda c: c.update_config({key: value}),
                  views.PLAIN, detail=f"for {key}")
