"""The JSON API's 404s and 422s, worded once.

A 404 is a row the caller's project lacks (:func:`app.deps.found`, which the pages use
too), or the project itself. Another project's row reads as missing
(:func:`app.db.project_row`), so the answer never says whether an id exists elsewhere; the
message names the field the id came from. A 422 is a request whose
content the domain refused: its message (which names the field) is the detail.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import Depends, HTTPException

from app.api.deps import AdminKey, SessionDep
from app.deps import found
from app.models import Project

__all__ = ["AdminProject", "found", "unprocessable"]


def admin_project(principal: AdminKey, session: SessionDep) -> Project:
    """The admin caller's project, in the request's session (the route's ``SessionDep``)."""
    project = session.get(Project, principal.project_id)
    if project is None:  # the caller's key names it, so only a race with its deletion
        raise HTTPException(404, "project not found")
    return project


AdminProject = Annotated[Project, Depends(admin_project)]


@contextmanager
def unprocessable(*refusals: type[Exception]) -> Iterator[None]:
    """Turn ``refusals`` raised inside into a 422 with the exception's message; outside
    a ``write_session``, so that session rolls back first."""
    try:
        yield
    except refusals as exc:
        raise HTTPException(422, str(exc)) from None
