"""What one request's spans say about their traces: the agent, session and user, telltale.*
fields, status.

Split from :mod:`app.otlp.mapping` (which maps each span); the rows built here are merged
into the stored trace rows by :mod:`app.otlp.traces`, in any arrival order.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from app.ingest.events import SOURCES
from app.ingest.session_ids import SESSION_KEYS, USER_KEYS, first_id
from app.otlp.decode import DecodedSpan


def _text(value: Any, limit: int) -> str | None:
    if value is None or value == "":
        return None
    return str(value)[:limit]


_TRACE_FIELDS = (
    ("input_hash", "telltale.input_hash", 128),
    ("entry_point", "telltale.entry_point", 128),
    ("counterfactual_of", "telltale.counterfactual_of", 64),
)
# The session and user (app/sessions/attributes.py): the root span's win, other spans' fill
# a gap, as the telltale.* fields; a span's own attribute beats its resource's.
_ID_FIELDS = (("session_id", SESSION_KEYS, 0), ("user_id", USER_KEYS, 1))
# One set test tells most spans (no such key) apart: a third of the cost of the lookups.
_ID_KEYS = frozenset(SESSION_KEYS + USER_KEYS)
NO_IDS: tuple[str | None, str | None] = (None, None)
# Trace attributes the detectors read (detectors/records.py).
_TRACE_ATTRIBUTES = (("decision", "telltale.decision"), ("task_type", "telltale.task_type"))
# Where the trace's agent comes from, best first; within one, the earliest start wins
# (an outer agent starts before the agents it calls). Merged across requests by the
# stored ``otel.agent_key`` (app.otlp.traces).
_AGENT_SPAN, _WORKFLOW_SPAN, _ROOT_SERVICE, _SERVICE = range(4)


def agent_identity(sp: DecodedSpan, kind: str) -> tuple[int, str, str]:
    """``(preference, name, version)``: an agent span's own name (``gen_ai.agent.name``,
    OpenInference ``agent.name`` or the AGENT span's name, OpenLLMetry
    ``traceloop.entity.name``), an OpenLLMetry workflow's name, else ``service.name``."""
    attrs, res = sp.attributes, sp.resource
    version = (
        attrs.get("gen_ai.agent.version")
        or attrs.get("telltale.agent_version")
        or res.get("telltale.agent_version")
        or res.get("service.version")
        or ""
    )
    name: Any = attrs.get("gen_ai.agent.name") or attrs.get("agent.name")
    tl_kind = attrs.get("traceloop.span.kind")
    if name is None and tl_kind in ("agent", "workflow"):
        name = attrs.get("traceloop.entity.name")
    if name is None and kind == "agent" and "openinference.span.kind" in attrs:
        name = sp.name
    if name:
        preference = _WORKFLOW_SPAN if tl_kind == "workflow" else _AGENT_SPAN
        return preference, str(name)[:128], str(version)[:64]
    preference = _ROOT_SERVICE if sp.parent_span_id is None else _SERVICE
    return preference, str(res.get("service.name") or "")[:128], str(version)[:64]


def given(key: str, attrs: dict[str, Any], res: dict[str, Any]) -> Any:
    # A span's own telltale.* value beats its resource's (OTEL_RESOURCE_ATTRIBUTES).
    value = attrs.get(key)
    return res.get(key) if value is None else value


class TraceAcc:
    """What one request says about one trace; merged into the stored row by traces.py."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.started: datetime | None = None
        self.ended: datetime | None = None
        self.failed = False
        # rank 2: the root span is here; 1: an agent span; 0: only other spans.
        self.rank = -1
        self.agent_rank: tuple[int, int, str] | None = None
        self.agent = ""
        self.agent_version = ""
        self.fields: dict[str, Any] = {}
        self.source: str | None = None
        self.attributes: dict[str, Any] = {}
        self.has_resource = False

    def add(
        self,
        sp: DecodedSpan,
        kind: str,
        failed: bool,
        started: datetime | None,
        ended: datetime | None,
        *,
        telltale: bool = True,
        resource_ids: tuple[str | None, str | None] = NO_IDS,
    ) -> str | None:
        """Fold one span in; ``telltale=False`` says neither the span nor its resource has a
        ``telltale.*`` attribute, so the trace fields they could set are not looked up;
        ``resource_ids`` is the session and user its resource names (read once a resource).
        Returns what the request's answer should say about a value it ignored, else None."""
        if started is not None and (self.started is None or started < self.started):
            self.started = started
        if ended is not None and (self.ended is None or ended > self.ended):
            self.ended = ended
        is_root = sp.parent_span_id is None
        if failed and (is_root or kind == "agent"):
            self.failed = True
        self.rank = max(self.rank, 2 if is_root else 1 if kind == "agent" else 0)
        attrs, res = sp.attributes, sp.resource
        best = self.agent_rank
        # An agent span's claim starting before this span cannot lose to it: most spans of
        # a trace start after its agent span, and skip agent_identity().
        if best is None or best[0] != _AGENT_SPAN or sp.start_ns <= best[1]:
            preference, agent, version = agent_identity(sp, kind)
            key = (preference, sp.start_ns, sp.span_id)
            if agent and (best is None or key < best):
                self.agent_rank, self.agent, self.agent_version = key, agent, version
                agent_id = attrs.get("gen_ai.agent.id")
                if agent_id is not None:
                    self.attributes["gen_ai.agent.id"] = str(agent_id)[:128]
        if not self.has_resource:
            self.has_resource = True
            self.attributes.update({f"resource.{k}": v for k, v in res.items()})
        if resource_ids is not NO_IDS or not _ID_KEYS.isdisjoint(attrs):
            self._take_ids(attrs, resource_ids, is_root)
        if not telltale:
            return None
        # given(), inlined: this runs for every span that carries a telltale.* key.
        for column, name, limit in _TRACE_FIELDS:
            value = attrs.get(name)
            if value is None:
                value = res.get(name)
            if value is not None and (is_root or column not in self.fields):
                self.fields[column] = _text(value, limit)
        for column, name in _TRACE_ATTRIBUTES:
            value = attrs.get(name)
            if value is None:
                value = res.get(name)
            if value is not None and (is_root or column not in self.attributes):
                self.attributes[column] = value
        source = given("telltale.source", attrs, res)
        if source is None:
            return None
        if source not in SOURCES:
            return f"span {sp.span_id}: telltale.source must be one of {SOURCES}; ignored"
        self.source = source
        return None

    def _take_ids(
        self, attrs: dict[str, Any], resource_ids: tuple[str | None, str | None], is_root: bool
    ) -> None:
        for column, keys, i in _ID_FIELDS:
            if is_root or column not in self.fields:
                value = first_id(attrs, keys) or resource_ids[i]
                if value is not None:
                    self.fields[column] = value

    @property
    def agent_key(self) -> str:
        """The stored form of the best agent source seen: ``preference:start:span_id``,
        compared as text when requests are merged (app.otlp.traces)."""
        if self.agent_rank is None:
            return ""
        preference, start_ns, span_id = self.agent_rank
        return f"{preference}:{start_ns:020d}:{span_id}"

    def row(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "agent": self.agent,
            "agent_version": self.agent_version,
            "started_at": self.started,
            "ended_at": self.ended,
            "status": "error" if self.failed else "ok",
            "input_hash": self.fields.get("input_hash"),
            "entry_point": self.fields.get("entry_point"),
            "counterfactual_of": self.fields.get("counterfactual_of"),
            "session_id": self.fields.get("session_id"),
            "user_id": self.fields.get("user_id"),
            "source": self.source,
            "attributes": {**self.attributes, "otel.agent_key": self.agent_key},
            "rank": self.rank,
        }
