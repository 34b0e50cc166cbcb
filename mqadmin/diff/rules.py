"""The two judgements that the live watcher (watch.py) and the Spark job (mqadmin/pipeline)
both make about a difference, stated once so that they cannot drift apart:

* **majority**: which group of servers holds the value taken as intended, and so which
  servers differ (the pipeline's ``differing`` column and windows' ``servers``);
* **silent side**: a difference that is gone only because every server of one side of it
  stopped answering is *unconfirmed*, not resolved: nobody knows what that side holds now
  (the watcher's ``unconfirmed``; the pipeline's bridged rounds, SCHEMA.md "Silent
  servers"). It goes on, with its first-seen time, if it is seen again once that side
  answers; it ended where the side went silent if it is not.

The Spark job's windows call silent_side too (mqadmin/pipeline/topics.py, with every group
of the last disagreement's findings, as the watcher); tests/pipeline/test_rule_parity.py
runs the same scenarios through the watcher and the job and requires the same windows.

Pure: servers are addresses, a difference is its groups of servers (``Finding.groups``).
"""

from __future__ import annotations

from typing import Collection, Iterable, Sequence

from .model import Finding, Value

#: (value, servers) per distinct value of one finding, in order of first appearance
Groups = Sequence[tuple[Value, Sequence[str]]]


def majority(groups: Groups) -> int:
    """The index of the majority group: the largest; on a tie, the group that has the item
    (a lost registration is likelier than an extra one), then the group seen first."""
    return max(range(len(groups)), key=lambda i: (len(groups[i][1]), groups[i][0] is not None, -i))


def differing_servers(findings: Iterable[Finding]) -> list[str]:
    """Servers outside the majority of at least one finding, sorted."""
    odd: set[str] = set()
    for f in findings:
        groups = f.groups()
        best = majority(groups)
        for i, (_, servers) in enumerate(groups):
            if i != best:
                odd.update(servers)
    return sorted(odd)


def silent_side(groups: Groups, answering: Collection[str]) -> tuple[str, ...]:
    """The servers of the first side (group) of a difference of which none is among
    ``answering``; () when every side still has a server answering, so that the others'
    agreement is real."""
    for _, servers in groups:
        if not any(s in answering for s in servers):
            return tuple(servers)
    return ()
