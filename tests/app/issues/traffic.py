"""Traces with failing tool calls, sent through native ingest, for the issues' tests."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import auth

Call = tuple[str, str, str]  # tool, status, message ("" for none)


def failing_trace(trace_id: str, calls: list[Call], *, agent: str = "support",
                  version: str = "v1", at: str = "2026-11-29T10:00:00Z",
                  user: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """One trace: a root agent span, then an LLM call and a tool call per ``calls``; a
    failing tool call says its message as its status message and makes the agent fail;
    ``user`` is its user, in their own session ``s-<user>``."""
    failed = any(status == "error" for _, status, _ in calls)
    events: list[dict[str, Any]] = [
        {"id": f"{trace_id}-t", "type": "trace", "body": {
            "trace_id": trace_id, "agent": agent, "agent_version": version, "started_at": at,
            **({"user_id": user, "session_id": f"s-{user}"} if user else {})}},
        {"id": f"{trace_id}-root", "type": "span", "body": {
            "trace_id": trace_id, "span_id": "root", "kind": "agent", "name": agent,
            "status": "error" if failed else "ok", "started_at": at}},
    ]  # fmt: skip
    for i, (tool, status, message) in enumerate(calls):
        events.append({"id": f"{trace_id}-l{i}", "type": "span", "body": {
            "trace_id": trace_id, "span_id": f"l{i}", "parent_span_id": "root", "kind": "llm",
            "name": "chat", "step_index": 2 * i, "started_at": at}})  # fmt: skip
        attributes = {"otel.status_message": message} if message else {}
        # arguments that differ when the messages do: the same call repeated is a loop
        attributes["gen_ai.tool.call.arguments"] = f'{{"about": "{message[-8:]}"}}'
        events.append({"id": f"{trace_id}-c{i}", "type": "span", "body": {
            "trace_id": trace_id, "span_id": f"c{i}", "parent_span_id": "root", "kind": "tool",
            "name": tool, "tool_name": tool, "status": status, "step_index": 2 * i + 1,
            "error_type": "ToolError" if status == "error" else None, "started_at": at,
            "attributes": attributes}})  # fmt: skip
    return events


def send(client: TestClient, key: str, traces: list[list[dict[str, Any]]]) -> None:
    r = client.post("/api/v1/ingest", json={"events": [e for t in traces for e in t]},
                    headers=auth(key))  # fmt: skip
    assert r.status_code == 200 and not r.json().get("rejected"), r.text
