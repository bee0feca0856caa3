"""monitors.claimed_slot, claim_expires_at: a scheduled run is claimed until it is recorded

Revision ID: 0021_run_claims
Revises: 0020_orphan_traces
Create Date: 2026-12-06 11:00:00

The scheduler moved a monitor's ``next_run_at`` to its next slot and then ran it; a
process killed during the run left no record, and the slot was lost until the next
interval. The claim now also names the slot it runs and when the claim expires; the
scheduler clears both once the run is recorded, and a claim that expires uncleared is
recorded as a failed run ("interrupted") and the monitor runs again at once
(app/scheduler/interrupted.py). Both NULL: no run in flight.

Intervals now have a 60 s floor (app/monitors/schemas.py): stored ones below it are raised
to it, so what the API shows, the per-run alpha derived from the interval and the
schedule agree (the scheduler also runs any row below the floor at it). The downgrade
keeps the raised values.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.models.base

revision: str = "0021_run_claims"
down_revision: str | Sequence[str] | None = "0020_orphan_traces"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = app.models.base.UTCDateTime(timezone=True)
MIN_INTERVAL_SECONDS = 60  # frozen here, not read from the app


def upgrade() -> None:
    op.add_column("monitors", sa.Column("claimed_slot", _TIME, nullable=True))
    op.add_column("monitors", sa.Column("claim_expires_at", _TIME, nullable=True))
    op.execute(
        f"UPDATE monitors SET interval_seconds = {MIN_INTERVAL_SECONDS} "
        f"WHERE interval_seconds < {MIN_INTERVAL_SECONDS}"
    )


def downgrade() -> None:
    # In place (SQLite >= 3.35 drops a column): a batch copy would rebuild ``monitors``,
    # which runs, findings and alerts reference.
    with op.batch_alter_table("monitors", recreate="never") as batch:
        batch.drop_column("claim_expires_at")
        batch.drop_column("claimed_slot")
