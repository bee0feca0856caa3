"""projects.signal_config -> projects.derived_field_rules, the name of what it holds

Revision ID: 0019_derived_field_rules
Revises: 0018_run_readiness_counts
Create Date: 2026-12-05 10:00:00

The column holds each project's rules for the fields derived from its traces
(app/derive/config.py). "Signals" also names the OTLP logs and metrics and the detectors'
inputs, so the rules were renamed everywhere at once: the column, the schemas
(``DerivedFieldRules``) and the API path (``/api/v1/project/derived-fields``, the old one
kept as a deprecated alias). A rename keeps every stored rule.

Batch mode, told not to copy the table: on both databases it is one ``ALTER TABLE projects
RENAME COLUMN``, in place (SQLite >= 3.25; 0007 already needs 3.35). A batch copy would
rebuild ``projects``, the table nearly every other one references, as 0007 avoided too.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019_derived_field_rules"
down_revision: str | Sequence[str] | None = "0018_run_readiness_counts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rename(old: str, new: str) -> None:
    with op.batch_alter_table("projects", recreate="never") as batch:
        batch.alter_column(old, new_column_name=new)


def upgrade() -> None:
    _rename("signal_config", "derived_field_rules")


def downgrade() -> None:
    _rename("derived_field_rules", "signal_config")
