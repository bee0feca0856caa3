"""``telltale demo`` end to end: a real server process, the real detectors, a real receiver.

Small settings keep it quick (20 simulated hours, a monitor run per simulated hour); the
detections still come from the seven default monitors on the data the demo ingested.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

pytestmark = pytest.mark.slow

FAST = ["--speed", "1000000", "--tick", "60", "--no-browser-hint"]


def _demo(db: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TELLTALE_DATABASE_URL": f"sqlite:///{db}", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "app", "demo", "--port", str(free_port()), *FAST, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"demo did not finish in {timeout} s:\n{out}") from None
    assert proc.returncode == 0, out
    return out


def _until_serving(proc: subprocess.Popen[str], timeout: float) -> str:
    """The demo's output up to its "Serving on" line (it then serves until Ctrl-C)."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line)
        if line.startswith("Serving on"):
            return "".join(lines)
    proc.kill()
    raise AssertionError("the demo did not serve:\n" + "".join(lines))


def _cards(out: str) -> dict[str, str]:
    """The overview's cards as a person reads them (tags stripped), by failure mode, logged
    in with the admin key the demo printed."""
    base = re.search(r"UI\s+(http://127\.0\.0\.1:\d+)/", out).group(1)
    admin = re.search(r"admin key\s+(tt_\S+)", out).group(1)
    with httpx.Client(base_url=base, timeout=30) as c:
        token = re.search(r'name="csrf" value="([^"]+)"', c.get("/login").text).group(1)
        c.post("/login", data={"api_key": admin, "csrf": token, "next": "/"})
        html = c.get("/").text
    cards = re.findall(
        r'<section class="card mode[^"]*" data-mode="([^"]+)"(.*?)</section>', html, re.S
    )
    return {fm: " ".join(re.sub(r"<[^>]+>", " ", body).split()) for fm, body in cards}


def test_demo_detects_every_mode_and_runs_twice(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    proc = _demo(db, "--hours", "22")
    out = _until_serving(proc, timeout=420)
    # While it serves, the overview shows what the summary says: the replay's alerts and
    # last verdicts, not a real-clock run over empty windows ("no traces ... 0 traces").
    try:
        cards = _cards(out)
        firing = int(re.search(r"alerts: (\d+) firing", out).group(1))
        shown = re.findall(r"(\d+) open alerts? ", " ".join(cards.values()))
        assert sum(int(n) for n in shown) == firing, cards
        for fm in [f"FM-{k}" for k in range(1, 8)]:
            card = cards[fm]
            assert "Firing: 1 open alert; last verdict" in card, card
            when = re.search(r"Last run (\d{4}-\d\d-\d\d \d\d:\d\d): ", card)
            assert when and when.group(1).endswith(":00"), card  # the simulated clock's hour
            assert "no data" not in card and not re.search(r"(?<!\d)0 traces in", card), card
    finally:
        proc.send_signal(signal.SIGINT)
    out += _finish(proc, timeout=60)
    assert re.search(r"UI\s+http://127\.0\.0\.1:\d+/", out), out
    assert "/openapi.json" in out and "/metrics" in out
    for role in ("admin", "ingest", "annotate"):
        assert re.search(rf"{role} key\s+tt_\S{{20,}}", out), out
    for k in range(1, 8):
        line = rf"FM-{k}  \S+ \S+  detected after \d+h\d\dm \(simulated\) since injection"
        assert re.search(line, out), f"FM-{k} not detected:\n{out}"
    assert "detected 7 of 7" in out
    for queue in ("support-answers", "vlm-images"):
        depth = re.search(rf"labeling queue {queue}: (\d+) items waiting", out)
        assert depth and int(depth.group(1)) > 0, out
    delivered = re.search(
        r"notifications delivered to the receiver: (\d+) signed and verified", out
    )
    assert delivered and int(delivered.group(1)) >= 7, out
    assert "rejected" not in out.split("notifications delivered")[1]

    # Again on the same database: the project is reused and an earlier period replayed.
    again = _finish(_demo(db, "--exit-when-done", "--hours", "10", "--modes", "FM-2"), timeout=240)
    assert "project 'demo' reused" in again, again
    assert re.search(r"FM-2  .*detected after", again), again
    assert "detected 1 of 1" in again and "0 failed" in again


def test_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    proc = _demo(tmp_path / "demo.db", "--hours", "22")
    assert proc.stdout is not None
    port = None
    deadline = time.monotonic() + 60
    lines = []
    while port is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        found = re.search(r"UI\s+http://127\.0\.0\.1:(\d+)/", line)
        port = int(found.group(1)) if found else None
    assert port is not None, "".join(lines)
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    out = _finish(proc, timeout=30)
    assert time.monotonic() - start < 15
    assert "telltale demo stopped" in out
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
