"""Is a ``-t`` topic or ``-c`` cluster filter known to any name server at all?

A filter naming something no server holds compares nothing, and "nothing differs" would
then read as an all-clear: ``-t Payments`` for ``payments`` must be a bad-input error,
not "0 topics, the servers agree". This is not a finding: a topic that *some* servers
know is a disagreement and compare.py reports it as one.

Pure, like the rest of the package. Only servers that answered (``view.ok``) count, and
a name is unknown only when every one of them gave a definite answer (the absence rule
of model.py): a server whose route or cluster question failed may know the name, so the
run is then partial (exit 3) rather than a false "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from mqnamesrv.protocol.bodies import ClusterInfo

from .model import ServerView

TOPIC, CLUSTER = "topic", "cluster"


@dataclass(frozen=True, slots=True)
class UnknownName:
    """A filter value that no answering server knows, with a near miss if there is one."""

    kind: str  # TOPIC or CLUSTER
    name: str
    #: a name the servers do know that differs only in case (the usual typo)
    suggestion: str | None = None

    @property
    def message(self) -> str:
        """One line, worded like clusterList's ``no cluster 'X'``."""
        text = f"no name server knows {self.kind} {self.name!r}"
        return text + (f" (did you mean {self.suggestion!r}?)" if self.suggestion else "")


def unknown_names(views: Sequence[ServerView], *, topics: Iterable[str] | None = None,
                  cluster: str | None = None) -> tuple[UnknownName, ...]:
    """The asked ``topics`` (in order) and ``cluster`` that no answering server knows,
    with suggestions from the names these views hold. Empty when no server answered:
    that is an error of its own."""
    answering = [v for v in views if v.ok]
    if not answering:
        return ()
    out = [UnknownName(TOPIC, t) for t in dict.fromkeys(topics or ()) if _topic_unknown(answering, t)]
    if cluster is not None and _cluster_unknown(answering, cluster):
        out.append(UnknownName(CLUSTER, cluster))
    return with_suggestions(out, answering)


def with_suggestions(unknown: Iterable[UnknownName], views: Iterable[ServerView]) -> tuple[UnknownName, ...]:
    """``unknown`` with a suggestion from the names ``views`` hold, where one has none yet.

    The CLI's views only hold what the filters selected, so when something is unknown it
    asks for the unfiltered topic list and cluster info and passes those views here."""
    views = list(views)
    candidates = {TOPIC: sorted(topic_names(views)), CLUSTER: sorted(cluster_names(views))}
    return tuple(
        u if u.suggestion is not None else replace(u, suggestion=suggest(u.name, candidates[u.kind]))
        for u in unknown
    )


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The first candidate equal to ``name`` but for case; None when there is none."""
    folded = name.casefold()
    return next((c for c in candidates if c != name and c.casefold() == folded), None)


def topic_names(views: Iterable[ServerView]) -> set[str]:
    """Every topic the views list or hold a route for."""
    names: set[str] = set()
    for v in views:
        names.update(v.topic_list or ())
        names.update(t for t, route in v.topics.items() if route is not None)
    return names


def cluster_names(views: Iterable[ServerView]) -> set[str]:
    """Every cluster named in the views' cluster info (member lists and brokers)."""
    names: set[str] = set()
    for v in views:
        if v.cluster_info is not None:
            names.update(_clusters(v.cluster_info))
    return names


def _topic_unknown(answering: Sequence[ServerView], topic: str) -> bool:
    # Unknown = not listed anywhere, and every server answered TOPIC_NOT_EXIST for it
    # (``topics[t] = None``); a missing key is a failed question, which proves nothing.
    return all(topic in v.topics and v.topics[topic] is None and topic not in (v.topic_list or ())
               for v in answering)


def _cluster_unknown(answering: Sequence[ServerView], cluster: str) -> bool:
    return all(v.cluster_info is not None and cluster not in _clusters(v.cluster_info) for v in answering)


def _clusters(info: ClusterInfo) -> set[str]:
    return set(info.cluster_addr_table) | {b.cluster for b in info.broker_addr_table.values()}
