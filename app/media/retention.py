"""Media retention: jobs and their images older than ``media_retention_days`` are deleted.

:class:`RetentionService` runs :func:`purge_expired` hourly in the API process.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, delete, select

from app.db import write_transaction
from app.media.store import delete_image, is_stored_name
from app.models.base import utcnow
from app.models.media import MediaJob
from app.settings import Settings

log = logging.getLogger("telltale.media")


def purge_expired(
    engine: Engine,
    *,
    media_dir: str | Path,
    retention_days: int,
    now: datetime | None = None,
    batch: int = 1000,
) -> dict[str, int]:
    """Delete media jobs (and their images) created before the retention cutoff.

    Rows go first, files after: a crash in between leaves orphan files, which the sweep of
    files older than the cutoff (by mtime) removes on the next run.
    """
    cutoff = (now or utcnow()) - timedelta(days=retention_days)
    jobs = files = 0
    while True:
        with write_transaction(engine) as conn:
            rows = conn.execute(
                select(MediaJob.id, MediaJob.file_name)
                .where(MediaJob.created_at < cutoff)
                .order_by(MediaJob.id)
                .limit(batch)
            ).all()
            if rows:
                conn.execute(delete(MediaJob).where(MediaJob.id.in_([r.id for r in rows])))
        for row in rows:
            if row.file_name:
                delete_image(media_dir, row.file_name)
                files += 1
        jobs += len(rows)
        if len(rows) < batch:
            break
    files += _sweep_old_files(Path(media_dir), cutoff)
    return {"jobs": jobs, "files": files}


def _sweep_old_files(root: Path, cutoff: datetime) -> int:
    if not root.is_dir():
        return 0
    removed = 0
    limit = cutoff.timestamp()
    for entry in os.scandir(root):
        name = entry.name.lstrip(".").removesuffix(".tmp")
        if is_stored_name(name) and entry.is_file() and entry.stat().st_mtime < limit:
            Path(entry.path).unlink(missing_ok=True)
            removed += 1
    return removed


class RetentionService:
    """Runs :func:`purge_expired` in the API process every ``interval_s`` seconds."""

    name = "media-retention"

    def __init__(self, settings: Settings, engine: Engine, *, interval_s: float = 3600.0) -> None:
        self._settings = settings
        self._engine = engine
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                purged = purge_expired(
                    self._engine,
                    media_dir=self._settings.media_dir,
                    retention_days=self._settings.media_retention_days,
                )
                if purged["jobs"] or purged["files"]:
                    log.info("media retention purged %s", purged)
            except Exception:
                log.exception("media retention run failed; retrying next interval")
            self._stop.wait(self._interval)
