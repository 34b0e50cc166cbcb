"""What a ``diff-namesrv`` round means: its exit status, its JSON document, and, with
``--watch``, what changed since the previous round and how long each difference has
lasted (the idea of KIP-836's replica lag time, applied to name-server views).

Pure: the caller passes wall-clock and monotonic times in, so tests step a fake clock.

JSON document of one round (``-o json``; one per line with ``--watch``)::

    {"schema_version": 1, "command": "diff-namesrv", "args": {...},
     "status": "ok|partial|disagree|error", "exit_status": 0|3|4|1,
     "error": null | "no name server answered" | "no name server knows topic 'X'[ (did you mean 'x'?)]; ...",
     "round": 1, "started_at": "2026-11-23T08:45:24.116Z", "elapsed_ms": 812.4,
     "servers":  [ServerSummary.to_obj() + {"id": "A", "failures": [...]}],
     "findings": [Finding.to_obj() + {"first_seen": ISO time, "lasted_s": 12.0}],
     "unconfirmed": [finding + {"silent": [addr]}],
     "impacts":  [TopicImpact.to_obj()],
     "changes":  null (first round) | {"new": [finding], "changed": [finding],
                                       "resolved": [finding + lasted_s], "unconfirmed": [...],
                                       "servers": [...]}}

A difference that is gone only because every server of one side of it stopped answering
(the server that lacked a broker went down) is not resolved: nobody knows what that server
holds. It is *unconfirmed* until that side answers again; then it is resolved, or goes on
with its first-seen time if it is still there. The rule is rules.silent_side, which the
Spark job's windows follow too (mqadmin/pipeline/SCHEMA.md, "Silent servers").
"""

from __future__ import annotations

import datetime as dt
import string
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..exit import ExitStatus
from . import SCHEMA_VERSION, DiffReport, Finding, ServerSummary, ServerView, TopicImpact, UnknownName
from .rules import silent_side

COMMAND = "diff-namesrv"
#: (kind, topic, broker, subject): what a finding is about, whatever the values
FindingId = tuple[str, str | None, str | None, str]
_STATUS = {ExitStatus.OK: "ok", ExitStatus.PARTIAL: "partial", ExitStatus.DISAGREE: "disagree",
           ExitStatus.ERROR: "error"}


def finding_id(f: Finding) -> FindingId:
    return (f.kind, f.topic, f.broker, f.subject)


def server_ids(addrs: Sequence[str]) -> dict[str, str]:
    """Short names for the servers in tables: A, B, ... Z, then S27, S28, ..."""
    letters = string.ascii_uppercase
    return {a: letters[i] if i < len(letters) else f"S{i + 1}" for i, a in enumerate(addrs)}


def exit_status(views: Sequence[ServerView], report: DiffReport,
                unknown: Sequence[UnknownName] = ()) -> ExitStatus:
    """1 when no server answered or a filter names what no server knows (bad input: it
    wins over 4, as a typo's empty comparison must never pass for agreement), else 4 on
    any finding, else 3 when a server or one of its questions failed, else 0."""
    if not any(v.ok for v in views) or unknown:
        return ExitStatus.ERROR
    if report.findings:
        return ExitStatus.DISAGREE
    if any(not v.ok or v.failures for v in views):
        return ExitStatus.PARTIAL
    return ExitStatus.OK


def iso(wall: float) -> str:
    return dt.datetime.fromtimestamp(wall, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class ServerChange:
    addr: str
    before: str  # "answered <hash>", "failed", ...
    after: str

    def to_obj(self) -> dict[str, Any]:
        return {"addr": self.addr, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Round:
    """One collection and its comparison, with what changed since the previous round."""

    number: int
    started_wall: float
    elapsed_s: float
    views: Sequence[ServerView]
    report: DiffReport
    status: ExitStatus
    first_seen: Mapping[FindingId, tuple[float, float]]  # id -> (wall, monotonic) first seen
    now: float  # monotonic time of this round's capture (its start): durations end here
    new: tuple[Finding, ...] = ()
    changed: tuple[Finding, ...] = ()
    resolved: tuple[tuple[Finding, float], ...] = ()  # (finding, seconds it lasted)
    #: every difference not seen now only because one side of it is silent: (finding, silent servers)
    unconfirmed: tuple[tuple[Finding, tuple[str, ...]], ...] = ()
    #: those of ``unconfirmed`` that became so in this round
    went_silent: tuple[tuple[Finding, tuple[str, ...]], ...] = ()
    servers_changed: tuple[ServerChange, ...] = ()
    first: bool = True
    #: -t topics and -c cluster that no answering server knows (each makes the round exit 1)
    unknown: tuple[UnknownName, ...] = ()

    @property
    def changes(self) -> int:
        return (len(self.new) + len(self.changed) + len(self.resolved) + len(self.went_silent)
                + len(self.servers_changed))

    def lasted(self, f: Finding) -> float:
        return max(0.0, self.now - self.first_seen[finding_id(f)][1])

    def to_obj(self, args: Mapping[str, Any]) -> dict[str, Any]:
        ids = server_ids([v.addr for v in self.views])
        failures = {v.addr: list(v.failures) for v in self.views}
        servers = [{"id": ids[s.addr], **s.to_obj(), "failures": failures[s.addr]} for s in self.report.servers]
        return {
            "schema_version": SCHEMA_VERSION,
            "command": COMMAND,
            "args": dict(args),
            "status": _STATUS[self.status],
            "exit_status": int(self.status),
            "error": self.error,
            "round": self.number,
            "started_at": iso(self.started_wall),
            "elapsed_ms": round(self.elapsed_s * 1000, 1),
            "servers": servers,
            "findings": [self._finding(f) for f in self.report.findings],
            "unconfirmed": [self._finding(f) | {"silent": list(silent)} for f, silent in self.unconfirmed],
            "impacts": impacts_obj(self.report.impacts),
            "changes": None if self.first else {
                "new": [self._finding(f) for f in self.new],
                "changed": [self._finding(f) for f in self.changed],
                "resolved": [f.to_obj() | {"lasted_s": round(s, 1)} for f, s in self.resolved],
                "unconfirmed": [self._finding(f) | {"silent": list(silent)} for f, silent in self.went_silent],
                "servers": [c.to_obj() for c in self.servers_changed],
            },
        }

    @property
    def error(self) -> str | None:
        """The envelope's ``error`` line: why the round is an error, None when it is not."""
        if not any(v.ok for v in self.views):
            return "no name server answered"
        return "; ".join(u.message for u in self.unknown) or None

    def _finding(self, f: Finding) -> dict[str, Any]:
        wall, _ = self.first_seen[finding_id(f)]
        return f.to_obj() | {"first_seen": iso(wall), "lasted_s": round(self.lasted(f), 1)}


_PER_TOPIC = ("topic", "strategy", "consumers", "servers")


def impacts_obj(impacts: Sequence[TopicImpact]) -> list[dict[str, Any]]:
    """``[i.to_obj() for i in impacts]``, with the consumer and producer parts built once
    per shape: a broker lost on one server gives 10,000 topics the same impact objects
    (diff_views memoises them), and building each one's JSON form took seconds."""
    built: dict[tuple[int, int], dict[str, Any]] = {}
    out = []
    for i in impacts:
        ident = (id(i.consumer), id(i.producer))
        base = built.get(ident)
        if base is None:
            base = built[ident] = i.to_obj()
            out.append(base)
        elif set(base) - {"consumer", "producer"} == set(_PER_TOPIC):
            # Same key order as to_obj(); the shared parts are the same dicts.
            out.append({**base, "topic": i.topic, "strategy": i.strategy, "consumers": i.consumers,
                        "servers": list(i.servers)})
        else:  # TopicImpact.to_obj() grew a field: play safe
            out.append(i.to_obj())
    return out


def server_state(s: ServerSummary) -> str:
    if not s.ok:
        return "failed"
    return f"answered {s.content_hash[:12]}" if s.content_hash else "answered"


@dataclass
class Tracker:
    """Remembers the previous round: when each finding was first seen, server states."""

    rounds: int = 0
    _first_seen: dict[FindingId, tuple[float, float]] = field(default_factory=dict)
    #: the findings of the last round, and those unconfirmed since (see the module)
    _findings: dict[FindingId, Finding] = field(default_factory=dict)
    _unconfirmed: dict[FindingId, tuple[str, ...]] = field(default_factory=dict)
    _servers: dict[str, str] = field(default_factory=dict)

    def add(self, views: Sequence[ServerView], report: DiffReport, *, started_wall: float, started: float,
            elapsed: float, unknown: Sequence[UnknownName] = ()) -> Round:
        """Record one round and return it with its changes. A round's time is when its
        capture started (``started``, monotonic; ``started_wall`` for display), so a
        difference first seen now has lasted 0 s and one resolved now lasted from the
        capture that first saw it to this one. ``unknown`` (``unknown_names``) is judged
        afresh each round: a watched topic may be created, or deleted, meanwhile."""
        now = started
        self.rounds += 1
        current = {finding_id(f): f for f in report.findings}
        answering = {v.addr for v in views if v.ok}
        gone = {k: f for k, f in self._findings.items() if k not in current}
        silent = {k: side for k, f in gone.items() if (side := silent_side(f.groups(), answering))}
        first_seen = {k: self._first_seen.get(k, (started_wall, started)) for k in (*current, *silent)}
        new = tuple(f for k, f in current.items() if k not in self._findings)
        changed = tuple(f for k, f in current.items() if k in self._findings and self._findings[k] != f)
        resolved = tuple((f, max(0.0, now - self._first_seen[k][1])) for k, f in gone.items() if k not in silent)
        unconfirmed = tuple((gone[k], side) for k, side in silent.items())
        went_silent = tuple((gone[k], side) for k, side in silent.items() if k not in self._unconfirmed)
        states = {s.addr: server_state(s) for s in report.servers}
        servers_changed = tuple(
            ServerChange(addr, self._servers[addr], state) for addr, state in states.items()
            if addr in self._servers and self._servers[addr] != state
        )
        first = self.rounds == 1
        self._first_seen, self._servers = first_seen, states
        self._findings = current | {k: gone[k] for k in silent}
        self._unconfirmed = silent
        return Round(
            self.rounds, started_wall, elapsed, views, report, exit_status(views, report, unknown),
            first_seen, now, new, changed, resolved, unconfirmed, went_silent, servers_changed, first,
            tuple(unknown),
        )
