"""Migrations go up and down on both databases, and the models match them exactly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from app import migrate
from app.db import make_engine
from app.models import Base
from tests.conftest import empty_database


def test_upgrade_downgrade_upgrade(backend, tmp_path, request):
    url = empty_database(backend, tmp_path, request)
    migrate.upgrade(url)
    engine = make_engine(url)
    try:
        tables = set(inspect(engine).get_table_names())
        assert {
            "projects",
            "api_keys",
            "traces",
            "spans",
            "scores",
            "embeddings",
            "ingest_events",
        } <= tables
        assert migrate.is_at_head(engine, url)
        migrate.downgrade(url, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        assert not migrate.is_at_head(engine, url)
        migrate.upgrade(url)
        assert migrate.is_at_head(engine, url)
    finally:
        engine.dispose()


def test_models_match_migrations(backend, tmp_path, request):
    url = empty_database(backend, tmp_path, request)
    migrate.upgrade(url)
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(ctx, Base.metadata)
        assert diff == [], f"models and migrations differ: {diff}"
    finally:
        engine.dispose()
