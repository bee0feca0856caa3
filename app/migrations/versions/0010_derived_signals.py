"""Derived signals: per-project signal rules, the derive queue on traces, input groups

Revision ID: 0010_derived_signals
Revises: 0009_alert_baselines
Create Date: 2026-12-01 13:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import app.models.base

revision: str = "0010_derived_signals"
down_revision: str | Sequence[str] | None = "0009_alert_baselines"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = app.models.base.UTCDateTime(timezone=True)
_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_BIGINT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("projects", sa.Column("signal_config", _JSON, nullable=True))
    op.add_column("traces", sa.Column("updated_at", _TIME, nullable=True))
    op.add_column("traces", sa.Column("derived_at", _TIME, nullable=True))
    # Traces stored before this revision are derived too, oldest arrival first.
    op.execute("UPDATE traces SET updated_at = created_at")
    op.create_index(
        "ix_traces_derive_pending",
        "traces",
        ["updated_at"],
        sqlite_where=sa.text("derived_at IS NULL"),
        postgresql_where=sa.text("derived_at IS NULL"),
    )
    op.create_table(
        "input_groups",
        sa.Column("id", _BIGINT, autoincrement=True, nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("input_hash", sa.String(length=128), nullable=False),
        sa.Column("group_key", sa.String(length=128), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=True),
        sa.Column("vector", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_input_groups_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_input_groups")),
        sa.UniqueConstraint(
            "project_id",
            "agent",
            "input_hash",
            name=op.f("uq_input_groups_project_id_agent_input_hash"),
        ),
    )


def downgrade() -> None:
    op.drop_table("input_groups")
    op.drop_index("ix_traces_derive_pending", table_name="traces")
    op.drop_column("traces", "derived_at")
    op.drop_column("traces", "updated_at")
    op.drop_column("projects", "signal_config")
