"""Generated bad input against every route in /openapi.json, with valid admin keys.

No answer may be a 500, and every 4xx must carry a message a client can act on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from app.db import make_engine, make_sessionmaker
from app.keys import create_key
from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer


@pytest.fixture(scope="module")
def fuzz_server(
    sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    import shutil

    path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    eng = make_engine(url)
    with make_sessionmaker(eng)() as s:
        key = create_key(s, project_name="fuzz", role="admin")
        s.commit()
    eng.dispose()
    settings_ = Settings(
        database_url=url,
        scheduler_enabled=False,
        media_dir=str(tmp_path_factory.mktemp("media")),
    )
    with LiveServer(create_app(settings_, start_background=False)) as server:
        yield server.url, key


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


def test_no_500_and_every_4xx_has_a_message(fuzz_server: tuple[str, str]) -> None:
    url, key = fuzz_server
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    problems: list[str] = []
    calls: list[int] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 5

    for operation in operations:

        @settings(
            max_examples=12,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        @given(case=operation.as_strategy())
        def exercise(case: schemathesis.Case) -> None:
            response = case.call(
                base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30
            )
            where = f"{case.method} {case.formatted_path}"
            calls.append(response.status_code)
            if response.status_code >= 500 and response.status_code != 503:
                problems.append(f"{where} -> {response.status_code}: {response.text[:300]}")
            elif 400 <= response.status_code < 500 and not _message(response).strip():
                problems.append(f"{where} -> {response.status_code} with no message")

        exercise()
    assert len(calls) >= 3 * len(operations)
    assert not problems, "\n".join(problems[:20])
