"""What an annotator sees of an item: the trace summary, text, image URL and the reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.labeling.why import why_picked
from app.models import Span, Trace
from app.models.labeling import LabelQueue, QueueItem
from app.models.media import MediaJob

TEXT_KEYS = ("text", "input", "prompt", "question")


def image_url(item: QueueItem) -> str | None:
    """Media samples (a ``sample_id`` without a trace) have an image served by the media API.

    Hook for the media feature: this is the one place that decides what is media.
    """
    if item.sample_id and not item.trace_id:
        url = f"/api/v1/media/{quote(item.sample_id, safe='')}/image"
        return f"{url}?stream={quote(item.stream, safe='')}" if item.stream else url
    return None


def _text(attrs: dict[str, Any]) -> str | None:
    for key in TEXT_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def trace_summaries(
    session: Session, *, project_id: int, trace_ids: Sequence[str]
) -> dict[str, dict[str, Any]]:
    if not trace_ids:
        return {}
    ids = sorted(set(trace_ids))
    traces = session.scalars(
        select(Trace).where(Trace.project_id == project_id, Trace.trace_id.in_(ids))
    ).all()
    steps = dict(
        session.execute(
            select(Span.trace_id, func.count())
            .where(Span.project_id == project_id, Span.trace_id.in_(ids))
            .group_by(Span.trace_id)
        ).all()
    )
    out = {}
    for t in traces:
        attrs = t.attributes or {}
        out[t.trace_id] = {
            "trace_id": t.trace_id,
            "agent": t.agent,
            "agent_version": t.agent_version,
            "status": t.status,
            "decision": attrs.get("decision"),
            "task_type": attrs.get("task_type"),
            "confidence": attrs.get("confidence"),
            "steps": int(steps.get(t.trace_id, 0)),
            "source": t.source,
            "started_at": t.started_at,
            "text": _text(attrs),
            "output": attrs.get("output") if isinstance(attrs.get("output"), str) else None,
        }
    return out


def item_payloads(
    session: Session, *, project_id: int, items: Sequence[QueueItem], queue: LabelQueue
) -> list[dict[str, Any]]:
    """The claim answer for each item, in the given order."""
    traces = trace_summaries(
        session, project_id=project_id, trace_ids=[i.trace_id for i in items if i.trace_id]
    )
    media = _media_samples(session, project_id=project_id, items=items)
    out = []
    for item in items:
        trace = traces.get(item.trace_id) if item.trace_id else None
        kind, media_text = media.get((item.stream, item.sample_id), (None, None))
        # Only samples uploaded through /api/v1/media have an image to show; vectors sent
        # directly by a VLM service have none, and a broken image would only mislead.
        url = image_url(item) if kind == "image" else None
        out.append(
            {
                "id": item.id,
                "queue": queue.name,
                "lease_token": item.lease_token,
                "lease_expires_at": item.lease_expires_at,
                "priority": item.priority,
                "novelty": item.novelty,
                "boost": item.boost,
                "reason": item.reason,
                "label_schema": queue.label_schema,
                "sample": {
                    "key": item.sample_key,
                    "kind": "trace" if item.trace_id else "media" if kind else "embedding",
                    "stream": item.stream,
                    "embedding_id": item.embedding_id,
                    "sample_id": item.sample_id,
                    "time": item.sample_time,
                    "trace": trace,
                    "text": trace["text"] if trace else media_text,
                    "image_url": url,
                    # Nothing to look at (a vector sent without its image or text): the
                    # labeling page offers only skip for it.
                    "has_content": bool(trace or media_text or url),
                },
                "why": why_picked(item),
            }
        )
    return out


def _media_samples(
    session: Session, *, project_id: int, items: Sequence[QueueItem]
) -> dict[tuple[str | None, str | None], tuple[str, str | None]]:
    """(stream, sample_id) -> (media kind, text) for items that came through the media API."""
    ids = sorted({i.sample_id for i in items if i.sample_id and not i.trace_id})
    if not ids:
        return {}
    rows = session.execute(
        select(MediaJob.stream, MediaJob.sample_id, MediaJob.kind, MediaJob.text).where(
            MediaJob.project_id == project_id,
            MediaJob.sample_id.in_(ids),
            (MediaJob.kind == "text") | MediaJob.file_name.is_not(None),
        )
    ).all()
    return {(r.stream, r.sample_id): (r.kind, r.text) for r in rows}
