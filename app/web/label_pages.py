"""The annotator's pages: the labeling index (each queue's items, labels, what is left and
what others hold) and a queue's labeling page (guidelines, progress, the item to judge).

Counts are the store's (:func:`app.labeling.queues.progress`), read for the logged-in key:
"claimed by others" are live leases of other keys, which this annotator cannot claim
until they expire; "left" is what a claim can still get.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException

from app.deps import SessionDep
from app.labeling import queues
from app.labeling.errors import NotFound
from app.models.base import utcnow
from app.web.deps import WebDep

router = APIRouter(include_in_schema=False)


@router.get("/label")
def label_index(web: WebDep, session: SessionDep) -> Any:
    p = web.principal
    found = queues.list_queues(session, project_id=p.project_id)
    counts = queues.progress(
        session, queue_ids=[q.id for q in found], key_id=p.key_id, now=utcnow()
    )
    return web.render("label_index.html", queues=[(q, counts[q.id]) for q in found])


@router.get("/label/{queue_name}")
def label_page(queue_name: str, web: WebDep, session: SessionDep) -> Any:
    p = web.principal
    try:
        queue = queues.get_queue(session, project_id=p.project_id, name=queue_name)
    except NotFound:
        raise HTTPException(404, f"queue {queue_name!r} not found in this project") from None
    counts = queues.item_counts(session, queue_ids=[queue.id])[queue.id]
    mine = queues.progress(session, queue_ids=[queue.id], key_id=p.key_id, now=utcnow())
    return web.render("label.html", queue=queue, counts=counts, progress=mine[queue.id])
