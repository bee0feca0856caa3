"""An evaluator's evaluations by when they finished

Revision ID: 0030_evaluations_by_finish
Revises: 0029_failure_issues
Create Date: 2026-12-05 19:30:00

Issue #51: the evaluator page's score chart, its latest evaluations and the agreement
measure read one evaluator's evaluations over a time range by ``finished_at``; the unique
index (evaluator, version, trace) leads with the evaluator but then walks every one of its
evaluations. ``(evaluator_id, finished_at)`` makes those reads a range scan.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0030_evaluations_by_finish"
down_revision: str | Sequence[str] | None = "0029_failure_issues"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_evaluations_evaluator_finished", "evaluations", ["evaluator_id", "finished_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_evaluations_evaluator_finished", table_name="evaluations")
