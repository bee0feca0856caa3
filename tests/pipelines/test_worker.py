"""The embed worker against real databases, with a tiny random-init open_clip model."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update

from app.media import jobs as queue
from app.media.worker import EmbedWorker
from app.models import Embedding, IngestEvent
from app.models.media import MediaJob
from app.settings import Settings
from pipelines.embedding import ClipEmbedder
from tests.app.media.test_media import image_bytes, upload
from tests.conftest import KeyMaker, auth

T0 = datetime(2020, 1, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def text_jobs(engine: Engine, n: int, *, stream: str = "texts", project_id: int = 1) -> list[int]:
    specs = [
        queue.JobSpec(stream=stream, sample_id=f"s{i}", kind="text", text=f"t {i}")
        for i in range(n)
    ]
    return [j.id for j in queue.submit_jobs(engine, project_id=project_id, specs=specs, now=T0)]


def jobs_by_sample(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        return {r.sample_id: r for r in conn.execute(select(MediaJob)).all()}


def embedding_counts(engine: Engine) -> dict[str | None, int]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(Embedding.sample_id, func.count()).group_by(Embedding.sample_id)
        ).all()
    return {sample: int(count) for sample, count in rows}


@pytest.fixture
def project(make_key: KeyMaker) -> str:
    return make_key("admin")  # creates project 1


def test_api_to_worker_end_to_end(
    client: TestClient,
    project: str,
    settings: Settings,
    engine: Engine,
    embedder: ClipEmbedder,
) -> None:
    jpeg, png, webp = image_bytes(1), image_bytes(2, "PNG"), image_bytes(3, "WEBP")
    whole = image_bytes(4)
    truncated = whole[: whole.index(b"\xff\xda") + 100]  # headers intact, pixels cut short
    r = upload(client, project, [jpeg, truncated, png, webp], ["a", "bad", "b", "c"], trace_id="tr")
    assert r.status_code == 200, r.text
    items = [
        {"stream": "prompts", "sample_id": f"q{i}", "text": f"a photo of {i}"} for i in range(2)
    ]
    assert (
        client.post("/api/v1/media", headers=auth(project), json={"items": items}).status_code
        == 200
    )

    worker = EmbedWorker(engine, embedder, media_dir=settings.media_dir, batch_size=16)
    report = worker.drain()
    assert (report.claimed, report.done, report.failed) == (6, 5, 1)

    jobs = jobs_by_sample(engine)
    assert jobs["bad"].status == "failed"
    assert jobs["bad"].error.startswith("corrupt JPEG") and "truncated" in jobs["bad"].error
    done = [s for s in ("a", "b", "c", "q0", "q1")]
    assert all(jobs[s].status == "done" and jobs[s].attempts == 1 for s in done)
    assert embedding_counts(engine) == {s: 1 for s in done}

    with engine.connect() as conn:
        rows = {r.sample_id: r for r in conn.execute(select(Embedding)).all()}
        event_ids = set(conn.scalars(select(IngestEvent.event_id)))
    assert event_ids == {f"media:{jobs[s].id}" for s in done}
    assert (
        rows["a"].stream == "cam"
        and rows["a"].trace_id == "tr"
        and rows["a"].model == embedder.model_name
    )
    assert rows["q0"].stream == "prompts" and rows["q0"].trace_id is None
    stored = np.frombuffer(rows["a"].vector, dtype="<f4")
    np.testing.assert_allclose(stored, embedder.embed_images([jpeg])[0], atol=1e-5)
    np.testing.assert_allclose(
        np.frombuffer(rows["q1"].vector, dtype="<f4"),
        embedder.embed_texts(["a photo of 1"])[0],
        atol=1e-5,
    )

    status = client.get(f"/api/v1/media/{jobs['b'].id}", headers=auth(project)).json()
    assert status["status"] == "done" and status["embedding_id"] == rows["b"].id
    failed = client.get(f"/api/v1/media/{jobs['bad'].id}", headers=auth(project)).json()
    assert failed["status"] == "failed" and "corrupt JPEG" in failed["error"]


class FlakyEmbedder:
    """Raises like a device out of memory for the first ``failures`` calls."""

    model_name = "flaky"

    def __init__(self, inner: ClipEmbedder, failures: int) -> None:
        self.inner = inner
        self.failures = failures

    def embed_images(self, items: Sequence[object], *, errors: Any) -> Any:
        return self.inner.embed_images(items, errors=errors)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.inner.embed_texts(texts)


def test_transient_failures_back_off_then_dead_letter(
    project: str, engine: Engine, settings: Settings, embedder: ClipEmbedder
) -> None:
    [job_id] = text_jobs(engine, 1)
    clock = Clock(T0)
    policy = queue.Backoff(max_attempts=3, backoff_base_s=10, backoff_max_s=15)
    worker = EmbedWorker(
        engine,
        FlakyEmbedder(embedder, 99),
        media_dir=settings.media_dir,
        policy=policy,
        clock=clock,
    )
    assert worker.run_once().retried == 1
    job = jobs_by_sample(engine)["s0"]
    assert (job.status, job.attempts) == ("pending", 1)
    assert (
        job.error
        == "attempt 1 failed: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    )
    assert job.next_attempt_at == T0 + timedelta(seconds=10)
    assert worker.run_once().claimed == 0  # not due yet
    clock.advance(10)
    assert worker.run_once().retried == 1
    assert jobs_by_sample(engine)["s0"].next_attempt_at == clock.now + timedelta(seconds=15)
    clock.advance(15)
    assert worker.run_once().dead == 1
    job = jobs_by_sample(engine)["s0"]
    assert (job.status, job.attempts, job.id) == ("dead", 3, job_id)
    assert job.error.startswith(
        "dead after 3 attempts; last error: RuntimeError: CUDA out of memory"
    )
    clock.advance(3600)
    assert worker.run_once().claimed == 0
    assert embedding_counts(engine) == {}

    text_jobs(engine, 2, stream="other")  # s0 exists in "texts": these are new samples
    recovering = EmbedWorker(
        engine, FlakyEmbedder(embedder, 1), media_dir=settings.media_dir, policy=policy, clock=clock
    )
    assert recovering.run_once().retried == 2
    clock.advance(10)
    assert recovering.run_once().done == 2
    assert embedding_counts(engine) == {"s0": 1, "s1": 1}


def test_expired_lease_returns_the_job_and_it_is_stored_once(
    project: str, engine: Engine, settings: Settings, embedder: ClipEmbedder
) -> None:
    text_jobs(engine, 2)
    policy = queue.Backoff(max_attempts=2)
    # A worker claims and dies: its jobs stay leased until the lease runs out.
    lost = queue.claim_jobs(engine, limit=10, lease_seconds=60, policy=policy, now=T0)
    assert len(lost) == 2
    clock = Clock(T0 + timedelta(seconds=30))
    worker = EmbedWorker(engine, embedder, media_dir=settings.media_dir, policy=policy, clock=clock)
    assert worker.run_once().claimed == 0
    clock.advance(31)
    assert worker.run_once().done == 2
    # The dead worker wakes up: its lease token no longer holds, so it changes nothing.
    assert (
        queue.complete_jobs(
            engine, job_ids=[j.id for j in lost], token=lost[0].lease_token, model="x"
        )
        == 0
    )
    # A worker that stored the vector but died before marking the job done: the retry is
    # a duplicate event and the job ends done, still with one embedding.
    with engine.begin() as conn:
        conn.execute(
            update(MediaJob).values(
                status="running", lease_token="gone", lease_expires_at=T0, attempts=1
            )
        )
    assert worker.run_once().done == 2
    assert embedding_counts(engine) == {"s0": 1, "s1": 1}
    assert all(j.embedding_id is not None for j in jobs_by_sample(engine).values())
    # A job whose lease keeps expiring is dead-lettered once its attempts are spent.
    with engine.begin() as conn:
        conn.execute(
            update(MediaJob).values(
                status="running", lease_token="gone", lease_expires_at=T0, attempts=2
            )
        )
    assert worker.run_once().claimed == 0
    job = jobs_by_sample(engine)["s0"]
    assert job.status == "dead" and "lease expired" in job.error


class CountingEmbedder:
    """Records every text it embeds; several workers share one record."""

    def __init__(self, inner: ClipEmbedder, seen: list[str], lock: threading.Lock) -> None:
        self.inner, self.seen, self.lock = inner, seen, lock
        self.model_name = inner.model_name

    def embed_images(self, items: Sequence[object], *, errors: Any) -> Any:
        return self.inner.embed_images(items, errors=errors)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        with self.lock:
            self.seen.extend(texts)
        return self.inner.embed_texts(texts)


def test_two_workers_never_embed_the_same_job(
    project: str,
    engine: Engine,
    settings: Settings,
    make_embedder: Callable[..., ClipEmbedder],
) -> None:
    n = 40
    text_jobs(engine, n)
    seen: list[str] = []
    lock = threading.Lock()
    workers = [
        EmbedWorker(
            engine,
            CountingEmbedder(make_embedder(), seen, lock),
            media_dir=settings.media_dir,
            batch_size=3,
        )
        for _ in range(2)
    ]
    barrier = threading.Barrier(len(workers))
    reports: list[Any] = []

    errors: list[BaseException] = []

    def run(worker: EmbedWorker) -> None:
        barrier.wait()
        try:
            reports.append(worker.drain())
        except BaseException as exc:  # surfaced below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert sorted(seen) == sorted(f"t {i}" for i in range(n))  # each text embedded once
    assert sum(r.done for r in reports) == n
    assert all(r.claimed > 0 for r in reports)  # both really worked the queue at once
    assert embedding_counts(engine) == {f"s{i}": 1 for i in range(n)}
    assert {j.status for j in jobs_by_sample(engine).values()} == {"done"}


def test_cli_embed_worker_once(
    project: str,
    engine: Engine,
    settings: Settings,
    tiny_model: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.cli import main
    from app.settings import get_settings

    text_jobs(engine, 3)
    monkeypatch.setenv("TELLTALE_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("TELLTALE_MEDIA_DIR", settings.media_dir)
    get_settings.cache_clear()
    try:
        args = ["embed-worker", "--once", "--random-init", "--model", tiny_model, "--device", "cpu"]
        assert main([*args, "--batch-size", "2"]) == 0
    finally:
        get_settings.cache_clear()
    assert {j.status for j in jobs_by_sample(engine).values()} == {"done"}
    assert embedding_counts(engine) == {"s0": 1, "s1": 1, "s2": 1}


def test_cli_embed_worker_takes_the_decoder_setting(
    settings: Settings,
    tiny_model: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from app.cli import main
    from app.settings import get_settings

    monkeypatch.setenv("TELLTALE_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("TELLTALE_IMAGE_DECODER", "dali")
    get_settings.cache_clear()
    try:
        args = ["embed-worker", "--once", "--random-init", "--model", tiny_model, "--device", "cpu"]
        assert main(args) == 2  # DALI needs CUDA: refused before any job is claimed
        assert "image decoder 'dali' needs a CUDA device" in caplog.text
        assert main([*args, "--decoder", "pil"]) == 0
    finally:
        get_settings.cache_clear()
