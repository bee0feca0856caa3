"""One bucket's raw rows -> its rollup rows: what each trace, tool call, model call and score adds.

What counts, deterministic and documented (docs/guides/alert-rules.md):

* a trace counts in the bucket its ``started_at`` falls in, production traffic only (as
  monitors read by default); it *failed* when its status is ``error``; its latency is
  ``ended_at - started_at``;
* its **environment** is the resource's ``deployment.environment.name`` (or the older
  ``deployment.environment``); its **user** the trace's ``user_id``, read at ingest from
  the conventions' user attributes (:mod:`app.ingest.session_ids`); a trace without one
  counts in no user's row;
* **tool calls** are its tool and retrieval steps (:func:`detectors.records.is_tool_step`),
  failed as :func:`detectors.records.step_error` says; **model calls** its ``llm`` steps,
  under ``response_model`` else ``request_model``; its **tokens** and **cost** are its model
  calls' (``total_tokens``, else input + output; the cost sent, else the one the derive job
  computed: :mod:`app.pricing`), and a call with neither counts as **unpriced**;
* it **loops** when the derive job found a tool loop in it (``traces.loop_tool``,
  :mod:`app.derive.loops`: one tool called with the same arguments three times, or again
  unchanged after it failed): the one definition the trace filter, OUTCOME and these
  counts share;
* it is **labeled** when one of its scores is a label by the project's roles; a score
  **passes** at :data:`PASS_AT` or more (the convention of 0/1 and [0, 1] scores).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from detectors.records import Step, is_tool_step, step_error
from detectors.rules import sketch
from detectors.stored_times import epoch_seconds, step_order_key

PASS_AT = 0.5
ENVIRONMENT_KEYS = ("resource.deployment.environment.name", "resource.deployment.environment")
MAX_TEXT = {"agent": 128, "agent_version": 64, "environment": 64, "tool": 128, "model": 128,
            "name": 128, "user_id": 128}  # fmt: skip

Dims = tuple[str, str, str]  # agent, agent_version, environment


@dataclass
class _Sums:
    traces: int = 0
    error_traces: int = 0
    loop_traces: int = 0
    labeled_traces: int = 0
    latencies: list[float] = field(default_factory=list)
    tokens: int = 0
    tokens_sq: float = 0.0
    cost: float = 0.0
    cost_sq: float = 0.0


@dataclass
class _Calls:
    calls: int = 0
    errors: int = 0
    unpriced: int = 0
    latencies: list[float] = field(default_factory=list)
    tokens: int = 0
    tokens_sq: float = 0.0
    cost: float = 0.0
    cost_sq: float = 0.0


@dataclass
class _Scores:
    scores: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    passed: int = 0


@dataclass
class BucketRows:
    """The rows of every rollup table for one (project, bucket)."""

    traces: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    models: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    users: list[dict[str, Any]]


def _text(value: Any, limit: int) -> str:
    return str(value)[:limit] if value is not None else ""


def _first(attrs: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if attrs.get(k) not in (None, ""):
            return attrs[k]
    return None


def _step(s: Mapping[str, Any]) -> Step:
    return Step(0, s.get("kind") or "step", "", status=s.get("status") or "ok",
                tool_name=s.get("tool_name"), error_type=s.get("error_type"),
                attributes=s.get("step_attributes") or {})  # fmt: skip


def _tokens(s: Mapping[str, Any]) -> int:
    if s.get("total_tokens") is not None:
        return int(s["total_tokens"])
    return int(s.get("input_tokens") or 0) + int(s.get("output_tokens") or 0)


def bucket_rows(
    project_id: int, bucket: int, traces: Sequence[Mapping[str, Any]],
    spans: Mapping[str, list[dict[str, Any]]], scores: Mapping[str, list[dict[str, Any]]],
) -> BucketRows:  # fmt: skip
    """The rollup rows of one bucket from its traces, their spans and their scores (by
    trace id); a score row carries ``name``, ``value`` and ``is_label``."""
    per_trace: dict[Dims, _Sums] = defaultdict(_Sums)
    per_tool: dict[tuple[Dims, str], _Calls] = defaultdict(_Calls)
    per_model: dict[tuple[Dims, str], _Calls] = defaultdict(_Calls)
    per_score: dict[tuple[Dims, str], _Scores] = defaultdict(_Scores)
    per_user: dict[str, _Sums] = defaultdict(_Sums)
    for t in traces:
        attrs = t.get("attributes") or {}
        dims = (_text(t["agent"], 128), _text(t["agent_version"], 64),
                _text(_first(attrs, ENVIRONMENT_KEYS), 64))  # fmt: skip
        steps = sorted(spans.get(t["trace_id"], []), key=step_order_key)
        user = t.get("user_id") or None
        tokens, cost = 0, 0.0
        for s in steps:
            step = _step(s)
            if is_tool_step(step):
                c = per_tool[(dims, _text(s.get("tool_name") or s.get("name"), 128))]
                c.calls += 1
                c.errors += step_error(step)
                if s.get("latency_ms") is not None:
                    c.latencies.append(float(s["latency_ms"]))
            elif step.kind == "llm":
                model = _text(s.get("response_model") or s.get("request_model"), 128)
                n, usd = _tokens(s), float(s.get("cost") or 0.0)
                c = per_model[(dims, model)]
                c.calls += 1
                c.errors += step_error(step)
                c.unpriced += s.get("cost") is None
                c.tokens, c.tokens_sq = c.tokens + n, c.tokens_sq + n * n
                c.cost, c.cost_sq = c.cost + usd, c.cost_sq + usd * usd
                tokens, cost = tokens + n, cost + usd
        failed = t.get("status") == "error"
        labeled = False
        for sc in scores.get(t["trace_id"], []):
            agg = per_score[(dims, _text(sc["name"], 128))]
            v = float(sc["value"])
            agg.scores, agg.total, agg.total_sq = (
                agg.scores + 1,
                agg.total + v,
                agg.total_sq + v * v,
            )
            agg.passed += v >= PASS_AT
            labeled = labeled or bool(sc.get("is_label"))
        latency = _latency_ms(t)
        looped = t.get("loop_tool") is not None
        for agg_t in (per_trace[dims], per_user[_text(user, 128)] if user is not None else None):
            if agg_t is None:
                continue
            agg_t.traces += 1
            agg_t.error_traces += failed
            agg_t.loop_traces += looped
            agg_t.labeled_traces += labeled
            agg_t.tokens, agg_t.tokens_sq = agg_t.tokens + tokens, agg_t.tokens_sq + tokens * tokens
            agg_t.cost, agg_t.cost_sq = agg_t.cost + cost, agg_t.cost_sq + cost * cost
            if latency is not None:
                agg_t.latencies.append(latency)
    key = {"project_id": project_id, "bucket": bucket}

    def dim(d: Dims) -> dict[str, Any]:
        return {**key, "agent": d[0], "agent_version": d[1], "environment": d[2]}

    sums = ("tokens", "tokens_sq", "cost", "cost_sq")
    return BucketRows(
        traces=[{**dim(d), "traces": a.traces, "error_traces": a.error_traces,
                 "loop_traces": a.loop_traces, "labeled_traces": a.labeled_traces,
                 "latency_sketch": sketch.encode(a.latencies),
                 **{k: getattr(a, k) for k in sums}} for d, a in per_trace.items()],
        tools=[{**dim(d), "tool": tool, "calls": c.calls, "errors": c.errors,
                "latency_sketch": sketch.encode(c.latencies)}
               for (d, tool), c in per_tool.items()],
        models=[{**dim(d), "model": model, "calls": c.calls, "errors": c.errors,
                 "unpriced_calls": c.unpriced, **{k: getattr(c, k) for k in sums}}
                for (d, model), c in per_model.items()],
        scores=[{**dim(d), "name": name, "scores": s.scores, "total": s.total,
                 "total_sq": s.total_sq, "passed": s.passed}
                for (d, name), s in per_score.items()],
        users=[{**key, "user_id": user, "traces": a.traces, "error_traces": a.error_traces,
                **{k: getattr(a, k) for k in sums}} for user, a in per_user.items()],
    )  # fmt: skip


def _latency_ms(t: Mapping[str, Any]) -> float | None:
    if t.get("started_at") is None or t.get("ended_at") is None:
        return None
    start, end = epoch_seconds(t["started_at"]), epoch_seconds(t["ended_at"])
    return (end - start) * 1000.0 if end >= start else None
