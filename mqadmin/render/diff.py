"""``diff-namesrv`` as tables: servers, differences by topic and broker, client impact.

Servers get short ids (A, B, ...) in the first table and every later line names them
by id, so a finding reads ``RW on A,B; R- on C`` however long the addresses are.
Topics whose findings (or impacts) are the same apart from the topic name are shown
once with the list of topics: a broker lost on one server makes thousands of topics
differ identically, and one line says so better than thousands. JSON keeps every
finding on its own.
"""

from __future__ import annotations

import io
import time
from typing import Any, Callable, Iterable, Sequence, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mqnamesrv.protocol.codes import PERM_READ, PERM_WRITE

from ..diff import PRESENT, DiffReport, Finding, Kind, Queue, TopicImpact, UnknownName, Value
from ..diff.watch import Round, ServerChange, server_ids
from .output import make_console

#: topic names shown for a group of topics that differ alike
_NAMES_SHOWN = 3

_WHAT: dict[str, Callable[[Finding], str]] = {
    Kind.CLUSTER_MEMBERS: lambda f: f"members of cluster {f.subject}",
    Kind.TOPIC_LIST_MISSING: lambda f: "in topic list",
    Kind.ROUTE_MISSING: lambda f: "route",
    Kind.ORDER_TOPIC_CONF: lambda f: "orderTopicConf",
    Kind.FILTER_SERVERS: lambda f: f"filter servers of {f.subject}",
    Kind.BROKER_MISSING: lambda f: "broker" if f.subject == "route" else "broker in cluster info",
    Kind.MASTER_MISSING: lambda f: "master (brokerAddrs[0])",
    Kind.PERM: lambda f: "perm",
    Kind.READ_QUEUE_NUMS: lambda f: "read queues",
    Kind.WRITE_QUEUE_NUMS: lambda f: "write queues",
    Kind.TOPIC_SYS_FLAG: lambda f: "topicSysFlag",
    Kind.BROKER_ADDR: lambda f: f.subject,
    Kind.BROKER_CLUSTER: lambda f: "cluster",
    Kind.ACTING_MASTER: lambda f: "enableActingMaster",
    Kind.ZONE_NAME: lambda f: "zone",
    Kind.QUEUE_MAPPING: lambda f: "static-topic mapping",
    Kind.KV_VALUE: lambda f: f"KV {f.subject}",
    Kind.CONFIG_VALUE: lambda f: f"config {f.subject}",
}
_ABSENT = {
    Kind.ROUTE_MISSING: "TOPIC_NOT_EXIST", Kind.TOPIC_LIST_MISSING: "missing", Kind.BROKER_MISSING: "missing",
    Kind.MASTER_MISSING: "none", Kind.BROKER_ADDR: "none", Kind.KV_VALUE: "unset", Kind.CONFIG_VALUE: "unset",
    Kind.ORDER_TOPIC_CONF: "none", Kind.FILTER_SERVERS: "none", Kind.CLUSTER_MEMBERS: "no such cluster",
    # 5.x: a server that does not keep the flag answers as a 4.x one (clients read false)
    Kind.ACTING_MASTER: "false/absent", Kind.ZONE_NAME: "none", Kind.QUEUE_MAPPING: "none",
}


def perm_text(perm: int) -> str:
    """``RW``, ``R-``, ``-W``, ``--`` as topicRoute shows perm."""
    return ("R" if perm & PERM_READ else "-") + ("W" if perm & PERM_WRITE else "-")


def value_text(kind: str, value: Value) -> str:
    if value is None:
        return _ABSENT.get(kind, "none")
    if value == PRESENT:
        return "present"
    if kind == Kind.PERM and value.isdigit():
        return f"{perm_text(int(value))} ({value})"
    return value or '""'


def seen_text(f: Finding, ids: dict[str, str]) -> str:
    """Which servers see what: ``RW (6) on A,B; R- (4) on C``."""
    return "; ".join(
        f"{value_text(f.kind, value)} on {','.join(ids.get(s, s) for s in servers)}" for value, servers in f.groups()
    )


def queues_text(queues: Iterable[Queue]) -> str:
    """``broker-a/0-3, broker-b/5``: consecutive ids of a broker as one range."""
    runs: list[tuple[str, int, int]] = []
    for broker, qid in queues:
        if runs and runs[-1][0] == broker and runs[-1][2] == qid - 1:
            runs[-1] = (broker, runs[-1][1], qid)
        else:
            runs.append((broker, qid, qid))
    return ", ".join(f"{b}/{lo}" if lo == hi else f"{b}/{lo}-{hi}" for b, lo, hi in runs) or "none"


def topics_text(topics: Sequence[str | None]) -> str:
    names = ["(cluster)" if t is None else t for t in topics]
    if len(names) <= _NAMES_SHOWN + 1:
        return ", ".join(names)
    return ", ".join(names[:_NAMES_SHOWN]) + f" and {len(names) - _NAMES_SHOWN:,} more"


def _table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name in columns:
        table.add_column(name, overflow="fold")
    for cells in rows:
        table.add_row(*(Text(c) for c in cells))
    return table


def _grouped(items: Iterable[Any], topic_of: Callable[[Any], str | None],
             shape_of: Callable[[Any], Any]) -> list[tuple[list[str | None], list[Any]]]:
    """Items grouped by topic, then topics with equal shapes merged (first appearance order)."""
    by_topic: dict[str | None, list[Any]] = {}
    for item in items:
        by_topic.setdefault(topic_of(item), []).append(item)
    merged: dict[Any, tuple[list[str | None], list[Any]]] = {}
    for topic, members in by_topic.items():
        key = tuple(shape_of(m) for m in members)
        merged.setdefault(key, ([], members))[0].append(topic)
    return list(merged.values())


def _finding_shape(f: Finding) -> Any:
    return (f.kind, f.broker, f.subject, f.values)


# ------------------------------------------------------------------ tables ----

def servers_table(report: DiffReport, ids: dict[str, str], console: Console) -> None:
    rows = []
    for s in report.servers:
        latency = "-" if s.latency_ms is None else f"{s.latency_ms:.1f} ms"
        rows.append((ids[s.addr], s.addr, "answered" if s.ok else "failed", latency, _number(s.brokers),
                     _number(s.topics), _number(s.routes) if s.ok else "-", (s.content_hash or "-")[:12]))
    console.print(_table(("Id", "Name server", "Status", "Latency", "Brokers", "Topics", "Routes", "Content hash"),
                         rows))
    answered = [s for s in report.servers if s.ok]
    hashes = {s.content_hash or "" for s in answered}
    line = f"{len(answered)}/{len(report.servers)} name servers answered"
    if len(report.servers) > len(answered):
        line += f", {len(report.servers) - len(answered)} failed"
    if len(hashes) == 1 and len(answered) > 1:
        line += f"; route content equal (hash {next(iter(hashes))[:12]})"
    elif len(hashes) > 1:
        line += f"; {len(hashes)} different route contents"
    console.print(Text(line))


def _number(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def findings_table(findings: Sequence[Finding], ids: dict[str, str], console: Console,
                   lasted: Callable[[Finding], str] | None = None) -> None:
    rows = []
    for topics, members in _grouped(findings, lambda f: f.topic, _finding_shape):
        for i, f in enumerate(members):
            row = [topics_text(topics) if i == 0 else "", f.broker or "-", _WHAT[f.kind](f), seen_text(f, ids)]
            rows.append(row + ([lasted(f)] if lasted else []))
    console.print(_table(("Topic", "Broker", "What", "Seen") + (("Lasted",) if lasted else ()), rows))


def impacts_section(impacts: Sequence[TopicImpact], ids: dict[str, str], console: Console) -> None:
    first = impacts[0]
    console.print(Text(
        f"Impact on clients ({first.consumers} consumer{'s' if first.consumers != 1 else ''}, "
        f"{first.strategy} allocation, worst case over which consumer asks which name server):"))
    rows: list[tuple[str, str, str]] = []
    shapes = _grouped(impacts, lambda i: i.topic, _impact_shapes())
    for topics, (impact,) in shapes:
        lines = _impact_lines(impact, ids)
        for j, (who, text) in enumerate(lines):
            rows.append((topics_text(topics) if j == 0 else "", who, text))
    console.print(_table(("Topic", "Clients", "Effect"), rows))


def _impact_shapes() -> Callable[[TopicImpact], int]:
    """A token per distinct impact apart from its topic. diff_views shares the consumer
    and producer parts between topics that differ alike, so each pair of objects is
    compared by value once and then recognised by identity."""
    by_id: dict[tuple[int, int], int] = {}
    by_value: dict[Any, int] = {}

    def shape(i: TopicImpact) -> int:
        ident = (id(i.consumer), id(i.producer))
        if ident not in by_id:
            value = (i.strategy, i.consumers, i.servers, i.consumer, i.producer)
            by_id[ident] = by_value.setdefault(value, len(by_value))
        return by_id[ident]

    return shape


def _ids(servers: Iterable[str], ids: dict[str, str]) -> str:
    return ",".join(ids.get(s, s) for s in servers)


def _impact_lines(impact: TopicImpact, ids: dict[str, str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    c = impact.consumer
    if c.worst_case:
        out.append(("consumers", f"unassigned: {queues_text(c.unassigned)}"))
        out.append(("", f"assigned twice: {queues_text(c.doubly_assigned)}"))
        # A consumer may ask any of the servers holding its view: "c2 -> B/C".
        worst = ", ".join(f"{a.consumer} -> {'/'.join(ids.get(x, x) for x in a.servers)}" for a in c.worst_case)
        out.append(("", f"worst case: {worst}" + ("" if c.exact else " (local search, not exhaustive)")))
        for a in c.worst_case:
            out.append(("", f"  {a.consumer} takes {queues_text(a.queues)}"))
    p = impact.producer
    if p.key_hash_breaks:
        agreed = ", ".join(f"{b.broker} {b.share:.0%}" for b in p.agreed)
        majority = "majority" if p.majority else "no majority"
        out.append(("producers", f"agreed route ({_ids(p.agreed_servers, ids)}; {majority}): {agreed or 'no queues'}"))
        seen: dict[tuple[Queue, ...], list[str]] = {}
        rows: dict[tuple[Queue, ...], str] = {}
        for v in p.views:
            if v.agrees:
                continue
            seen.setdefault(v.queues, []).append(v.server)
            rows[v.queues] = ", ".join(
                f"{b.broker} {b.share:.0%} ({b.delta:+.0%})" for b in v.brokers) or "no queues"
        for queues, servers in seen.items():
            out.append(("", f"{_ids(servers, ids)}: {rows[queues]}"))
        out.append(("", "key-hash queue selection differs between views: per-key order breaks"))
    return out


# ------------------------------------------------------------------ output ----

def render_report(report: DiffReport, out: TextIO, *, tty: bool, unknown: Sequence[UnknownName] = ()) -> None:
    """The whole report: servers, differences, impact. ``unknown`` filters (see
    ``unknown_names``) withhold the "no differences" line; diagnostics() says why."""
    with _console(out, tty) as console:
        ids = server_ids([s.addr for s in report.servers])
        servers_table(report, ids, console)
        _findings_and_impacts(report, ids, console, None, unknown)


def render_round(rnd: Round, out: TextIO, *, tty: bool) -> None:
    """A ``--watch`` round: the whole report the first time, then only what changed."""
    if rnd.first:
        with _console(out, tty) as console:
            ids = server_ids([s.addr for s in rnd.report.servers])
            console.print(Text(f"round 1 at {_clock(rnd.started_wall)}"))
            servers_table(rnd.report, ids, console)
            _findings_and_impacts(rnd.report, ids, console, lambda f: age_text(rnd.lasted(f)), rnd.unknown)
        return
    with _console(out, tty) as console:
        ids = server_ids([s.addr for s in rnd.report.servers])
        ongoing = [f for f in rnd.report.findings if f not in rnd.new and f not in rnd.changed]
        oldest = max((rnd.lasted(f) for f in rnd.report.findings), default=None)
        head = (f"round {rnd.number} at {_clock(rnd.started_wall)}: {len(rnd.new)} new, {len(rnd.changed)} changed, "
                f"{len(rnd.resolved)} resolved, {len(ongoing)} ongoing")
        if rnd.unconfirmed:
            head += f", {len(rnd.unconfirmed)} unconfirmed (a server silent)"
        if oldest is not None:
            head += f" (oldest lasted {age_text(oldest)})"
        console.print(Text(head if rnd.changes else head + "; no change"))
        for change in rnd.servers_changed:
            console.print(Text(_server_change(change, ids)))
        rows = []
        for label, items in (("new", rnd.new), ("changed", rnd.changed)):
            for f in items:
                rows.append((label, "(cluster)" if f.topic is None else f.topic, f.broker or "-", _WHAT[f.kind](f),
                             seen_text(f, ids), f"lasted {age_text(rnd.lasted(f))}"))
        for f, lasted in rnd.resolved:
            rows.append(("resolved", "(cluster)" if f.topic is None else f.topic, f.broker or "-", _WHAT[f.kind](f),
                         seen_text(f, ids), f"lasted {age_text(lasted)}"))
        for f, silent in rnd.went_silent:
            who = ", ".join(ids.get(a, a) for a in silent)
            rows.append(("unconfirmed", "(cluster)" if f.topic is None else f.topic, f.broker or "-",
                         _WHAT[f.kind](f), seen_text(f, ids), f"lasted {age_text(rnd.lasted(f))}; {who} silent"))
        if rows:
            console.print(_table(("Change", "Topic", "Broker", "What", "Seen", "Duration"), rows))
        touched = {f.topic for f in (*rnd.new, *rnd.changed)}
        impacts = [i for i in rnd.report.impacts if i.topic in touched]
        if impacts:
            impacts_section(impacts, ids, console)


def _findings_and_impacts(report: DiffReport, ids: dict[str, str], console: Console,
                          lasted: Callable[[Finding], str] | None, unknown: Sequence[UnknownName] = ()) -> None:
    if not report.findings:
        answered = sum(s.ok for s in report.servers)
        # Agreement about a filter that selected nothing is no all-clear.
        if answered > 1 and not unknown:
            console.print(Text(f"No differences: the {answered} name servers that answered agree"))
        return
    topics = {f.topic for f in report.findings}
    console.print(Text(f"\nDifferences: {len(report.findings):,} in {_topic_count(topics)}"))
    findings_table(report.findings, ids, console, lasted)
    if report.impacts:
        console.print()
        impacts_section(report.impacts, ids, console)
    else:
        console.print(Text("\nNo client impact: queue lists are the same on every name server"))


def _topic_count(topics: set[str | None]) -> str:
    named = len(topics - {None})
    text = f"{named:,} topic{'s' if named != 1 else ''}"
    return text + " and the cluster info" if None in topics else text


def _server_change(change: ServerChange, ids: dict[str, str]) -> str:
    return f"server {ids.get(change.addr, '?')} {change.addr}: {change.before} -> {change.after}"


def _clock(wall: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(wall))


def age_text(seconds: float) -> str:
    """``0.4 s``, ``42 s``, ``3m05s``, ``2h01m``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 120:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class _console:
    """A console on ``out``; through a buffer when not a terminal so that lines lose
    rich's padding blanks (as render/output.py does for pipes)."""

    def __init__(self, out: TextIO, tty: bool) -> None:
        self.out, self.tty = out, tty
        self.buffer = None if tty else io.StringIO()

    def __enter__(self) -> Console:
        return make_console(self.out if self.buffer is None else self.buffer, self.tty)

    def __exit__(self, *exc: object) -> None:
        if self.buffer is not None:
            self.out.write("".join(line.rstrip() + "\n" for line in self.buffer.getvalue().splitlines()))
        self.out.flush()


def diagnostics(rnd: Round) -> list[str]:
    """stderr lines: each failed server and failed question, each unknown filter, then
    the verdict."""
    lines = [f"mqadmin: error: {v.error}" for v in rnd.views if v.error]
    lines += [f"mqadmin: error: {line}" for v in rnd.views for line in (v.failures if v.ok else ())]
    lines += [f"mqadmin: error: {u.message}" for u in rnd.unknown]
    if not any(v.ok for v in rnd.views):
        lines.append("mqadmin: error: no name server answered")
    elif rnd.report.findings:
        topics = {f.topic for f in rnd.report.findings}
        lines.append(f"mqadmin: warning: name servers disagree: {len(rnd.report.findings):,} differences in "
                     f"{_topic_count(topics)}")
    return lines
