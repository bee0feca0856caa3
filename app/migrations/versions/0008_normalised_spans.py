"""Normalised span columns (models, tokens, cost, latency); score label and explanation

Revision ID: 0008_normalised_spans
Revises: 0007
Create Date: 2026-12-01 11:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_normalised_spans"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Plain ALTERs (SQLite >= 3.35 adds and drops columns in place); all nullable, so existing
# rows need no rewrite.
_COLUMNS = (
    ("request_model", sa.String(length=128)),
    ("response_model", sa.String(length=128)),
    ("input_tokens", sa.Integer()),
    ("output_tokens", sa.Integer()),
    ("total_tokens", sa.Integer()),
    ("cost", sa.Float()),
    ("latency_ms", sa.Float()),
)


_SCORE_COLUMNS = (("label", sa.String(length=128)), ("explanation", sa.String(length=2000)))


def upgrade() -> None:
    for name, type_ in _COLUMNS:
        op.add_column("spans", sa.Column(name, type_, nullable=True))
    for name, type_ in _SCORE_COLUMNS:
        op.add_column("scores", sa.Column(name, type_, nullable=True))


def downgrade() -> None:
    for name, _ in reversed(_SCORE_COLUMNS):
        op.drop_column("scores", name)
    for name, _ in reversed(_COLUMNS):
        op.drop_column("spans", name)
