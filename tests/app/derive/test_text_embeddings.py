"""Derived text embeddings with the real MiniLM (bundled, offline): streams, trace ids,
input groups of paraphrases, and the switches that turn them off."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from app.derive.job import derive_job, derive_pending
from app.derive.patterns import MAX_TEXT_CHARS
from app.derive.text_vectors import SharedMiniLM
from app.models import Embedding, InputGroup, Trace
from app.models.base import utcnow
from app.retention.purge import purge_project
from app.scheduler.jobs import periodic_jobs
from app.settings import Settings
from detectors.output_drift import input_key
from detectors.records import from_rows
from tests.app.derive.otlp_agent import T0, agent_run, send
from tests.conftest import auth

SEC = 10**9
CPU = SharedMiniLM(device="cpu")  # one model for the whole test session (lru-cached)


def derive(engine: Engine) -> Any:
    return derive_pending(engine, now=utcnow() + timedelta(seconds=60), encoder=CPU)


def traces(engine: Engine) -> dict[str, Trace]:
    with Session(engine) as session:
        return {t.trace_id: t for t in session.scalars(select(Trace))}


def vectors(engine: Engine) -> list[Embedding]:
    with Session(engine) as session:
        return list(session.scalars(select(Embedding).order_by(Embedding.id)))


def test_inputs_and_outputs_embedded_and_paraphrases_grouped(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    # Distinct start times: the group's leader is the input that started first.
    paraphrases = [
        agent_run("Where is my order 42?", answer="It ships tomorrow.", start=T0),
        agent_run("Could you tell me where order 42 is?", answer="It ships.", start=T0 + SEC),
        agent_run("Where's my order #42?", answer="On its way.", start=T0 + 2 * SEC),
    ]
    repeat = agent_run("Where is my order 42?", answer="It ships tomorrow.", start=T0 + 3 * SEC)
    other = agent_run("How do I reset my password?", answer="Use the link.")
    weather = agent_run("What's the weather like in Paris today?", agent="weather-bot")
    runs = [*paraphrases, repeat, other, weather]
    send(client, key, runs)
    report = derive(engine)
    assert (report.traces, report.embeddings) == (6, 12)
    stored = traces(engine)
    rows = vectors(engine)
    by_trace: dict[str, set[str]] = {}
    for row in rows:
        assert (row.dim, row.model, len(row.vector)) == (384, "all-MiniLM-L6-v2", 384 * 4)
        by_trace.setdefault(str(row.trace_id), set()).add(row.stream)
    assert by_trace[other.trace_id] == {"support-agent.input", "support-agent.output"}
    assert by_trace[weather.trace_id] == {"weather-bot.input", "weather-bot.output"}
    hashes = [stored[r.trace_id].input_hash for r in paraphrases]
    assert len(set(hashes)) == 3  # paraphrases: distinct exact identities...
    groups = {stored[r.trace_id].attributes["telltale.input_group"] for r in [*paraphrases, repeat]}
    assert groups == {hashes[0]}  # ...one approximate group, led by the first
    assert stored[repeat.trace_id].input_hash == hashes[0]
    assert stored[other.trace_id].attributes["telltale.input_group"] != hashes[0]
    # The vectors are MiniLM's: the paraphrases' inputs are close, the other input is not.
    inputs = {
        r.trace_id: np.frombuffer(r.vector, "<f4") for r in rows if r.stream.endswith(".input")
    }
    assert inputs[paraphrases[0].trace_id] @ inputs[paraphrases[1].trace_id] > 0.85
    assert inputs[paraphrases[0].trace_id] @ inputs[other.trace_id] < 0.5
    # FM-3 reads the group: the paraphrases and the repeat are one group of repeated runs.
    records = from_rows([{**t.__dict__} for t in stored.values()])
    keys = {r.trace_id: input_key(r) for r in records}
    assert {keys[r.trace_id] for r in [*paraphrases, repeat]} == {hashes[0]}
    # Data retention takes the groups with the traces.
    project_id = stored[other.trace_id].project_id
    counts = purge_project(engine, project_id=project_id, cutoff=utcnow() + timedelta(days=1))
    assert counts["input_groups"] == 5  # one row per distinct input: 3 + other + weather
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(InputGroup)) == 0


def test_rederiving_writes_no_vector_twice_and_keeps_groups(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("ingest")
    first = agent_run("Where is my order 42?")
    send(client, key, [first])
    derive(engine)
    before = len(vectors(engine))
    late = agent_run("Where is my order 42?")  # a repeat arrives later...
    send(client, key, [late])
    with Session(engine) as session:  # ...and the first trace is touched (re-derived)
        session.get(Trace, traces(engine)[first.trace_id].id).derived_at = None  # type: ignore[union-attr]
        session.commit()
    report = derive(engine)
    assert report.traces == 2 and len(vectors(engine)) == before + 2
    stored = traces(engine)
    assert (
        stored[late.trace_id].attributes["telltale.input_group"]
        == stored[first.trace_id].input_hash
    )


def test_turned_off_by_the_project_or_the_server(
    client: TestClient, make_key: Any, engine: Engine, settings: Settings
) -> None:
    rules_api = "/api/v1/project/derived-fields"
    off = {"text_embeddings": {"enabled": False}}
    assert client.put(rules_api, json=off, headers=auth(make_key("admin"))).status_code == 200
    send(client, make_key("ingest"), [agent_run("q1")])
    assert derive(engine).embeddings == 0
    # The server switch: the periodic job embeds nothing for any project.
    on = auth(make_key("admin", project="p2"))
    assert client.put(rules_api, json={}, headers=on).status_code == 200
    send(client, make_key("ingest", project="p2"), [agent_run("q2")])
    quiet = settings.model_copy(
        update={"derive_text_embeddings": False, "derive_settle_seconds": 0}
    )
    derive_job(engine, None, quiet)
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Embedding)) == 0
        assert conn.scalar(select(func.count()).where(Trace.derived_at.is_(None))) == 0
    assert "derive_signals" in {job.name for job in periodic_jobs()}


class _Recording:
    """A stand-in encoder that keeps what it was asked to embed."""

    dim = 8
    name = "recording"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_texts(self, texts: Any) -> np.ndarray:
        self.texts.extend(texts)
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_outputs_are_bounded_before_the_encoder_as_inputs_are(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    # 250,000 characters each way; unique, as vectors are cached by text in the process.
    # Letters only: the default exclusions would strip a hex tag from the input.
    tag = uuid.uuid4().hex.translate(str.maketrans("0123456789abcdef", "ghijklmnopqrstuv"))
    question, answer = f"{tag} asks " + "word " * 50_000, f"{tag} answers " + "word " * 50_000
    send(client, make_key("ingest"), [agent_run(question, answer=answer)])
    encoder = _Recording()
    derive_pending(engine, now=utcnow() + timedelta(seconds=60), encoder=encoder)
    assert len(encoder.texts) == 2
    assert all(0 < len(t) <= MAX_TEXT_CHARS for t in encoder.texts)
