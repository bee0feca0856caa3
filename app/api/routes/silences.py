"""Silences: label matchers that mute notifications until they expire."""

from __future__ import annotations

from fastapi import APIRouter, Query, Response

from app.alerts import store
from app.alerts.schemas import SilenceCreate, SilenceList, SilenceOut
from app.api.deps import AnnotateKey, EngineDep, Int4Id, ReadKey, SessionDep
from app.api.errors import found, unprocessable
from app.api.routes.alerts import actor
from app.db import project_row, write_session
from app.models import Silence
from app.models.base import utcnow

router = APIRouter(prefix="/api/v1/silences", tags=["silences"])


@router.get("")
def list_silences(
    principal: ReadKey,
    session: SessionDep,
    include_expired: bool = Query(False),
) -> SilenceList:
    now = utcnow()
    rows = store.list_silences(
        session, project_id=principal.project_id, active_after=None if include_expired else now
    )
    return SilenceList(silences=[store.silence_view(s, now=now) for s in rows])


@router.post("", status_code=201)
def create(body: SilenceCreate, principal: AnnotateKey, engine: EngineDep) -> SilenceOut:
    """``{"matchers": [{"name", "value", "op": "=|!=|=~|!~"}], "ends_at" | "duration_seconds"}``.

    Labels matched: the monitor's labels plus ``alertname``, ``project``, ``monitor``,
    ``failure_mode`` and ``severity``.
    """
    now = utcnow()
    with unprocessable(ValueError), write_session(engine) as session:
        silence = store.create_silence(
            session, project_id=principal.project_id, body=body, actor=actor(principal), now=now
        )
    return store.silence_view(silence, now=now)


@router.delete("/{silence_id}", status_code=204)
def expire(silence_id: Int4Id, principal: AnnotateKey, engine: EngineDep) -> Response:
    """Expire the silence now (it stays listed with ``include_expired``)."""
    with write_session(engine) as session:
        silence = found(
            project_row(session, Silence, silence_id, project_id=principal.project_id),
            "silence",
            silence_id,
        )
        now = utcnow()
        if silence.ends_at > now:
            silence.ends_at = max(now, silence.starts_at)
    return Response(status_code=204)
