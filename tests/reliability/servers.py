"""A real ``telltale serve`` process for the reliability tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def serve(url: str, **settings: str) -> Iterator[str]:
    """``telltale serve`` in a process of its own on ``url``, until the block ends; its
    scheduler off (a separate process runs it) unless ``settings`` say otherwise
    (``TELLTALE_*`` names without the prefix, lower case)."""
    port = free_port()
    env = {**os.environ, "TELLTALE_DATABASE_URL": url, "TELLTALE_SCHEDULER_ENABLED": "false",
           **{f"TELLTALE_{k.upper()}": v for k, v in settings.items()}}  # fmt: skip
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
            assert proc.poll() is None and time.monotonic() < deadline, "replica did not start"
            time.sleep(0.1)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
