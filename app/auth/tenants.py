"""Whose request is it, before the route has looked at the key: the tenant of admission.

The request gates (:mod:`app.api.read_admission`; the write gate is keyed by the project
itself) share their slots fairly among tenants (:mod:`app.admission`). A tenant is a
project; at the gate, before any database work, the request carries only a credential (a
bearer key, ``x-api-key`` or the web login cookie). The first request of a credential is
its own tenant; once a route has authenticated it, :meth:`TenantDirectory.learn` maps the
credential's fingerprint to its project, and every later request of any of the project's
keys shares the project's one share. A client with no credential is a tenant by address.
The map is bounded (least recently used out), so unknown credentials cannot grow it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any

from starlette.requests import cookie_parser

from app.auth.cookies import COOKIE


def project_tenant(project_id: int) -> Hashable:
    """A project as a tenant of the gates (the read gate's and the write gate's alike)."""
    return ("project", project_id)


def is_project(tenant: Hashable) -> bool:
    """Whether ``tenant`` is a project (not a credential or client whose project is unknown)."""
    return isinstance(tenant, tuple) and len(tenant) == 2 and tenant[0] == "project"


def credential_of(headers: Mapping[str, str]) -> str | None:
    """The request's credential: bearer key, ``x-api-key``, or the login cookie's value."""
    auth = headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    key = headers.get("x-api-key", "").strip()
    if key:
        return key
    cookie = cookie_parser(headers.get("cookie", "")).get(COOKIE)
    return f"cookie:{cookie}" if cookie else None


def fingerprint(credential: str) -> str:
    return hashlib.sha256(credential.encode("utf-8", "replace")).hexdigest()[:24]


class TenantDirectory:
    """Credential fingerprints to project ids, learned as requests authenticate.

    >>> d = TenantDirectory(size=2)
    >>> d.tenant({"x-api-key": "tt_a"}, client="1.2.3.4")[0]
    'credential'
    >>> d.learn("tt_a", project_id=7); d.tenant({"authorization": "Bearer tt_a"}, client="x")
    ('project', 7)
    >>> d.tenant({}, client="1.2.3.4")
    ('client', '1.2.3.4')
    """

    def __init__(self, size: int = 4096) -> None:
        self._projects: OrderedDict[str, int] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()  # learn() runs in request threads, tenant() in the loop

    def learn(self, credential: str, *, project_id: int) -> None:
        key = fingerprint(credential)
        with self._lock:
            self._projects[key] = project_id
            self._projects.move_to_end(key)
            while len(self._projects) > self._size:
                self._projects.popitem(last=False)

    def tenant(self, headers: Mapping[str, str], *, client: Any) -> Hashable:
        credential = credential_of(headers)
        if credential is None:
            return ("client", client)
        key = fingerprint(credential)
        with self._lock:
            project_id = self._projects.get(key)
        return ("credential", key) if project_id is None else project_tenant(project_id)


def learn_tenant(app_state: Any, credential: str, *, project_id: int) -> None:
    """Tell the app's directory (``app.state.tenants``, set by ``create_app``)."""
    directory: TenantDirectory = app_state.tenants
    directory.learn(credential, project_id=project_id)
