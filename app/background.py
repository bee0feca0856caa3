"""Background services that live and die with the app (scheduler, outbox sender, reapers).

Each service is a small object with ``start()`` and ``stop()``; failures inside a service
are its own to log and survive. The lifespan starts them after the database is ready and
stops them in reverse order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from sqlalchemy import Engine, orm

from app.settings import Settings

log = logging.getLogger("telltale.background")


class Service(Protocol):
    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...


# Factories registered by feature modules: (settings, engine, sessionmaker) -> Service | None.
ServiceFactory = Callable[[Settings, Engine, "orm.sessionmaker[orm.Session]"], Any]
_FACTORIES: list[ServiceFactory] = []


def register(factory: ServiceFactory) -> ServiceFactory:
    _FACTORIES.append(factory)
    return factory


def start_services(
    settings: Settings, engine: Engine, sessionmaker: orm.sessionmaker[orm.Session]
) -> list[Service]:
    started: list[Service] = []
    for factory in _FACTORIES:
        service = factory(settings, engine, sessionmaker)
        if service is None:
            continue
        try:
            service.start()
            started.append(service)
        except Exception:
            log.exception("background service %s failed to start", getattr(service, "name", "?"))
    return started


def stop_services(services: list[Service]) -> None:
    for service in reversed(services):
        try:
            service.stop()
        except Exception:
            log.exception("background service %s failed to stop", service.name)
