"""Failure issues: failure events grouped by fingerprint, state changes, Drain templates

Revision ID: 0029_failure_issues
Revises: 0028_trace_loops
Create Date: 2026-12-06 18:00:00

Issue #53: the derive job writes each trace's failure events (failed steps and tool
calls, loops, failed derivations) and groups them into issues by fingerprint (agent, span
kind, tool, error type, Drain template: app/issues). ``failure_templates`` keeps each
project's Drain clusters so template ids survive a restart. Existing traces have no events
until they are derived again. Downgrade drops the four tables.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.models.base

revision: str = "0029_failure_issues"
down_revision: str | Sequence[str] | None = "0028_trace_loops"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = app.models.base.UTCDateTime(timezone=True)
_BIGID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _project_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["project_id"], ["projects.id"], name=op.f(f"fk_{table}_project_id_projects"),
        ondelete="CASCADE",
    )  # fmt: skip


def _issue_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["issue_id"], ["failure_issues.id"], name=op.f(f"fk_{table}_issue_id_failure_issues"),
        ondelete="CASCADE",
    )  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "failure_issues",
        sa.Column("id", _BIGID, autoincrement=True, nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("span_kind", sa.String(length=16), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("error_type", sa.String(length=128), nullable=False),
        sa.Column("template_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=1000), nullable=False),
        sa.Column("first_seen", _TIME, nullable=False),
        sa.Column("last_seen", _TIME, nullable=False),
        sa.Column("event_count", sa.Integer(), nullable=False),
        sa.Column("trace_count", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_note", sa.String(length=1000), nullable=True),
        sa.Column("status_at", _TIME, nullable=True),
        sa.Column("regressed_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        _project_fk("failure_issues"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_failure_issues")),
        sa.UniqueConstraint(
            "project_id", "fingerprint", name=op.f("uq_failure_issues_project_id_fingerprint")
        ),
    )
    op.create_index(
        "ix_failure_issues_project_last_seen", "failure_issues", ["project_id", "last_seen"]
    )
    op.create_table(
        "failure_events",
        sa.Column("id", _BIGID, autoincrement=True, nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("issue_id", _BIGID, nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("span_id", sa.String(length=64), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("at", _TIME, nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("agent_version", sa.String(length=64), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("span_kind", sa.String(length=16), nullable=False),
        sa.Column("error_type", sa.String(length=128), nullable=False),
        sa.Column("message", sa.String(length=1000), nullable=False),
        _project_fk("failure_events"),
        _issue_fk("failure_events"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_failure_events")),
    )
    op.create_index(
        "ix_failure_events_project_trace", "failure_events", ["project_id", "trace_id"]
    )
    op.create_index("ix_failure_events_issue_at", "failure_events", ["issue_id", "at"])
    op.create_table(
        "failure_issue_changes",
        sa.Column("id", _BIGID, autoincrement=True, nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("issue_id", _BIGID, nullable=False),
        sa.Column("at", _TIME, nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("from_state", sa.String(length=16), nullable=False),
        sa.Column("to_state", sa.String(length=16), nullable=False),
        sa.Column("note", sa.String(length=1000), nullable=True),
        _project_fk("failure_issue_changes"),
        _issue_fk("failure_issue_changes"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_failure_issue_changes")),
    )
    op.create_index(
        "ix_failure_issue_changes_issue_at", "failure_issue_changes", ["issue_id", "at"]
    )
    op.create_table(
        "failure_templates",
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("template_id", sa.Integer(), nullable=False),
        sa.Column("template", sa.String(length=2000), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        _project_fk("failure_templates"),
        sa.PrimaryKeyConstraint("project_id", "template_id", name=op.f("pk_failure_templates")),
    )


def downgrade() -> None:
    op.drop_table("failure_templates")
    op.drop_index("ix_failure_issue_changes_issue_at", table_name="failure_issue_changes")
    op.drop_table("failure_issue_changes")
    op.drop_index("ix_failure_events_issue_at", table_name="failure_events")
    op.drop_index("ix_failure_events_project_trace", table_name="failure_events")
    op.drop_table("failure_events")
    op.drop_index("ix_failure_issues_project_last_seen", table_name="failure_issues")
    op.drop_table("failure_issues")
