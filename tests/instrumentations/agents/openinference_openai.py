"""OpenInference's ``openai`` instrumentation; the agent span is an OpenInference AGENT span."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import openai
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry import trace
from otlp_setup import setup, shutdown
from plain_loop import run

OpenAIInstrumentor().instrument(tracer_provider=setup())
tracer = trace.get_tracer("support-app")


@contextmanager
def agent_span(name: str) -> Any:
    attributes = {"openinference.span.kind": "AGENT"}
    with tracer.start_as_current_span("support-agent", attributes=attributes):
        yield


run(agent_span, openai.OpenAI(max_retries=0))
shutdown()
