"""Generated bad input against every route in /openapi.json, with a key of every role, on
SQLite and PostgreSQL.

The database is up for the whole run, so no answer may be a 5xx at all (a 503 here would be
a misreported outage), and every 4xx must carry a message a client can act on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from app.keys import ROLES
from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer, fresh_database, key_for


@pytest.fixture
def fuzz_server(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[str, dict[str, str]]]:
    url = fresh_database(backend, tmp_path, request)
    keys = {role: key_for(url, role, "fuzz") for role in ROLES}
    settings_ = Settings(
        database_url=url, scheduler_enabled=False, media_dir=str(tmp_path / "media")
    )
    with LiveServer(create_app(settings_, start_background=False)) as server:
        yield server.url, keys


def _message(response: object) -> str:
    try:
        body = response.json()  # type: ignore[attr-defined]
    except Exception:
        return str(getattr(response, "text", ""))
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or body.get("error")
        if isinstance(detail, dict):
            return str(detail.get("message") or detail)
        return str(detail or "")
    return str(body)


def _fuzz(operation: object, url: str, role: str, key: str, problems: list[str],
          calls: list[int]) -> None:  # fmt: skip
    @settings(
        max_examples=6,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    @given(case=operation.as_strategy())  # type: ignore[attr-defined]
    def exercise(case: schemathesis.Case) -> None:
        response = case.call(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        where = f"{role}: {case.method} {case.formatted_path}"
        calls.append(response.status_code)
        if response.status_code >= 500:
            problems.append(f"{where} -> {response.status_code}: {response.text[:300]}")
        elif 400 <= response.status_code < 500 and not _message(response).strip():
            problems.append(f"{where} -> {response.status_code} with no message")

    exercise()


@pytest.mark.slow
def test_no_5xx_and_every_4xx_has_a_message(fuzz_server: tuple[str, dict[str, str]]) -> None:
    url, keys = fuzz_server
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    problems: list[str] = []
    calls: list[int] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 5
    for role, key in keys.items():
        for operation in operations:
            _fuzz(operation, url, role, key, problems, calls)
    assert len(calls) >= 3 * len(operations) * len(keys)
    assert not problems, "\n".join(problems[:20])
