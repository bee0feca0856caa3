"""traces.session_id and traces.user_id: the conversation a trace is a turn of, its end user

Revision ID: 0026_sessions_users
Revises: 0025_evaluators
Create Date: 2026-12-07 10:00:00

Issue #52: ``session.id``, ``gen_ai.conversation.id`` and the user ids spans carry were kept
as attributes and never read. Ingest now reads them into these columns
(app/sessions/attributes.py); this backfills the traces stored before, from the same keys:
the trace's own attributes (native ones, then its resource's, stored as ``resource.<key>``),
else its spans' (the root span's before the others'), cut to 128 characters as ingest cuts
them. The keys are copied here, not imported: a migration says what it did when it ran.

The spans backfill reads every span once (a sequential scan); a span without any of the
keys costs a JSON lookup per key. Downgrade drops the columns and their indexes.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026_sessions_users"
down_revision: str | Sequence[str] | None = "0025_evaluators"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SESSION_KEYS = (
    "session.id",
    "gen_ai.conversation.id",
    "langfuse.session.id",
    "traceloop.association.properties.session_id",
)
USER_KEYS = (
    "user.id",
    "enduser.id",
    "langfuse.user.id",
    "traceloop.association.properties.user_id",
    "gen_ai.request.user",
    "gen_ai.user",
)
MAX_ID_CHARS = 128


def _value(dialect: str, table: str, key: str) -> str:
    """SQL: the attribute ``key`` of ``table``'s row as text when it is a string or an
    integer (as ingest reads it), NULL otherwise; keys are constants, never user input."""
    if dialect == "postgresql":
        item = f"{table}.attributes -> '{key}'"
        return (
            f"CASE WHEN jsonb_typeof({item}) = 'string' OR (jsonb_typeof({item}) = 'number'"
            f" AND {table}.attributes ->> '{key}' ~ '^-?[0-9]+$')"
            f" THEN {table}.attributes ->> '{key}' END"
        )
    path = f"'$.\"{key}\"'"
    return (
        f"CASE WHEN json_type({table}.attributes, {path}) IN ('text', 'integer')"
        f" THEN CAST(json_extract({table}.attributes, {path}) AS TEXT) END"
    )


def _first(dialect: str, table: str, keys: Sequence[str]) -> str:
    """SQL: the first non-empty of ``keys``, cut to MAX_ID_CHARS characters."""
    values = ", ".join(f"NULLIF({_value(dialect, table, k)}, '')" for k in keys)
    return f"substr(coalesce({values}), 1, {MAX_ID_CHARS})"


def _backfill(dialect: str) -> list[str]:
    own = {
        column: _first(dialect, "traces", [*keys, *(f"resource.{k}" for k in keys)])
        for column, keys in (("session_id", SESSION_KEYS), ("user_id", USER_KEYS))
    }
    from_spans = {
        column: _first(dialect, "spans", keys)
        for column, keys in (("session_id", SESSION_KEYS), ("user_id", USER_KEYS))
    }
    # The root span's value (there is one root) before the smallest of the others'.
    picked = ", ".join(
        f"coalesce(max(CASE WHEN parent_span_id IS NULL THEN {c} END), min({c})) AS {c}"
        for c in from_spans
    )
    return [
        # Only the rows that name one are written (a no-op write still costs a row version).
        f"UPDATE traces SET session_id = {own['session_id']}, user_id = {own['user_id']}"
        f" WHERE coalesce({own['session_id']}, {own['user_id']}) IS NOT NULL",
        # UPDATE .. FROM: PostgreSQL, and SQLite from 3.33; one pass over the spans.
        f"""
        UPDATE traces SET
            session_id = coalesce(traces.session_id, found.session_id),
            user_id = coalesce(traces.user_id, found.user_id)
        FROM (
            SELECT project_id, trace_id, {picked}
            FROM (
                SELECT project_id, trace_id, parent_span_id,
                       {from_spans["session_id"]} AS session_id,
                       {from_spans["user_id"]} AS user_id
                FROM spans
            ) AS ids
            WHERE session_id IS NOT NULL OR user_id IS NOT NULL
            GROUP BY project_id, trace_id
        ) AS found
        WHERE traces.project_id = found.project_id AND traces.trace_id = found.trace_id
          AND (traces.session_id IS NULL OR traces.user_id IS NULL)
        """,
    ]


def upgrade() -> None:
    op.add_column("traces", sa.Column("session_id", sa.String(length=128), nullable=True))
    op.add_column("traces", sa.Column("user_id", sa.String(length=128), nullable=True))
    for statement in _backfill(op.get_bind().dialect.name):
        op.execute(statement)
    # After the backfill: the indexes are built once over the filled columns.
    op.create_index(
        "ix_traces_project_session", "traces", ["project_id", "session_id", "started_at"]
    )
    op.create_index("ix_traces_project_user", "traces", ["project_id", "user_id", "started_at"])


def downgrade() -> None:
    op.drop_index("ix_traces_project_user", table_name="traces")
    op.drop_index("ix_traces_project_session", table_name="traces")
    with op.batch_alter_table("traces") as batch:
        batch.drop_column("user_id")
        batch.drop_column("session_id")
