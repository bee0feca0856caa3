"""Per-project data retention; merges the branches that grew from 0001

Revision ID: 0007
Revises: 0002, 0003, 0004, 0005, 0006
Create Date: 2026-12-01 09:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = ("0002", "0003", "0004", "0005", "0006")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTERs, not batch mode: SQLite >= 3.35 adds and drops a column in place, where a
# batch table copy would rewrite every project row.


def upgrade() -> None:
    op.add_column("projects", sa.Column("retention_days", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("projects", "retention_days")
