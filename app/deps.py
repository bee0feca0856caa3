"""Request dependencies shared by the JSON API and the pages: the engine, the settings, a
session per request, the process's monitor runner, and the bounded id types every path and
query id uses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Annotated, TypeVar

from annotated_types import Interval
from fastapi import Depends, HTTPException, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.monitors.runner import MonitorRunner
from app.settings import Settings


def get_engine(request: Request) -> Engine:
    return request.app.state.engine


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_monitor_runner(request: Request) -> MonitorRunner:
    """The scheduler's runner (app.main's lifespan): ``run now`` shares its slots and cycles."""
    return request.app.state.monitor_runner  # type: ignore[no-any-return]


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


# Row ids as their columns hold them: INTEGER is int4 on PostgreSQL (projects, keys,
# monitors, channels, silences, label queues), BIGINT int8 (traces, runs, findings, alerts,
# queue items, media jobs). Past the column an id would overflow the driver (a 500 on
# SQLite, a DataError on PostgreSQL); bounded here it is a 422 naming the parameter.
Int4Id = Annotated[int, Interval(ge=1, le=2**31 - 1)]
Int8Id = Annotated[int, Interval(ge=1, le=2**63 - 1)]

EngineDep = Annotated[Engine, Depends(get_engine)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]
MonitorRunnerDep = Annotated[MonitorRunner, Depends(get_monitor_runner)]


R = TypeVar("R")


def found(row: R | None, what: str, row_id: object) -> R:
    """``row``, or a 404 ``"<what> <row_id> not found in this project"``: the API's and the
    pages' wording for a row the caller's project lacks (another project's reads as missing,
    so the answer never says whether an id exists elsewhere)."""
    if row is None:
        raise HTTPException(404, f"{what} {row_id} not found in this project")
    return row


async def project_compute_slot(request: Request) -> AsyncIterator[None]:
    """Hold one of the caller's project's slots of the write gate while the route runs.

    For the few non-GET routes that compute on a project's behalf (``run now``): they share
    the project's fair share with its ingest (:mod:`app.admission`), so a project running
    its monitors now and again cannot take the process's CPU from the others. Refused with
    429 when the project's share is full, as a saturated write is.
    """
    client = request.client.host if request.client else None
    tenant = request.app.state.tenants.tenant(request.headers, client=client)
    async with request.app.state.admission.slot(tenant):
        yield


ProjectComputeSlot = Depends(project_compute_slot)
