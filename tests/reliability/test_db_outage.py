"""A database outage during ingestion: 503 + Retry-After, never 500, and recovery by itself."""

from __future__ import annotations

import threading

import httpx
import pytest
from sqlalchemy import create_engine, func, select

from app.db import normalise_url
from app.main import create_app
from app.models import Span
from app.settings import Settings
from tests.conftest import LiveServer, auth, fresh_database, key_for
from tests.reliability.tcp_proxy import TcpProxy


@pytest.fixture
def proxied_pg(tmp_path, request):
    url = fresh_database("postgresql", tmp_path, request)
    proxy = TcpProxy("127.0.0.1", 5432)
    yield url, url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}"), proxy
    proxy.close()


def test_outage_answers_503_then_recovers(proxied_pg):
    direct_url, proxied_url, proxy = proxied_pg
    key = key_for(direct_url, "ingest")
    settings = Settings(database_url=proxied_url, scheduler_enabled=False)
    statuses: dict[int, int] = {}
    acked: set[str] = set()
    stop = threading.Event()
    answered = threading.Condition()  # notified after every answer the client counts

    def client() -> None:
        i = 0
        with httpx.Client(timeout=30) as c:
            while not stop.is_set():
                events = [
                    {
                        "id": f"b{i}-{j}",
                        "type": "span",
                        "body": {"trace_id": f"t{i}", "span_id": f"s{j}"},
                    }
                    for j in range(20)
                ]
                r = c.post(
                    f"{server.url}/api/v1/ingest", json={"events": events}, headers=auth(key)
                )
                with answered:
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                    answered.notify_all()
                if r.status_code == 200:
                    acked.update(e["id"] for e in events)
                elif r.status_code in (429, 503):
                    assert int(r.headers["retry-after"]) >= 1
                    assert r.json()["detail"]
                i += 1
                stop.wait(0.02)  # paced, not a flood

    def until(status: int, more_than: int, what: str) -> None:
        with answered:
            seen = answered.wait_for(lambda: statuses.get(status, 0) > more_than, timeout=30)
        assert seen, f"{what}: {statuses}"

    with LiveServer(create_app(settings, start_background=False)) as server:
        t = threading.Thread(target=client)
        t.start()
        try:
            until(200, 2, "ingestion never answered 200 before the outage")
            proxy.cut()
            until(503, 2, "the outage never answered 503")
            with answered:
                during = dict(statuses)
            proxy.restore()
            until(200, during.get(200, 0) + 2, "ingestion did not resume after the outage")
        finally:
            stop.set()
            t.join()
        with httpx.Client() as c:
            assert c.get(f"{server.url}/readyz").status_code == 200
    assert 500 not in statuses, statuses
    assert during.get(503, 0) > 0, during
    assert statuses[200] > during.get(200, 0), "ingestion did not resume after the outage"
    eng = create_engine(normalise_url(direct_url))
    with eng.connect() as conn:
        stored = conn.scalar(select(func.count()).select_from(Span))
    eng.dispose()
    assert stored >= len(acked)
