"""Pages without a browser: login, CSRF, redirects, escaping, roles, the ingestion rate."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from sqlalchemy import update

from app.auth.cookies import COOKIE
from app.models import ApiKey
from tests.conftest import auth, sqlite_only

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def login(client: TestClient, key: str, next_path: str = "/") -> None:
    page = client.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = client.post(
        "/login", data={"api_key": key, "csrf": token, "next": next_path}, follow_redirects=False
    )
    assert r.status_code == 303, r.text
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie


def test_pages_need_a_session_and_login_rejects_bad_keys(client, make_key):
    r = client.get("/traces", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/traces"
    page = client.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    bad = client.post("/login", data={"api_key": "tt_nope", "csrf": token}, follow_redirects=False)
    assert bad.status_code == 401 and "not valid" in bad.text
    no_csrf = client.post("/login", data={"api_key": make_key("read")}, follow_redirects=False)
    assert no_csrf.status_code == 401 and "expired" in no_csrf.text


def test_login_never_redirects_off_site(client, make_key):
    for target in ("//evil.example/x", "https://evil.example", "javascript:alert(1)"):
        page = client.get("/login")
        token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        r = client.post(
            "/login",
            data={"api_key": make_key("read"), "csrf": token, "next": target},
            follow_redirects=False,
        )
        assert r.headers["location"] == "/", target


def test_injected_html_in_trace_data_is_escaped(client, make_key):
    key = make_key("admin")
    events = [
        {
            "id": "t",
            "type": "trace",
            "body": {"trace_id": "xss-1", "agent": XSS, "attributes": {"decision": XSS, XSS: XSS}},
        },
        {
            "id": "s",
            "type": "span",
            "body": {
                "trace_id": "xss-1",
                "span_id": "s1",
                "name": XSS,
                "tool_name": XSS,
                "error_type": XSS,
                "status": "error",
                "attributes": {"note": XSS},
            },
        },
    ]
    assert (
        client.post("/api/v1/ingest", json={"events": events}, headers=auth(key)).status_code == 200
    )
    login(client, key)
    for path in ("/traces", "/traces/xss-1", f"/traces?agent={XSS}"):
        html = client.get(path).text
        assert "<script>alert" not in html and "<img src=x" not in html, path
        assert "&lt;script&gt;" in html or "\\u003cscript\\u003e" in html, path


def test_cookie_session_needs_csrf_for_api_writes_and_respects_roles(client, make_key):
    annotator = make_key("annotate")
    login(client, annotator)
    html = client.get("/").text
    token = re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)
    assert client.get("/api/v1/traces").status_code == 200  # reads work with the cookie
    body = {"matchers": [{"name": "failure_mode", "value": "FM-1"}], "duration_seconds": 60}
    assert client.post("/api/v1/silences", json=body).status_code == 403  # no CSRF header
    ok = client.post("/api/v1/silences", json=body, headers={"X-CSRF-Token": token})
    assert ok.status_code == 201
    wrong = client.post("/api/v1/silences", json=body, headers={"X-CSRF-Token": "x" * 64})
    assert wrong.status_code == 403
    # The annotator's cookie does not make it an admin.
    r = client.post("/api/v1/keys", json={"role": "admin"}, headers={"X-CSRF-Token": token})
    assert r.status_code == 403


def test_revoking_the_key_ends_the_session(client, make_key):
    admin = make_key("admin")
    reader_made = client.post("/api/v1/keys", json={"role": "read"}, headers=auth(admin)).json()
    login(client, reader_made["key"])
    assert client.get("/traces").status_code == 200
    key_id = next(
        k["id"]
        for k in client.get("/api/v1/keys", headers=auth(admin)).json()["keys"]
        if k["role"] == "read"
    )
    client.delete(f"/api/v1/keys/{key_id}", headers=auth(admin))
    r = client.get("/traces", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_overview_shows_the_ingestion_rate(client, make_key):
    key = make_key("admin")
    events = [
        {"id": f"s{i}", "type": "span", "body": {"trace_id": "t", "span_id": f"s{i}"}}
        for i in range(7)
    ]
    client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))  # duplicates
    login(client, key)
    html = client.get("/").text
    assert re.search(r"<strong>7</strong> spans", html), html[:2000]
    assert all(f'data-mode="{m}"' in html for m in [*(f"FM-{k}" for k in range(1, 8)), "OUTCOME"])


def test_alert_page_from_a_notification_link(client, make_key, engine):
    from datetime import UTC, datetime

    from app.db import write_session
    from app.models import Alert, Project

    key = make_key("admin")
    with write_session(engine) as session:
        project_id = session.query(Project.id).scalar()
        now = datetime.now(UTC)
        alert = Alert(
            project_id=project_id,
            fingerprint="f" * 64,
            failure_mode="FM-2",
            severity="critical",
            labels={},
            state="firing",
            summary="cascade lift 3.1",
            evidence={"lift": 3.1},
            first_fired_at=now,
            last_fired_at=now,
        )
        session.add(alert)
        session.flush()
        alert_id = alert.id
    login(client, key)
    html = client.get(f"/alerts/{alert_id}").text
    assert "cascade lift 3.1" in html and "Acknowledge" in html and '"lift": 3.1' in html
    assert client.get("/alerts/999999", headers={"accept": "text/html"}).status_code == 404


def test_alert_page_shows_the_baseline_it_is_held_against(client, make_key, engine):
    """A real run opens the alert: the page and the webhook payload say which baseline the
    alert is held against, when the degradation started, and that FM-6 drift is silent."""
    from datetime import UTC, datetime

    from sqlalchemy import select

    from app.db import write_session
    from app.models import Alert, Notification, Project
    from app.monitors.runner import run_monitor
    from tests.app.engine_helpers import add_channel, add_monitor, scripted_factory

    key = make_key("admin")
    with write_session(engine) as session:
        project_id = session.query(Project.id).scalar()
    add_channel(engine, project_id, type="webhook", url="http://127.0.0.1:9/hook")
    mid = add_monitor(engine, project_id, "FM-6")
    now = datetime(2025, 3, 3, 12, tzinfo=UTC)
    run_monitor(engine, monitor_id=mid, now=now,
                detector_factory=scripted_factory({"FM-6": ["fire"]}))  # fmt: skip
    with write_session(engine) as session:
        alert = session.scalars(select(Alert)).one()
        [note] = session.scalars(select(Notification)).all()
        alert_id, payload = alert.id, note.payload
    held = payload["alert"]["evidence"]["baseline"]
    # No change point in the scripted evidence: first seen by the run that fired.
    assert held["mode"] == "rolling" and held["degradation_started_at"] == "2025-03-03T12:00:00Z"
    assert held["onset"] == "first fired run"
    assert held["frozen_since"] == "2025-03-03T12:00:00Z" and payload["alert"]["state"] == "firing"
    assert payload["alert"]["evidence"]["silent"] is True
    login(client, key)
    html = client.get(f"/alerts/{alert_id}").text
    assert 'id="baseline"' in html and "Held against" in html
    assert "2025-03-03T12:00:00Z" in html and "(first fired run)" in html and ">silent<" in html


def test_logged_in_pages_and_the_new_key_answer_are_never_cached(client, make_key):
    # Pages hold prompts and alerts, POST /api/v1/keys the new plaintext key: a shared or
    # back-button cache must not keep them. Vendored assets stay cacheable.
    admin = make_key("admin")
    login(client, admin)
    for path in ("/", "/alerts", "/traces", "/login"):
        r = client.get(path)
        assert r.status_code == 200, path
        assert r.headers["cache-control"] == "no-store", path
    r = client.post("/api/v1/keys", json={"role": "read"}, headers=auth(admin))
    assert r.status_code == 201 and r.headers["cache-control"] == "no-store"
    assert "cache-control" not in client.get("/static/app.css").headers


def test_an_ingest_key_cannot_open_the_pages(client, make_key, engine):
    # Ingest keys sit in every agent's environment; the API refuses them reads, and the
    # pages (prompts, alerts, traces) must too.
    page = client.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = client.post(
        "/login", data={"api_key": make_key("ingest"), "csrf": token}, follow_redirects=False
    )
    assert r.status_code == 401 and "role &#39;ingest&#39;" in r.text
    assert COOKIE not in r.cookies
    assert client.get("/traces", follow_redirects=False).status_code == 303
    # A session made before the rule (or a key whose role became ingest): a 403 page.
    login(client, make_key("read"))
    with engine.begin() as conn:
        conn.execute(update(ApiKey).where(ApiKey.role == "read").values(role="ingest"))
    for path in ("/", "/alerts", "/traces"):
        r = client.get(path, headers={"accept": "text/html"}, follow_redirects=False)
        assert r.status_code == 403, path
        assert "role &#39;ingest&#39;" in r.text and "<html" in r.text.lower()


@sqlite_only
def test_an_error_page_keeps_the_navigation_for_a_logged_in_reader(client, make_key):
    html = {"accept": "text/html"}
    anonymous = client.get("/no-such-page", headers=html)
    assert anonymous.status_code == 404 and "<nav>" not in anonymous.text
    login(client, make_key("read"))
    for path in ("/no-such-page", "/traces/no-such-trace"):
        r = client.get(path, headers=html)
        assert r.status_code == 404, path
        assert '<a href="/traces">Traces</a>' in r.text and "Log out" in r.text, path
    bad = client.get("/traces?status=nope", headers=html)
    assert bad.status_code == 422 and '<a href="/traces">Traces</a>' in bad.text
