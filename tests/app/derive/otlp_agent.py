"""OTLP JSON of a small OTel GenAI agent run, built by hand: what openai-v2 sends.

``agent_run(...)`` gives one trace: an ``invoke_agent`` span, a chat call that asks for
tools, optional tool spans, and a final chat call. Content rides on the chat spans
(``span_only``) or in ``gen_ai.client.inference.operation.details`` log records
(``event_only``), as the instrumentation's capture setting chooses.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi.testclient import TestClient

from tests.conftest import auth

T0 = 1_764_590_000 * 10**9


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": kvs(value)}}
    return {"stringValue": str(value)}


def kvs(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attrs.items()]


def text_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


@dataclass
class AgentRun:
    """One trace; ``spans`` and ``logs`` are OTLP JSON pieces, ``trace_id`` its hex id."""

    trace_id: str
    spans: list[dict[str, Any]] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)


def agent_run(
    user: str,
    *,
    answer: str = "Done.",
    tools: tuple[str, ...] = (),
    tool_spans: bool = False,
    system: str = "You are a support agent.",
    capture: str = "span_only",
    agent: str = "support-agent",
    version: str = "",
    root_attributes: dict[str, Any] | None = None,
    resource: dict[str, Any] | None = None,
    logprobs: list[float] | None = None,
    start: int = T0,
) -> AgentRun:
    run = AgentRun(trace_id=secrets.token_hex(16))
    run.resource = {"service.name": "support-service", **(resource or {})}
    root = secrets.token_hex(8)
    agent_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    if version:
        agent_attrs["gen_ai.agent.version"] = version
    run.spans.append(_span(run, root, None, f"invoke_agent {agent}", start, start + 10**9,
                           {**agent_attrs, **(root_attributes or {})}))  # fmt: skip
    inputs = [text_message("system", system), text_message("user", user)]
    calls = [
        {"type": "tool_call", "id": f"c{i}", "name": n, "arguments": {}}
        for i, n in enumerate(tools)
    ]
    at = start + 10**7
    if tools:
        out = [{"role": "assistant", "parts": calls, "finish_reason": "tool_calls"}]
        _chat(run, root, at, inputs, out, ["tool_calls"], capture, None)
        at += 10**8
        if tool_spans:
            for name in tools:
                attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
                run.spans.append(_span(run, secrets.token_hex(8), root, f"execute_tool {name}",
                                       at, at + 10**7, attrs))  # fmt: skip
                at += 2 * 10**7
        inputs = [*inputs, {"role": "assistant", "parts": calls}] + [
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": c["id"], "response": "ok"}],
            }
            for c in calls
        ]
    out = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": answer}],
            "finish_reason": "stop",
        }
    ]
    _chat(run, root, at, inputs, out, ["stop"], capture, logprobs)
    return run


def _span(run: AgentRun, span_id: str, parent: str | None, name: str, start: int, end: int,
          attrs: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    span = {"traceId": run.trace_id, "spanId": span_id, "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end), "attributes": kvs(attrs)}  # fmt: skip
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def _chat(run: AgentRun, root: str, at: int, inputs: list[Any], outputs: list[Any],
          finish: list[str], capture: str, logprobs: list[float] | None) -> None:  # fmt: skip
    span_id = secrets.token_hex(8)
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.finish_reasons": finish,
    }  # fmt: skip
    if capture == "span_only":
        attrs["gen_ai.input.messages"] = json.dumps(inputs)
        attrs["gen_ai.output.messages"] = json.dumps(outputs)
    if logprobs is not None:  # OpenInference keeps the raw response, logprobs included
        choice = {
            "finish_reason": finish[0],
            "logprobs": {"content": [{"token": "x", "logprob": lp} for lp in logprobs]},
        }
        attrs["output.value"] = json.dumps({"choices": [choice]})
    run.spans.append(_span(run, span_id, root, "chat gpt-4o-mini", at, at + 5 * 10**7, attrs))
    if capture == "event_only":
        details = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": inputs,
                   "gen_ai.output.messages": outputs, "gen_ai.response.finish_reasons": finish}  # fmt: skip
        run.logs.append({"timeUnixNano": str(at + 5 * 10**7), "eventName":
                         "gen_ai.client.inference.operation.details", "traceId": run.trace_id,
                         "spanId": span_id, "attributes": kvs(details)})  # fmt: skip


def send(client: TestClient, key: str, runs: list[AgentRun], *, logs_first: bool = False) -> None:
    """POST the runs' spans to /v1/traces and their events to /v1/logs (OTLP JSON)."""
    headers = {**auth(key), "content-type": "application/json"}
    traces = {"resourceSpans": [
        {"resource": {"attributes": kvs(r.resource)}, "scopeSpans": [{"spans": r.spans}]}
        for r in runs
    ]}  # fmt: skip
    logs = {"resourceLogs": [
        {"resource": {"attributes": kvs(r.resource)}, "scopeLogs": [{"logRecords": r.logs}]}
        for r in runs if r.logs
    ]}  # fmt: skip
    posts = [("/v1/traces", traces), ("/v1/logs", logs)]
    for path, body in reversed(posts) if logs_first else posts:
        if body.get("resourceLogs") == []:
            continue
        answer = client.post(path, content=orjson.dumps(body), headers=headers)
        assert answer.status_code == 200, answer.text
        assert "partialSuccess" not in answer.json(), answer.text
