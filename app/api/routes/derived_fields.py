"""The caller's project's rules for derived trace fields: read, set, reset (admin only).

``/api/v1/project/derived-fields`` serves them. Their first path, ``/api/v1/project/signals``,
is kept for the clients that call it as a deprecated alias: the same handlers, marked
``deprecated`` in the OpenAPI document, and every answer on it carries ``Deprecation: true``
and a ``Link`` to the successor path. "Signals" also names the OTLP logs and metrics and the
detectors' inputs, which is why these rules no longer do.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session
from starlette.types import Message, Receive, Scope, Send

from app.api.deps import SessionDep, SettingsDep
from app.api.errors import AdminProject
from app.derive.config import (
    DerivedFieldRules,
    DerivedFieldRulesOut,
    derived_field_rules_view,
    set_derived_field_rules,
)
from app.models import Project
from app.settings import Settings

PATH = "/api/v1/project/derived-fields"
DEPRECATED_PATH = "/api/v1/project/signals"

# ``Deprecation: true`` as the IETF draft wrote it (RFC 9745 later took a date, ``@<epoch>``;
# a client that looks for the header's presence reads either), and a link (RFC 8288) to the
# path that replaces it.
DEPRECATION_HEADERS = {"Deprecation": "true", "Link": f'<{PATH}>; rel="successor-version"'}
_RAW_HEADERS = [(k.lower().encode(), v.encode()) for k, v in DEPRECATION_HEADERS.items()]


class DeprecatedAlias(APIRoute):
    """A route on the old path: every answer its handler gives carries the deprecation headers,
    refusals (401, 403, 422) included."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_RAW_HEADERS]}
            await send(message)

        await super().handle(scope, receive, send_marked)


router = APIRouter(tags=["derived fields"])
_alias = APIRouter(  # its tags are the router's, which includes it below
    route_class=DeprecatedAlias,
    deprecated=True,
    responses={
        200: {
            "description": f"Successful Response (deprecated path: use {PATH})",
            "headers": {
                name: {"description": f"always `{value}`", "schema": {"type": "string"}}
                for name, value in DEPRECATION_HEADERS.items()
            },
        }
    },
)


@router.get(PATH)
@_alias.get(DEPRECATED_PATH, description=f"Deprecated alias of `GET {PATH}`.")
def get_derived_fields(project: AdminProject, settings: SettingsDep) -> DerivedFieldRulesOut:
    """The project's effective rules, defaults filled in."""
    return derived_field_rules_view(project, server_embeddings=settings.derive_text_embeddings)


@router.put(PATH)
@_alias.put(DEPRECATED_PATH, description=f"Deprecated alias of `PUT {PATH}`.")
def put_derived_fields(
    body: DerivedFieldRules, project: AdminProject, session: SessionDep, settings: SettingsDep
) -> DerivedFieldRulesOut:
    """Derive this project's fields by these rules (parts left out keep their defaults)."""
    return _save(session, project, body, settings)


@router.delete(PATH)
@_alias.delete(DEPRECATED_PATH, description=f"Deprecated alias of `DELETE {PATH}`.")
def delete_derived_fields(
    project: AdminProject, session: SessionDep, settings: SettingsDep
) -> DerivedFieldRulesOut:
    """Back to every default."""
    return _save(session, project, None, settings)


router.include_router(_alias)  # after the routes: including copies them


def _save(
    session: Session, project: Project, rules: DerivedFieldRules | None, settings: Settings
) -> DerivedFieldRulesOut:
    set_derived_field_rules(session, project_id=project.id, config=rules)
    session.commit()
    return derived_field_rules_view(project, server_embeddings=settings.derive_text_embeddings)
