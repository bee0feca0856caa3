"""The derive job's pricing step: each settled trace's LLM calls without a cost, priced and
written in the job's write transaction (:mod:`app.derive.job`).

Why there, not at ingest: the derive job already reads every settled trace's spans with
their attributes and each project's settings in one batch, outside the ingest path whose
cost per span is measured; a project's prices are one read per batch here, where the
receiver would need them per request (or a cache that a price change outlives); and the
rollups count a trace only once the derive job marks its bucket, in the same transaction,
so no rollup ever counts a call before its cost lands. A trace that grows is derived again
and only its new calls are priced (:func:`app.pricing.calls.needs_price`).

On PostgreSQL ``spans`` is partitioned by day of ``started_at``: the update names it, so
each row is found in its own partition's key index, not probed for in every day's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, update

from app.models import Span
from app.pricing.calls import needs_price, price_call
from app.pricing.overrides import ProjectPrices

Key = tuple[int, str]

_SET: dict[str, Any] = {"cost": bindparam("b_cost"), "cost_source": bindparam("b_cost_source")}
_BY_KEY = (Span.project_id == bindparam("b_project"), Span.trace_id == bindparam("b_trace"),
           Span.span_id == bindparam("b_span"))  # fmt: skip
_STARTED = (
    update(Span)
    .where(*_BY_KEY, Span.started_at == bindparam("b_started", type_=Span.started_at.type))
    .values(**_SET)
)
_NO_START = update(Span).where(*_BY_KEY, Span.started_at.is_(None)).values(**_SET)


def batch_costs(
    traces: Sequence[Mapping[str, Any]],
    spans: Mapping[Key, Sequence[Mapping[str, Any]]],
    prices: Mapping[int, ProjectPrices],
) -> list[dict[str, Any]]:
    """One update row per LLM span of ``traces`` that has no cost and was never priced."""
    rows = []
    for t in traces:
        key = (t["project_id"], t["trace_id"])
        for s in spans.get(key, ()):
            if not needs_price(s):
                continue
            cost, source = price_call(s, prices[t["project_id"]])
            rows.append({"b_project": key[0], "b_trace": key[1], "b_span": s["span_id"],
                         "b_started": s.get("started_at"), "b_cost": cost,
                         "b_cost_source": source})  # fmt: skip
    return rows


def write_costs(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    started = [r for r in rows if r["b_started"] is not None]
    no_start = [{k: v for k, v in r.items() if k != "b_started"} for r in rows
                if r["b_started"] is None]  # fmt: skip
    if started:
        conn.execute(_STARTED, started)
    if no_start:
        conn.execute(_NO_START, no_start)
