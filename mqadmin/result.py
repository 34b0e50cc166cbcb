"""The common result of every admin command: steps, per-target outcomes, agreement, status.

A ``Result`` is a list of ``Step``s (one request sent to a set of targets). Each step
keeps one ``Outcome`` per target, in the order the targets were given. Answers are
held as plain JSON-able data (``to_data`` of the command), canonical (sorted) so that
equal server states compare equal; grouping equal answers is what tells an operator
whether the name servers agree. Rendering lives in ``render/output.py``; this module only
decides what happened and which exit status that earns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from mqnamesrv.protocol.codes import code_name

from .errors import NameServerError, ServerFailure, Skipped
from .exit import ExitStatus
from .transport.fanout import Answer, OkOrFailure

#: Step kinds. ``read``: answers are compared and decide the exit status; ``write``: every
#: target must succeed; ``lookup``: a read that only finds the targets of later steps
#: (its disagreement is a warning); ``probe``: best-effort extra data, never an error.
READ, WRITE, LOOKUP, PROBE = "read", "write", "lookup", "probe"

#: version of the JSON/YAML document ``Result.to_json()``; bumped on incompatible changes
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Outcome(OkOrFailure):
    """One target's part of a step: its answer as data, or its error."""

    addr: str
    data: Any = None
    error: ServerFailure | None = None
    latency_ms: float = 0.0
    #: the broker name when the target is a broker
    broker_name: str | None = None

    @property
    def absent(self) -> bool:
        """A definitive "no such thing" answer, compared like a value."""
        return self.error is not None and self.error.absent

    @property
    def compared(self) -> bool:
        return self.ok or self.absent

    def to_json(self, group: int | None = None) -> dict[str, Any]:
        return {
            "addr": self.addr,
            "broker_name": self.broker_name,
            "ok": self.ok,
            "answered": self.answered,
            "latency_ms": self.latency_ms,
            "answer": self.data if self.ok else None,
            "error": None if self.error is None else error_json(self.error),
            "group": group,
        }


def error_json(error: ServerFailure) -> dict[str, Any]:
    """``{type, code, name, remark, message}``; code/name/remark only for error answers."""
    coded = error if isinstance(error, NameServerError) else None
    return {
        "type": error.kind,
        "code": None if coded is None else int(coded.code),
        "name": None if coded is None else coded.code_name,
        "remark": None if coded is None else coded.remark,
        "message": error.message,
    }


@dataclass(frozen=True, slots=True)
class Group:
    """Targets that gave the same answer (or all said "not found": ``absent``)."""

    servers: tuple[str, ...]
    data: Any
    absent: bool
    #: one of the negative answers, for messages
    error: ServerFailure | None = None

    def to_json(self) -> dict[str, Any]:
        return {"servers": list(self.servers), "absent": self.absent}


def group_outcomes(outcomes: Sequence[Outcome], same: Callable[[Any], Any] | None = None) -> list[Group]:
    """Equal answers together, largest group first (ties: first seen first). ``same``
    gives the part of an answer that is compared (all of it by default)."""
    key = same or (lambda data: data)
    groups: list[tuple[list[str], Any, bool, ServerFailure | None]] = []
    for o in outcomes:
        if not o.compared:
            continue
        for servers, data, absent, _ in groups:
            if absent == o.absent and (absent or key(data) == key(o.data)):
                servers.append(o.addr)
                break
        else:
            groups.append(([o.addr], o.data, o.absent, o.error))
    ordered = sorted(enumerate(groups), key=lambda ig: (-len(ig[1][0]), ig[0]))
    return [Group(tuple(s), d, a, e) for _, (s, d, a, e) in ordered]


@dataclass
class Step:
    """One request (``request`` = its RequestCode) sent to a set of targets."""

    request: int
    kind: str
    outcomes: list[Outcome]
    target: str = "namesrv"
    #: why the step was not sent (its outcomes then carry Skipped errors)
    skipped: str | None = None
    #: how render/output.py shows it (a render.output.ReadTable or WriteTable); not part of the data
    table: Any = None
    #: the part of an answer compared across servers (getNamesrvConfig leaves per-host paths out)
    same: Callable[[Any], Any] | None = None

    @classmethod
    def from_answers(
        cls,
        request: int,
        kind: str,
        answers: Mapping[str, Answer[Any]],
        to_data: Callable[[Any], Any] = lambda v: v,
        *,
        target: str = "namesrv",
        broker_names: Mapping[str, str] | None = None,
        table: Any = None,
        same: Callable[[Any], Any] | None = None,
    ) -> Step:
        names = broker_names or {}
        outcomes = [
            Outcome(a.addr, to_data(a.value) if a.ok else None, a.error, a.latency_ms, names.get(a.addr))
            for a in answers.values()
        ]
        return cls(request, kind, outcomes, target, table=table, same=same)

    @classmethod
    def not_sent(
        cls, request: int, kind: str, addrs: Sequence[str], reason: str, *, target: str = "namesrv",
        broker_names: Mapping[str, str] | None = None, table: Any = None,
    ) -> Step:
        """A step skipped on purpose: every target gets a Skipped error with ``reason``."""
        names = broker_names or {}
        outcomes = [Outcome(a, error=Skipped(a, request, reason), broker_name=names.get(a)) for a in addrs]
        return cls(request, kind, outcomes, target, skipped=reason, table=table)

    @property
    def groups(self) -> list[Group]:
        return group_outcomes(self.outcomes, self.same)

    @property
    def failed(self) -> list[Outcome]:
        """Targets that failed (a "not found" answer is an answer, not a failure)."""
        return [o for o in self.outcomes if not o.compared]

    def read_status(self) -> ExitStatus:
        groups = self.groups
        if not groups:
            return ExitStatus.ERROR
        if len(groups) > 1:
            return ExitStatus.DISAGREE
        if self.failed:
            return ExitStatus.PARTIAL
        return ExitStatus.ERROR if groups[0].absent else ExitStatus.OK

    def agreement_json(self) -> dict[str, Any] | None:
        if self.kind not in (READ, LOOKUP):
            return None
        groups = self.groups
        return {
            "agree": len(groups) == 1,
            "compared": sum(len(g.servers) for g in groups),
            "total": len(self.outcomes),
            "groups": [g.to_json() for g in groups],
        }

    def to_json(self) -> dict[str, Any]:
        compared = self.kind in (READ, LOOKUP)
        index = {addr: i for i, g in enumerate(self.groups) for addr in g.servers} if compared else {}
        return {
            "request": code_name(self.request),
            "code": int(self.request),
            "target": self.target,
            "kind": self.kind,
            "skipped": self.skipped,
            "servers": [o.to_json(index.get(o.addr)) for o in self.outcomes],
            "agreement": self.agreement_json(),
        }


def write_status(steps: Sequence[Step]) -> ExitStatus:
    """0 when every target of every write succeeded, 1 when none did, else 3."""
    outcomes = [o for s in steps for o in s.outcomes]
    if all(o.ok for o in outcomes):
        return ExitStatus.OK
    return ExitStatus.ERROR if not any(o.ok for o in outcomes) else ExitStatus.PARTIAL


@dataclass
class Result:
    """What a command did. ``error`` is a command-level failure (forces exit 1);
    ``warnings`` are command-level doubts for stderr that change neither the exit
    status nor the JSON document."""

    command: str
    args: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: Ctrl-C ended it: the steps say what was done, and the status is INTERRUPTED
    interrupted: bool = False

    def step(self, request: int) -> Step | None:
        return next((s for s in self.steps if s.request == request), None)

    @property
    def status(self) -> ExitStatus:
        if self.interrupted:
            return ExitStatus.INTERRUPTED
        if self.error is not None:
            return ExitStatus.ERROR
        writes = [s for s in self.steps if s.kind == WRITE]
        if writes:
            return write_status(writes)
        reads = [s for s in self.steps if s.kind == READ]
        return reads[0].read_status() if reads else ExitStatus.OK

    @property
    def answer(self) -> Any:
        """The agreed answer of the read, when there is exactly one and it is a value."""
        read = next((s for s in self.steps if s.kind == READ), None)
        groups = read.groups if read is not None else []
        return groups[0].data if len(groups) == 1 and not groups[0].absent else None

    def to_json(self) -> dict[str, Any]:
        status = self.status
        return {
            "schema_version": SCHEMA_VERSION,
            "command": self.command,
            "args": self.args,
            "status": status.name.lower(),
            "exit_status": int(status),
            "error": self.error,
            "answer": self.answer,
            "steps": [s.to_json() for s in self.steps],
        }
