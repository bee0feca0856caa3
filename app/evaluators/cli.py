"""``telltale evaluate``: an evaluator worker. Any number may run beside the scheduler (which
runs the same work every few seconds): leases keep them on different traces, and a worker
killed mid-batch loses nothing (its leases return to the queue) and duplicates nothing."""

from __future__ import annotations

import argparse
import json
import signal
import threading

HELP = "run online evaluators (LLM judges and checks) on the traces due"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--once", action="store_true", help="one pass, print what it did, exit")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between passes when idle")


def run(args: argparse.Namespace) -> int:
    from app.db import make_engine
    from app.evaluators.runner import RunStats, run_due
    from app.settings import get_settings

    settings = get_settings()
    engine = make_engine(settings.database_url)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    total = RunStats()
    try:
        while not stop.is_set():
            got = run_due(engine, settings, max_seconds=30.0)
            total.add(got)
            if args.once:
                break
            if not (got.calls or got.done or got.errors):
                stop.wait(args.poll)
    finally:
        engine.dispose()
    print(json.dumps(total.__dict__))
    return 0
