"""Data readiness on what the real OTel ``openai-v2`` instrumentation sends, before and
after content capture is turned on (issue #17's readiness criterion).

Without content the spans carry steps, models and tokens but no messages: the monitors
that read the input (FM-3's input identity, FM-5's and FM-6's input texts) must say so and
name the setting that sends it. With ``span_only`` capture and a derive run, the same
needs are present (FM-3's once an input repeats).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from app.derive.job import derive_pending
from app.derive.text_vectors import SharedMiniLM
from app.models.base import utcnow
from tests.conftest import LiveServer, auth
from tests.instrumentations.conftest import RunAgent
from tests.instrumentations.test_real_instrumentations import no_export_errors

# Real libraries in their own venvs, each agent a subprocess: end to end, not the inner loop.
pytestmark = pytest.mark.slow

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def needs_of(client: httpx.Client, monitors: dict[str, int], fm: str) -> dict[str, Any]:
    now = (utcnow() + timedelta(minutes=1)).isoformat()
    r = client.get(f"/api/v1/monitors/{monitors[fm]}/readiness", params={"now": now})
    assert r.status_code == 200, r.text
    return {n["need"]: n for n in r.json()["needs"]}


def test_readiness_names_content_capture_then_turns_ready(
    run_agent: RunAgent, live_server: LiveServer, make_key: Any, engine: Engine
) -> None:
    admin, reader = make_key(role="admin"), make_key(role="read")
    made = httpx.post(
        f"{live_server.url}/api/v1/monitors/defaults", headers=auth(admin), json={}, timeout=30
    )
    assert made.status_code in (200, 201), made.text
    monitors = {m["failure_mode"]: m["id"] for m in made.json()["monitors"]}
    encoder = SharedMiniLM(device="cpu")
    watched = (("FM-3", "input_hash"), ("FM-5", "input_embedding"), ("FM-6", "stream_embeddings"))

    no_export_errors(run_agent("otel", "otel_openai", **{CAPTURE: "no_content"}))
    derive_pending(engine, now=utcnow() + timedelta(seconds=60), encoder=encoder)
    with httpx.Client(base_url=live_server.url, headers=auth(reader), timeout=30) as c:
        before = {fm: needs_of(c, monitors, fm)[need] for fm, need in watched}
    for fm, need in before.items():
        assert not need["present"] and need["count"] == 0, (fm, need)
        remedies = " | ".join(r["text"] for r in need["remedies"])
        assert f"{CAPTURE}=span_only" in remedies, (fm, remedies)

    # span_only (the fixture's default), twice: FM-3 needs an input seen more than once.
    for _ in range(2):
        no_export_errors(run_agent("otel", "otel_openai"))
    derive_pending(engine, now=utcnow() + timedelta(seconds=60), encoder=encoder)
    with httpx.Client(base_url=live_server.url, headers=auth(reader), timeout=30) as c:
        after = {fm: needs_of(c, monitors, fm)[need] for fm, need in watched}
    for fm, need in after.items():
        assert need["present"] and need["count"] > 0 and not need["remedies"], (fm, need)
