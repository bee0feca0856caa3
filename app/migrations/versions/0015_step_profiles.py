"""traces.step_profile: each trace's steps as one character a step, for count statistics

Revision ID: 0015_step_profiles
Revises: 0014_inline_vectors
Create Date: 2026-12-02 16:30:00

FM-1's hazards by depth and FM-2's cascade lift tables read a step only as "tool call or
not, failed or not" (:mod:`detectors.step_profiles`). Stored per trace, a window's counts
come from one ``GROUP BY`` over every trace instead of a sample of the traces' spans. The
column is filled by the monitor cycle for the traces it counts, and cleared with
``derived_at`` when a piece of the trace arrives; existing traces start empty and are
filled the first time a sampled window counts them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_step_profiles"
down_revision: str | Sequence[str] | None = "0014_inline_vectors"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("traces", sa.Column("step_profile", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("traces") as batch:
        batch.drop_column("step_profile")
