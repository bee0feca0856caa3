"""detector_runs.readiness_counts: the window's readiness counts, kept by the run

Revision ID: 0018_run_readiness_counts
Revises: 0017_derive_error
Create Date: 2026-12-04 21:30:00

The overview showed each monitor's data readiness by counting the current window's traces,
spans and scores on load: 1.1-1.3 s at 100k traces/h on PostgreSQL for the first load in a
minute. A run reads that window anyway, so it now counts it once per cycle and keeps the
counts here; the overview uses the latest run's when its window is recent, and counts only
when there is none (app/monitors/readiness/recorded.py). NULL: a run from before, a failed
load, or a stream monitor (FM-6 counts vectors, which costs one index range).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018_run_readiness_counts"
down_revision: str | Sequence[str] | None = "0017_derive_error"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json_type = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    op.add_column("detector_runs", sa.Column("readiness_counts", json_type, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("detector_runs") as batch:
        batch.drop_column("readiness_counts")
