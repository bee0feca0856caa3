"""Settings · alert rules without a browser: admin only, CSRF, a preview that saves nothing,
a refused value answered 422 naming the field with what was typed kept, save, edit, pause."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import select

from app.db import write_session
from app.models import Monitor
from tests.app.rollups.traffic import ingest, settle, trace
from tests.web.test_pages import login
from tests.web.test_settings_pages import HTML, csrf, post

FORM = {"name": "shop errors", "metric": "trace_error_rate", "window_seconds": "300",
        "op": "above", "warning": "0.1", "critical": "0.4", "for_seconds": "0", "no_data": "ok",
        "interval_seconds": "300", "days": "2", "evaluation_delay_seconds": "0"}  # fmt: skip


def rules(engine) -> list[Monitor]:
    with write_session(engine) as s:
        return list(s.scalars(select(Monitor).where(Monitor.failure_mode == "RULE")))


def test_rules_page_is_for_admins(client, make_key, engine):
    login(client, make_key("read"))
    assert client.get("/settings/rules", headers=HTML).status_code == 403
    token = csrf(client.get("/").text)
    assert post(client, "/settings/rules", {**FORM, "action": "save"}, token).status_code == 403
    assert rules(engine) == []


def test_preview_then_save_then_edit(client, make_key, engine):
    from app.models.base import utcnow

    key = make_key("admin")
    start = utcnow().replace(second=0, microsecond=0) - timedelta(hours=3)
    events = []
    for m in range(120):
        failed = 60 <= m < 90
        events += trace(
            f"t{m}", at=start + timedelta(minutes=m), status="error" if failed else "ok"
        )
    ingest(client, key, events)
    settle(engine)
    login(client, key)
    page = client.get("/settings/rules", headers=HTML)
    assert page.status_code == 200 and "No rules yet" in page.text
    token = csrf(page.text)
    r = post(client, "/settings/rules", {**FORM, "action": "preview"}, token)
    assert r.status_code == 200, r.text
    summary = re.search(r"<p id=\"preview-summary\">(.*?)</p>", r.text, re.S).group(1)
    assert "Would have opened <strong>1 alert</strong>, 1 critical" in summary, summary
    assert 'class="rule-chart"' in r.text and 'class="episode critical"' in r.text
    assert 'id="preview-episodes"' in r.text and "Nothing is saved yet" in r.text
    assert rules(engine) == []
    # a refused value: 422, the field named, what was typed kept
    r = post(client, "/settings/rules", {**FORM, "warning": "0.5", "action": "save"}, token)
    assert r.status_code == 422 and "rule.condition.static.critical" in r.text
    assert 'value="0.5"' in r.text and rules(engine) == []
    r = post(client, "/settings/rules", {**FORM, "labels": "team", "action": "save"}, token)
    assert r.status_code == 422 and "labels:" in r.text
    r = post(client, "/settings/rules", {**FORM, "labels": "team=shop", "action": "save"}, token)
    assert r.status_code == 200 and "saved" in r.text
    (rule,) = rules(engine)
    assert rule.labels == {"team": "shop"} and rule.detector_params["rule"]["window_seconds"] == 300
    page = client.get(f"/settings/rules/{rule.id}", headers=HTML)
    assert "Edit rule shop errors" in page.text and 'value="0.4"' in page.text
    r = post(
        client, f"/settings/rules/{rule.id}", {**FORM, "critical": "0.6", "action": "save"}, token
    )
    assert r.status_code == 200, r.text
    (rule,) = rules(engine)
    assert rule.detector_params["rule"]["condition"]["critical"] == 0.6
    r = post(client, f"/settings/rules/{rule.id}/pause", {"enabled": "false"}, token)
    assert r.status_code == 200 and "paused" in r.text
    assert rules(engine)[0].enabled is False
    assert (
        post(client, f"/settings/rules/{rule.id}", {**FORM, "action": "save"}, "forged").status_code
        == 403
    )


def test_a_rules_alert_and_monitor_pages_say_the_groups_sentence(client, make_key, engine):
    from datetime import timedelta

    from tests.app.rollups.traffic import T0
    from tests.app.rules.test_rules_api import alerts, error_rule, run_at, traffic
    from tests.conftest import auth

    key = make_key("admin")
    ingest(client, key, traffic(T0, 20, failing_from=0))
    settle(engine)
    rule = error_rule(condition={"for_seconds": 0}, group_by=["agent"])
    rid = client.post(
        "/api/v1/rules", headers=auth(key), json={"name": "shop errors", "rule": rule}
    ).json()["id"]
    run_at(client, key, rid, T0 + timedelta(minutes=10))
    (alert,) = alerts(engine)
    login(client, key)
    said = (
        "trace error rate (agent=shop) was 50% over the last 5 min, above the critical level 30%."
    )
    for path in (f"/alerts/{alert.id}", f"/monitors/{rid}", "/alerts"):
        r = client.get(path, headers=HTML)
        assert r.status_code == 200 and said in r.text, path
    r = client.get(f"/api/v1/monitors/{rid}/readiness", headers=auth(key))
    assert r.status_code == 200 and r.json()["needs"] == []


def test_a_calibrated_rule_is_written_and_previewed_on_the_page(client, make_key, engine):
    from app.models.base import utcnow

    key = make_key("admin")
    start = utcnow().replace(second=0, microsecond=0) - timedelta(hours=30)
    events = []
    for m in range(0, 30 * 60, 2):
        failed = (m % 40 == 0) if m < 29 * 60 else (m % 4 == 0)  # 5 %, then 50 % for the last hour
        events += trace(
            f"c{m}", at=start + timedelta(minutes=m), status="error" if failed else "ok"
        )
    ingest(client, key, events)
    settle(engine)
    login(client, key)
    token = csrf(client.get("/settings/rules", headers=HTML).text)
    form = {
        **FORM,
        "condition_type": "calibrated",
        "window_seconds": "1800",
        "reference_days": "1",
        "direction": "up",
        "ert_days": "30",
        "min_change_percent": "10",
        "severity": "critical",
    }
    r = post(client, "/settings/rules", {**form, "action": "preview"}, token)
    assert r.status_code == 200, r.text
    summary = re.search(r"<p id=\"preview-summary\">(.*?)</p>", r.text, re.S).group(1)
    assert "Would have opened <strong>1 alert</strong>, 1 critical" in summary, summary
    assert 'class="baseline"' in r.text and 'class="bound"' in r.text
    r = post(client, "/settings/rules", {**form, "reference_days": "x", "action": "preview"}, token)
    assert r.status_code == 422 and "reference_days" in r.text
    r = post(client, "/settings/rules", {**form, "action": "save"}, token)
    assert r.status_code == 200, r.text
    (rule,) = rules(engine)
    cond = rule.detector_params["rule"]["condition"]
    assert cond["type"] == "calibrated" and cond["reference_seconds"] == 86400
    assert rule.severity == "critical"
    assert "it changes up (calibrated: 30 days between false alerts)" in r.text
    page = client.get(f"/settings/rules/{rule.id}", headers=HTML).text
    assert (
        'value="calibrated" checked' in page
        and 'id="rule-reference" name="reference_days" inputmode="decimal" value="1"' in page
    )
