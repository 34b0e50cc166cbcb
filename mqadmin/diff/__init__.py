"""Pure comparison of name-server answers and its impact on clients (``diff-namesrv``).

No I/O: the CLI feeds it live answers, the Spark job feeds it captured ones, per
(capture time, topic) group, and both get the same findings. See model.py for the
absence rule and the JSON schema of every result.
"""

from .canonical import (
    CanonicalView, canonical_cluster, canonical_route, canonicalize, content_hash, hash_canonical, route_from_key,
    route_key,
)
from .compare import compare
from .filters import UnknownName, suggest, unknown_names, with_suggestions
from .impact import (
    EXACT_LIMIT, STRATEGIES, allocate_averagely, allocate_by_circle, consumer_queues, impact, producer_queues,
)
from .impact_model import (
    BrokerShare, ConsumerAssignment, ConsumerImpact, ProducerImpact, ProducerView, Queue, TopicImpact, queue_label,
)
from .model import KINDS, PRESENT, SCHEMA_VERSION, DiffReport, Finding, Kind, ServerSummary, ServerView, Value
from .report import diff_views, summarize

__all__ = [
    "BrokerShare", "CanonicalView", "ConsumerAssignment", "ConsumerImpact", "DiffReport", "EXACT_LIMIT", "Finding",
    "KINDS", "Kind", "PRESENT", "ProducerImpact", "ProducerView", "Queue", "SCHEMA_VERSION", "STRATEGIES",
    "ServerSummary", "ServerView", "TopicImpact", "UnknownName", "Value", "allocate_averagely", "allocate_by_circle",
    "canonical_cluster", "canonical_route", "canonicalize", "compare", "consumer_queues", "content_hash",
    "diff_views", "hash_canonical", "impact", "producer_queues", "queue_label", "route_from_key", "route_key",
    "suggest", "summarize", "unknown_names", "with_suggestions",
]
