"""kill -9 the server mid-stream: every acknowledged event is stored, nothing half-written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from sqlalchemy import create_engine, select

from app.db import normalise_url
from app.models import Span
from tests.conftest import auth, free_port


@contextmanager
def server_process(db_url: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    env = dict(os.environ, TELLTALE_DATABASE_URL=db_url, TELLTALE_SCHEDULER_ENABLED="false")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
        time.sleep(0.1)
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def batch(i: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"b{i}-{j}",
            "type": "span",
            "body": {"trace_id": f"t{i}", "span_id": f"s{j}", "attributes": {"n": j}},
        }
        for j in range(50)
    ]


@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_event(db_url, make_key):
    key = make_key("ingest")
    acked: set[int] = set()
    sent: list[int] = []
    stop = threading.Event()

    with server_process(db_url) as (proc, url):

        def stream() -> None:
            i = 0
            with httpx.Client(timeout=10) as c:
                while not stop.is_set():
                    sent.append(i)
                    try:
                        r = c.post(
                            f"{url}/api/v1/ingest", json={"events": batch(i)}, headers=auth(key)
                        )
                    except httpx.HTTPError:
                        return  # the server died under us: this batch was never acknowledged
                    if r.status_code == 200:
                        acked.add(i)
                    i += 1

        t = threading.Thread(target=stream)
        t.start()
        deadline = time.monotonic() + 60
        while len(acked) < 5:  # killed mid-stream, once a few batches are acknowledged
            assert t.is_alive() and time.monotonic() < deadline, "no batch was acknowledged"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stop.set()
        t.join()
    assert len(acked) >= 3

    eng = create_engine(normalise_url(db_url))
    with eng.connect() as conn:
        span_keys = set(conn.execute(select(Span.trace_id, Span.span_id)).all())
    eng.dispose()
    per_batch = {i: sum((f"t{i}", f"s{j}") in span_keys for j in range(50)) for i in sent}
    # Acknowledged batches are whole; any other batch is all-or-nothing (one transaction).
    assert all(per_batch[i] == 50 for i in acked)
    assert all(n in (0, 50) for n in per_batch.values()), per_batch

    # After a restart, re-sending everything: acknowledged events are duplicates, the rest land.
    with server_process(db_url) as (_proc, url), httpx.Client(timeout=30) as c:
        dup = acc = 0
        for i in sent:
            r = c.post(f"{url}/api/v1/ingest", json={"events": batch(i)}, headers=auth(key)).json()
            dup += r["duplicates"]
            acc += r["accepted"]
    assert dup >= 50 * len(acked)
    assert dup + acc == 50 * len(sent)
    eng = create_engine(normalise_url(db_url))
    with eng.connect() as conn:
        assert len(conn.execute(select(Span.id)).all()) == 50 * len(sent)
    eng.dispose()
