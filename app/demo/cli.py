"""``telltale demo``: serve the real app, replay every failure mode at accelerated time.

The demo is ``telltale serve`` (API, web UI, scheduler and outbox sender on 127.0.0.1)
plus a local webhook receiver and a scripted workload: it creates the ``demo`` project
(keys, the seven default monitors, a labeling queue on ``vlm.image``, a webhook channel to
the receiver), replays the scenario generator's traffic through the ingest API with the
modes injected one after another, runs the monitors on the simulated clock, prints a line
per detection and a summary, fills the queue, and keeps serving until Ctrl-C.

Database: ``./telltale-demo.db`` unless ``TELLTALE_DATABASE_URL`` is set. A second run on
the same database reuses the project (monitors, queue, channel; new keys) and replays a
new, earlier simulated period, so its windows never mix with the first run's data;
``--fresh`` deletes the SQLite file first.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from app.demo.replay import Replay, Schedule, Workload
from app.demo.summary import Outcome, banner, schedule_lines, summary_lines

DEFAULT_DB = "sqlite:///./telltale-demo.db"


HELP = "serve the app and replay a workload with every failure mode (docs/demo.md)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=8000, help="serve on 127.0.0.1:PORT")
    p.add_argument(
        "--speed", type=float, default=900.0, help="simulated seconds per real second (at most)"
    )
    p.add_argument("--seed", type=int, default=0, help="scenario seed")
    p.add_argument("--hours", type=float, default=27.0, help="simulated hours to replay")
    p.add_argument(
        "--tick", type=float, default=30.0, help="simulated minutes between monitor runs"
    )
    p.add_argument(
        "--modes", default=",".join(f"FM-{k}" for k in range(1, 8)),
        help="failure modes to inject, in order (comma-separated)",
    )  # fmt: skip
    p.add_argument("--strength", choices=["weak", "moderate", "strong"], default="strong")
    p.add_argument("--traces-per-hour", type=float, default=80.0)
    p.add_argument("--exit-when-done", action="store_true", help="stop after the summary")
    p.add_argument("--fresh", action="store_true", help="delete the demo SQLite database first")
    p.add_argument("--no-browser-hint", action="store_true", help="do not suggest a page to open")


def _database_url(fresh: bool) -> str:
    url = os.environ.get("TELLTALE_DATABASE_URL") or DEFAULT_DB
    if fresh:
        if not url.startswith("sqlite:///"):
            raise SystemExit("--fresh only deletes SQLite files; drop that database yourself")
        path = Path(url.removeprefix("sqlite:///"))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return url


def _quiet_logs() -> None:
    """The demo prints its own story; the service's info logs would bury it."""
    logging.getLogger().setLevel(logging.WARNING)
    for name in ("alembic", "telltale", "uvicorn"):
        logging.getLogger(name).setLevel(logging.WARNING)


def run(args: argparse.Namespace) -> int:
    _quiet_logs()
    from app import migrate
    from app.alerts.outbound import OutboundPolicy
    from app.db import make_engine
    from app.demo.receiver import HOST as RECEIVER_HOST
    from app.demo.receiver import WebhookReceiver
    from app.demo.setup import prepare, timeline_start
    from app.models.base import utcnow
    from app.settings import Settings

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    try:  # check the flags before touching the database
        Schedule(start=utcnow(), hours=args.hours, strength=args.strength, modes=modes)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if _port_taken(args.port):  # before --fresh deletes anything
        print(_port_hint(args.port), file=sys.stderr)
        return 2
    url = _database_url(args.fresh)
    migrate.upgrade(url)
    _quiet_logs()  # again: the migration's logging config turns them back on
    base_url = f"http://127.0.0.1:{args.port}"
    receiver = WebhookReceiver(secrets.token_urlsafe(24)).start()
    # Loopback is refused by default (docs: alert-routing); the demo opens exactly its own
    # receiver's address, so `make run` needs no configuration.
    allow = [f"{RECEIVER_HOST}/32"]
    engine = make_engine(url)
    try:
        project = prepare(
            engine,
            receiver_url=receiver.url,
            secret=receiver.secret,
            outbound=OutboundPolicy.from_allow(allow),
        )
    finally:
        engine.dispose()
    schedule = Schedule(
        start=timeline_start(now=utcnow(), hours=args.hours, earliest_data=project.earliest_data),
        hours=args.hours,
        strength=args.strength,
        modes=modes,
    )
    settings = Settings(database_url=url, public_url=base_url, outbound_allow=allow)
    server, thread = _start_server(settings, args.port)
    try:
        if not _wait_healthy(base_url, server, thread, stop):
            print(f"error: the server did not start on {base_url}", file=sys.stderr)
            if not stop.is_set():
                print(_port_hint(args.port), file=sys.stderr)
            return 0 if stop.is_set() else 2
        say = _printer()
        for line in banner(
            base_url=base_url, db_url=url, keys=project.keys,
            reused=project.earliest_data is not None, hint=not args.no_browser_hint,
        ):  # fmt: skip
            say(line)
        for line in schedule_lines(schedule, speed=args.speed, tick_min=args.tick):
            say(line)
        with httpx.Client(base_url=base_url, timeout=300.0) as client:
            result = Replay(
                client, schedule=schedule, seed=args.seed,
                workload=Workload(traces_per_hour=args.traces_per_hour),
                ingest_key=project.keys["ingest"], admin_key=project.keys["admin"],
                monitors=project.monitors, speed=args.speed, tick=timedelta(minutes=args.tick),
                stop=stop, say=say,
            ).run()  # fmt: skip
            outcome = _outcome(client, project.keys["admin"], project.queues, receiver, stop)
        if not stop.is_set():
            _illustrate(url, settings.media_dir, project.project_id, schedule, args)
        for line in summary_lines(schedule, result, outcome):
            say(line)
        if not args.exit_when_done and not stop.is_set():
            say(f"Serving on {base_url} until Ctrl-C.")
            say("  The cards show the replay's last runs: the scheduler's real-clock runs")
            say("  are held until the demo stops.")
            stop.wait()
        return 0
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        receiver.stop()
        _release(url, project.project_id)
        print("telltale demo stopped", flush=True)


def _port_taken(port: int) -> bool:
    """Another process listens on 127.0.0.1:``port`` (SO_REUSEADDR as uvicorn binds, so a
    port left in TIME_WAIT by a previous run does not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _port_hint(port: int) -> str:
    return (
        f"error: 127.0.0.1:{port} is taken by another process; serve on another port with "
        f"`telltale demo --port {port + 1}` (or `make run PORT={port + 1}`)"
    )


def _release(url: str, project_id: int) -> None:
    """The demo's monitors due again on the real clock (app.demo.setup.hold_scheduled_runs)."""
    from app.db import make_engine
    from app.demo.setup import release_scheduled_runs

    engine = make_engine(url)
    try:
        release_scheduled_runs(engine, project_id)
    finally:
        engine.dispose()


def _printer() -> Any:
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            print(line, flush=True)

    return say


def _start_server(settings: Any, port: int) -> tuple[Any, threading.Thread]:
    import uvicorn

    from app.main import create_app

    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=port, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    # Not the main thread: uvicorn leaves the signal handlers to the demo, which stops it.
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    return server, thread


def _wait_healthy(
    base_url: str, server: Any, thread: threading.Thread, stop: threading.Event
) -> bool:
    """Our server is up: it bound the port (``started``; a port taken by another server
    leaves it False and ends the thread) and answers /healthz."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and thread.is_alive() and not stop.is_set():
        if not server.started:
            stop.wait(0.1)
            continue
        try:
            if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        stop.wait(0.1)
    return False


def _illustrate(url: str, media_dir: str, project_id: int, schedule: Any, args: Any) -> None:
    """The pictures of the images the fill queued (app.demo.labeling.illustrate)."""
    from app.db import make_engine
    from app.demo.labeling import illustrate

    engine = make_engine(url)
    w = Workload(traces_per_hour=args.traces_per_hour)
    try:
        illustrate(
            engine, project_id=project_id, media_dir=media_dir, seed=args.seed,
            injections=schedule.injections(), start=schedule.start, hours=schedule.hours,
            images_per_hour=w.images_per_hour, dim=w.embedding_dim,
        )  # fmt: skip
    finally:
        engine.dispose()


def _outcome(
    client: httpx.Client,
    admin_key: str,
    queues: tuple[str, ...],
    receiver: Any,
    stop: threading.Event,
) -> Outcome:
    h = {"Authorization": f"Bearer {admin_key}"}
    added = dict.fromkeys(queues, 0)
    for queue in queues if not stop.is_set() else ():
        r = client.post(f"/api/v1/queues/{queue}/fill", headers=h)
        added[queue] = int(r.json()["added"])
    if not stop.is_set():
        # The outbox sender polls every second: wait until deliveries stop arriving.
        seen, quiet_since = -1, time.monotonic()
        while time.monotonic() - quiet_since < 3.0 and not stop.is_set():
            n = len(receiver.snapshot())
            if n != seen:
                seen, quiet_since = n, time.monotonic()
            stop.wait(0.25)
    alerts = client.get("/api/v1/alerts", headers=h, params={"limit": 1000}).json()["alerts"]
    waiting = {
        q: int(client.get(f"/api/v1/queues/{q}", headers=h).json()["items"].get("pending", 0))
        for q in queues
    }
    deliveries = receiver.snapshot()
    return Outcome(
        alerts_by_state=dict(Counter(a["state"] for a in alerts)),
        queues={q: (waiting[q], added[q]) for q in queues},
        delivered=len(deliveries),
        delivered_by_event=dict(Counter(d.event for d in deliveries)),
        rejected_deliveries=receiver.rejected,
    )
