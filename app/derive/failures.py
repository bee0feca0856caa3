"""Traces the derive job could not derive: set aside with their reason, never retried blind.

One trace whose telemetry breaks a parser must not stop derivation for every project (each
run would start again at it, and FM-3, FM-5, FM-6's text streams and FM-7 would go blind).
The job derives a batch together; when that fails it derives the batch's traces one by one,
and a trace that fails alone is *marked*: ``derive_error`` keeps the reason (shown on the
trace page), ``derived_at`` takes it out of the queue until a new piece of it arrives, and
``telltale_derive_failed_traces_total`` counts it. The database being unreachable is no
fault of a trace: those errors (:data:`OUTAGES`) end the run unmarked, and the next retries.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from prometheus_client import Counter
from sqlalchemy import Engine, update
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.db import write_transaction
from app.derive.failure_events import derive_failure
from app.issues.record import record_failures
from app.models import Trace
from app.models.rollups import mark_started

log = logging.getLogger("telltale.derive")

OUTAGES = (OperationalError, InterfaceError, PoolTimeout)
MAX_REASON = 300

DERIVE_FAILED = Counter(
    "telltale_derive_failed_traces",
    "Traces the derive job could not derive and set aside with their reason",
    ["error"],
)


def failure_reason(exc: BaseException) -> str:
    """What is stored and shown: the exception's type and first line, bounded.

    >>> failure_reason(TypeError("'int' object is not iterable"))
    "TypeError: 'int' object is not iterable"
    """
    first = (str(exc).strip().splitlines() or [""])[0]
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return text[:MAX_REASON]


def mark_failed(engine: Engine, trace: dict[str, Any], exc: Exception, *, now: datetime) -> None:
    """Set ``trace`` aside with the reason; a trace that grew since it was read is left to
    be derived again (its update matches on the ``updated_at`` it was read with)."""
    reason = failure_reason(exc)
    log.warning(
        "derive: trace %r of project %s set aside: %s",
        trace["trace_id"],
        trace["project_id"],
        reason,
        exc_info=exc,
    )
    with write_transaction(engine) as conn:
        conn.execute(
            update(Trace)
            .where(Trace.id == trace["id"], Trace.updated_at == trace["updated_at"])
            .values(derive_error=reason, derived_at=now)
        )
        # Set aside, it still counts in its bucket's traffic (app/rollups).
        mark_started(conn, [(trace["project_id"], trace.get("started_at"))])
        # and its failure to derive is a failure event of its own (app/issues).
        # A savepoint: should that fail too, the trace is still set aside.
        key = (trace["project_id"], trace["trace_id"])
        try:
            with conn.begin_nested():
                record_failures(conn, traces=[trace], now=now,
                                failures={key: [derive_failure(trace, reason)]})  # fmt: skip
        except OUTAGES:
            raise
        except Exception:
            log.exception("derive: the failure event of trace %r not recorded", trace["trace_id"])
    DERIVE_FAILED.labels(error=type(exc).__name__).inc()
