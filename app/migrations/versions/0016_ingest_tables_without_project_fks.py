"""The ingest tables' project_id carries no foreign key: one lookup less per row written

Revision ID: 0016_ingest_without_fks
Revises: 0015_step_profiles
Create Date: 2026-12-03 08:00:00

Spans, span events, scores, embeddings and the claimed event ids are the rows ingest writes
by the tens of thousands a second. Each of their ``project_id -> projects.id`` foreign keys
made PostgreSQL run a trigger per row that looks the project up and locks it ``FOR KEY
SHARE``. Measured on the 2-core machine (COPY of 2,000 512-d vectors a batch with their
event-id claim, one connection): 32.8 µs of database CPU per vector with the keys, 18.8
without; the claim alone 11.2 -> 7.8 µs, the COPY 19.4 -> 13.6 µs.

The keys guarded nothing the service can get wrong: every row's project is the project of
the API key that sent it, and ``api_keys.project_id`` keeps its key, so a row cannot name a
project that does not exist. Nothing in Telltale deletes a project, so their ``ON DELETE
CASCADE`` never ran; retention deletes these rows by time (``app/retention``). Traces, the
rows that the others belong to, keep theirs. SQLite drops them too, so the models are one
schema for both databases (batch mode rebuilds the five tables once).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016_ingest_without_fks"
down_revision: str | Sequence[str] | None = "0015_step_profiles"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("spans", "span_events", "scores", "embeddings", "ingest_events")


def _name(table: str) -> str:
    return f"fk_{table}_project_id_projects"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:  # a partitioned parent's drop reaches every partition
            op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {_name(table)}")
        return
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(_name(table), type_="foreignkey")


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.create_foreign_key(
                _name(table), "projects", ["project_id"], ["id"], ondelete="CASCADE"
            )
