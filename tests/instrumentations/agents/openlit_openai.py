"""OpenLIT around the ``openai`` client, at its default settings (traces, metrics, events).

``openlit.init`` exports to OTEL_EXPORTER_OTLP_ENDPOINT with OTEL_EXPORTER_OTLP_HEADERS. Its
prices come from a local ``pricing_json`` (the default fetches a file from the internet).
OpenLIT has no agent span for a plain client: the application names itself with
``application_name``, and the trace's root is a plain span of the application.

OpenLIT sends no session id for a plain OpenAI client: the application's root span names
it (``session.id``). The user is the OpenAI request's ``user``, which OpenLIT records as
``gen_ai.request.user``.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
import openlit
from opentelemetry import trace
from plain_loop import SESSION_ID, USER_ID, run

PRICES = {"chat": {"gpt-4o-mini": {"promptPrice": 0.15, "completionPrice": 0.6}}}
pricing = Path(os.getcwd()) / "pricing.json"
pricing.write_text(json.dumps(PRICES))
openlit.init(application_name="support-agent", pricing_json=str(pricing))
tracer = trace.get_tracer("support-app")


@contextmanager
def agent_span(name: str) -> Any:
    with tracer.start_as_current_span(
        f"support-agent {name}", attributes={"session.id": SESSION_ID}
    ):
        yield


run(agent_span, openai.OpenAI(max_retries=0), user=USER_ID)
trace.get_tracer_provider().shutdown()  # type: ignore[attr-defined]
