"""One project at its limits leaves every other project's service where it was (#49).

A real ``telltale serve`` (scheduler and derive job on) on SQLite and on PostgreSQL. Project
B's traces list, ``run now`` and derive delay are timed alone, then while project A attacks
with everything the fourth security round found (tests/reliability/fair_shares.py). Every
request of B is answered (no 429, no time-out); its derive delay stays within twice its
time alone (at least the derive job's 5 s period); on SQLite its reads and runs stay within
twice their time alone (a floor absorbs the timer's granularity). On PostgreSQL they do
not: the database server's processes share the two cores with A's admitted work, and B's
reads take 10-30x their time alone (bounded here at 0.5 s; docs/operations/security.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.db import make_engine
from tests.conftest import auth, free_port
from tests.reliability.fair_shares import JSON, measure_b, noise_png, otlp_body, small_trace

ROOT = Path(__file__).resolve().parents[2]
ATTACK_SECONDS = 30


@contextmanager
def serve(url: str, media: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "TELLTALE_DATABASE_URL": url, "TELLTALE_MEDIA_DIR": str(media),
           "TELLTALE_DERIVE_SETTLE_SECONDS": "0.5", "TELLTALE_DERIVE_TEXT_EMBEDDINGS": "false"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port), "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _setup(url: str, make_key: Any) -> dict[str, Any]:
    keys: dict[str, Any] = {f"{p}_{role}": make_key(role, project=p)
                            for p in "ab" for role in ("ingest", "admin", "read")}  # fmt: skip
    with httpx.Client(base_url=url, timeout=60) as c:
        for p in "ab":
            for _ in range(4):
                spans = [s for _ in range(10) for s in small_trace()]
                r = c.post("/v1/traces", content=otlp_body(spans, f"{p}-agent"),
                           headers={**auth(keys[f"{p}_ingest"]), **JSON})  # fmt: skip
                assert r.status_code == 200
        monitors = [
            c.post(
                "/api/v1/monitors",
                json={"name": f"{p}-{i}", "failure_mode": "FM-2"},
                headers=auth(keys[f"{p}_admin"]),
            ).json()["id"]  # fmt: skip
            for p, i in (("a", 0), ("a", 1), ("b", 0))
        ]
        keys["a_monitors"], keys["b_monitor"] = monitors[:2], monitors[2]
        r = c.post("/api/v1/media", files={"file": ("x.png", noise_png(), "image/png")},
                   data={"stream": "vlm.image", "sample_id": "big"},
                   headers=auth(keys["a_ingest"]))  # fmt: skip
        assert r.status_code == 200, r.text
        keys["a_image"] = "big"
    return keys


@pytest.mark.slow
def test_project_b_keeps_its_service_while_project_a_attacks(
    db_url: str, make_key: Any, tmp_path: Path
) -> None:
    engine = make_engine(db_url)
    with serve(db_url, tmp_path / "media") as url:
        keys = _setup(url, make_key)
        alone = measure_b(url, keys, engine=engine, rounds=2)
        attack = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.fair_shares", url, json.dumps(keys),
             str(ATTACK_SECONDS)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            time.sleep(5)  # A's flood, readers and searches are under way
            attacked = measure_b(url, keys, engine=engine, rounds=2)
            out, _ = attack.communicate(timeout=ATTACK_SECONDS + 240)
        finally:
            if attack.poll() is None:
                attack.kill()
    engine.dispose()
    answered = json.loads(out)
    print(json.dumps({"alone": alone, "attacked": attacked, "a_answered": answered}))
    # A really attacked: its refused settings, full trace and busy shares answered as such
    assert answered["x_star_patterns"] == {"422": 1} and answered["fm6_billion"] == {"422": 2}
    assert answered["huge_trace"] == {"200": 6}
    assert answered["flood"].get("200", 0) > 0 and answered["search"].get("200", 0) > 0
    # Alone, a trace waits for the derive job's next run (every 5 s) and its settle time.
    assert attacked["derive_s"] <= 2 * max(alone["derive_s"], 5.5), (alone, attacked)
    floors = {"get_s": 0.05, "run_now_s": 0.25}
    for what, floor in floors.items():
        if db_url.startswith("postgresql"):
            # The database server shares the two cores with A's writes and searches: B's
            # reads and runs slow 10-30x (0.03-0.18 s measured), answered, never refused.
            assert attacked[what] <= 0.5, (what, alone, attacked)
        else:
            assert attacked[what] <= 2 * max(alone[what], floor), (what, alone, attacked)
