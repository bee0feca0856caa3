"""Per-project score roles (proxy / true / guardrail by score name) and label sources

Revision ID: 0011_score_roles
Revises: 0010_derived_signals
Create Date: 2026-12-08 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import app.models.base

revision: str = "0011_score_roles"
down_revision: str | Sequence[str] | None = "0010_derived_signals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "project_score_roles",
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("roles", _JSON, nullable=False),
        sa.Column("label_sources", _JSON, nullable=False),
        sa.Column("updated_at", app.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_score_roles_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_project_score_roles")),
    )


def downgrade() -> None:
    op.drop_table("project_score_roles")
