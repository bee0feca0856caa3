"""The README's quickstart, run as written against a live server.

Its `telltale init` command, its `source telltale.env`, and its `agent.py` in the venv of
OpenTelemetry's `openai-v2` (built from `requirements/otel.txt`, whose pins the README's
pip line must match exactly), the `openai` client pointed at the fake OpenAI server; then
what the README says you see: the trace, the ten default monitors, and runs that say
`insufficient_data` before 8 hours of data.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx

from app.onboarding import OtelEnv
from tests.conftest import LiveServer, auth
from tests.instrumentations.envs import REQUIREMENTS, python_for
from tests.instrumentations.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
QUICKSTART = README.split("[start:quickstart]")[1].split("[end:quickstart]")[0]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", QUICKSTART, re.S)


def _command(prefix: str) -> list[str]:
    """The quickstart's shell command that starts with ``prefix`` (continuations joined)."""
    for block in _blocks("sh"):
        for command in block.replace("\\\n", " ").splitlines():
            if command.startswith(prefix):
                return shlex.split(command)
    raise AssertionError(f"no `{prefix}` command in the README's quickstart")


def _pins(words: list[str]) -> dict[str, str]:
    pins = [w for w in words if "==" in w]
    return {n.lower().replace("_", "-"): v for n, v in (p.split("==") for p in pins)}


def test_the_pip_line_is_the_lock_that_the_instrumentation_tests_run():
    words = _command("pip install")
    lock = _pins((REQUIREMENTS / "otel.txt").read_text().split())
    pins = _pins(words)
    assert len(pins) == len(words) - 2  # every package pinned
    assert {"httpx", "opentelemetry-util-genai", "opentelemetry-instrumentation-openai-v2"} <= set(
        pins
    )
    assert pins.items() <= lock.items(), set(pins.items()) - set(lock.items())


def test_the_env_block_shown_is_what_init_prints():
    shown = next(b for b in _blocks("sh") if b.startswith("export OTEL_"))
    assert shown.strip() == OtelEnv("http://127.0.0.1:8000", key="tt_...").shell()
    assert _command(".venv/bin/telltale serve") == [".venv/bin/telltale", "serve"]


def test_the_quickstart_against_a_live_server(db_url, settings, tmp_path):
    init = _command(".venv/bin/telltale init")
    assert init[-2] == ">" and init[-1] == "telltale.env"
    with LiveServer(_app(settings)) as server, FakeOpenAI() as fake_openai:
        env = dict(os.environ, TELLTALE_DATABASE_URL=db_url, TELLTALE_PUBLIC_URL=server.url)
        made = subprocess.run(
            [sys.executable, "-m", "app", *init[1:-2]],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        (tmp_path / "telltale.env").write_text(made.stdout)
        # The admin key is on the terminal (stderr), never in the file agents source.
        admin = re.fullmatch(r"admin key[^:]*: (tt_\S+)\n", made.stderr)
        assert admin and admin.group(1) not in made.stdout, made.stderr
        (tmp_path / "agent.py").write_text(_blocks("python")[0])

        # `source telltale.env`, then `python agent.py`, as the README runs them
        run = [c for c in _command("source") if c != "source"]
        agent = subprocess.run(
            ["bash", "-c", f"source {shlex.quote(run[0])} && exec python agent.py"],
            cwd=tmp_path,
            env={
                "PATH": f"{python_for('otel').parent}:/usr/bin:/bin",
                "HOME": str(tmp_path),
                "OPENAI_BASE_URL": fake_openai.base_url,
                "OPENAI_API_KEY": "sk-test-not-a-key",
            },
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert agent.returncode == 0, agent.stderr[-3000:]
        assert "Exception" not in agent.stderr and "Failed to export" not in agent.stderr
        assert len(fake_openai.requests) == 1

        with httpx.Client(base_url=server.url, headers=auth(admin.group(1)), timeout=30) as api:
            _check_what_you_see(api)


def _check_what_you_see(api: httpx.Client) -> None:
    traces = api.get("/api/v1/traces").json()["traces"]
    assert [t["agent"] for t in traces] == ["my-agent"]
    trace = api.get(f"/api/v1/traces/{traces[0]['trace_id']}").json()
    llm = [s for s in trace["spans"] if s["kind"] == "llm"]
    assert llm and llm[0]["request_model"] == "gpt-4o-mini" and llm[0]["input_tokens"] > 0
    monitors = api.get("/api/v1/monitors").json()["monitors"]
    assert len(monitors) == 10
    for monitor in monitors:
        ran = api.post(f"/api/v1/monitors/{monitor['id']}/run")
        assert ran.status_code == 200, ran.text
        assert ran.json()["status"] == "insufficient_data", (monitor["name"], ran.json())
        assert not ran.json()["fired"]


def _app(settings):  # type: ignore[no-untyped-def]
    from app.main import create_app

    return create_app(settings, start_background=False)
