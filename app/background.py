"""Background services that live and die with the app (scheduler, outbox sender, retention).

Each service is a small object with ``start()`` and ``stop()``; failures inside a service
are its own to log and survive. The app's lifespan (:mod:`app.main`) lists the services it
runs, starts them after the database is ready and stops them in reverse order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Protocol

log = logging.getLogger("telltale.background")


class Service(Protocol):
    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...


def start_services(services: Iterable[Service]) -> list[Service]:
    """Start each service; one that fails to start is logged and left out."""
    started: list[Service] = []
    for service in services:
        try:
            service.start()
            started.append(service)
        except Exception:
            log.exception("background service %s failed to start", service.name)
    return started


def stop_services(services: Sequence[Service]) -> None:
    for service in reversed(services):
        try:
            service.stop()
        except Exception:
            log.exception("background service %s failed to stop", service.name)
