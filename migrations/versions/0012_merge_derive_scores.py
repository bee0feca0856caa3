"""Merge the derived-signals and score-roles branches (both revise 0009)

Revision ID: 0012_merge_derive_scores
Revises: 0010_derived_signals, 0011_score_roles
Create Date: 2026-12-08 12:00:00
"""

from collections.abc import Sequence

revision: str = "0012_merge_derive_scores"
down_revision: str | Sequence[str] | None = ("0010_derived_signals", "0011_score_roles")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
