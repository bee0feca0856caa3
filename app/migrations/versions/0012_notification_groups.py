"""Notification groups: group_wait / group_interval on channels, group rows in the outbox

Revision ID: 0012_notification_groups
Revises: 0011_score_roles
Create Date: 2026-12-10 10:00:00

Existing channels take Alertmanager's defaults (30 s wait, 5 min interval), the same as a
channel created now: the point of the change is that on-call gets one notification for
alerts that open together. Existing outbox rows stand alone (``items`` NULL, not
collecting) and their group was due when they were created.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import app.models.base

revision: str = "0012_notification_groups"
down_revision: str | Sequence[str] | None = "0011_score_roles"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_TIME = app.models.base.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.add_column(
        "channels",
        sa.Column("group_wait_seconds", sa.Integer(), nullable=False, server_default="30"),
    )
    op.add_column(
        "channels",
        sa.Column("group_interval_seconds", sa.Integer(), nullable=False, server_default="300"),
    )
    op.add_column("notifications", sa.Column("items", _JSON, nullable=True))
    op.add_column("notifications", sa.Column("due_at", _TIME, nullable=True))
    op.add_column(
        "notifications",
        sa.Column("collecting", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.execute("UPDATE notifications SET due_at = created_at")
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.alter_column("due_at", existing_type=_TIME, nullable=False)
        batch_op.create_index(
            "ix_notifications_channel_due", ["channel_id", "due_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.drop_index("ix_notifications_channel_due")
        batch_op.drop_column("collecting")
        batch_op.drop_column("due_at")
        batch_op.drop_column("items")
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.drop_column("group_interval_seconds")
        batch_op.drop_column("group_wait_seconds")
