"""PostgreSQL daily partitions of the heavy tables: made ahead, dropped whole when expired.

Which tables, and by what. A unique index of a partitioned table must contain the
partition key, so a table is partitioned only by a time its dedupe key can carry, a time a
re-sent record brings again unchanged:

- ``spans`` by ``started_at``. The span key becomes ``(project_id, trace_id, span_id,
  started_at)``, ``NULLS NOT DISTINCT`` (PostgreSQL 15): a span sent again, under any event
  id and on any later day, has the same start, so it lands in the same partition and meets
  its first copy in that partition's unique index. Spans without a start all go to the
  DEFAULT partition, where the same index still treats them as one key.
- ``span_events`` by ``time``, ``scores`` and ``embeddings`` by ``created_at`` (the client's
  own time, else arrival). None of the three has a unique key of its own: a re-sent event
  is caught by its event id in ``ingest_events``, which stays unpartitioned.
- Not partitioned: ``traces`` (one row is merged from pieces that arrive over hours, so no
  time of it is fixed when its key is first claimed), ``ingest_events`` (the client's event
  id is opaque: a re-send arrives at another time, and the id must stay unique across all of
  them) and ``ingest_minutes`` (60 rows per project-hour). They keep the batched deletes of
  :mod:`app.retention.purge`: a trace row per trace, and an event id row (about 100 bytes)
  per event that is not a span (spans claim no event id: their key is their identity,
  :mod:`app.ingest.store`), which is the row-by-row work left on PostgreSQL (see
  bench/retention.py).

Retention is per project but a partition holds every project's rows of its day, so a day
is dropped only when it is older than every project's cutoff (now minus the longest
effective retention): one ``DROP TABLE`` per table, no row touched, whatever its size.
Projects with a shorter retention still get the batched deletes for the newer days, and
rows outside the daily partitions (in DEFAULT: no time, or a clock far off) go the same
way. Since rows are keyed by their own time, a row that arrives more than the longest
retention after its time goes at the next pass, with the rest of its day. What it buys
(bench/retention.py, one expired day of 60,000 traces, 600,000 spans, 2-core machine): the
spans, span events, scores and embeddings went in 0.7 s instead of 5.8 s of deletes; the
pass wrote 10 MB of WAL (the trace rows' deletes) instead of 280 and gave 280 MB of disk
back at once, where deleted rows give none back until VACUUM (and then only for reuse).

Open alerts: the findings and runs that are their evidence are unpartitioned and kept, as
before. The traces a finding names are not kept by the batched deletes either (they expire
with their data on both databases), and holding a day of every project for one project's
open alert would tie the disk to how long alerts stay open; so no partition waits for one.
Nor is a trace row's ``span_count`` lowered by a drop: a day's spans whose trace row is kept
(it arrived within retention, its spans dated before it) leave that count an upper bound
(:mod:`app.ingest.trace_size`).

Locks. ``ATTACH PARTITION`` takes only ``SHARE UPDATE EXCLUSIVE`` on the parent (inserts go
on) but must scan and lock DEFAULT. A day goes by a plain ``DROP TABLE`` of the attached
partition: ``ACCESS EXCLUSIVE`` on the parent for a catalog change. Not ``DETACH`` first: a
detached partition's foreign key becomes its own, with triggers on ``projects``, and
dropping those takes ``ACCESS EXCLUSIVE`` on ``projects``, which every ingest transaction
has already touched (its key check) before it writes spans: the two deadlocked in the
tests. (``DETACH .. CONCURRENTLY`` is not allowed beside a DEFAULT partition anyway.)
Each change runs under a :data:`LOCK_TIMEOUT` in its own transaction, so behind a long
reader it gives up instead of holding every insert queued behind its lock request; it is
tried :data:`ATTEMPTS` times, then again at the next hourly pass (days are made
:data:`AHEAD_DAYS` ahead, so there are many passes before one is needed).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from prometheus_client import Counter
from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

log = logging.getLogger("telltale.retention")

# Table -> its range key. The migration (0013) converts these tables; keep the two in step.
PARTITIONED: dict[str, str] = {
    "spans": "started_at",
    "span_events": "time",
    "scores": "created_at",
    "embeddings": "created_at",
}
# Table -> the storage parameters each of its partitions gets (a partitioned parent cannot
# carry them): vectors stay inline and uncompressed (migration 0014 says why).
PARTITION_OPTIONS: dict[str, str] = {"embeddings": "toast_tuple_target = 8160"}
AHEAD_DAYS = 3
LOCK_TIMEOUT = "1s"
ATTEMPTS = 3
RETRY_PAUSE_S = 0.5  # lets the inserts queued behind a timed-out lock request through

_DAY_NAME = re.compile(r"^(?P<table>[a-z_]+)_p(?P<day>\d{8})$")

PARTITIONS_CHANGED = Counter(
    "telltale_retention_partitions",
    "Daily partitions the retention job created or dropped",
    ["table", "change"],
)


@dataclass
class PartitionChanges:
    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def partition_name(table: str, day: date) -> str:
    return f"{table}_p{day:%Y%m%d}"


def default_partition(table: str) -> str:
    return f"{table}_default"


def is_partition_name(name: str) -> bool:
    """True for the daily and DEFAULT partitions this module makes (not in the models)."""
    match = _DAY_NAME.match(name)
    if match is not None:
        return match["table"] in PARTITIONED
    return any(name == default_partition(t) for t in PARTITIONED)


def day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def made_until(now: datetime) -> datetime:
    """The end of the days made ahead at ``now``: a row dated at or after it sits in DEFAULT."""
    return day_start(now.astimezone(UTC).date() + timedelta(days=AHEAD_DAYS + 1))


def partitioned_tables(conn: Connection) -> list[str]:
    """The tables of :data:`PARTITIONED` that are partitioned in this database."""
    rows = conn.execute(
        text("SELECT relname FROM pg_class WHERE relkind = 'p' AND relname = ANY(:names)"),
        {"names": list(PARTITIONED)},
    )
    return sorted(rows.scalars())


def partition_days(conn: Connection, table: str) -> list[date]:
    """The days of ``table``'s daily partitions, oldest first."""
    names = conn.execute(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = CAST(:table AS regclass)"
        ),
        {"table": table},
    ).scalars()
    days = []
    for name in names:
        match = _DAY_NAME.match(name)
        if match is not None and match["table"] == table:
            days.append(datetime.strptime(match["day"], "%Y%m%d").date())
    return sorted(days)


def create_partition(conn: Connection, table: str, day: date) -> None:
    """Attach ``table``'s partition for ``day``, moving its rows out of DEFAULT first.

    Rows land in DEFAULT when their day has no partition yet (a clock days ahead); the
    attach would fail while any were left there, so they move to the new table before it
    is attached, under the lock on DEFAULT that the attach takes anyway.
    """
    name, key = partition_name(table, day), PARTITIONED[table]
    bounds = {"lo": day_start(day), "hi": day_start(day + timedelta(days=1))}
    conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    conn.execute(text(f"LOCK TABLE {default_partition(table)} IN ACCESS EXCLUSIVE MODE"))
    conn.execute(text(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS INCLUDING STORAGE)"))
    if table in PARTITION_OPTIONS:
        conn.execute(text(f"ALTER TABLE {name} SET ({PARTITION_OPTIONS[table]})"))
    conn.execute(
        text(
            f"WITH moved AS (DELETE FROM {default_partition(table)} "
            f"WHERE {key} >= :lo AND {key} < :hi RETURNING *) "
            f"INSERT INTO {name} SELECT * FROM moved"
        ),
        bounds,
    )
    lo, hi = (f"'{bounds[b].isoformat()}'" for b in ("lo", "hi"))
    conn.execute(
        text(f"ALTER TABLE {table} ATTACH PARTITION {name} FOR VALUES FROM ({lo}) TO ({hi})")
    )


def drop_partition(conn: Connection, table: str, day: date) -> None:
    """Drop one day of ``table``: catalog work only, whatever its rows."""
    conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    conn.execute(text(f"DROP TABLE {partition_name(table, day)}"))


def maintain_partitions(
    engine: Engine, *, now: datetime, keep_from: datetime, ahead_days: int = AHEAD_DAYS
) -> PartitionChanges:
    """Make today's and the next ``ahead_days`` partitions; drop those wholly before ``keep_from``.

    ``keep_from`` is the oldest cutoff of any project (now minus the longest retention): a
    day ending at or before it holds no row any project keeps. A no-op on SQLite and on a
    PostgreSQL schema whose tables are not partitioned. Each change is its own transaction;
    one that fails (a lock not granted in time) is logged and tried again next pass.
    """
    changes = PartitionChanges()
    if engine.dialect.name != "postgresql":
        return changes
    with engine.connect() as conn:
        tables = {t: partition_days(conn, t) for t in partitioned_tables(conn)}
    today = now.astimezone(UTC).date()
    for table, days in tables.items():
        have = set(days)
        wanted = [today + timedelta(days=n) for n in range(ahead_days + 1)]
        for day in (d for d in wanted if d not in have):
            _change(engine, create_partition, table, day, "created", changes)
        for day in (d for d in days if day_start(d + timedelta(days=1)) <= keep_from):
            _change(engine, drop_partition, table, day, "dropped", changes)
    return changes


def _change(
    engine: Engine,
    ddl: Callable[[Connection, str, date], None],
    table: str,
    day: date,
    change: str,
    changes: PartitionChanges,
) -> None:
    name = partition_name(table, day)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            with engine.begin() as conn:
                ddl(conn, table, day)
            break
        except DBAPIError as exc:
            if attempt == ATTEMPTS:
                changes.failed.append(name)
                log.warning(
                    "partition %s not %s; the next pass tries again: %s", name, change, exc.orig
                )
                return
            time.sleep(RETRY_PAUSE_S)
    getattr(changes, change).append(name)
    PARTITIONS_CHANGED.labels(table=table, change=change).inc()
