"""traces.span_count: a trace's stored spans, kept by ingest instead of counted per batch

Revision ID: 0023_trace_span_count
Revises: 0022_derive_queue_per_project
Create Date: 2026-12-06 12:00:00

Ingest bounds the spans of a trace (app/ingest/trace_size.py) and the derive job budgets
its batches by spans (app/derive/load.py); both counted a trace's spans on every batch, a
read that grows with the trace and, on PostgreSQL, probes every daily partition of
``spans``. The trace row now carries the count; ingest adds the spans it inserts in the
transaction that inserts them. Backfilled here from the stored spans.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023_trace_span_count"
down_revision: str | Sequence[str] | None = "0022_derive_queue_per_project"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# UPDATE .. FROM: PostgreSQL, and SQLite from 3.33. One pass over the spans' key index,
# not one count per trace.
_BACKFILL = """
UPDATE traces SET span_count = counted.n
FROM (SELECT project_id, trace_id, count(*) AS n FROM spans GROUP BY project_id, trace_id)
    AS counted
WHERE traces.project_id = counted.project_id AND traces.trace_id = counted.trace_id
"""


def upgrade() -> None:
    op.add_column(
        "traces",
        sa.Column("span_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )
    op.execute(_BACKFILL)


def downgrade() -> None:
    with op.batch_alter_table("traces") as batch:
        batch.drop_column("span_count")
