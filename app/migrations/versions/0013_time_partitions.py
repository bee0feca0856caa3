"""PostgreSQL: spans, span events, scores and embeddings range-partitioned by day

Revision ID: 0013_time_partitions
Revises: 0012_notification_groups
Create Date: 2026-12-01 20:00:00

Why these tables and these keys: app/retention/partitions.py. On PostgreSQL each table is
rebuilt as a partitioned table that keeps its rows, columns, id sequence, foreign key and
indexes: the old table is renamed away, the new one made ``LIKE`` it and ``PARTITION BY
RANGE`` of its key, with a DEFAULT partition and one partition per UTC day from the oldest
row's day (at most :data:`MAX_BACKFILL_DAYS` back; older rows go to DEFAULT, where the
batched deletes find them) to :data:`AHEAD_DAYS` ahead, and never fewer than the last
:data:`TRAILING_DAYS` (late arrivals). Rows are copied with one ``INSERT .. SELECT``, the
old table dropped, and indexes built after the copy. It holds the tables locked while it
copies: run it with ingest stopped. A unique or primary key must contain the partition key:
spans' key gains ``started_at`` (``NULLS NOT DISTINCT``), scores' and embeddings' primary key
becomes ``(id, created_at)``; spans and span events, whose keys may be NULL, have none.

Downgrade copies the rows back into plain tables with the old keys (a span stored twice
under the wider key, with two different starts, keeps its first row). SQLite: no-op.
"""

from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa
from alembic import op

revision: str = "0013_time_partitions"
down_revision: str | Sequence[str] | None = "0012_notification_groups"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

AHEAD_DAYS = 3
TRAILING_DAYS = 7
MAX_BACKFILL_DAYS = 366

# table -> (range key, primary key, unique key, indexes); frozen here, not read from the
# app, so the migration does the same thing whatever the code becomes.
_TABLES: dict[str, tuple[str, str | None, str | None, dict[str, str]]] = {
    "spans": (
        "started_at",
        None,
        "project_id, trace_id, span_id, started_at",
        {},
    ),
    "span_events": (
        "time",
        None,
        None,
        {"ix_span_events_project_trace": "project_id, trace_id"},
    ),
    "scores": (
        "created_at",
        "id, created_at",
        None,
        {
            "ix_scores_project_trace": "project_id, trace_id",
            "ix_scores_project_name_created": "project_id, name, created_at",
        },
    ),
    "embeddings": (
        "created_at",
        "id, created_at",
        None,
        {
            "ix_embeddings_project_stream_created": "project_id, stream, created_at",
            "ix_embeddings_project_trace": "project_id, trace_id",
        },
    ),
}
# What the unpartitioned tables had (0001, 0006), for the downgrade.
_OLD_UNIQUE = {"spans": ("uq_spans_project_id_trace_id_span_id", "project_id, trace_id, span_id")}


def _day_start(day: date) -> str:
    return f"'{datetime.combine(day, time(), tzinfo=UTC).isoformat()}'"


def _fk(table: str) -> str:
    return (
        f"ALTER TABLE {table} ADD CONSTRAINT fk_{table}_project_id_projects "
        f"FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE"
    )


def _partition_days(bind: sa.Connection, table: str, key: str) -> list[date]:
    today = datetime.now(UTC).date()
    oldest = bind.execute(sa.text(f"SELECT min({key}) FROM {table}_unpartitioned")).scalar()
    first = today - timedelta(days=TRAILING_DAYS)
    if oldest is not None:
        oldest_day = oldest.astimezone(UTC).date()
        first = min(first, max(oldest_day, today - timedelta(days=MAX_BACKFILL_DAYS)))
    return [first + timedelta(days=n) for n in range((today - first).days + AHEAD_DAYS + 1)]


def _partition(table: str) -> None:
    key, pk, unique, indexes = _TABLES[table]
    bind = op.get_bind()
    old = f"{table}_unpartitioned"
    op.execute(f"ALTER TABLE {table} RENAME TO {old}")
    op.execute(
        f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING STORAGE) "
        f"PARTITION BY RANGE ({key})"
    )
    # The id sequence keeps counting; owned by the new table, it survives the old one's drop.
    op.execute(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id")
    op.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
    for day in _partition_days(bind, table, key):
        op.execute(
            f"CREATE TABLE {table}_p{day:%Y%m%d} PARTITION OF {table} FOR VALUES "
            f"FROM ({_day_start(day)}) TO ({_day_start(day + timedelta(days=1))})"
        )
    op.execute(f"INSERT INTO {table} SELECT * FROM {old}")
    op.execute(f"DROP TABLE {old}")
    if pk is not None:
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY ({pk})")
    if unique is not None:
        name = f"uq_{table}_{unique.replace(', ', '_')}"
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE NULLS NOT DISTINCT ({unique})"
        )
    op.execute(_fk(table))
    for name, cols in indexes.items():
        op.execute(f"CREATE INDEX {name} ON {table} ({cols})")
    op.execute(f"ANALYZE {table}")


def _unpartition(table: str) -> None:
    _key, _pk, _unique, indexes = _TABLES[table]
    parted = f"{table}_partitioned"
    op.execute(f"ALTER TABLE {table} RENAME TO {parted}")
    op.execute(f"CREATE TABLE {table} (LIKE {parted} INCLUDING DEFAULTS INCLUDING STORAGE)")
    op.execute(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id")
    # Index names are schema-wide: free pk_<table> for the plain table's key.
    op.execute(f"ALTER TABLE {parted} DROP CONSTRAINT IF EXISTS pk_{table}")
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY (id)")
    conflict = ""
    if table in _OLD_UNIQUE:
        name, cols = _OLD_UNIQUE[table]
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE ({cols})")
        conflict = " ON CONFLICT DO NOTHING"
    op.execute(f"INSERT INTO {table} SELECT * FROM {parted} ORDER BY id{conflict}")
    op.execute(f"DROP TABLE {parted}")  # with its partitions and indexes
    op.execute(_fk(table))
    for name, cols in indexes.items():
        op.execute(f"CREATE INDEX {name} ON {table} ({cols})")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        _partition(table)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        _unpartition(table)
