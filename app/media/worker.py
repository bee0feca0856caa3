"""The embed worker: claim due media jobs, embed them in batches, write the vectors.

Vectors go through :func:`app.ingest.store.write_events`, the API's own write path, with
event id ``media:<job id>``. Bad input (a corrupt image, a missing file, a stream of
another dimension) fails only its own job. Anything else that goes wrong with a batch
(a database error, CUDA out of memory) is transient: the batch's jobs go back to the queue
with a backoff and are dead-lettered after ``max_attempts``.
"""

from __future__ import annotations

import io
import logging
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image
from prometheus_client import Counter, Gauge

from app.ingest.events import ValidEvent
from app.ingest.store import write_events
from app.media import jobs as queue
from app.media.store import image_path
from app.models.base import utcnow
from app.retry import Backoff

log = logging.getLogger("telltale.media.worker")

MEDIA_JOBS = Counter(
    "telltale_media_jobs_total", "Media jobs handled by embed workers, by result", ["result"]
)
WORKER_LAST_BATCH = Gauge(
    "telltale_embed_worker_last_batch_timestamp_seconds", "When this embed worker last ran a batch"
)


class Embedder(Protocol):
    """What the worker needs of :class:`pipelines.embedding.ClipEmbedder`."""

    model_name: str

    def embed_images(self, items: Sequence[object], *, errors: Any) -> Any: ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass
class BatchReport:
    claimed: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    dead: int = 0

    def add(self, counts: dict[str, int]) -> None:
        self.retried += counts.get("retried", 0)
        self.dead += counts.get("dead", 0)


@dataclass
class _Outcome:
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    failures: dict[int, str] = field(default_factory=dict)
    transient: dict[int, str] = field(default_factory=dict)


class EmbedWorker:
    """One worker process (or thread) with one loaded model."""

    def __init__(
        self,
        engine: Any,
        embedder: Embedder,
        *,
        media_dir: str | Path,
        batch_size: int = 256,
        lease_seconds: float = 300.0,
        policy: Backoff | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.engine = engine
        self.embedder = embedder
        self.media_dir = media_dir
        self.batch_size = batch_size
        self.lease_seconds = lease_seconds
        self.policy = policy or Backoff()
        self.clock = clock

    def run_once(self) -> BatchReport:
        """Claim one batch and see every job in it to done, failed, pending or dead."""
        report = BatchReport()
        claimed = queue.claim_jobs(
            self.engine,
            limit=self.batch_size,
            lease_seconds=self.lease_seconds,
            policy=self.policy,
            now=self.clock(),
        )
        report.claimed = len(claimed)
        if not claimed:
            return report
        WORKER_LAST_BATCH.set_to_current_time()
        outcome = _Outcome()
        self._embed_images([j for j in claimed if j.kind == "image"], outcome)
        self._embed_texts([j for j in claimed if j.kind == "text"], outcome)
        by_id = {j.id: j for j in claimed}
        self._store(by_id, outcome, report)
        token = claimed[0].lease_token
        if outcome.failures:
            report.failed = queue.fail_jobs(
                self.engine, errors=outcome.failures, token=token, now=self.clock()
            )
        for reason in sorted(set(outcome.transient.values())):
            group = [by_id[i] for i, r in outcome.transient.items() if r == reason]
            report.add(
                queue.retry_jobs(
                    self.engine, jobs=group, error=reason, policy=self.policy, now=self.clock()
                )
            )
        for result in ("done", "failed", "retried", "dead"):
            MEDIA_JOBS.labels(result=result).inc(getattr(report, result))
        return report

    def run(
        self,
        stop: threading.Event,
        *,
        poll_interval_s: float = 1.0,
        heartbeat: Path | None = None,
    ) -> None:
        """Loop until ``stop`` is set; an error in one pass is logged and the loop goes on.

        ``heartbeat`` is touched after every pass that reached the database (each claims
        from it), so a container healthcheck can read the file's age.
        """
        while not stop.is_set():
            try:
                report = self.run_once()
                if heartbeat is not None:
                    heartbeat.touch()
            except Exception:
                log.exception("embed worker pass failed; jobs keep their lease and come back")
                report = BatchReport()
            if report.claimed:
                log.info("embed worker batch: %s", report)
            else:
                stop.wait(poll_interval_s)

    def drain(self) -> BatchReport:
        """Run batches until no job is due (``telltale embed-worker --once``)."""
        total = BatchReport()
        while True:
            report = self.run_once()
            if not report.claimed:
                return total
            for name in ("claimed", "done", "failed", "retried", "dead"):
                setattr(total, name, getattr(total, name) + getattr(report, name))

    # -- steps ---------------------------------------------------------------------------

    def _embed_images(self, claimed: list[queue.ClaimedJob], outcome: _Outcome) -> None:
        items: list[object] = []
        ids: list[int] = []
        for job in claimed:
            try:
                items.append(self._load_image(job))
                ids.append(job.id)
            except _BadInput as exc:
                outcome.failures[job.id] = str(exc)
        if not items:
            return
        try:
            result = self.embedder.embed_images(items, errors="return")
        except Exception as exc:  # OOM, device lost: the batch, not the input, is at fault
            log.warning("image batch of %d failed: %s", len(items), exc)
            outcome.transient.update({i: _describe(exc) for i in ids})
            return
        bad = {error.index: error.message for error in result.errors}
        for row, job_id in enumerate(ids):
            if row in bad:
                outcome.failures[job_id] = bad[row]
            else:
                outcome.vectors[job_id] = result.vectors[row]

    def _embed_texts(self, claimed: list[queue.ClaimedJob], outcome: _Outcome) -> None:
        if not claimed:
            return
        try:
            vectors = self.embedder.embed_texts([job.text or "" for job in claimed])
        except Exception as exc:
            log.warning("text batch of %d failed: %s", len(claimed), exc)
            outcome.transient.update({job.id: _describe(exc) for job in claimed})
            return
        for row, job in enumerate(claimed):
            outcome.vectors[job.id] = vectors[row]

    def _load_image(self, job: queue.ClaimedJob) -> object:
        if not job.file_name:
            raise _BadInput("image job has no stored file")
        try:
            data = image_path(self.media_dir, job.file_name).read_bytes()
        except FileNotFoundError:
            raise _BadInput(
                "stored image file is missing (deleted by retention or by hand)"
            ) from None
        except ValueError as exc:
            raise _BadInput(str(exc)) from None
        if job.content_type != "image/webp":
            return data
        # The embedder reads JPEG and PNG bytes; WebP is decoded here, per job.
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                image = Image.open(io.BytesIO(data), formats=["WEBP"])
                image.load()
            return image.convert("RGB")
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombWarning) as exc:
            raise _BadInput(f"corrupt WebP: {exc}") from None

    def _store(
        self, by_id: dict[int, queue.ClaimedJob], outcome: _Outcome, report: BatchReport
    ) -> None:
        model = self.embedder.model_name
        per_project: dict[int, list[ValidEvent]] = {}
        for job_id, vector in outcome.vectors.items():
            job = by_id[job_id]
            vec = np.asarray(vector, dtype="<f4")
            row = {
                "stream": job.stream,
                "model": model,
                "dim": int(vec.size),
                "vector": vec.tobytes(),
                "trace_id": job.trace_id,
                "sample_id": job.sample_id,
            }
            events = per_project.setdefault(job.project_id, [])
            events.append(ValidEvent(len(events), f"media:{job_id}", "embedding", row, vec))
        for project_id, events in per_project.items():
            job_ids = [int(ev.event_id.split(":", 1)[1]) for ev in events]
            try:
                result = write_events(self.engine, project_id=project_id, events=events)
            except Exception as exc:
                log.warning("writing %d embeddings failed: %s", len(events), exc)
                outcome.transient.update({i: _describe(exc) for i in job_ids})
                continue
            rejected = {int(r.id.split(":", 1)[1]): r.error for r in result.rejected if r.id}
            for job_id, error in rejected.items():
                outcome.failures[job_id] = f"embedding rejected by the store: {error}"
            stored = [i for i in job_ids if i not in rejected]
            token = by_id[job_ids[0]].lease_token
            report.done += queue.complete_jobs(
                self.engine, job_ids=stored, token=token, model=model, now=self.clock()
            )


class _BadInput(ValueError):
    """This job's input can never be embedded; fail the job, not the batch."""


def _describe(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
