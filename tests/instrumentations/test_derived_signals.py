"""Derived signals on what the real OTel ``openai-v2`` instrumentation sends.

The agent (agents/plain_loop.py) runs unchanged, content capture on the span
(``span_only``) and then in log events (``event_only``); the derive job then gives each
trace the same input identity and decision whichever way its content came, and the
MiniLM input/output embeddings FM-3, FM-5 and FM-6 read.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.derive.job import derive_pending
from app.derive.text_vectors import SharedMiniLM
from app.models import Embedding, Trace
from app.models.base import utcnow
from tests.instrumentations.conftest import RunAgent
from tests.instrumentations.test_real_instrumentations import no_export_errors

# Real libraries in their own venvs, each agent a subprocess: end to end, not the inner loop.
pytestmark = pytest.mark.slow


def test_otel_openai_v2_traces_get_identity_decision_and_embeddings(
    run_agent: RunAgent, engine: Engine
) -> None:
    no_export_errors(run_agent("otel", "otel_openai"))
    no_export_errors(
        run_agent(
            "otel", "otel_openai", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="event_only"
        )
    )
    report = derive_pending(
        engine, now=utcnow() + timedelta(seconds=60), encoder=SharedMiniLM(device="cpu")
    )
    assert report.traces == 4
    with Session(engine) as session:
        traces = list(session.scalars(select(Trace).order_by(Trace.started_at)))
        vectors = list(session.scalars(select(Embedding)))
    loops = [t for t in traces if t.status == "ok"]
    failing = [t for t in traces if t.status == "error"]
    assert len(loops) == len(failing) == 2
    # One input, two capture modes: one identity, one decision, one group.
    assert loops[0].input_hash is not None and loops[0].input_hash == loops[1].input_hash
    assert [t.attributes["decision"] for t in loops] == ["get_weather>lookup_order|stop"] * 2
    assert {t.attributes["telltale.input_group"] for t in loops} == {loops[0].input_hash}
    assert failing[0].attributes["decision"] == "|error"
    assert failing[0].input_hash not in (None, loops[0].input_hash)
    streams = {(v.trace_id, v.stream) for v in vectors}
    for t in loops:
        assert {
            (t.trace_id, "support-agent.input"),
            (t.trace_id, "support-agent.output"),
        } <= streams
    assert all(v.dim == 384 and v.model == "all-MiniLM-L6-v2" for v in vectors)


def test_one_input_one_identity_across_client_libraries(
    run_agent: RunAgent, engine: Engine
) -> None:
    """The same agent loop under OTel openai-v2, OpenInference and OpenLLMetry: each
    library's own message attributes, read by the derive job, give the same input identity
    and the same decision (the tools the model asked for, then its finish).

    OpenLIT 1.45 is left out: at its defaults (``capture_message_content=True``) its
    details events carried ``gen_ai.input.messages: []`` and its spans no messages, so
    there is no input to derive an identity from (the decision, from its tool-call
    attributes and finish reason, still is).
    """
    for env, script in (
        ("otel", "otel_openai"),
        ("openinference", "openinference_openai"),
        ("traceloop", "traceloop_openai"),
    ):
        extra = {}
        if env == "traceloop":  # its SDK is configured by its own variables
            extra = {
                "TRACELOOP_BASE_URL": run_agent.telltale_url,  # type: ignore[attr-defined]
                "TRACELOOP_HEADERS": f"Authorization=Bearer%20{run_agent.ingest_key}",  # type: ignore[attr-defined]
            }
        no_export_errors(run_agent(env, script, **extra))
    report = derive_pending(engine, now=utcnow() + timedelta(seconds=60), text_embeddings=False)
    assert report.traces == 6
    with Session(engine) as session:
        loops = [t for t in session.scalars(select(Trace)) if t.status == "ok"]
    assert len(loops) == 3
    assert len({t.input_hash for t in loops}) == 1 and loops[0].input_hash is not None
    decisions = {t.attributes.get("decision") for t in loops}
    assert decisions == {"get_weather>lookup_order|stop"}, decisions
