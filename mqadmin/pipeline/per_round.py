"""One round's capture files in, its *captures* rows and its divergence outcomes out: the
Python half of the job's round pass (``mapInArrow`` over the capture files, shuffled so
that the files of one round directory arrive together).

Every file of the round is parsed once (flatten.py); each distinct route is decoded and
canonicalized once per worker (flatten.Templates). Per topic, each answering server has
*facts*: route asked, the canonical key of its route, listed, ORDER_TOPIC_CONFIG value.
Where every answering server has the same facts, the views ``diff_views`` would compare
for that topic are equal and it finds nothing, so the topic agrees without a call. The
other topics are rebuilt as routes rows and given to the diff module
(rules.topic_outcome), as are the cluster-wide parts (rules.cluster_outcome): the answer
is ``diff-namesrv``'s by construction, which the parity test checks. A round in which
every server answered byte-identical topics, topic list and ORDER_TOPIC_CONFIG needs not
even the per-topic comparison.

Agreeing topics leave as one list per round (``agreed``), exploded by Spark, so what the
job keeps cached from this pass stays small: a row per file, per finding and per round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa

from nameserver.protocol.codes import ORDER_TOPIC_CONFIG

from . import flatten, rules
from .flatten import Parsed, Templates

AGREED = pa.struct([("round", pa.int32()), ("topics", pa.list_(pa.string()))])
#: One of the three is set per row: a captures row, an OUTCOME row (a topic that
#: differs, or a round's cluster-wide comparison), or a round's agreeing topics.
ROUND_OUT = pa.schema([
    ("capture", pa.struct(list(flatten.CAPTURES))),
    ("outcome", pa.struct(list(rules.OUTCOME))),
    ("agreed", AGREED),
])
#: Per-topic fields of a routes row; the rest come from the route's template rows.
_TOPIC_FIELDS = ("server", "asked", "listed", "order_conf_kv")

Fact = tuple[bool, bytes | None, bool | None, str | None]


@dataclass
class _Server:
    """One answering server of the round."""

    capture: dict[str, Any]  # its captures row
    parsed: Parsed
    entries: dict[str, flatten.RouteTemplate]  # topic -> template of the route it gave
    facts: dict[str, Fact] = field(default_factory=dict)

    def compute_facts(self) -> None:
        view = self.parsed.view
        topic_list = view.get("topic_list")
        listed = None if topic_list is None else set(topic_list)
        order_ns = (view.get("kv") or {}).get(ORDER_TOPIC_CONFIG) or {}

        def fact(topic: str, entry: flatten.RouteTemplate | None) -> Fact:
            return (entry is not None, None if entry is None else entry.key,
                    None if listed is None else topic in listed, order_ns.get(topic))

        self.facts = {topic: fact(topic, entry) for topic, entry in self.entries.items()}
        for topic in flatten.extra_topics(self.entries, topic_list, listed, order_ns):
            self.facts[topic] = fact(topic, None)


def _same_answers(a: Parsed, b: Parsed) -> bool:
    """Byte-identical topics (names and raw routes, in order), topic list and
    ORDER_TOPIC_CONFIG: every topic has the same facts on both."""
    return (a.topics == b.topics and a.view.get("topic_list") == b.view.get("topic_list")
            and (a.view.get("kv") or {}).get(ORDER_TOPIC_CONFIG) == (b.view.get("kv") or {}).get(ORDER_TOPIC_CONFIG))


def _same_content(a: Parsed, b: Parsed) -> bool:
    """Both answered, with byte-identical topics, topic list and cluster info: the same
    content hash."""
    return (a.header["ok"] and b.header["ok"] and a.topics == b.topics
            and a.view.get("topic_list") == b.view.get("topic_list")
            and a.view.get("cluster_info") == b.view.get("cluster_info"))


def _topics_of(parsed: Parsed) -> list[str]:
    """The topics that have routes rows in this capture (flatten.routes_batch)."""
    view = parsed.view
    names = [topic for topic, _ in parsed.topics]
    topic_list = view.get("topic_list")
    order_ns = (view.get("kv") or {}).get(ORDER_TOPIC_CONFIG)
    return names + flatten.extra_topics(names, topic_list, None if topic_list is None else set(topic_list), order_ns)


def compare_topics(round_no: int, servers: Sequence[_Server], templates: Templates, consumers: int,
                   strategy: str) -> tuple[list[str], list[dict[str, Any]]]:
    """(agreeing topics, OUTCOME rows of the others) of one round; ``servers``: those
    that answered, in address order."""
    if not servers:
        return [], []
    if all(_same_answers(servers[0].parsed, s.parsed) for s in servers[1:]):
        return _topics_of(servers[0].parsed), []
    for server in servers:
        server.compute_facts()
    agreed: list[str] = []
    differing: list[str] = []
    for topic in dict.fromkeys(t for s in servers for t in s.facts):
        facts = [s.facts.get(topic) for s in servers]
        (agreed if facts[0] is not None and facts.count(facts[0]) == len(facts) else differing).append(topic)
    if not differing:
        return agreed, []
    info = [{"server": s.capture["server"], "has_topic_list": s.capture["has_topic_list"],
             "has_order_ns": any(ns == ORDER_TOPIC_CONFIG for ns, _ in s.capture["kv"] or ())} for s in servers]
    groups = _routes_rows(differing, servers, templates)
    return agreed, [rules.topic_outcome({"round": round_no, "topic": topic, "servers": info, "rows": groups[topic]},
                                        consumers, strategy) for topic in differing]


def _routes_rows(topics: Sequence[str], servers: Sequence[_Server], templates: Templates
                 ) -> dict[str, list[dict[str, Any]]]:
    """The routes rows (rules.topic_views' input) of ``topics`` on every server, as
    flatten.routes_batch would write them and Spark would hand them back."""
    heads: list[tuple[str, dict[str, Any]]] = []
    template_rows: list[int] = []
    for topic in topics:
        for s in servers:
            fact = s.facts.get(topic)
            if fact is None:
                continue
            entry = s.entries.get(topic)
            first, count = (0, 1) if entry is None else (entry.first, entry.count)  # row 0: no route
            head = dict(zip(_TOPIC_FIELDS, (s.capture["server"], fact[0], fact[2], fact[3])))
            heads.extend((topic, head) for _ in range(count))
            template_rows.extend(range(first, first + count))
    rows: dict[str, list[dict[str, Any]]] = {topic: [] for topic in topics}
    for (topic, head), route in zip(heads, templates.table().take(pa.array(template_rows, pa.int64())).to_pylist()):
        rows[topic].append(head | route)
    return rows


def round_time(files: Sequence[tuple[str, int | None, Parsed | str]]) -> int | None:
    """The capture time of a round directory's readable files (one value, written by the
    same round), None when none is readable."""
    return min((int(p.header["captured_ms"]) for _, _, p in files if isinstance(p, Parsed)), default=None)


def round_batch(files: Sequence[tuple[str, int | None, Parsed | str]], consumers: int, strategy: str,
                templates: Templates | None = None) -> pa.RecordBatch:
    """ROUND_OUT rows of the files of one round directory: (path, mtime ms, Parsed or
    why it is unreadable) each. An unreadable file takes the time of its round, so that
    its row sits on the round's date; in a round with no readable file it keeps its
    mtime (a copy's is the time of the copy), and makes no round (tables.rounds)."""
    templates = templates or flatten.shared_templates()
    templates.trim()  # here only: the template indices of the whole round must stay valid
    out: list[dict[str, Any]] = []
    servers: list[_Server] = []
    started = round_time(files)
    for path, mtime, parsed in files:
        if isinstance(parsed, str):
            out.append({"capture": flatten.unreadable_row(path, mtime if started is None else started, parsed)})
            continue
        entries = {topic: entry for (topic, _), entry in zip(parsed.topics, templates.of(parsed))}
        # Servers that agree answered the same bytes, and the content hash covers only
        # routes, topic list and cluster info: hash such an answer once per round.
        same = next((s for s in servers if _same_content(s.parsed, parsed)), None)
        capture = flatten.capture_row(parsed, path, entries=entries,
                                      known_hash=None if same is None else same.capture["content_hash"])
        out.append({"capture": capture})
        servers.append(_Server(capture, parsed, entries))
    rounds: dict[int, list[_Server]] = {}
    for server in servers:
        rounds.setdefault(server.capture["round"], []).append(server)
    for round_no, members in sorted(rounds.items()):
        members.sort(key=lambda s: s.capture["server"])
        cluster = rules.cluster_outcome({"round": round_no, "captures": [s.capture for s in members]},
                                        consumers, strategy)
        agreed, differing = compare_topics(round_no, [s for s in members if s.capture["ok"]], templates, consumers,
                                           strategy)
        out.append({"outcome": cluster})
        out.extend({"outcome": row} for row in differing)
        if agreed:
            out.append({"agreed": {"round": round_no, "topics": agreed}})
    return pa.RecordBatch.from_pylist(out, schema=ROUND_OUT)


def map_rounds(from_ms: int | None, to_ms: int | None, consumers: int, strategy: str) -> Any:
    """The ``mapInArrow`` function of the round pass: binaryFile batches sorted by round
    directory in, ROUND_OUT out, one batch per directory."""
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current: str | None = None
        files: list[tuple[str, int | None, Parsed | str]] = []
        for path, mtime, parsed in flatten.parse_files(batches, from_ms, to_ms, with_captures=True):
            directory = path.rsplit("/", 1)[0]
            if directory != current and files:
                yield round_batch(files, consumers, strategy)
                files = []
            current = directory
            files.append((path, mtime, parsed))
        if files:
            yield round_batch(files, consumers, strategy)
    return run
