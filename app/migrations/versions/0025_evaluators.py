"""Online evaluators, their work queue and their daily use

Revision ID: 0025_evaluators
Revises: 0024_rollups_and_rules
Create Date: 2026-12-05 15:00:00

Issue #51: evaluators score traces with an LLM judge or a deterministic check
(app/evaluators). ``evaluations`` is the queue and the record of each (evaluator version,
trace); ``evaluator_usage`` holds each day's calls and tokens against the budget.
Downgrade drops the three tables (the scores they wrote stay).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.models.base

revision: str = "0025_evaluators"
down_revision: str | Sequence[str] | None = "0024_rollups_and_rules"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = app.models.base.UTCDateTime(timezone=True)
_JSON = sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql")
_BIGID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "evaluators",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("score_name", sa.String(length=128), nullable=False),
        sa.Column("objective", sa.String(length=128), nullable=True),
        sa.Column("config", _JSON, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("api_key", sa.Text(), nullable=True),
        sa.Column("selection", _JSON, nullable=False),
        sa.Column("sample_rate", sa.Float(), nullable=False),
        sa.Column("delay_seconds", sa.Integer(), nullable=False),
        sa.Column("daily_calls", sa.Integer(), nullable=False),
        sa.Column("daily_tokens", sa.BigInteger(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("timeout_seconds", sa.Float(), nullable=False),
        sa.Column("max_retries", sa.Integer(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("failures_in_row", sa.Integer(), nullable=False),
        sa.Column("paused_until", _TIME, nullable=True),
        sa.Column("pause_reason", sa.String(length=300), nullable=True),
        sa.Column("watch_from", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_evaluators_project_id_projects"),
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluators")),
        sa.UniqueConstraint("project_id", "name", name=op.f("uq_evaluators_project_id_name")),
    )
    op.create_table(
        "evaluations",
        sa.Column("id", _BIGID, autoincrement=True, nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("evaluator_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("due_at", _TIME, nullable=False),
        sa.Column("claim_token", sa.String(length=32), nullable=True),
        sa.Column("claimed_at", _TIME, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("backfill", sa.Boolean(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("label", sa.String(length=128), nullable=True),
        sa.Column("reason", sa.String(length=2000), nullable=True),
        sa.Column("error", sa.String(length=500), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("finished_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["evaluator_id"], ["evaluators.id"],
            name=op.f("fk_evaluations_evaluator_id_evaluators"), ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
        sa.UniqueConstraint(
            "evaluator_id", "version", "trace_id",
            name=op.f("uq_evaluations_evaluator_id_version_trace_id"),
        ),  # fmt: skip
    )
    op.create_index("ix_evaluations_due", "evaluations", ["status", "due_at"])
    op.create_index("ix_evaluations_project_trace", "evaluations", ["project_id", "trace_id"])
    op.create_table(
        "evaluator_usage",
        sa.Column("evaluator_id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["evaluator_id"], ["evaluators.id"],
            name=op.f("fk_evaluator_usage_evaluator_id_evaluators"), ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("evaluator_id", "day", name=op.f("pk_evaluator_usage")),
    )


def downgrade() -> None:
    op.drop_table("evaluator_usage")
    op.drop_index("ix_evaluations_project_trace", table_name="evaluations")
    op.drop_index("ix_evaluations_due", table_name="evaluations")
    op.drop_table("evaluations")
    op.drop_table("evaluators")
