"""Show a Result as a rich table, JSON or YAML, and its diagnostics on stderr.

stdout carries the result only (so ``-o json | jq`` works); errors and warnings go to
stderr in every output mode, one line each, prefixed ``mqadmin: error:`` or
``mqadmin: warning:``. The JSON/YAML document is ``Result.to_json()`` (schema in the
README). Tables group equal answers: one table and ``N/N name servers agree`` when the
name servers agree; otherwise a legend (A, B, ...) of which servers gave which answer
and one merged table whose ``Seen on`` column says where each row comes from.
"""

from __future__ import annotations

import io
import json
import string
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence, TextIO

import yaml
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import NameServerError, Pending, Skipped, request_label
from ..result import LOOKUP, PROBE, READ, WRITE, Group, Result, Step

#: the output when neither -o nor a profile chose one: Java's layout where a table has one
AUTO = "auto"
#: Columns of a non-terminal stdout: wide enough that tables are never folded in pipes.
PIPE_WIDTH = 240


class PlainYamlDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Every ``-o yaml``: libyaml's emitter where installed (diff-namesrv's documents run
    to megabytes), and no ``&id001`` anchors and ``*id001`` aliases. An agreed answer is
    the very object each agreeing server's entry holds, and diff-namesrv shares impact
    parts between topics; a reader (or ``yq``) wants them written out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=PlainYamlDumper, sort_keys=False, allow_unicode=True, explicit_start=True)

Row = tuple[Hashable, Sequence[str]]


@dataclass(frozen=True)
class ReadTable:
    """How one answer of a read becomes table rows: ``rows(data, result)`` gives
    ``(key, cells)`` pairs; rows with the same key are compared across servers."""

    columns: Sequence[str]
    rows: Callable[[Any, Result], list[Row]]
    #: lines shown under the table (data that is not per row)
    notes: Callable[[Any], list[str]] = field(default=lambda data: [])
    #: a fixed text layout (Java's) printed instead of the table, byte for byte: see _layout
    layout: Callable[[Any, Result], str] | None = None
    #: the layout shows every server's own answer (Java's getNamesrvConfig block per
    #: server): called once with ``data`` None
    per_server: bool = False
    #: asked for explicitly (``topicRoute -l``): the layout whatever the agreement and
    #: the output option, once per distinct answer when the servers differ
    always_layout: bool = False


@dataclass(frozen=True)
class WriteTable:
    """Extra cells of a write's per-target table, from the target's answer."""

    columns: Sequence[str] = ()
    cells: Callable[[Any], Sequence[str]] = field(default=lambda data: ())


def render(result: Result, output: str, stdout: TextIO, stderr: TextIO) -> None:
    """Write ``result`` to stdout in ``output`` format, then its diagnostics to stderr."""
    if output == "json":
        stdout.write(json.dumps(document(result), indent=2, ensure_ascii=False) + "\n")
    elif output == "yaml":
        stdout.write(dump_yaml(document(result)))
    else:
        shown = [s for s in result.steps if s.kind != PROBE]
        if len(shown) == 1 and shown[0].kind == READ and _java_layout(shown[0], output):
            stdout.write(_layout(shown[0], result))
        else:
            _tables(shown, result, stdout)
    stdout.flush()
    for line in diagnostics(result):
        stderr.write(line + "\n")
    stderr.flush()


def document(result: Result) -> dict[str, Any]:
    """``Result.to_json()`` whose ``error`` names what went wrong whenever the status is
    not ok: the command's own error, else the first error (or warning) line of stderr,
    so that ``jq .error`` never reads null for a failed command."""
    doc = result.to_json()
    if doc["error"] is None and doc["status"] != "ok":
        lines = diagnostics(result)
        first = next((ln for ln in lines if ln.startswith("mqadmin: error: ")), lines[0] if lines else None)
        doc["error"] = first.split(": ", 2)[2] if first else doc["status"]
    return doc


def _tables(shown: Sequence[Step], result: Result, stdout: TextIO) -> None:
    """The steps as rich tables, each under its request's name when there are several."""
    tty = stdout.isatty()
    buffer = None if tty else io.StringIO()
    console = make_console(stdout if buffer is None else buffer, tty)
    for i, step in enumerate(shown):
        if len(shown) > 1:
            _line(console, ("\n" if i else "") + f"{request_label(step.request)}:")
        if step.kind in (READ, LOOKUP):
            _read(step, result, console)
        elif step.kind == WRITE:
            _write(step, result, console)
    if buffer is not None:  # pipes get no padding blanks at line ends
        stdout.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))


def make_console(out: TextIO, tty: bool) -> Console:
    return Console(file=out, width=None if tty else PIPE_WIDTH, highlight=False, soft_wrap=False,
                   force_terminal=None if tty else False)


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name in columns:
        table.add_column(name, overflow="fold")
    for cells in rows:
        table.add_row(*(Text(str(c)) for c in cells))
    return table


def _line(console: Console, text: str) -> None:
    console.print(Text(text))


def _letters(n: int) -> list[str]:
    letters = string.ascii_uppercase
    return [letters[i] if i < 26 else f"G{i + 1}" for i in range(n)]


def _read(step: Step, result: Result, console: Console) -> None:
    spec: ReadTable = step.table
    groups = step.groups
    total, failed = len(step.outcomes), len(step.failed)
    if len(groups) == 1 and groups[0].absent:
        return  # "not found" everywhere: one stderr line says it
    if len(groups) == 1:
        console.print(_table(spec.columns, [cells for _, cells in spec.rows(groups[0].data, result)]))
        for note in spec.notes(groups[0].data):
            _line(console, note)
    elif len(groups) > 1:
        _line(console, _summary(groups, total, failed) + ":")
        _merged(groups, spec, result, console)
        return
    _line(console, _summary(groups, total, failed))


def _summary(groups: list[Group], total: int, failed: int) -> str:
    """``N/N name servers agree`` and its variants."""
    tail = f", {failed} failed" if failed else ""
    if not groups:
        return f"0/{total} name servers answered"
    if len(groups) == 1:
        verdict = ": not found" if groups[0].absent else ""
        return f"{len(groups[0].servers)}/{total} name servers agree{verdict}{tail}"
    compared = sum(len(g.servers) for g in groups)
    return f"Name servers disagree: {len(groups)} different answers from {compared}/{total} name servers{tail}"


def _legend(letter: str, group: Group) -> str:
    """``  A  10.0.0.1:9876, 10.0.0.2:9876`` (and why, for a "not found" group)."""
    what = ""
    if group.absent:
        code = getattr(group.error, "code_name", None) or getattr(group.error, "reason", "")
        what = f"  (not found: {code})"
    return f"  {letter}  {', '.join(group.servers)}{what}"


def _java_layout(step: Step, output: str) -> bool:
    """Whether a read prints its view's Java layout: always when asked for (``-l``);
    otherwise by default (``output`` ``auto``: no -o, no profile default) when the
    servers that answered agree. A disagreement gets the merged table, which says who
    holds what; ``-o table`` asks for our table whatever happens."""
    spec = step.table
    if getattr(spec, "layout", None) is None:
        return False
    if spec.always_layout:
        return True
    groups = step.groups
    return output == AUTO and len(groups) == 1 and not groups[0].absent


def _layout(step: Step, result: Result) -> str:
    """A read shown in its view's fixed text layout (Java's), written as is: Java's
    trailing blanks are part of it, so it bypasses rich and the pipe trimming.

    The servers agree (failed ones aside: stderr names them, the exit code counts them):
    the layout alone, exactly what Java prints, so runbooks' ``| grep``, ``| wc -l`` and
    ``| awk`` keep working. No answer, or "not found" everywhere: nothing (stderr says
    why, once). They disagree: the summary line, then per distinct answer its legend line
    (as in the merged table) and that answer's layout and notes.
    """
    spec: ReadTable = step.table
    assert spec.layout is not None
    groups = step.groups
    if spec.per_server:
        return spec.layout(None, result) if any(o.ok for o in step.outcomes) else ""
    if len(groups) == 1 and not groups[0].absent:
        return spec.layout(groups[0].data, result)
    if not groups or (len(groups) == 1 and groups[0].absent):
        return ""
    parts = [_summary(groups, len(step.outcomes), len(step.failed)) + ":\n"]
    for letter, group in zip(_letters(len(groups)), groups):
        parts.append("\n" + _legend(letter, group) + "\n")
        if not group.absent:
            parts.append(spec.layout(group.data, result))
            parts.extend(note + "\n" for note in spec.notes(group.data))
    return "".join(parts)


def _merged(groups: list[Group], spec: ReadTable, result: Result, console: Console) -> None:
    letters = _letters(len(groups))
    for letter, group in zip(letters, groups):
        _line(console, _legend(letter, group))
    seen: dict[Hashable, dict[tuple[str, ...], list[str]]] = {}
    for letter, group in zip(letters, groups):
        if group.absent:
            continue
        for key, cells in spec.rows(group.data, result):
            seen.setdefault(key, {}).setdefault(tuple(str(c) for c in cells), []).append(letter)
    present = [letter for letter, g in zip(letters, groups) if not g.absent]
    rows = []
    for key in sorted(seen, key=_sort_key):
        for cells, where in seen[key].items():
            rows.append(("all" if where == present and len(present) == len(groups) else ",".join(where), *cells))
    console.print(_table(("Seen on", *spec.columns), rows))
    for letter, group in zip(letters, groups):
        for note in ([] if group.absent else spec.notes(group.data)):
            _line(console, f"{letter}: {note}")


def _sort_key(key: Hashable) -> tuple[Any, ...]:
    parts = key if isinstance(key, tuple) else (key,)
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in parts)


def _write(step: Step, result: Result, console: Console) -> None:
    spec: WriteTable = step.table or WriteTable()
    broker = step.target == "broker"
    columns = (("Broker", "Address") if broker else ("Name server",)) + ("Result", *spec.columns, "Latency")
    rows = []
    for o in step.outcomes:
        extra, latency = ["-"] * len(spec.columns), f"{o.latency_ms:.1f} ms"
        if o.error is None:
            status, extra = "OK", list(spec.cells(o.data))
        elif isinstance(o.error, Skipped):
            status, latency = "NOT SENT", "-"
        elif isinstance(o.error, Pending):
            status, latency = "NO ANSWER YET", "-"
        else:
            reason = o.error.code_name if isinstance(o.error, NameServerError) else o.error.kind
            status = f"FAILED ({reason})"
        rows.append(((o.broker_name or "-", o.addr) if broker else (o.addr,)) + (status, *extra, latency))
    console.print(_table(columns, rows))
    noun = "brokers" if broker else "name servers"
    if step.skipped:
        _line(console, f"{request_label(step.request)} not sent to {len(step.outcomes)} {noun}: {step.skipped}")
    else:
        _line(console, f"{sum(o.ok for o in step.outcomes)}/{len(step.outcomes)} {noun} OK")


def diagnostics(result: Result) -> list[str]:
    """stderr lines: one per failed target, skipped step, disagreement, command error."""
    lines: list[str] = []
    for step in result.steps:
        groups = step.groups if step.kind in (READ, LOOKUP) else []
        all_absent = len(groups) == 1 and groups[0].absent
        if step.skipped:
            lines.append(f"mqadmin: error: {request_label(step.request)} not sent: {step.skipped}")
        # the same "not found" from several servers is one line, not one per server
        merged = all_absent and len(groups[0].servers) > 1 and groups[0].error is not None
        if merged:
            first, n, total = groups[0].error, len(groups[0].servers), len(step.outcomes)
            assert first is not None
            lines.append(f"mqadmin: error: {first.message.removeprefix(first.addr + ': ')} "
                         f"({'all ' if n == total else ''}{n}{'' if n == total else f' of {total}'} name servers)")
        for o in step.outcomes:
            # an absent answer is a value when others differ (the disagreement line says it)
            if o.error is None or isinstance(o.error, (Skipped, Pending)) or (o.absent and (len(groups) > 1 or merged)):
                continue
            level = "warning" if step.kind == PROBE else "error"
            lines.append(f"mqadmin: {level}: {o.error.message}")
        if len(groups) > 1:
            compared = sum(len(g.servers) for g in groups)
            what = "; using every answer" if step.kind == LOOKUP else ""
            lines.append(
                f"mqadmin: warning: name servers disagree on {request_label(step.request)}: "
                f"{len(groups)} different answers from {compared} name servers{what}"
            )
    lines.extend(f"mqadmin: warning: {w}" for w in result.warnings)
    if result.error:
        lines.append(f"mqadmin: error: {result.error}")
    return lines
