"""The JSON API's 404s, worded once: a row the caller's project lacks, or the project itself.

Another project's row reads as missing (:func:`app.db.project_row`), so the answer never says
whether an id exists elsewhere; the message names the field the id came from.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from fastapi import Depends, HTTPException

from app.api.deps import AdminKey, SessionDep
from app.models import Project

R = TypeVar("R")


def found(row: R | None, what: str, row_id: object) -> R:
    """``row``, or a 404 ``"<what> <row_id> not found in this project"``."""
    if row is None:
        raise HTTPException(404, f"{what} {row_id} not found in this project")
    return row


def admin_project(principal: AdminKey, session: SessionDep) -> Project:
    """The admin caller's project, in the request's session (the route's ``SessionDep``)."""
    project = session.get(Project, principal.project_id)
    if project is None:  # the caller's key names it, so only a race with its deletion
        raise HTTPException(404, "project not found")
    return project


AdminProject = Annotated[Project, Depends(admin_project)]
