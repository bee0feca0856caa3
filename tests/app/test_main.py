"""The composition root: what the API process runs beside its requests, listed in one place."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from app.db import make_engine, make_sessionmaker
from app.main import background_services, create_app
from app.scheduler.service import SchedulerService
from app.settings import Settings


def test_background_services_are_the_scheduler_with_every_job_the_outbox_and_retention(
    tmp_path: Path,
) -> None:
    settings = Settings(database_url="sqlite://", media_dir=str(tmp_path / "media"))
    engine = make_engine(settings.database_url)
    try:
        services = background_services(settings, engine, make_sessionmaker(engine))
    finally:
        engine.dispose()
    assert [s.name for s in services] == ["scheduler", "outbox-sender", "media-retention"]
    scheduler = services[0]
    assert isinstance(scheduler, SchedulerService)
    # The lease reaper runs whatever routes the app mounts.
    assert {j.name for j in scheduler.jobs} == {
        "labeling_fill", "labeling_reaper", "data_retention", "alert_repeats", "derive_signals",
        "rollups", "evaluators",
    }  # fmt: skip


def test_the_lifespan_starts_and_stops_the_background_services(settings: Settings) -> None:
    with TestClient(create_app(settings, start_background=True)) as client:
        services = client.app.state.services  # type: ignore[attr-defined]
        assert [s.name for s in services] == ["scheduler", "outbox-sender", "media-retention"]
        assert client.get("/healthz").status_code == 200
