"""Running an admin command: options every command shares, and the one place that turns
exceptions into a stderr line and an exit status (httpie's ``core.raw_main``).

A command builds an async ``build(ctx) -> Result`` and hands it to ``run()``; ``run``
resolves the name servers, runs it (repeatedly with ``-i``), renders the result and
exits with the result's status. Known errors (``MqadminError``) print one line;
anything else is a bug and prints one line too, unless the hidden ``--traceback``
asks for the stack.
"""

from __future__ import annotations

import asyncio
import difflib
import io
import math
import os
import sys
import time
from dataclasses import dataclass
from enum import Enum
from typing import (Annotated, Any, Awaitable, Callable, Coroutine, Iterable, NoReturn, Optional, Sequence, TextIO,
                    TypeVar)

import typer
from typer._click.globals import get_current_context

from .errors import MqadminError, Pending
from .exit import ExitStatus
from .profiles import resolve
from .render.output import AUTO, ReadTable, WriteTable, render
from .result import READ, WRITE, Result, Step
from .transport.client import DEFAULT_TIMEOUT, Connection, NamesrvConnection
from .transport.fanout import Answer, ask_all
from .usage import error_document, write_document

T = TypeVar("T")
PROG = "mqadmin"
#: what a shell reports for a command stopped by Ctrl-C (128 + SIGINT)
EXIT_INTERRUPTED = int(ExitStatus.INTERRUPTED)


class Output(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


# Options every admin command takes; each command lists them after its own.
NamesrvOpt = Annotated[Optional[str], typer.Option(
    "-n", "--namesrvAddr", show_default=False,
    help="Name servers, 'host:port;host:port'. Default: the --profile servers if given, else $NAMESRV_ADDR, "
         "else the profiles file's default_profile.")]
OutputOpt = Annotated[Optional[Output], typer.Option(
    "-o", "--output", show_default=False, help="table (default), json or yaml.")]


def is_seconds(value: float) -> bool:
    """A duration option's rule: positive and finite (nan, inf, 0 and below are refused)."""
    return math.isfinite(value) and value > 0


def seconds_option(value: Optional[float]) -> Optional[float]:
    """A duration option's check (--timeout, clusterList -i), as a Typer callback."""
    if value is not None and not is_seconds(value):
        raise typer.BadParameter(f"must be a positive number of seconds, got {value:g}")
    return value


TimeoutOpt = Annotated[Optional[float], typer.Option(
    "--timeout", show_default=False, callback=seconds_option,
    help=f"Seconds to wait for each server (default {DEFAULT_TIMEOUT:g}).")]
ProfileOpt = Annotated[Optional[str], typer.Option(
    "--profile", show_default=False,
    help="Profile of ~/.config/mqadmin/profiles.yaml (or $MQADMIN_CONFIG) naming the name servers and defaults.")]
TracebackOpt = Annotated[bool, typer.Option("--traceback", hidden=True, help="Show the Python traceback on errors.")]


@dataclass(frozen=True)
class Common:
    namesrv: str | None = None
    output: Output | None = None
    timeout: float | None = None
    profile: str | None = None
    traceback: bool = False


@dataclass(frozen=True)
class Environment:
    """Where output goes; read at call time so CliRunner's captured streams are used."""

    stdout: TextIO
    stderr: TextIO

    @classmethod
    def current(cls) -> Environment:
        return cls(sys.stdout, sys.stderr)


@dataclass(frozen=True)
class Context:
    """What ``build`` needs: the name servers and the per-server timeout."""

    addrs: Sequence[str]
    timeout: float

    async def ask(
        self,
        fn: Callable[[Any], Awaitable[T]],
        request: int,
        *,
        detail: str = "",
        addrs: Sequence[str] | None = None,
        connection: type[Connection] = NamesrvConnection,
        timeout: float | None = None,
        progress: dict[str, Answer[T]] | None = None,
    ) -> dict[str, Answer[T]]:
        """``fanout.ask_all`` over the name servers (or ``addrs``) with this context's timeout."""
        return await ask_all(
            self.addrs if addrs is None else addrs, fn, self.timeout if timeout is None else timeout,
            connection=connection, request=request, detail=detail, progress=progress,
        )


class Interrupted(Exception):
    """Ctrl-C ended a write: ``result`` says what each target had answered by then
    (targets still silent carry a ``Pending`` error), so nobody is left guessing."""

    def __init__(self, result: Result) -> None:
        super().__init__("interrupted")
        self.result = result


def error_line(message: str, stderr: TextIO | None = None) -> None:
    (stderr or sys.stderr).write(f"{PROG}: error: {message}\n")


def run(
    common: Common,
    build: Callable[[Context], Coroutine[Any, Any, Result]],
    *,
    interval: float | None = None,
    count: int | None = None,
) -> NoReturn:
    """Resolve servers, run ``build`` (every ``interval`` s, ``count`` times), render, exit."""
    document = ErrorDocument(common.output)

    def body() -> int:
        target = resolve(common.namesrv, common.profile)
        output = common.output.value if common.output is not None else (target.output or AUTO)
        document.output = output
        ctx = Context(target.addrs, common.timeout or target.timeout or DEFAULT_TIMEOUT)

        def one_round() -> int:
            env = Environment.current()
            result = asyncio.run(build(ctx))
            render(result, output, env.stdout, env.stderr)
            document.written = True
            return int(result.status)

        try:
            return repeat_rounds(one_round, every=interval, count=count)
        except Interrupted as stop:
            env = Environment.current()
            stop.result.interrupted = True
            render(stop.result, output, env.stdout, env.stderr)
            document.written = True
            pending = [o.addr for s in stop.result.steps for o in s.outcomes if isinstance(o.error, Pending)]
            error_line("interrupted" + (f"; no answer yet from {', '.join(pending)}: the write may or may "
                                        "not have been applied there" if pending else ""), env.stderr)
            return int(stop.result.status)

    raise typer.Exit(code=guard(body, traceback=common.traceback, on_error=document))


def repeat_rounds(one_round: Callable[[], int], *, every: float | None, count: int | None,
                  paced_from_start: bool = False) -> int:
    """The round loop of every repeating command (``-i``/``-c``, ``diff-namesrv --watch``):
    run ``one_round`` once, or every ``every`` seconds until ``count`` rounds (None: until
    Ctrl-C), and return the last round's status. ``every`` is the pause between rounds, or
    with ``paced_from_start`` the time from one round's start to the next (a watch keeps
    its rhythm however long a round takes). Ctrl-C (130) and a closed pipe (141) escape
    to ``guard``, which maps them."""
    rounds = 0
    while True:
        started = time.monotonic()
        status = one_round()
        rounds += 1
        if every is None or (count is not None and rounds >= count):
            return status
        time.sleep(max(0.0, started + every - time.monotonic()) if paced_from_start else every)


class ErrorDocument:
    """Under -o json|yaml an outcome without a Result (bad -n, no profile, Ctrl-C before
    any answer) is a document too, so that ``jq`` reads something whatever happened;
    written once, never after a rendered result. Call it as guard's ``on_error``."""

    def __init__(self, output: Output | None) -> None:
        self.output = output.value if output is not None else "table"
        self.written = False

    def __call__(self, line: str, status: int) -> None:
        if self.output in ("json", "yaml") and not self.written:
            write_document(error_document(command_name(), {}, status, line), self.output, Environment.current().stdout)
            self.written = True


def command_name() -> str:
    """The sub-command being run (``topicList``), from Click's context when there is one."""
    ctx = click_context()
    return ctx.command.name if ctx is not None and ctx.command.name else PROG


def guard(body: Callable[[], int], *, traceback: bool = False,
          on_error: Callable[[str, int], None] | None = None) -> int:
    """Run ``body``; map what escapes it to one stderr line and an exit status
    (``on_error`` hears both, for a -o json|yaml document).

    Typer's own exceptions (usage errors, ``typer.Exit``) pass through untouched so
    that usage errors keep Typer's message and exit status 2.
    """
    def fail(line: str, status: int) -> int:
        error_line(line)
        if on_error is not None:
            try:
                on_error(line, status)
            except BrokenPipeError:
                silence_stdout()
                return ExitStatus.BROKEN_PIPE
        return status

    try:
        return body()
    except (typer.TyperException, typer.Exit, typer.Abort):
        raise
    except MqadminError as exc:
        if traceback:
            raise
        return fail(str(exc), int(exc.exit_status))
    except KeyboardInterrupt:
        if traceback:
            raise
        return fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away (`diff-namesrv --watch | head -3`): stop quietly, as Unix
        # tools do, and keep Python from complaining when it flushes stdout at exit.
        silence_stdout()
        return ExitStatus.BROKEN_PIPE
    except Exception as exc:
        if traceback:
            raise
        if isinstance(exc, OSError) and exc.filename is not None:  # a path we could not use: bad input
            return fail(f"{exc.filename}: {exc.strerror or exc}", int(ExitStatus.ERROR))
        # a bug: say so in one line, the stack only on request
        return fail(f"unexpected {type(exc).__name__}: {exc} (run with --traceback for details)", int(ExitStatus.ERROR))


def click_context() -> Any:
    return get_current_context(silent=True)


def silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):  # not a real file (tests)
        pass


def required(value: str, hint: str) -> str:
    """Java trims option values; an empty one is a usage error here (exit 2)."""
    value = value.strip()
    if not value:
        raise typer.BadParameter("must not be empty", param_hint=f"'{hint}'")
    return value


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'topicRoute'?)`` for the names among ``candidates`` that look like
    ``word`` (a case-only difference alone when there is one: Java's names are camelCase,
    fingers are not); empty when none does."""
    by_folded: dict[str, str] = {}
    for c in sorted(candidates):
        by_folded.setdefault(c.casefold(), c)
    folded = word.casefold()
    close = [folded] if folded in by_folded else difflib.get_close_matches(folded, list(by_folded), n=3)
    names = [repr(by_folded[c]) for c in close]
    if not names:
        return ""
    return " (did you mean " + (", ".join(names[:-1]) + " or " if len(names) > 1 else "") + names[-1] + "?)"


def read_command(
    common: Common,
    command: str,
    args: dict[str, Any],
    request: int,
    fetch: Callable[[Any], Awaitable[Any]],
    table: ReadTable,
    *,
    to_data: Callable[[Any], Any] = lambda v: v,
    detail: str = "",
    same: Callable[[Any], Any] | None = None,
) -> NoReturn:
    """A one-request read: ask every name server, compare the answers (``same`` of
    them when given), exit 0/1/3/4."""

    async def build(ctx: Context) -> Result:
        answers = await ctx.ask(fetch, request, detail=detail)
        return Result(command, args, [Step.from_answers(request, READ, answers, to_data, table=table, same=same)])

    run(common, build)


def write_command(
    common: Common,
    command: str,
    args: dict[str, Any],
    request: int,
    send: Callable[[Any], Awaitable[Any]],
    table: WriteTable,
    *,
    detail: str = "",
    check: Callable[[Context, Result], Awaitable[None]] | None = None,
) -> NoReturn:
    """A one-request write: send to every name server at once, one line each, exit 0/1/3.
    ``check`` may judge the answers as a whole (set the result's error or warnings)."""

    async def build(ctx: Context) -> Result:
        progress: dict[str, Answer[Any]] = {}
        result = None
        try:
            answers = await ctx.ask(send, request, detail=detail, progress=progress)
            result = Result(command, args, [Step.from_answers(request, WRITE, answers, table=table)])
            if check is not None:
                await check(ctx, result)
        except asyncio.CancelledError:
            if result is None:  # Ctrl-C during the write: what each server had said by then
                answers = {a: progress.get(a) or Answer(a, error=Pending(a, request, detail)) for a in ctx.addrs}
                result = Result(command, args, [Step.from_answers(request, WRITE, answers, table=table)])
            raise Interrupted(result) from None
        return result

    run(common, build)
