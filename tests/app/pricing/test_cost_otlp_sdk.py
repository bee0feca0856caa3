"""A GenAI chat span recorded with the real OpenTelemetry SDK around a real ``openai`` call
(to the loopback fake), exported by the SDK's OTLP/HTTP exporter to a live Telltale: the
conventions send tokens, not money, and the derive job prices the call from them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import set_span_in_context
from sqlalchemy import Engine

from app.derive.job import derive_pending
from app.models.base import utcnow
from app.pricing.table import shipped_table
from tests.app.test_otlp_sdk import SEC, T0, export, read_trace, record, trace_id_of
from tests.conftest import LiveServer
from tests.instrumentations.fake_openai import FakeOpenAI


def chat_with_the_fake() -> Any:
    with FakeOpenAI() as api:
        client = openai.OpenAI(base_url=api.base_url, api_key="sk-test-not-a-key")
        return client.chat.completions.create(model="gpt-4o-mini", messages=[
            {"role": "system", "content": "You answer shoppers. [cached=10]"},
            {"role": "user", "content": "Where is order 42?"},
        ])  # fmt: skip


def test_a_genai_chat_is_priced_from_its_tokens_and_cached_tokens(
    live_server: LiveServer, make_key: Any, engine: Engine
) -> None:
    answer = chat_with_the_fake()
    usage = answer.usage
    assert usage is not None and usage.prompt_tokens_details is not None

    def build(tracer: Any) -> None:
        # What OpenTelemetry's openai-v2 instrumentation records for this call.
        root = tracer.start_span("invoke_agent shop", start_time=T0, attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"})  # fmt: skip
        chat = tracer.start_span("chat gpt-4o-mini", context=set_span_in_context(root),
                                 start_time=T0 + SEC, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": answer.model,
            "gen_ai.usage.input_tokens": usage.prompt_tokens,
            "gen_ai.usage.output_tokens": usage.completion_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.prompt_tokens_details.cached_tokens,
        })  # fmt: skip
        chat.end(end_time=T0 + 2 * SEC)
        root.end(end_time=T0 + 3 * SEC)

    spans = record(build)
    assert export(live_server, make_key(role="ingest"), spans) == SpanExportResult.SUCCESS
    reader = make_key(role="read")
    (before,) = [s for s in read_trace(live_server, reader, trace_id_of(spans))["spans"]
                 if s["kind"] == "llm"]  # fmt: skip
    assert (before["cost"], before["cost_source"]) == (None, None)  # tokens only, as sent

    derive_pending(engine, now=utcnow() + timedelta(minutes=5), text_embeddings=False)
    (chat,) = [s for s in read_trace(live_server, reader, trace_id_of(spans))["spans"]
               if s["kind"] == "llm"]  # fmt: skip
    assert chat["response_model"] == "gpt-4o-mini-2024-07-18"  # a dated snapshot
    assert (chat["input_tokens"], chat["output_tokens"]) == (20, 5)
    # gpt-4o-mini: $0.15 input, $0.075 cached input, $0.60 output per million tokens
    assert chat["cost"] == pytest.approx((10 * 0.15 + 10 * 0.075 + 5 * 0.6) / 1e6)
    assert chat["cost_source"] == shipped_table().label
