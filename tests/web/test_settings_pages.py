"""Settings pages without a browser: admin only, CSRF on every form, the API's service
functions behind them, refused values answered 422 naming the field (never a 500)."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app.db import write_session
from app.models import ApiKey, Monitor, Project, ScoreRoleConfig, Silence
from tests.conftest import auth
from tests.web.test_pages import login

HTML = {"accept": "text/html"}
TABS = ("keys", "monitors", "silences", "scores", "derived", "retention")


def csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def post(client, path: str, data: dict, token: str):
    return client.post(path, data={"csrf": token, **data}, headers=HTML, follow_redirects=False)


@pytest.mark.parametrize("role", ["read", "annotate"])
def test_settings_are_for_admins_only(client, make_key, engine, role):
    login(client, make_key(role))
    token = csrf(client.get("/").text)
    assert "/settings/keys" not in client.get("/").text  # no nav link
    for tab in TABS:
        r = client.get(f"/settings/{tab}", headers=HTML)
        assert r.status_code == 403 and "admin role" in r.text, (tab, r.status_code)
    forms = [("/settings/keys", {"role": "admin"}), ("/settings/retention", {"retention_days": "3"}),
             ("/settings/silences", {"failure_mode": "FM-2", "hours": "1"}),
             ("/settings/scores", {"name": "x", "role": "true"}), ("/settings/monitors/defaults", {}),
             ("/settings/derived", {"rules": "{}"})]  # fmt: skip
    for path, data in forms:
        r = post(client, path, data, token)
        assert r.status_code == 403, (path, r.status_code)
    with write_session(engine) as session:
        assert session.scalar(select(ApiKey).where(ApiKey.role == "admin")) is None
        assert session.scalar(select(Silence)) is None and session.scalar(select(Monitor)) is None


def test_every_form_needs_the_logins_csrf_token(client, make_key, engine):
    login(client, make_key("admin"))
    for path, data in [
        ("/settings/keys", {"role": "read"}),
        ("/settings/retention", {"retention_days": "3"}),
    ]:
        for token in ("", "forged"):
            r = post(client, path, data, token)
            assert r.status_code == 403 and "csrf" in r.text
    with write_session(engine) as session:
        assert len(session.scalars(select(ApiKey)).all()) == 1


def test_keys_are_created_shown_once_and_revoked(client, make_key, engine):
    login(client, make_key("admin"))
    page = client.get("/settings/keys").text
    assert 'id="keys"' in page and "yours" in page
    r = post(client, "/settings/keys", {"role": "ingest", "name": "support prod"}, csrf(page))
    assert r.status_code == 200 and "shown only this once" in r.text
    new_key = re.search(r'<code id="new-key-value">([^<]+)</code>', r.text).group(1)
    assert client.get("/api/v1/traces", headers=auth(new_key)).status_code == 403  # ingest only
    assert new_key not in client.get("/settings/keys").text  # only once
    bad = post(client, "/settings/keys", {"role": "owner", "name": "x"}, csrf(page))
    assert bad.status_code == 422 and "role: Input should be" in bad.text
    assert 'value="x"' in bad.text  # what was typed stays
    with write_session(engine) as session:
        made = session.scalar(select(ApiKey).where(ApiKey.name == "support prod"))
        mine = session.scalar(select(ApiKey).where(ApiKey.role == "admin"))
    r = post(client, f"/settings/keys/{made.id}/revoke", {}, csrf(page))
    assert r.status_code == 200 and f"Revoked key {made.id}." in r.text
    assert (
        client.post("/api/v1/ingest", json={"events": []}, headers=auth(new_key)).status_code == 401
    )
    r = post(client, f"/settings/keys/{mine.id}/revoke", {}, csrf(page))
    assert r.status_code == 422 and "you are logged in with" in r.text
    assert post(client, "/settings/keys/999999/revoke", {}, csrf(page)).status_code == 404


def test_monitors_defaults_pause_run_and_edit(client, make_key, engine):
    login(client, make_key("admin"))
    token = csrf(client.get("/settings/monitors").text)
    r = post(client, "/settings/monitors/defaults", {}, token)
    assert "The 10 default monitors are in place." in r.text
    with write_session(engine) as session:
        fm2 = session.scalar(select(Monitor).where(Monitor.failure_mode == "FM-2"))
    r = post(client, f"/settings/monitors/{fm2.id}/pause", {"enabled": "false"}, token)
    assert f"Monitor {fm2.id} paused." in r.text and "Resume" in r.text
    r = post(client, f"/settings/monitors/{fm2.id}/run", {}, token)
    assert r.status_code == 200 and f"Ran monitor {fm2.id}: insufficient data" in r.text
    edit = f"/settings/monitors/{fm2.id}/edit"
    good = {"severity": "critical", "interval_seconds": "600",
            "expected_days_between_false_alerts": "60", "for_seconds": "0",
            "detector_params": '{"min_tool_calls": 40}'}  # fmt: skip
    r = post(client, edit, good, token)
    assert r.status_code == 200, r.text
    with write_session(engine) as session:
        saved = session.get(Monitor, fm2.id)
        assert (saved.severity, saved.interval_seconds, saved.enabled) == ("critical", 600, False)
        assert saved.expected_days_between_false_alerts == 60
    for field, value, said in [
        ("interval_seconds", "0", "interval_seconds: a monitor runs at most once a minute (60 s); got 0"),
        ("expected_days_between_false_alerts", "soon", "expected_days_between_false_alerts: Input should be a valid number"),
        ("detector_params", "{nope", "detector_params: not valid JSON"),
        ("detector_params", "[" * 100_000, "detector_params: JSON nests arrays/objects more than 32 deep"),
        ("detector_params", f'{{"a": "{"x" * 100_000}"}}', "detector_params: 100009 characters, over the limit of 100000"),
        ("detector_params", '{"no_such_parameter": 1}', "no_such_parameter"),
        ("severity", "loud", "severity: Input should be"),
    ]:  # fmt: skip
        r = post(client, edit, {**good, field: value}, token)
        assert r.status_code == 422 and said in r.text, (field, r.status_code, r.text[-3000:])
        assert f'id="monitor-{fm2.id}"' in r.text and "<details open>" in r.text
    assert post(client, "/settings/monitors/999999/run", {}, token).status_code == 404
    assert post(client, "/settings/monitors/abc/run", {}, token).status_code == 422


def test_silences_roles_and_retention(client, make_key, engine):
    login(client, make_key("admin"))
    token = csrf(client.get("/settings/silences").text)
    r = post(
        client,
        "/settings/silences",
        {"failure_mode": "FM-2", "hours": "2", "comment": "deploy"},
        token,
    )
    assert "Silence created." in r.text and "<code>failure_mode=FM-2</code>" in r.text
    r = post(client, "/settings/silences", {"failure_mode": "", "hours": "2"}, token)
    assert r.status_code == 422 and "matchers:" in r.text
    for hours in ("two", "inf", "nan", "8785"):  # 8785 h: over 366 days
        r = post(client, "/settings/silences", {"failure_mode": "FM-2", "hours": hours}, token)
        assert r.status_code == 422 and "duration_seconds:" in r.text, hours
    with write_session(engine) as session:
        silence = session.scalar(select(Silence))
    r = post(client, f"/settings/silences/{silence.id}/expire", {}, token)
    assert "expired" in r.text and "No active silence." in r.text

    r = client.post("/settings/scores", headers=HTML, data={
        "csrf": token, "name": ["resolved", "csat", ""], "role": ["true", "proxy", ""],
        "label_source": ["delayed", "human"]})  # fmt: skip
    assert r.status_code == 200 and "Score roles saved" in r.text
    with write_session(engine) as session:
        project_id = session.scalar(select(Project.id))
        roles = session.get(ScoreRoleConfig, project_id)
        assert roles.roles == {"resolved": "true", "csat": "proxy"}
    r = client.post("/settings/scores", headers=HTML,
                    data={"csrf": token, "name": ["x"], "role": ["truthy"]})  # fmt: skip
    assert r.status_code == 422 and "roles.x" in r.text

    r = post(client, "/settings/retention", {"retention_days": "14"}, token)
    assert "Retention saved." in r.text and '<strong id="retention-now">14 days</strong>' in r.text
    for bad in ("0", "ten", "100000"):
        r = post(client, "/settings/retention", {"retention_days": bad}, token)
        assert r.status_code == 422 and "retention_days:" in r.text, bad
    r = post(client, "/settings/retention", {"retention_days": ""}, token)
    assert "the server's default" in r.text


def test_derived_field_rules_are_edited_as_json(client, make_key, engine):
    admin = make_key("admin")
    login(client, admin)
    page = client.get("/settings/derived", headers=HTML).text
    assert "every default" in page and "tools_and_finish" in page
    assert "PUT /api/v1/project/derived-fields" in page and "project/signals" not in page
    token = csrf(page)
    r = post(client, "/settings/derived", {"rules": "{not json"}, token)
    assert r.status_code == 422 and "rules: not valid JSON" in r.text
    assert "{not json" in r.text  # what was typed stays
    r = post(client, "/settings/derived", {"rules": '{"a": ' * 14_000}, token)
    assert r.status_code == 422 and "rules: JSON nests arrays/objects more than 32 deep" in r.text
    bad = '{"decision": {"default": "sometimes"}}'
    r = post(client, "/settings/derived", {"rules": bad}, token)
    assert r.status_code == 422 and "decision.default" in r.text, r.text[:500]
    rules = '{"decision": {"agents": {"support": {"json_path": "$.action"}}}}'
    r = post(client, "/settings/derived", {"rules": rules}, token)
    assert r.status_code == 200 and "rules saved" in r.text and "customised" in r.text
    rules_api = "/api/v1/project/derived-fields"
    api = client.get(rules_api, headers=auth(admin)).json()
    assert api["customised"] and api["config"]["decision"]["agents"]["support"]["json_path"]
    r = post(client, "/settings/derived", {"rules": rules, "reset": "1"}, token)
    assert r.status_code == 200 and "follow every default" in r.text
    assert not client.get(rules_api, headers=auth(admin)).json()["customised"]
