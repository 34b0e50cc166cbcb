"""``wipeWritePerm`` and ``addWritePerm``: a broker's write permission on every name server.

A name server answers ``OK, 0`` for a broker name it has no topics of (spec P4.8: the
count is the topics visited), so a mistyped ``-b`` looks like success in Java. Here a
count of 0 from every server that answered is an error (exit 1) with a hint from the
servers' cluster info, and 0 from only some of them is a warning naming those servers.
"""

from __future__ import annotations

from typing import Annotated, Awaitable, Callable, NoReturn, Sequence

import typer

from mqnamesrv.protocol.codes import RequestCode as R

from ..core import (Common, Context, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt, did_you_mean,
                    required, write_command)
from ..render import answers
from ..render.output import WriteTable
from ..result import Result
from ..transport.client import NamesrvConnection

BrokerNameOpt = Annotated[str, typer.Option("-b", "--brokerName", help="Broker name (the group, not an address).",
                                            show_default=False)]
#: at most this many broker names in the "known brokers" hint; clusterList shows them all
_HINT_NAMES = 10


def wipe_write_perm(
    broker_name: BrokerNameOpt,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Clear the write bit of a broker's topics on every name server.

    Shows the topic count each server reports. The broker itself is not told; its next
    DataVersion change restores its own perms. A count of 0 from every server that
    answered means none has topics of that broker (a mistyped -b?): error, exit 1, with
    the broker names the servers know. 0 from only some servers: a warning naming them
    (their routes differ from the others'), exit status unchanged.
    """
    name = required(broker_name, "-b")
    _perm_write(Common(namesrv, output, timeout, profile, traceback), "wipeWritePerm", name,
                R.WIPE_WRITE_PERM_OF_BROKER, lambda c: c.wipe_write_perm(name), "wipeTopicCount", answers.WIPE)


def add_write_perm(
    broker_name: BrokerNameOpt,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Set perm read+write (6) on a broker's topics on every name server.

    Shows the topic count each server reports. A count of 0 from every server that
    answered means none has topics of that broker (a mistyped -b?): error, exit 1, with
    the broker names the servers know. 0 from only some servers: a warning naming them,
    exit status unchanged.
    """
    name = required(broker_name, "-b")
    _perm_write(Common(namesrv, output, timeout, profile, traceback), "addWritePerm", name,
                R.ADD_WRITE_PERM_OF_BROKER, lambda c: c.add_write_perm(name), "addTopicCount", answers.ADD)


def _perm_write(
    common: Common, command: str, name: str, request: int,
    call: Callable[[NamesrvConnection], Awaitable[int]], field: str, table: WriteTable,
) -> NoReturn:
    """Send the perm write to every name server, then judge the counts (see the module)."""

    async def send(conn: NamesrvConnection) -> dict[str, int]:
        return {field: await call(conn)}

    async def check(ctx: Context, result: Result) -> None:
        outcomes = result.steps[0].outcomes
        ok = [o for o in outcomes if o.ok]
        zero = [o.addr for o in ok if o.data[field] == 0]
        if zero and len(zero) == len(ok):
            result.error = _no_topics(name, len(ok) < len(outcomes), await _known_brokers(ctx, zero))
        elif zero:
            result.warnings.append(
                f"broker {name!r} has no topics on {len(zero)} of the {len(ok)} name servers that answered: "
                f"{', '.join(zero)} (their routes differ from the others'; see topicRoute or diff-namesrv)")

    write_command(common, command, {"broker_name": name}, request, send, table, detail=f"for broker {name!r}",
                  check=check)


async def _known_brokers(ctx: Context, addrs: Sequence[str]) -> set[str] | None:
    """Broker names in the cluster info of ``addrs``; None when none of them answered."""
    answers = await ctx.ask(lambda c: c.get_cluster_info(), R.GET_BROKER_CLUSTER_INFO, addrs=addrs)
    infos = [a.value for a in answers.values() if a.value is not None]
    return {n for info in infos for n in info.broker_addr_table} if infos else None


def _no_topics(name: str, some_failed: bool, known: set[str] | None) -> str:
    """``no name server has topics of broker 'X' (did you mean 'x'?); nothing was changed``."""
    who = "no name server that answered" if some_failed else "no name server"
    return f"{who} has topics of broker {name!r}{_hint(name, known)}; nothing was changed"


def _hint(name: str, known: set[str] | None) -> str:
    if known is None:
        return " (run clusterList to see the broker names)"
    if name in known:
        return " (it is registered but has no topics)"
    if not known:
        return " (the name servers know no brokers)"
    close = did_you_mean(name, known)
    if close:
        return close
    names = sorted(known)
    more = f" and {len(names) - _HINT_NAMES} more" if len(names) > _HINT_NAMES else ""
    return " (known brokers: " + ", ".join(names[:_HINT_NAMES]) + more + ")"
