"""Traces with content for the derive bench: what an OTel ``openai-v2`` agent sends.

Each trace is an ``invoke_agent`` span and two chat spans (``span_only`` capture: the
messages as JSON on the spans), the first asking for one or two tools; inputs are drawn
from 60 intents x 3 phrasings with a request time and a session UUID in them, so identity
normalisation, the decision rule and the input groups all do their real work (with
``distinct``, a case number makes every input and answer unique: the encoder's worst
case). Stored through the OTLP receiver's own mapping and write path (``decode_and_map`` +
``write_events`` + ``merge_traces``), as ``/v1/traces`` stores them.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import numpy as np
import orjson
from sqlalchemy import Engine

from app.ingest.store import write_events
from app.models.base import utcnow
from app.otlp.service import JSON, decode_and_map
from app.otlp.traces import merge_traces

_TOPICS = ("order", "refund", "invoice", "delivery", "password", "subscription")
_PHRASINGS = (
    "Where is my {t} number {n}? Asked at {ts}, session {sid}.",
    "Could you tell me the status of {t} {n}? ({ts}, session {sid})",
    "I need help with {t} #{n} please - {ts} / {sid}",
)
_TOOLS = (("lookup_order",), ("lookup_order", "get_customer"), ("search_kb",))
_ANSWERS = ("It ships tomorrow.", "I have issued the refund.", "Please check your inbox.")


def _kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for k, v in attrs.items():
        value = {"arrayValue": {"values": [{"stringValue": x} for x in v]}} if isinstance(
            v, list
        ) else {"stringValue": str(v)}  # fmt: skip
        out.append({"key": k, "value": value})
    return out


def _trace(rng: np.random.Generator, i: int, t0: int, distinct: bool) -> dict[str, Any]:
    trace_id = f"{i + 1:032x}"
    intent = int(rng.integers(60))
    topic, number = _TOPICS[intent % 6], 100 + intent
    text = _PHRASINGS[int(rng.integers(3))].format(
        t=topic, n=number, ts=f"2026-12-01T10:{i % 60:02d}:{i % 59:02d}Z", sid=uuid.UUID(int=i)
    )
    answer = _ANSWERS[int(rng.integers(3))] + f" Reference {topic}-{number}."
    if distinct:  # no text repeats: every input and output costs a forward pass
        text += f" Case {i}."
        answer += f" Case {i}."
    tools = _TOOLS[intent % 3]
    calls = [
        {"type": "tool_call", "id": f"c{k}", "name": n, "arguments": {}}
        for k, n in enumerate(tools)
    ]
    system = {"role": "system", "parts": [{"type": "text", "content": "You are a support agent."}]}
    user = {"role": "user", "parts": [{"type": "text", "content": text}]}
    start = t0 + i * 10**7
    root = f"{2 * i + 1:016x}"

    def span(n: int, name: str, attrs: dict[str, Any], parent: str | None) -> dict[str, Any]:
        s = {"traceId": trace_id, "spanId": f"{4 * i + n + 10**6:016x}" if n else root,
             "name": name, "startTimeUnixNano": str(start + n * 10**6),
             "endTimeUnixNano": str(start + (n + 1) * 10**6), "attributes": _kv(attrs)}  # fmt: skip
        if parent:
            s["parentSpanId"] = parent
        return s

    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"}
    return {
        "spans": [
            span(
                0,
                "invoke_agent support",
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support-agent"},
                None,
            ),  # fmt: skip
            span(
                1,
                "chat gpt-4o-mini",
                {
                    **chat,
                    "gen_ai.response.finish_reasons": ["tool_calls"],
                    "gen_ai.input.messages": orjson.dumps([system, user]).decode(),
                    "gen_ai.output.messages": orjson.dumps(
                        [{"role": "assistant", "parts": calls, "finish_reason": "tool_calls"}]
                    ).decode(),
                },
                root,
            ),  # fmt: skip
            span(
                2,
                "chat gpt-4o-mini",
                {
                    **chat,
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.input.messages": orjson.dumps([system, user]).decode(),
                    "gen_ai.output.messages": orjson.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": answer}],
                                "finish_reason": "stop",
                            }
                        ]
                    ).decode(),
                },
                root,
            ),  # fmt: skip
        ]
    }


def store_traces(
    engine: Engine,
    *,
    project_id: int,
    n: int,
    distinct: bool = False,
    seed: int = 0,
    per_request: int = 100,
) -> None:
    """Store ``n`` traces as the OTLP receiver would, ``per_request`` traces per export;
    ``distinct``: every input and output text differs (else intents and answers repeat)."""
    rng = np.random.default_rng(seed)
    t0 = int((utcnow() - timedelta(hours=1)).timestamp() * 1e9)
    for first in range(0, n, per_request):
        spans = [
            s
            for i in range(first, min(n, first + per_request))
            for s in _trace(rng, i, t0, distinct)["spans"]
        ]
        body = orjson.dumps({"resourceSpans": [{
            "resource": {"attributes": _kv({"service.name": "support-service"})},
            "scopeSpans": [{"spans": spans}]}]})  # fmt: skip
        mapped = decode_and_map(body, wire=JSON, max_spans=10**6)

        def merge(conn: Any, counts: Any, rows: list[dict[str, Any]] = mapped.traces) -> None:
            merge_traces(conn, project_id=project_id, rows=rows, span_counts=counts)

        write_events(engine, project_id=project_id, events=mapped.events, also=merge,
                     merged_traces={t["trace_id"] for t in mapped.traces})  # fmt: skip
