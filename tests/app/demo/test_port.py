"""``telltale demo`` / ``make run`` on another port, and a taken port named with the option."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_a_taken_port_says_which_option_picks_another(tmp_path):
    db = tmp_path / "demo.db"
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {**os.environ, "TELLTALE_DATABASE_URL": f"sqlite:///{db}"}
        r = subprocess.run(
            [sys.executable, "-m", "app", "demo", "--port", str(port), "--exit-when-done"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"127.0.0.1:{port} is taken" in r.stderr
    assert "--port" in r.stderr and "make run PORT=" in r.stderr
    assert not db.exists()  # refused before touching the database


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_run_takes_a_port():
    r = subprocess.run(
        ["make", "-n", "run", "PORT=8123"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "telltale demo --port 8123" in r.stdout
