"""Migrations go up and down on both databases, and the models match them exactly."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, MetaData, Table, column, insert, inspect, select, table

from app import migrate
from app.db import make_engine, write_session
from app.derive.config import effective_config
from app.models import ApiKey, Base, Project
from app.models.base import JSONType, utcnow
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


RULES = {
    "decision": {"agents": {"bot": {"regex": "ACTION: (\\w+)"}}},
    "text_embeddings": {"enabled": False},
}


def _projects(column_name: str) -> Any:
    """``projects`` as a revision has it, for rows written and read without the models."""
    return table("projects", column("id"), column("name"), column("created_at"),
                 column(column_name, JSONType))  # fmt: skip


def _stored(engine: Engine, column_name: str) -> dict[str, Any]:
    projects = _projects(column_name)
    with engine.connect() as conn:
        rows = conn.execute(select(projects.c.name, projects.c[column_name]))
        return {name: value for name, value in rows}


def test_0019_renames_the_derived_field_rules_column_keeping_each_rule(
    backend, tmp_path, request
) -> None:
    url = empty_database(backend, tmp_path, request)
    migrate.upgrade(url, "0018_run_readiness_counts")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            old = _projects("signal_config")
            conn.execute(
                insert(old),
                [
                    {"name": "custom", "created_at": utcnow(), "signal_config": RULES},
                    {"name": "defaults", "created_at": utcnow(), "signal_config": None},
                ],
            )
        with write_session(engine) as s:  # a row that references the project comes through
            custom = s.scalar(select(Project.id).where(Project.name == "custom"))
            s.add(ApiKey(project_id=custom, prefix="tt_x", key_hash="h" * 64, role="admin"))

        migrate.upgrade(url)

        columns = {c["name"] for c in inspect(engine).get_columns("projects")}
        assert "derived_field_rules" in columns and "signal_config" not in columns
        with write_session(engine) as s:
            by_name = {p.name: p for p in s.scalars(select(Project))}
            assert by_name["custom"].derived_field_rules == RULES
            assert by_name["defaults"].derived_field_rules is None
            rules = effective_config(by_name["custom"].derived_field_rules)
            assert rules.decision.agents["bot"].regex == "ACTION: (\\w+)"
            assert rules.text_embeddings.enabled is False
            assert s.scalar(select(ApiKey.project_id)) == by_name["custom"].id

        migrate.downgrade(url, "0018_run_readiness_counts")
        columns = {c["name"] for c in inspect(engine).get_columns("projects")}
        assert "signal_config" in columns and "derived_field_rules" not in columns
        assert _stored(engine, "signal_config") == {"custom": RULES, "defaults": None}
        migrate.upgrade(url)
        assert _stored(engine, "derived_field_rules") == {"custom": RULES, "defaults": None}
    finally:
        engine.dispose()


def test_0021_raises_intervals_below_the_floor(backend, tmp_path, request) -> None:
    url = empty_database(backend, tmp_path, request)
    migrate.upgrade(url, "0020_orphan_traces")
    engine = make_engine(url)
    try:
        with write_session(engine) as s:
            pid = s.scalar(
                insert(Project).values(name="p", created_at=utcnow()).returning(Project.id)
            )
        monitors = Table("monitors", MetaData(), autoload_with=engine)
        row = {"project_id": pid, "failure_mode": "FM-2", "detector_params": {}, "selection": {},
               "severity": "warning", "labels": {}, "enabled": True, "auto_resolve_after": 3,
               "repeat_interval_seconds": 3600, "time_limit_seconds": 60.0,
               "expected_days_between_false_alerts": 30.0, "sequential": True, "for_seconds": 0,
               "created_at": utcnow(), "updated_at": utcnow()}  # fmt: skip
        with engine.begin() as conn:
            conn.execute(
                insert(monitors),
                [{**row, "name": f"every {s}", "interval_seconds": s} for s in (1, 59, 60, 900)],
            )

        migrate.upgrade(url)

        with engine.connect() as conn:
            stored = conn.execute(select(monitors.c.name, monitors.c.interval_seconds)).all()
        assert dict(stored) == {"every 1": 60, "every 59": 60, "every 60": 60, "every 900": 900}
    finally:
        engine.dispose()


def test_0023_counts_each_traces_spans(backend, tmp_path, request) -> None:
    url = empty_database(backend, tmp_path, request)
    migrate.upgrade(url, "0022_derive_queue_per_project")
    engine = make_engine(url)
    try:
        with write_session(engine) as s:
            pid = s.scalar(
                insert(Project).values(name="p", created_at=utcnow()).returning(Project.id)
            )
        meta = MetaData()
        traces, spans = (Table(name, meta, autoload_with=engine) for name in ("traces", "spans"))
        trace = {"project_id": pid, "agent": "", "agent_version": "", "status": "ok",
                 "source": "production", "attributes": {}, "created_at": utcnow()}  # fmt: skip
        span = {"project_id": pid, "kind": "tool", "name": "", "status": "ok", "attributes": {}}
        per_trace = {"a": 3, "b": 1, "orphan": 2}  # the orphan's spans have no trace row
        with engine.begin() as conn:
            conn.execute(insert(traces), [{**trace, "trace_id": t} for t in ("a", "b", "none")])
            conn.execute(
                insert(spans),
                [{**span, "trace_id": t, "span_id": f"s{i}"}
                 for t, n in per_trace.items() for i in range(n)],
            )  # fmt: skip

        def span_counts() -> dict[str, int]:
            with engine.connect() as conn:
                return {
                    t: n for t, n in conn.execute(select(traces.c.trace_id, column("span_count")))
                }

        migrate.upgrade(url)
        assert span_counts() == {"a": 3, "b": 1, "none": 0}
        migrate.downgrade(url, "0022_derive_queue_per_project")
        assert "span_count" not in {c["name"] for c in inspect(engine).get_columns("traces")}
        migrate.upgrade(url)
        assert span_counts() == {"a": 3, "b": 1, "none": 0}
    finally:
        engine.dispose()


def test_0026_reads_sessions_and_users_from_stored_attributes(backend, tmp_path, request) -> None:
    """The trace's own attributes (native, then its resource's) first, else its spans' (the
    root's before the others'); strings and integers only, cut to 128 characters."""
    url = empty_database(backend, tmp_path, request)
    migrate.upgrade(url, "0025_evaluators")
    engine = make_engine(url)
    try:
        with write_session(engine) as s:
            pid = s.scalar(
                insert(Project).values(name="p", created_at=utcnow()).returning(Project.id)
            )
        meta = MetaData()
        traces, spans = (Table(name, meta, autoload_with=engine) for name in ("traces", "spans"))
        trace = {"project_id": pid, "agent": "", "agent_version": "", "status": "ok",
                 "source": "production", "created_at": utcnow()}  # fmt: skip
        own = {
            "native": {"session.id": "s-native", "user.id": 42},
            "resource": {"resource.gen_ai.conversation.id": "s-res", "resource.user.id": "u-res"},
            "long": {"langfuse.session.id": "x" * 300, "user.id": True},  # a bool is no id
            "from-spans": {},
            "nothing": {"other": "value"},
        }
        with engine.begin() as conn:
            conn.execute(insert(traces), [{**trace, "trace_id": t, "attributes": a}
                                          for t, a in own.items()])  # fmt: skip
            span = {"project_id": pid, "trace_id": "from-spans", "kind": "llm", "name": "",
                    "status": "ok"}  # fmt: skip
            conn.execute(insert(spans), [
                {**span, "span_id": "a", "parent_span_id": "root",
                 "attributes": {"session.id": "s-child", "gen_ai.user": "u-child"}},
                {**span, "span_id": "root", "parent_span_id": None,
                 "attributes": {"traceloop.association.properties.session_id": "s-root"}},
                {**span, "trace_id": "nothing", "span_id": "b", "parent_span_id": None,
                 "attributes": {"session.id": ""}},
            ])  # fmt: skip

        def ids() -> dict[str, tuple[Any, Any]]:
            with engine.connect() as conn:
                rows = conn.execute(
                    select(traces.c.trace_id, column("session_id"), column("user_id"))
                )
                return {t: (s, u) for t, s, u in rows}

        want = {
            "native": ("s-native", "42"),
            "resource": ("s-res", "u-res"),
            "long": ("x" * 128, None),
            "from-spans": ("s-root", "u-child"),
            "nothing": (None, None),
        }
        migrate.upgrade(url)
        assert ids() == want
        migrate.downgrade(url, "0025_evaluators")
        assert "session_id" not in {c["name"] for c in inspect(engine).get_columns("traces")}
        migrate.upgrade(url)
        assert ids() == want
    finally:
        engine.dispose()
