"""ix_traces_derive_pending on (project_id, updated_at): the derive queue read per project

Revision ID: 0022_derive_queue_per_project
Revises: 0021_run_claims
Create Date: 2026-12-05 10:00:00

The derive job took the oldest settled traces of all projects together, so one project's
flood filled every batch and another project's fresh trace waited behind it (295 s where
it took 6.6 s). A batch now takes a share per project (app/derive/load.py), which reads
each project's queue in arrival order: the partial index leads with the project.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_derive_queue_per_project"
down_revision: str | Sequence[str] | None = "0021_run_claims"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PENDING = sa.text("derived_at IS NULL")


def _index(*columns: str) -> None:
    op.create_index(
        "ix_traces_derive_pending", "traces", list(columns),
        sqlite_where=_PENDING, postgresql_where=_PENDING,
    )  # fmt: skip


def upgrade() -> None:
    op.drop_index("ix_traces_derive_pending", table_name="traces")
    _index("project_id", "updated_at")


def downgrade() -> None:
    op.drop_index("ix_traces_derive_pending", table_name="traces")
    _index("updated_at")
