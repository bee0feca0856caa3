"""Shared bench plumbing: a fresh database, a real server subprocess, durable row counts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg

PG_ADMIN = os.environ.get("TELLTALE_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def fresh_db(kind: str) -> Iterator[str]:
    """A new empty database URL (SQLite file or PostgreSQL database), removed afterwards."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as d:
            yield f"sqlite:///{d}/bench.db"
        return
    name = f"tt_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base = PG_ADMIN.rsplit("/", 1)[0].split("://", 1)[1]
    try:
        yield f"postgresql+psycopg://{base}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def telltale(*args: str, db_url: str, capture: bool = True) -> str:
    env = dict(os.environ, TELLTALE_DATABASE_URL=db_url)
    out = subprocess.run(
        [sys.executable, "-m", "app", *args],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=capture,
        text=True,
    )
    return out.stdout.strip() if capture else ""


@contextmanager
def server(
    db_url: str,
    *,
    workers: int = 1,
    extra_env: dict[str, str] | None = None,
    return_proc: bool = False,
) -> Iterator[Any]:
    """``telltale serve`` in a subprocess on a free port; yields its base URL
    (or ``(url, process)`` with ``return_proc``)."""
    telltale("db", "upgrade", db_url=db_url)
    port = free_port()
    env = dict(os.environ, TELLTALE_DATABASE_URL=db_url, TELLTALE_SCHEDULER_ENABLED="false")
    env.update(extra_env or {})
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "serve",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--workers",
            str(workers),
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"server did not start: {proc.stderr.read().decode(errors='replace') if proc.stderr else ''}"
                )
            time.sleep(0.2)
        yield (url, proc) if return_proc else url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def drive(
    url: str,
    key: str,
    path: str,
    bodies: list[bytes],
    clients: int,
    content_type: str,
    *,
    success_is_empty: bool = False,
) -> float:
    """POST every body to ``path`` with ``clients`` threads; retry 429/503 after Retry-After.

    Returns the seconds taken. Any answer but 200 fails the run, and so does a 200 with a
    body when ``success_is_empty`` (OTLP: only a partial success has one).
    """
    queue = list(reversed(bodies))
    lock = threading.Lock()
    errors: list[str] = []

    def worker() -> None:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": content_type}
        with httpx.Client(base_url=url, timeout=120, headers=headers) as c:
            while True:
                with lock:
                    if not queue:
                        return
                    body = queue.pop()
                while True:
                    r = c.post(path, content=body)
                    if r.status_code in (429, 503):
                        time.sleep(float(r.headers.get("retry-after", "1")))
                        continue
                    if r.status_code != 200 or (success_is_empty and r.content):
                        errors.append(f"{r.status_code} {r.content[:200]!r}")
                    break

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, first: {errors[0]}")
    return elapsed


def settle(db_url: str, *, timeout: float = 180.0) -> None:
    """PostgreSQL: let the last phase's autovacuum finish, then write dirty pages out.

    Each timed phase then starts from the same state: not racing the autovacuum that the
    previous phase's inserts started (on 2 cores that took a quarter off the embeddings
    phase after the spans phase), and just after a checkpoint rather than wherever the
    server's 5-minute timer falls. A no-op on SQLite.
    """
    if not db_url.startswith("postgresql"):
        return
    from sqlalchemy import create_engine, text

    from app.db import normalise_url

    eng = create_engine(normalise_url(db_url), isolation_level="AUTOCOMMIT")
    busy = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE backend_type = 'autovacuum worker' AND datname = current_database()"
    )
    try:
        with eng.connect() as conn:
            deadline, quiet = time.monotonic() + timeout, 0
            while quiet < 3 and time.monotonic() < deadline:
                quiet = quiet + 1 if not conn.execute(busy).scalar_one() else 0
                time.sleep(1)
            conn.execute(text("CHECKPOINT"))
    finally:
        eng.dispose()


def count_rows(db_url: str, table: str) -> int:
    from sqlalchemy import create_engine, text

    from app.db import normalise_url

    eng = create_engine(normalise_url(db_url))
    try:
        with eng.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    finally:
        eng.dispose()


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used (0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / _TICK


def server_pids(port: str) -> list[int]:
    """The ``telltale serve --port PORT`` process and its descendants (uvicorn workers)."""
    parents: dict[int, int] = {}
    root = None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat[1])
        if b"serve" in cmd and port.encode() in cmd:
            root = int(entry.name)
    tree = {root} if root else set()
    while True:
        grown = tree | {pid for pid, ppid in parents.items() if ppid in tree}
        if grown == tree:
            return sorted(tree)
        tree = grown


def pg_backend_pids(db_url: str) -> list[int]:
    """PostgreSQL backends serving the bench database (the server's pooled connections)."""
    name = db_url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (name,)
        ).fetchall()
    return [int(r[0]) for r in rows]


def cpu_now(procs: list[int], db_url: str) -> tuple[float, float]:
    """CPU seconds so far of the server processes ``procs`` and of the bench database's
    PostgreSQL backends (0 on SQLite), read again each time: backends opened since count
    from zero."""
    backends = pg_backend_pids(db_url) if db_url.startswith("postgresql") else []
    return cpu_seconds(procs), cpu_seconds(backends)
