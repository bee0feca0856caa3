"""OpenInference evaluation results on spans, encoded by the library's own helpers.

An AGENT span runs one LLM call (the ``openai`` instrumentation); an EVALUATOR span below
it carries a span-scoped annotation (an LLM judge's ``correctness``) and a trace-scoped
human evaluation (``helpfulness``), as ``get_annotation_attributes`` /
``get_evaluation_attributes`` encode them; one label-only annotation has no score.
"""

from __future__ import annotations

import openai
from openinference.instrumentation import get_annotation_attributes, get_evaluation_attributes
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry import trace
from otlp_setup import setup, shutdown

OpenAIInstrumentor().instrument(tracer_provider=setup())
tracer = trace.get_tracer("support-app")
client = openai.OpenAI(max_retries=0)

with tracer.start_as_current_span("support-agent", attributes={"openinference.span.kind": "AGENT"}):
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Where is order 42?"}]
    )
    judged = {
        "openinference.span.kind": "EVALUATOR",
        **get_annotation_attributes(
            annotations=[
                {
                    "name": "correctness",
                    "score": 0.8,
                    "label": "correct",
                    "explanation": "names the order",
                    "annotator_kind": "LLM",
                },
                {"name": "tone", "label": "polite"},
            ]
        ),
        **get_evaluation_attributes(
            evaluations=[{"name": "helpfulness", "score": 1, "annotator_kind": "HUMAN"}],
            scope="trace",
        ),
    }
    with tracer.start_as_current_span("judge", attributes=judged):
        pass
shutdown()
