"""Fixtures for the real instrumentation libraries: their venvs, a fake OpenAI, a run.

``run_agent(env, script, **env_vars)`` runs ``agents/<script>.py`` with the interpreter of
that library's venv, its OTLP exporters pointed at the live Telltale with an ingest key and
its ``openai`` client at the fake server, and returns the finished process (stderr kept:
the tests assert the exporters logged no error).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, auth
from tests.instrumentations.envs import python_for
from tests.instrumentations.fake_openai import FakeOpenAI

AGENTS = Path(__file__).resolve().parent / "agents"
# The agent scripts import the instrumentation libraries, which only their venvs have:
# --doctest-modules must not import them here.
collect_ignore = ["agents"]
RUN_TIMEOUT_S = 240

RunAgent = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as api:
        yield api


@pytest.fixture
def run_agent(
    live_server: LiveServer, fake_openai: FakeOpenAI, make_key: Any, tmp_path: Path
) -> RunAgent:
    key = make_key(role="ingest")

    def run(env_name: str, script: str, **env_vars: str) -> subprocess.CompletedProcess[str]:
        python = python_for(env_name)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
            "PYTHONPATH": str(AGENTS),
            "PYTHONUNBUFFERED": "1",
            "OPENAI_BASE_URL": fake_openai.base_url,
            "OPENAI_API_KEY": "sk-test-not-a-key",
            "OTEL_EXPORTER_OTLP_ENDPOINT": live_server.url,
            "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{key}",  # URL-encoded, per spec
            "OTEL_SERVICE_NAME": "support-service",
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
            **env_vars,
        }
        done = subprocess.run(
            [str(python), str(AGENTS / f"{script}.py")],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-4000:]}"
        return done

    run.telltale_url = live_server.url  # type: ignore[attr-defined]
    run.ingest_key = key  # type: ignore[attr-defined]
    return run


@pytest.fixture
def stored(live_server: LiveServer, make_key: Any) -> Callable[[], list[dict[str, Any]]]:
    """Every stored trace with its spans and scores, read back through the API."""
    reader = make_key(role="read")

    def read() -> list[dict[str, Any]]:
        with httpx.Client(base_url=live_server.url, headers=auth(reader), timeout=30) as c:
            page = c.get("/api/v1/traces", params={"limit": 500})
            assert page.status_code == 200, page.text
            out = []
            for t in page.json()["traces"]:
                detail = c.get(f"/api/v1/traces/{t['trace_id']}")
                assert detail.status_code == 200, detail.text
                out.append(detail.json())
        return sorted(out, key=lambda t: t["started_at"] or "")

    return read
