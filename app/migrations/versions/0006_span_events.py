"""GenAI events of spans (OTLP logs)

Revision ID: 0006
Revises: 0001
Create Date: 2026-12-08 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import app.models.base

revision: str = "0006"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "span_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("span_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("time", app.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("attributes", _JSON, nullable=False),
        sa.Column("body", _JSON, nullable=True),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_span_events_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_span_events")),
    )
    op.create_index(
        "ix_span_events_project_trace", "span_events", ["project_id", "trace_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_span_events_project_trace", table_name="span_events")
    op.drop_table("span_events")
