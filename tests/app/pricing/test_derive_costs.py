"""The derive job prices the LLM calls sent without a cost, once; the rollups, rules' cost
metric and the API read the computed cost; calls it cannot price are counted and named."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from app.models import ModelRollup, Span, Trace, TraceRollup, UserRollup
from app.pricing.table import shipped_table
from app.rollups.buckets import BUCKET_SECONDS, bucket_of
from app.rollups.series import read_series
from detectors.rules.spec import RuleSpec
from tests.app.rollups.traffic import T0, ingest, settle
from tests.conftest import auth

TABLE = shipped_table().label


def call(tid: str, sid: str, *, at: Any = T0, model: str | None = "gpt-4o-2024-08-06",
         tokens: tuple[int | None, int | None] = (1000, 200), cost: float | None = None,
         agent: str = "shop", **attributes: Any) -> list[dict[str, Any]]:  # fmt: skip
    """A trace row (once per trace id) and one LLM span sent through the native API."""
    body: dict[str, Any] = {
        "trace_id": tid, "span_id": sid, "kind": "llm", "name": "chat",
        "started_at": at.isoformat(), "ended_at": (at + timedelta(seconds=1)).isoformat(),
        "response_model": model, "input_tokens": tokens[0], "output_tokens": tokens[1],
        "attributes": attributes,
    }  # fmt: skip
    if cost is not None:
        body["cost"] = cost
    trace = {"id": f"t-{tid}", "type": "trace", "body": {
        "trace_id": tid, "agent": agent, "agent_version": "1", "started_at": at.isoformat(),
        "ended_at": (at + timedelta(seconds=2)).isoformat(),
        "attributes": {"resource.deployment.environment.name": "prod"}}}  # fmt: skip
    return [trace, {"id": f"s-{tid}-{sid}", "type": "span", "body": body}]


def spans(engine: Engine) -> dict[str, tuple[float | None, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(select(Span.span_id, Span.cost, Span.cost_source)).all()
    return {sid: (cost, source) for sid, cost, source in rows}


def test_calls_are_priced_once_with_the_price_of_the_day(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key, admin = make_key("ingest"), make_key("admin")
    ingest(client, key, call("a", "known", **{"gen_ai.usage.cache_read.input_tokens": 400})
           + call("a", "sent", cost=0.5)[1:] + call("a", "unknown", model="foo-7b")[1:]
           + call("a", "no-tokens", tokens=(None, None))[1:]
           + call("a", "no-model", model=None)[1:])  # fmt: skip
    settle(engine)
    got = spans(engine)
    assert got["known"] == (pytest.approx((600 * 2.5 + 400 * 1.25 + 200 * 10) / 1e6), TABLE)
    assert got["sent"] == (0.5, None)  # as sent: never rewritten
    assert got["unknown"] == (None, "no price")
    assert got["no-tokens"] == (None, "no tokens")
    assert got["no-model"] == (None, "no model")

    # A project price set now applies to calls that arrive from now on, not to stored ones.
    r = client.put("/api/v1/project/model-prices", headers=auth(admin), json={"prices": [
        {"model": "gpt-4o", "input_per_million": 1.0, "output_per_million": 4.0},
        {"model": "foo-7b", "input_per_million": 0.2, "output_per_million": 0.2}]})  # fmt: skip
    assert r.status_code == 200, r.text
    ingest(client, key, call("a", "late")[1:] + call("b", "later", model="FOO-7B"))
    settle(engine)
    after = spans(engine)
    assert after["known"] == got["known"] and after["unknown"] == (None, "no price")
    late_cost, late_source = after["late"]
    assert late_cost == pytest.approx((1000 * 1.0 + 200 * 4.0) / 1e6)
    assert late_source is not None and late_source.startswith("project 20")
    assert after["later"][0] == pytest.approx(1200 * 0.2 / 1e6)


def test_the_rollups_add_up_the_computed_costs_and_count_the_unpriced(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    events: list[dict[str, Any]] = []
    for i in range(12):
        at = T0 + timedelta(minutes=4 * i)  # ten buckets
        model = ("gpt-4o-mini-2024-07-18", "claude-3-5-sonnet-20241022", "foo-7b")[i % 3]
        events += call(f"t{i}", "llm", at=at, model=model, tokens=(100 * (i + 1), 10 * i),
                       agent=("shop", "support")[i % 2])  # fmt: skip
        events += call(f"t{i}", "llm2", at=at, cost=0.001 * i)[1:]
    ingest(client, key, events)
    settle(engine)
    with engine.connect() as conn:
        per_trace = dict(conn.execute(
            select(Span.trace_id, func.sum(Span.cost)).group_by(Span.trace_id)).all())  # fmt: skip
        per_agent = dict(conn.execute(
            select(Trace.agent, func.sum(Span.cost)).join(Trace, (Trace.trace_id == Span.trace_id)
                   & (Trace.project_id == Span.project_id)).group_by(Trace.agent)).all())  # fmt: skip
        per_model = dict(conn.execute(
            select(Span.response_model, func.sum(Span.cost)).group_by(Span.response_model)).all())  # fmt: skip
        rolled_agent = dict(conn.execute(
            select(TraceRollup.agent, func.sum(TraceRollup.cost)).group_by(TraceRollup.agent)).all())  # fmt: skip
        rolled_model = {m: (c, calls, unpriced) for m, c, calls, unpriced in conn.execute(
            select(ModelRollup.model, func.sum(ModelRollup.cost), func.sum(ModelRollup.calls),
                   func.sum(ModelRollup.unpriced_calls)).group_by(ModelRollup.model))}  # fmt: skip
        total_users = conn.scalar(select(func.sum(UserRollup.cost)))
    assert per_trace["t1"] > 0.001  # priced by the table and sent: both counted
    assert rolled_agent == pytest.approx({a: float(c) for a, c in per_agent.items()})
    for model, (cost, _calls, unpriced) in rolled_model.items():
        assert cost == pytest.approx(float(per_model[model] or 0.0)), model
        assert unpriced == (4 if model == "foo-7b" else 0), model
    assert rolled_model["foo-7b"][1] == 4
    assert total_users is None  # no user ids in this traffic
    # The rules' cost_per_hour reads the same sums.
    spec = RuleSpec.model_validate({"metric": "cost_per_hour",
                                    "condition": {"type": "static", "op": "above", "warning": 1}})  # fmt: skip
    start = bucket_of(T0)
    with Session(engine) as session:
        series = read_series(session, project_id=1, spec=spec, start=start,
                             end=start + 10 * BUCKET_SECONDS)  # fmt: skip
    assert float(series.groups[0].numerator.sum()) == pytest.approx(float(sum(per_agent.values())))


def test_the_api_reports_the_calls_left_without_a_cost(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key, reader = make_key("ingest"), make_key("read")
    events = call("a", "x1", model="foo-7b") + call("a", "x2", model="foo-7b")[1:]
    events += call("a", "ok", model="gpt-4o")[1:] + call("b", "y", model="bar-13b")
    ingest(client, key, events)
    settle(engine)
    r = client.get("/api/v1/project/model-prices", headers=auth(reader),
                   params={"model": "gpt-4o-2024-08-06"})  # fmt: skip
    assert r.status_code == 200, r.text
    body = r.json()
    coverage = body["coverage"]
    assert (coverage["calls"], coverage["unpriced_calls"]) == (4, 3)
    assert [(m["model"], m["unpriced_calls"], m["has_price"]) for m in coverage["models"]] == [
        ("foo-7b", 2, False), ("bar-13b", 1, False)]  # fmt: skip
    assert coverage["sentence"] == (
        "Cost unknown for 75% of model calls in the last 7 days (3 of 4): models foo-7b "
        "(2 calls) and bar-13b (1 call) have no price; set one in Settings · Model prices."
    )
    assert body["table"]["version"] == shipped_table().version
    assert body["found"]["matched"] == "gpt-4o" and body["found"]["by"] == "table"
    assert body["found"]["cost_source"] == TABLE
