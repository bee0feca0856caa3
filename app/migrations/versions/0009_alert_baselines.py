"""Monitor baselines (the frozen known-good reference, the sequential chart) and the
false-alert budget (ERT)

Revision ID: 0009_alert_baselines
Revises: 0008_normalised_spans
Create Date: 2026-12-01 11:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.models.base

revision: str = "0009_alert_baselines"
down_revision: str | Sequence[str] | None = "0008_normalised_spans"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = app.models.base.UTCDateTime(timezone=True)


def upgrade() -> None:
    # Existing monitors get the default budget; the server default only fills those rows.
    op.add_column(
        "monitors",
        sa.Column(
            "expected_days_between_false_alerts", sa.Float(), nullable=False, server_default="30"
        ),
    )
    op.add_column(
        "monitors",
        sa.Column("sequential", sa.Boolean(), nullable=False, server_default=sa.true()),
    )
    op.add_column(
        "monitors", sa.Column("for_seconds", sa.Integer(), nullable=False, server_default="0")
    )
    op.create_table(
        "monitor_baselines",
        sa.Column("monitor_id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("good_until", _TIME, nullable=False),
        sa.Column("frozen_since", _TIME, nullable=True),
        sa.Column("hold_until", _TIME, nullable=True),
        sa.Column("degradation_started_at", _TIME, nullable=True),
        sa.Column("chart_z", sa.Float(), nullable=False),
        sa.Column("chart_t", sa.Integer(), nullable=False),
        sa.Column("chart_window_end", _TIME, nullable=True),
        sa.Column("pending_since", _TIME, nullable=True),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["monitor_id"],
            ["monitors.id"],
            name=op.f("fk_monitor_baselines_monitor_id_monitors"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_monitor_baselines_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("monitor_id", name=op.f("pk_monitor_baselines")),
    )


def downgrade() -> None:
    op.drop_table("monitor_baselines")
    op.drop_column("monitors", "for_seconds")
    op.drop_column("monitors", "sequential")
    op.drop_column("monitors", "expected_days_between_false_alerts")
