"""OpenTelemetry's own ``openai-v2`` instrumentation, the SDK set up as its README shows.

Traces, logs (the GenAI events when content capture is ``event_only``) and metrics all go
to Telltale over OTLP/HTTP (protobuf), configured only by the standard OTEL_* variables.
The agent span is the application's own ``invoke_agent`` span (OTel GenAI conventions),
and names the conversation (``gen_ai.conversation.id``) and the end user (``user.id``):
``openai-v2`` itself sends neither (Chat Completions has no conversation).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import openai
from opentelemetry import trace
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from otlp_setup import setup, shutdown
from plain_loop import SESSION_ID, USER_ID, run

setup(logs=True, metrics=True)
OpenAIInstrumentor().instrument()
tracer = trace.get_tracer("support-app")


@contextmanager
def agent_span(name: str) -> Any:
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support-agent",
        "gen_ai.conversation.id": SESSION_ID,
        "user.id": USER_ID,
    }
    with tracer.start_as_current_span(f"invoke_agent support-agent {name}", attributes=attributes):
        yield


run(agent_span, openai.OpenAI(max_retries=0))
shutdown()
