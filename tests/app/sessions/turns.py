"""OTLP JSON of a multi-turn conversation: one trace a turn, as an OTel GenAI agent sends it.

Turn k is an ``invoke_agent`` root span carrying the session and user attributes given, and
a chat span whose input repeats the whole conversation so far (system, then each earlier
question and answer) before the new question, as chat applications send it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.app.derive.otlp_agent import T0, AgentRun, _span, text_message

SEC = 10**9


def turns(
    exchanges: list[tuple[str, str]],
    *,
    ids: dict[str, Any],
    start: int = T0,
    every: int = 60 * SEC,
    failing: tuple[int, ...] = (),
    agent: str = "support-agent",
) -> list[AgentRun]:
    """One run per (question, answer); ``ids`` are the root span's session/user attributes;
    the turns in ``failing`` end with a failed chat call (HTTP 500) instead of an answer."""
    runs, history = [], [text_message("system", "You are a support agent.")]
    for k, (question, answer) in enumerate(exchanges):
        at = start + k * every
        seed = hashlib.sha256(f"{sorted(ids.items())}:{k}".encode()).hexdigest()
        run = AgentRun(trace_id=seed[:32], resource={"service.name": "shop"})
        root, chat = seed[32:48], seed[48:64]
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, **ids}
        run.spans.append(_span(run, root, None, f"invoke_agent {agent}", at, at + 2 * SEC, attrs))
        inputs = [*history, text_message("user", question)]
        chat_attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps(inputs),
        }  # fmt: skip
        span = _span(run, chat, root, "chat gpt-4o-mini", at + SEC // 10, at + SEC, chat_attrs)
        if k in failing:
            span["status"] = {"code": 2, "message": "HTTP 500"}
            span["attributes"].append(
                {"key": "error.type", "value": {"stringValue": "openai.InternalServerError"}}
            )
            run.spans[0]["status"] = {"code": 2}
            history = inputs  # the question stays in the history the next turn sends
        else:
            out = [{"role": "assistant", "parts": [{"type": "text", "content": answer}],
                    "finish_reason": "stop"}]  # fmt: skip
            span["attributes"].append(
                {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(out)}}
            )
            history = [*inputs, text_message("assistant", answer)]
        run.spans.append(span)
        runs.append(run)
    return runs
