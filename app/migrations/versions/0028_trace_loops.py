"""Tool loops per trace: the tool that loops and its identical calls

Revision ID: 0028_trace_loops
Revises: 0027_model_prices
Create Date: 2026-12-06 10:00:00

Issue #52 (loops): the derive job stores each trace's longest run of one tool called with
the same arguments (app/derive/loops.py): ``traces.loop_calls`` (the identical calls; 0
without tool calls) and ``traces.loop_tool`` (the tool, when the run is a loop). Existing
traces keep NULL in both (not derived for loops): OUTCOME's loop rate counts only traces
with ``loop_calls``, so old windows are not read as loop-free. Downgrade drops the columns.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028_trace_loops"
down_revision: str | Sequence[str] | None = "0027_model_prices"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("traces", sa.Column("loop_tool", sa.String(length=128), nullable=True))
    op.add_column("traces", sa.Column("loop_calls", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("traces") as batch:
        batch.drop_column("loop_calls")
        batch.drop_column("loop_tool")
