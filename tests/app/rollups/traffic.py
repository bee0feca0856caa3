"""Traffic for the rollup and rule tests: native traces with a model call and tool calls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.derive.job import derive_pending
from app.rollups.job import rebuild_dirty
from tests.conftest import auth

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def trace(tid: str, *, at: datetime, agent: str = "shop", status: str = "ok",
          seconds: float = 2.0, env: str | None = "prod", user: str | None = None,
          tools: tuple[tuple[str, str], ...] = (), model_tokens: int = 100,
          cost: float = 0.01) -> list[dict[str, Any]]:  # fmt: skip
    attrs: dict[str, Any] = {}
    if env:
        attrs["resource.deployment.environment.name"] = env
    if user:
        attrs["user.id"] = user
    end = at + timedelta(seconds=seconds)
    events = [
        {
            "id": f"t-{tid}",
            "type": "trace",
            "body": {
                "trace_id": tid,
                "agent": agent,
                "agent_version": "1",
                "status": status,
                "started_at": at.isoformat(),
                "ended_at": end.isoformat(),
                "attributes": attrs,
            },
        }
    ]
    events.append(
        {
            "id": f"s-{tid}-llm",
            "type": "span",
            "body": {
                "trace_id": tid,
                "span_id": "llm",
                "kind": "llm",
                "name": "chat",
                "step_index": 0,
                "started_at": at.isoformat(),
                "ended_at": end.isoformat(),
                "response_model": "gpt-x",
                "total_tokens": model_tokens,
                "cost": cost,
            },
        }
    )
    for i, (tool, tstatus) in enumerate(tools):
        events.append(
            {
                "id": f"s-{tid}-{i}",
                "type": "span",
                "body": {
                    "trace_id": tid,
                    "span_id": f"tool{i}",
                    "kind": "tool",
                    "name": tool,
                    "tool_name": tool,
                    "status": tstatus,
                    # Arguments recorded: repeats of one call are comparable (a loop).
                    "attributes": {"gen_ai.tool.call.arguments": "{}"},
                    "step_index": i + 1,
                    "started_at": at.isoformat(),
                    "ended_at": (at + timedelta(milliseconds=300)).isoformat(),
                },
            }
        )
    return events  # fmt: skip


def ingest(client: TestClient, key: str, events: list[dict[str, Any]]) -> None:
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and not r.json()["rejected"], r.text


def settle(engine: Engine) -> None:
    derive_pending(engine, now=datetime.now(UTC) + timedelta(minutes=5), text_embeddings=False)
    rebuild_dirty(engine)
