"""Silences: label matchers that mute notifications until they expire."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Response
from sqlalchemy import select

from app.alerts.schemas import SilenceCreate
from app.alerts.store import create_silence, silence_dict
from app.api.deps import AnnotateKey, EngineDep, Int4Id, ReadKey, SessionDep
from app.api.routes.alerts import actor
from app.db import write_session
from app.models import Silence
from app.models.base import utcnow

router = APIRouter(prefix="/api/v1/silences", tags=["silences"])


@router.get("")
def list_silences(
    principal: ReadKey,
    session: SessionDep,
    include_expired: bool = Query(False),
) -> dict[str, Any]:
    now = utcnow()
    q = select(Silence).where(Silence.project_id == principal.project_id)
    if not include_expired:
        q = q.where(Silence.ends_at > now)
    rows = session.scalars(q.order_by(Silence.id))
    return {"silences": [silence_dict(s, now) for s in rows]}


@router.post("", status_code=201)
def create(body: SilenceCreate, principal: AnnotateKey, engine: EngineDep) -> dict[str, Any]:
    """``{"matchers": [{"name", "value", "op": "=|!=|=~|!~"}], "ends_at" | "duration_seconds"}``.

    Labels matched: the monitor's labels plus ``alertname``, ``project``, ``monitor``,
    ``failure_mode`` and ``severity``.
    """
    now = utcnow()
    try:
        with write_session(engine) as session:
            silence = create_silence(
                session, project_id=principal.project_id, body=body, actor=actor(principal), now=now
            )
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return silence_dict(silence, now)


@router.delete("/{silence_id}", status_code=204)
def expire(silence_id: Int4Id, principal: AnnotateKey, engine: EngineDep) -> Response:
    """Expire the silence now (it stays listed with ``include_expired``)."""
    with write_session(engine) as session:
        silence = session.get(Silence, silence_id)
        if silence is None or silence.project_id != principal.project_id:
            raise HTTPException(404, f"silence {silence_id} not found in this project")
        now = utcnow()
        if silence.ends_at > now:
            silence.ends_at = max(now, silence.starts_at)
    return Response(status_code=204)
