"""orphan_traces: when retention first saw a trace's spans without their trace row

Revision ID: 0020_orphan_traces
Revises: 0019_derived_field_rules
Create Date: 2026-12-06 10:00:00

Spans and span events whose trace row never arrives had nothing to expire with: the
retention job deleted them only with their trace row. Those with a time of their own now
go by it; those without (and those dated past the days partitioned ahead) go a whole
retention after the job first saw their trace without its row, which this table records
(app/retention/orphans.py). One row per such trace, forgotten once the trace row arrives
or the rows are gone.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.models.base

revision: str = "0020_orphan_traces"
down_revision: str | Sequence[str] | None = "0019_derived_field_rules"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = app.models.base.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "orphan_traces",
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("first_seen_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_orphan_traces_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("project_id", "trace_id", name=op.f("pk_orphan_traces")),
    )


def downgrade() -> None:
    op.drop_table("orphan_traces")
