"""``wipeWritePerm`` and ``addWritePerm``: a broker's write permission on every name server."""

from __future__ import annotations

from typing import Annotated, Awaitable

import typer

from nameserver.protocol.codes import RequestCode as R

from .. import views
from ..core import Common, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt, required, write_command

BrokerNameOpt = Annotated[str, typer.Option("-b", "--brokerName", help="Broker name (the group, not an address).",
                                            show_default=False)]


def wipe_write_perm(
    broker_name: BrokerNameOpt,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Clear the write bit of a broker's topics on every name server.

    Shows the topic count each server reports. The broker itself is not told; its next
    DataVersion change restores its own perms.
    """
    name = required(broker_name, "-b")
    write_command(Common(namesrv, output, timeout, profile, traceback), "wipeWritePerm", {"broker_name": name},
                  R.WIPE_WRITE_PERM_OF_BROKER, lambda c: _count(c.wipe_write_perm(name), "wipeTopicCount"),
                  views.WIPE, detail=f"for broker {name!r}")


def add_write_perm(
    broker_name: BrokerNameOpt,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Set perm read+write (6) on a broker's topics on every name server.

    Shows the topic count each server reports.
    """
    name = required(broker_name, "-b")
    write_command(Common(namesrv, output, timeout, profile, traceback), "addWritePerm", {"broker_name": name},
                  R.ADD_WRITE_PERM_OF_BROKER, lambda c: _count(c.add_write_perm(name), "addTopicCount"),
                  views.ADD, detail=f"for broker {name!r}")


async def _count(call: Awaitable[int], field: str) -> dict[str, int]:
    return {field: await call}
