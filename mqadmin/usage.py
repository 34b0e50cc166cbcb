"""Unix manners for the command line: one-line usage errors, help that reflows, plain metavars.

Typer (0.29) reports a bad option as a five-line rich box in its validation library's
words ("Value error, 'bogus' is not one of ..."), keeps the docstrings' hard line breaks
(so an 80-column help folds mid-phrase) and shows flags as ``<bool>`` and required
arguments as ``{captures}``. This module holds our answers to each, and cli.py applies
them to every command once; nothing here talks to a server.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any, Sequence, TextIO

import typer
from typer.core import TyperCommand, TyperGroup
from typer._click import exceptions as click_errors  # typer's vendored click

from .exit import ExitStatus

PROG = "mqadmin"
#: a line that starts a list item or is indented keeps its line break when help is reflowed
_KEEPS_BREAK = re.compile(r"^(\s|[-*•]\s|\d+\.\s)")


def reflow(doc: str | None) -> str | None:
    """A docstring with the hard breaks inside its paragraphs joined, so that rich wraps
    each paragraph at the terminal's width instead of folding our 88-column lines."""
    if doc is None:
        return None
    paragraphs = []
    for para in inspect.cleandoc(doc).split("\n\n"):
        lines = para.split("\n")
        out = [lines[0]]
        for line in lines[1:]:
            if _KEEPS_BREAK.match(line) or _KEEPS_BREAK.match(out[-1]):
                out.append(line)
            else:
                out[-1] = out[-1].rstrip() + " " + line.strip()
        paragraphs.append("\n".join(out))
    return "\n\n".join(paragraphs)


class PlainFlags:
    """Flags show no ``<bool>`` type in help (a mixin for Typer's command and group)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""  # typer prints the metavar, when set, instead of "<bool>"
        return params


class PlainGroup(PlainFlags, TyperGroup):
    """A Typer group (``namesrv``, ``fixture``, ``bench``) whose flags show no ``<bool>``."""


class PlainCommand(PlainFlags, TyperCommand):
    """A Typer command whose usage line reads ``[OPTIONS] CAPTURES`` (not ``{captures}``)
    and whose flags show no ``<bool>`` type."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, typer.core.TyperArgument):
                name = (param.metavar or param.name or "").upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces


# --------------------------------------------------------------- usage errors ----

def _option_name(param: Any, hint: Any) -> str:
    """``-i/--interval`` for an option, ``CAPTURES`` for an argument."""
    if param is not None and getattr(param, "opts", None) and not isinstance(param, typer.core.TyperArgument):
        return "/".join(param.opts)
    if param is not None and param.name:
        return (param.metavar or param.name).upper()
    text = hint if isinstance(hint, str) or hint is None else " / ".join(hint)
    return (text or "").replace("'", "").replace(" / ", "/") or "a value"


def _choices(param: Any) -> list[str]:
    desc = getattr(param, "type_descriptor", None)
    return [str(getattr(c, "value", c)) for c in (getattr(desc, "choices", None) or ())]


def _what_was_wrong(exc: click_errors.BadParameter) -> str:
    """The validation library's verdict in plain words, with what is accepted."""
    cause: Any = exc.__cause__
    errors = cause.errors() if hasattr(cause, "errors") else []
    if not errors:
        return exc.message
    err = errors[0]
    given, kind, limits = err.get("input"), str(err.get("type", "")), err.get("ctx") or {}
    choices = _choices(exc.param)
    if choices:
        return f"{given!r} is not accepted; use one of {', '.join(choices)}"
    if kind in ("int_parsing", "int_from_float"):
        return f"{given!r} is not a whole number"
    if kind in ("float_parsing", "float_type", "finite_number"):
        return f"{given!r} is not a number"
    for key, words in (("ge", "at least"), ("gt", "more than"), ("le", "at most"), ("lt", "less than")):
        if key in limits:
            return f"must be {words} {limits[key]}, got {given}"
    return str(err.get("msg", exc.message)).removeprefix("Value error, ")


def usage_line(exc: click_errors.ClickException) -> str:
    """``clusterList: -i/--interval: 'abc' is not a number (see 'mqadmin clusterList -h')``."""
    ctx = getattr(exc, "ctx", None)
    command = " ".join(ctx.command_path.split()[1:]) if ctx is not None else ""
    if isinstance(exc, click_errors.MissingParameter):
        text = f"missing {exc.param_type or 'option'} {_option_name(exc.param, exc.param_hint)} (required)"
    elif isinstance(exc, click_errors.BadParameter):
        text = f"{_option_name(exc.param, exc.param_hint)}: {_what_was_wrong(exc)}"
    else:
        text = exc.format_message().rstrip(".")
    text = text.replace("' / '", "/")
    prefix = f"{command}: " if command else ""
    help_hint = f" (see '{PROG}{' ' + command if command else ''} -h')"
    return f"{prefix}{text}{help_hint}"


def output_format(args: Sequence[str]) -> str | None:
    """The ``-o/--output`` value among raw arguments (parsing failed, so read them as they are)."""
    value = None
    for i, arg in enumerate(args):
        if arg in ("-o", "--output") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--output="):
            value = arg.split("=", 1)[1]
        elif arg.startswith("-o") and len(arg) > 2 and not arg.startswith("--"):
            value = arg[2:]
    return value if value in ("json", "yaml") else None


def error_document(command: str, args: dict[str, Any], status: ExitStatus | int, error: str) -> dict[str, Any]:
    """The ``-o json|yaml`` document of an outcome that produced no Result (bad input,
    usage error, Ctrl-C before any answer): same keys as ``Result.to_json()``."""
    from .result import SCHEMA_VERSION

    code = int(status)
    name = ExitStatus(code).name.lower() if code in ExitStatus._value2member_map_ else "error"
    return {"schema_version": SCHEMA_VERSION, "command": command, "args": args, "status": name,
            "exit_status": code, "error": error, "answer": None, "steps": []}


def write_document(doc: dict[str, Any], output: str, stdout: TextIO) -> None:
    if output == "json":
        stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        from .render.output import dump_yaml

        stdout.write(dump_yaml(doc))
    stdout.flush()
