"""Migrations go up and down on both databases, and the models match them exactly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from app import migrate
from app.db import make_engine
from app.models import Base
from app.retention.partitions import is_partition_name
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


def _skip_partitions(name, type_, _parents):
    # migrations/env.py does the same for autogenerate: the daily partitions are no models.
    return not (type_ == "table" and name is not None and is_partition_name(name))


def _span_key(diff):
    kind, constraint = diff
    return kind, constraint.table.name, tuple(c.name for c in constraint.columns)


def test_models_match_migrations(backend, tmp_path, request):
    url = empty_database(backend, tmp_path, request)
    migrate.upgrade(url)
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            opts = {"compare_type": True, "include_name": _skip_partitions}
            ctx = MigrationContext.configure(conn, opts=opts)
            diff = compare_metadata(ctx, Base.metadata)
        if backend == "postgresql":
            # The one difference partitioning makes (app/retention/partitions.py): the
            # span key carries the partition key, started_at.
            key = ("project_id", "trace_id", "span_id")
            expected = {
                ("remove_constraint", "spans", (*key, "started_at")),
                ("add_constraint", "spans", key),
            }
            assert {_span_key(d) for d in diff} == expected, diff
            diff = []
        assert diff == [], f"models and migrations differ: {diff}"
    finally:
        engine.dispose()
