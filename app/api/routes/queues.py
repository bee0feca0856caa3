"""Labeling queues, under one role rule (docs/guides/labeling.md): reading a queue -- its
definition, item counts, stats and exported labels -- needs ``read`` (annotate and admin
imply it); creating, changing, deleting and filling one needs ``admin``; claiming,
labeling, skipping, releasing and undoing its items needs ``annotate``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse, StreamingResponse
from sqlalchemy import Engine

from app.api.deps import AdminKey, AnnotateKey, EngineDep, Int8Id, ReadKey, SessionDep
from app.keys import Principal
from app.labeling import claims, queues, undo
from app.labeling.errors import LeaseConflict
from app.labeling.export import label_lines
from app.labeling.fill import fill_queue
from app.labeling.samples import item_payloads
from app.labeling.schemas import (
    ClaimedItems,
    ClaimRequest,
    FillOut,
    LabelRequest,
    LabelSaved,
    LeaseEnded,
    LeaseLost,
    LeaseRequest,
    LeaseReturned,
    QueueCreate,
    QueueList,
    QueueOut,
    QueueStats,
    QueueUpdate,
    QueueWithItems,
)
from app.labeling.stats import queue_stats
from app.models.labeling import LabelQueue

router = APIRouter(prefix="/api/v1", tags=["queues"])

LEASE_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": LeaseLost, "description": "lease lost; the body says what to do"}
}


@router.post("/queues", status_code=201)
def create_queue(body: QueueCreate, principal: AdminKey, session: SessionDep) -> QueueOut:
    queue = queues.create_queue(session, project_id=principal.project_id, body=body)
    return QueueOut.model_validate(queue)


@router.get("/queues")
def list_queues(principal: ReadKey, session: SessionDep) -> QueueList:
    found = queues.list_queues(session, project_id=principal.project_id)
    counts = queues.item_counts(session, queue_ids=[q.id for q in found])
    return QueueList(queues=[_with_items(q, counts[q.id]) for q in found])


def _with_items(queue: LabelQueue, counts: dict[str, int]) -> QueueWithItems:
    return QueueWithItems.model_validate(
        {**QueueOut.model_validate(queue).model_dump(), "items": counts}
    )


@router.get("/queues/{name}")
def get_queue(name: str, principal: ReadKey, session: SessionDep) -> QueueWithItems:
    queue = queues.get_queue(session, project_id=principal.project_id, name=name)
    counts = queues.item_counts(session, queue_ids=[queue.id])
    return _with_items(queue, counts[queue.id])


@router.patch("/queues/{name}")
def update_queue(
    name: str, body: QueueUpdate, principal: AdminKey, session: SessionDep
) -> QueueOut:
    queue = queues.update_queue(session, project_id=principal.project_id, name=name, body=body)
    return QueueOut.model_validate(queue)


@router.delete("/queues/{name}", status_code=204)
def delete_queue(name: str, principal: AdminKey, session: SessionDep) -> Response:
    queues.delete_queue(session, project_id=principal.project_id, name=name)
    return Response(status_code=204)


@router.post("/queues/{name}/fill")
def fill_now(name: str, principal: AdminKey, session: SessionDep, engine: EngineDep) -> FillOut:
    """Run the fill job for this queue now (within its budget for the current period)."""
    queue = queues.get_queue(session, project_id=principal.project_id, name=name)
    return FillOut.model_validate(fill_queue(engine, queue_id=queue.id))


@router.post("/queues/{name}/claim")
def claim(
    name: str, body: ClaimRequest, principal: AnnotateKey, session: SessionDep, engine: EngineDep
) -> ClaimedItems:
    queue = queues.get_queue(session, project_id=principal.project_id, name=name)
    # End the session's read transaction: on SQLite (WAL) it would keep reading the
    # snapshot from before the claim commits.
    session.commit()
    ids = claims.claim_items(
        engine,
        project_id=principal.project_id,
        queue_id=queue.id,
        key_id=principal.key_id,
        n=body.n,
        lease_seconds=body.lease_seconds or queue.lease_seconds,
    )
    items = claims.claimed_items(session, ids=ids)
    payloads = item_payloads(session, project_id=principal.project_id, items=items, queue=queue)
    return ClaimedItems.model_validate({"items": payloads})


@router.post("/queue-items/{item_id}/label", response_model=LabelSaved, responses=LEASE_CONFLICT)
def label(item_id: Int8Id, body: LabelRequest, principal: AnnotateKey, engine: EngineDep) -> Any:
    return _on_item(
        claims.label_item,
        engine,
        principal,
        item_id,
        lease_token=body.lease_token,
        label=body.label,
        comment=body.comment,
    )


def _on_item(
    act: Callable[..., dict[str, Any]],
    engine: Engine,
    principal: Principal,
    item_id: int,
    /,
    **args: Any,
) -> Any:
    """``act`` on the caller's queue item as the caller's key; a lease conflict answers 409
    with its body (``LEASE_CONFLICT``), the answer a stale annotator's client acts on."""
    try:
        return act(
            engine,
            project_id=principal.project_id,
            item_id=item_id,
            key_id=principal.key_id,
            **args,
        )
    except LeaseConflict as exc:
        return JSONResponse(exc.body, status_code=409)


def _end(
    item_id: int, body: LeaseRequest, principal: Principal, engine: Engine, action: str
) -> Any:
    return _on_item(
        claims.end_lease, engine, principal, item_id, lease_token=body.lease_token, action=action
    )


@router.post("/queue-items/{item_id}/skip", response_model=LeaseEnded, responses=LEASE_CONFLICT)
def skip(item_id: Int8Id, body: LeaseRequest, principal: AnnotateKey, engine: EngineDep) -> Any:
    return _end(item_id, body, principal, engine, "skip")


@router.post("/queue-items/{item_id}/release", response_model=LeaseEnded, responses=LEASE_CONFLICT)
def release(item_id: Int8Id, body: LeaseRequest, principal: AnnotateKey, engine: EngineDep) -> Any:
    return _end(item_id, body, principal, engine, "release")


@router.post("/queue-items/{item_id}/undo", response_model=LeaseReturned, responses=LEASE_CONFLICT)
def undo_answer(item_id: Int8Id, principal: AnnotateKey, engine: EngineDep) -> Any:
    """Take back this key's label or skip of the item (within 10 minutes): the label and
    the score it wrote are deleted and the item comes back leased to this key."""
    return _on_item(undo.undo_item, engine, principal, item_id)


@router.get("/queues/{name}/stats")
def stats(
    name: str,
    principal: ReadKey,
    session: SessionDep,
    window_hours: float = Query(24.0, gt=0, le=24 * 90),
) -> QueueStats:
    queue = queues.get_queue(session, project_id=principal.project_id, name=name)
    return QueueStats.model_validate(queue_stats(session, queue=queue, window_hours=window_hours))


@router.get(
    "/queues/{name}/labels.jsonl",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}}},
)
def export_labels(
    name: str, principal: ReadKey, session: SessionDep, engine: EngineDep
) -> StreamingResponse:
    queue = queues.get_queue(session, project_id=principal.project_id, name=name)
    lines = label_lines(
        engine, project_id=principal.project_id, queue_id=queue.id, queue_name=queue.name
    )
    return StreamingResponse(
        lines,
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{queue.name}-labels.jsonl"'},
    )
