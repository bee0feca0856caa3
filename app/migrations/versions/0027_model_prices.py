"""Model prices per project; where a span's cost came from; unpriced model calls per bucket

Revision ID: 0027_model_prices
Revises: 0026_sessions_users
Create Date: 2026-12-05 16:00:00

Issue #52 (tokens and cost): the derive job prices the LLM calls that arrive without a cost
(app/pricing) from the shipped table or a project's own prices, ``model_prices``.
``spans.cost_source`` records which (the table's version or the project price's time) or
why a call has no cost; existing spans keep NULL (as sent, or never priced: only traces
derived from now on are priced). ``model_rollups.unpriced_calls`` counts the calls left
without a cost; existing buckets count 0 until rebuilt (``telltale rollups backfill``).
Self-contained: it only adds, so it may follow any revision that does not touch these.
Downgrade drops the table and the two columns.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.models.base

revision: str = "0027_model_prices"
down_revision: str | Sequence[str] | None = "0026_sessions_users"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = app.models.base.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "model_prices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("input_per_million", sa.Float(), nullable=False),
        sa.Column("output_per_million", sa.Float(), nullable=False),
        sa.Column("cached_input_per_million", sa.Float(), nullable=True),
        sa.Column("cache_write_per_million", sa.Float(), nullable=True),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_model_prices_project_id_projects"),
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_prices")),
        sa.UniqueConstraint("project_id", "model", name=op.f("uq_model_prices_project_id_model")),
    )
    # On PostgreSQL ``spans`` is partitioned: the column reaches every partition.
    op.add_column("spans", sa.Column("cost_source", sa.String(length=32), nullable=True))
    op.add_column(
        "model_rollups",
        sa.Column("unpriced_calls", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )


def downgrade() -> None:
    with op.batch_alter_table("model_rollups") as batch:
        batch.drop_column("unpriced_calls")
    with op.batch_alter_table("spans") as batch:
        batch.drop_column("cost_source")
    op.drop_table("model_prices")
