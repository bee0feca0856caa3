"""``telltale embed-worker``: embed media jobs from the database queue, one model per process.

Run any number against one database (PostgreSQL for more than one host): jobs are claimed
with ``SKIP LOCKED`` and leased, so no job is embedded by two workers.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path

log = logging.getLogger("telltale.media")


HELP = "embed uploaded images and texts from the media job queue"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from app.settings import get_settings

    s = get_settings()
    p.add_argument("--model", default=s.embed_model, help="open_clip model name")
    p.add_argument(
        "--pretrained",
        default=s.embed_pretrained,
        help="local checkpoint path or open_clip pretrained tag",
    )
    p.add_argument("--device", default=s.embed_device, help="auto, cpu, cuda or cuda:N")
    p.add_argument(
        "--decoder",
        default=s.image_decoder,
        choices=["auto", "dali", "nvimgcodec", "torchvision", "pil"],
        help="JPEG decoder for the device path (TELLTALE_IMAGE_DECODER)",
    )
    p.add_argument("--batch-size", type=int, default=s.embed_batch_size, help="jobs per batch")
    p.add_argument("--poll-interval", type=float, default=1.0, help="seconds between idle polls")
    p.add_argument(
        "--max-attempts", type=int, default=s.embed_max_attempts, help="attempts before dead"
    )
    p.add_argument("--lease", type=float, default=300.0, help="seconds a claimed batch is held")
    p.add_argument("--once", action="store_true", help="embed every due job, then exit")
    p.add_argument("--migrate", action="store_true", help="upgrade the database first")
    p.add_argument(
        "--heartbeat",
        metavar="FILE",
        help="touch FILE after every pass that reached the database (for a healthcheck)",
    )
    p.add_argument(
        "--random-init", action="store_true", help="untrained weights (tests only, never prod)"
    )


def run(args: argparse.Namespace) -> int:
    from app import migrate
    from app.db import make_engine
    from app.media.worker import EmbedWorker
    from app.retry import Backoff
    from app.settings import get_settings
    from pipelines.embedding import ClipEmbedder

    settings = get_settings()
    if settings.is_sqlite or args.migrate:
        migrate.upgrade(settings.database_url)
    try:
        embedder = ClipEmbedder(
            args.model,
            None if args.random_init else args.pretrained,
            device=args.device,
            batch_size=args.batch_size,
            random_init=args.random_init,
            decoder=args.decoder,
            max_pixels=settings.media_max_pixels,
        )
    except ValueError as exc:
        log.error("cannot load the embedding model: %s", exc)
        return 2
    engine = make_engine(settings.database_url, pool_size=2)
    worker = EmbedWorker(
        engine,
        embedder,
        media_dir=settings.media_dir,
        batch_size=args.batch_size,
        lease_seconds=args.lease,
        policy=Backoff(max_attempts=args.max_attempts),
    )
    try:
        if args.once:
            log.info("embed worker drained the queue: %s", worker.drain())
            return 0
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        log.info("embed worker running: %s on %s", args.model, embedder.device)
        heartbeat = Path(args.heartbeat) if args.heartbeat else None
        worker.run(stop, poll_interval_s=args.poll_interval, heartbeat=heartbeat)
    finally:
        embedder.close()
        engine.dispose()
    log.info("embed worker stopped")
    return 0
