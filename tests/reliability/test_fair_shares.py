"""One project at its limits must not take the service from the others (#49).

A real ``telltale serve`` (scheduler and derive job on) on SQLite and on PostgreSQL. Project
B's traces list, ``run now`` and derive delay are timed alone, then while project A attacks
with everything the fourth security round found (tests/reliability/fair_shares.py). Before
the fair shares, B's trace waited 295 s to be derived (6.6 s alone), B's batches were
refused and its pages timed out. Now every request of B is answered at once, none refused,
and the times stay bounded: the bounds below are loose, for a shared 2-core machine. What
they do not show is the issue's target of "within twice the time alone": A's admitted work
still shares the two cores (and on SQLite the one writer lock) with B's, and B's reads took
3-30x their time alone, its derive delay up to 2.8x (docs/operations/security.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.db import make_engine
from tests.conftest import auth
from tests.reliability.fair_shares import JSON, measure_b, noise_png, otlp_body, small_trace
from tests.reliability.servers import serve

ROOT = Path(__file__).resolve().parents[2]
ATTACK_SECONDS = 30


def _keys(make_key: Any) -> dict[str, Any]:
    """Both projects' keys, made before the server starts (on SQLite its jobs take the
    writer lock, and a key made beside them can wait past the lock's timeout)."""
    return {f"{p}_{role}": make_key(role, project=p) for p in "ab"
            for role in ("ingest", "admin", "read")}  # fmt: skip


def _setup(url: str, keys: dict[str, Any]) -> dict[str, Any]:
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
    keys = _keys(make_key)
    with serve(db_url, scheduler_enabled="true", media_dir=str(tmp_path / "media"),
               derive_settle_seconds="0.5", derive_text_embeddings="false") as url:  # fmt: skip
        keys = _setup(url, keys)
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
    print(
        json.dumps(
            {
                "db": db_url.split(":")[0],
                "alone": alone,
                "attacked": attacked,
                "a_answered": answered,
            }
        )
    )
    # A really attacked: its refused settings, full trace and busy shares answered as such
    assert answered["x_star_patterns"] == {"422": 1} and answered["fm6_billion"] == {"422": 2}
    assert answered["huge_trace"] == {"200": 6}
    assert answered["flood"].get("200", 0) > 0 and answered["search"].get("200", 0) > 0
    # Alone, a trace waits for the derive job's next run (every 5 s) and its settle time.
    assert attacked["derive_s"] <= 4 * max(alone["derive_s"], 5.5), (alone, attacked)
    assert attacked["get_s"] <= 0.5 and attacked["run_now_s"] <= 1.0, (alone, attacked)
