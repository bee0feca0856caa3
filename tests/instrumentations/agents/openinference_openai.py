"""OpenInference's ``openai`` instrumentation; the agent span is an OpenInference AGENT span.

The session and user are OpenInference's ``using_session`` / ``using_user``: its
instrumentors put ``session.id`` and ``user.id`` on the spans they make inside (the LLM
spans), not on the application's own agent span.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import openai
from openinference.instrumentation import using_session, using_user
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry import trace
from otlp_setup import setup, shutdown
from plain_loop import SESSION_ID, USER_ID, run

OpenAIInstrumentor().instrument(tracer_provider=setup())
tracer = trace.get_tracer("support-app")


@contextmanager
def agent_span(name: str) -> Any:
    attributes = {"openinference.span.kind": "AGENT"}
    with (
        using_session(SESSION_ID),
        using_user(USER_ID),
        tracer.start_as_current_span("support-agent", attributes=attributes),
    ):
        yield


run(agent_span, openai.OpenAI(max_retries=0))
shutdown()
