"""Per-bucket rollups (traces, tools, models, scores, users) and their dirty marks

Revision ID: 0024_rollups_and_rules
Revises: 0023_trace_span_count
Create Date: 2026-12-06 12:00:00

Alert rules a team writes (issue #50) are previewed over 30 days of history and evaluated
every few minutes; at 10,000 traces/h that history is 7.2 M traces, which no query reads
in seconds. These tables hold the traffic per 5-minute bucket and a few dimensions
(app/rollups), kept by the rollup job from the buckets marked dirty in ``rollup_dirty``.
Rules themselves are monitors (failure mode ``RULE``): no table of their own.

Existing data is rolled up by ``telltale rollups backfill`` (or the job, which catches up
on the buckets the backfill marks). Downgrade drops the tables.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.models.base

revision: str = "0024_rollups_and_rules"
down_revision: str | Sequence[str] | None = "0023_trace_span_count"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = app.models.base.UTCDateTime(timezone=True)
_KEY = ("project_id", "bucket", "agent", "agent_version", "environment")


def _dimensions() -> list[sa.Column]:
    return [
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("agent_version", sa.String(length=64), nullable=False),
        sa.Column("environment", sa.String(length=64), nullable=False),
    ]


def _owned(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["project_id"], ["projects.id"], name=op.f(f"fk_{table}_project_id_projects"),
        ondelete="CASCADE",
    )  # fmt: skip


def _sums() -> list[sa.Column]:
    return [
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("tokens_sq", sa.Float(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("cost_sq", sa.Float(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "rollup_dirty",
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("marked_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("project_id", "bucket", name=op.f("pk_rollup_dirty")),
    )
    op.create_table(
        "trace_rollups",
        *_dimensions(),
        sa.Column("traces", sa.Integer(), nullable=False),
        sa.Column("error_traces", sa.Integer(), nullable=False),
        sa.Column("loop_traces", sa.Integer(), nullable=False),
        sa.Column("labeled_traces", sa.Integer(), nullable=False),
        sa.Column("latency_sketch", sa.LargeBinary(), nullable=False),
        *_sums(),
        _owned("trace_rollups"),
        sa.PrimaryKeyConstraint(*_KEY, name=op.f("pk_trace_rollups")),
    )
    op.create_table(
        "tool_rollups",
        *_dimensions(),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("errors", sa.Integer(), nullable=False),
        sa.Column("latency_sketch", sa.LargeBinary(), nullable=False),
        _owned("tool_rollups"),
        sa.PrimaryKeyConstraint(*_KEY, "tool", name=op.f("pk_tool_rollups")),
    )
    op.create_table(
        "model_rollups",
        *_dimensions(),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("errors", sa.Integer(), nullable=False),
        *_sums(),
        _owned("model_rollups"),
        sa.PrimaryKeyConstraint(*_KEY, "model", name=op.f("pk_model_rollups")),
    )
    op.create_table(
        "score_rollups",
        *_dimensions(),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("scores", sa.Integer(), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
        sa.Column("total_sq", sa.Float(), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        _owned("score_rollups"),
        sa.PrimaryKeyConstraint(*_KEY, "name", name=op.f("pk_score_rollups")),
    )
    op.create_table(
        "user_rollups",
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("traces", sa.Integer(), nullable=False),
        sa.Column("error_traces", sa.Integer(), nullable=False),
        *_sums(),
        _owned("user_rollups"),
        sa.PrimaryKeyConstraint("project_id", "bucket", "user_id", name=op.f("pk_user_rollups")),
    )
    op.create_index(
        "ix_user_rollups_project_user_bucket", "user_rollups", ["project_id", "user_id", "bucket"]
    )


def downgrade() -> None:
    op.drop_index("ix_user_rollups_project_user_bucket", table_name="user_rollups")
    for table in ("user_rollups", "score_rollups", "model_rollups", "tool_rollups",
                  "trace_rollups", "rollup_dirty"):  # fmt: skip
        op.drop_table(table)
