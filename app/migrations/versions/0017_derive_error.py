"""traces.derive_error: why the derive job could not derive a trace

Revision ID: 0017_derive_error
Revises: 0016_ingest_without_fks
Create Date: 2026-12-04 13:20:00

One trace the derive job could not process used to stop the job for every project: each run
started again at it. Such a trace is now set aside -- ``derived_at`` set, so it leaves the
queue until a new piece of it arrives -- with the reason kept here, shown on its page and
counted in ``telltale_derive_failed_traces_total``. A later successful derivation clears it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_derive_error"
down_revision: str | Sequence[str] | None = "0016_ingest_without_fks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("traces", sa.Column("derive_error", sa.String(length=300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("traces") as batch:
        batch.drop_column("derive_error")
