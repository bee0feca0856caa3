"""Ingest a validated batch through admission control into the store, off the event loop."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from fastapi import HTTPException
from sqlalchemy.engine import Connection
from starlette.concurrency import run_in_threadpool

from app.admission import FairAdmission
from app.auth.tenants import project_tenant
from app.ingest.events import Rejection, ValidEvent
from app.ingest.schemas import IngestAnswer, RejectionOut
from app.ingest.store import WriteResult, write_events, write_vectors
from app.ingest.vectors import VectorBatch
from app.metrics import record_ingest


async def ingest_batch(
    *,
    app_state: Any,
    project_id: int,
    valid: list[ValidEvent],
    rejected: list[Rejection],
    total: int,
) -> IngestAnswer:
    """Write ``valid`` and build the answer; raise 422 when nothing at all was usable."""
    result = await write_admitted(app_state, project_id=project_id, events=valid)
    return _answer(result, rejected, total)


async def write_admitted(
    app_state: Any,
    *,
    project_id: int,
    events: Sequence[ValidEvent],
    also: Callable[[Connection, Mapping[str, int]], None] | None = None,
    merged_traces: Collection[str] = (),
) -> WriteResult:
    """:func:`write_events` in a slot of the shared admission control, off the event loop, so
    native and OTLP ingest share one bound; with nothing to write no slot is taken."""
    if not events:
        return WriteResult()
    async with _admission(app_state).slot(project_tenant(project_id)):
        return await run_in_threadpool(
            write_events,
            app_state.engine,
            project_id=project_id,
            events=events,
            also=also,
            merged_traces=merged_traces,
            max_spans_per_trace=app_state.settings.max_spans_per_trace,
        )


async def ingest_vectors(*, app_state: Any, project_id: int, batch: VectorBatch) -> IngestAnswer:
    """Write one stream's bulk vectors and build the answer, as :func:`ingest_batch`."""
    async with _admission(app_state).slot(project_tenant(project_id)):
        result = await run_in_threadpool(
            write_vectors, app_state.engine, project_id=project_id, batch=batch
        )
    return _answer(result, [], len(batch))


def _admission(app_state: Any) -> FairAdmission:
    admission: FairAdmission = app_state.admission
    return admission


def _answer(result: WriteResult, rejected: list[Rejection], total: int) -> IngestAnswer:
    all_rejected = sorted([*rejected, *result.rejected], key=lambda r: r.index)
    for etype, n in result.accepted_by_type.items():
        record_ingest(etype, "accepted", n)
    if result.duplicates:
        record_ingest("any", "duplicate", result.duplicates)
    if all_rejected:
        record_ingest("any", "rejected", len(all_rejected))
    answer = IngestAnswer(
        accepted=result.accepted,
        duplicates=result.duplicates,
        rejected=[RejectionOut.model_validate(r) for r in all_rejected],
    )
    if total and len(all_rejected) == total:
        # Every event was bad: the batch itself is a bad request. Name the first problem.
        raise HTTPException(422, detail={"message": all_rejected[0].error, **answer.model_dump()})
    return answer
