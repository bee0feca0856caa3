"""Alert rules through the API: a static rule fires on the first evaluation that meets its
condition for its duration, one alert per group at the level that fired, no-data modes,
the preview shows the same episodes, and bad values are 422s naming the field."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.models import Alert
from tests.app.rollups.traffic import T0, ingest, settle, trace
from tests.conftest import auth


def traffic(start: datetime, minutes: int, *, agent: str = "shop", failing_from: int | None = None,
            per_minute: int = 2, prefix: str = "") -> list[dict[str, Any]]:  # fmt: skip
    """``per_minute`` traces a minute; from minute ``failing_from`` on, half of them fail."""
    events: list[dict[str, Any]] = []
    for m in range(minutes):
        for k in range(per_minute):
            failed = failing_from is not None and m >= failing_from and k % 2 == 0
            events += trace(f"{prefix}{agent}-{m}-{k}", at=start + timedelta(minutes=m, seconds=k),
                            agent=agent, status="error" if failed else "ok")  # fmt: skip
    return events


def error_rule(**over: Any) -> dict[str, Any]:
    cond = {"type": "static", "op": "above", "warning": 0.1, "critical": 0.3, "for_seconds": 600}
    rule = {"metric": "trace_error_rate", "window_seconds": 300, "evaluation_delay_seconds": 0,
            "condition": {**cond, **over.pop("condition", {})}, **over}  # fmt: skip
    return rule


def run_at(client: TestClient, key: str, rule_id: int, at: datetime) -> dict[str, Any]:
    r = client.post(f"/api/v1/rules/{rule_id}/run", json={"now": at.isoformat()}, headers=auth(key))
    assert r.status_code == 200, r.text
    return r.json()


def alerts(engine: Engine) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(select(Alert).order_by(Alert.id)).all())


def test_a_static_rule_fires_on_the_first_evaluation_held_for_its_duration(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("admin")
    ingest(client, key, traffic(T0, 60, failing_from=30))  # half fail from 10:30
    settle(engine)
    r = client.post("/api/v1/rules", headers=auth(key),
                    json={"name": "shop errors", "rule": error_rule()})  # fmt: skip
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    # 10:35 reads [10:30, 10:35): critical, pending; 10:40 still pending (5 of 10 minutes)
    for minute in (30, 35, 40):
        run = run_at(client, key, rid, T0 + timedelta(minutes=minute))
        assert not run["fired"], run
        assert alerts(engine) == []
    assert run["evidence"]["groups"][0]["pending"] is True
    # 10:45: held at every evaluation for 10 minutes: fires, critical
    run = run_at(client, key, rid, T0 + timedelta(minutes=45))
    assert run["fired"] and run["statistic"] == pytest.approx(0.5)
    (alert,) = alerts(engine)
    assert (alert.state, alert.severity, alert.failure_mode) == ("firing", "critical", "RULE")
    assert (
        "trace error rate was 50% over the last 5 min, above the critical level 30%"
        in alert.summary
    )
    # the preview of the same rule shows the same first firing
    p = client.post("/api/v1/rules/preview", headers=auth(key), json={
        "rule": error_rule(), "days": 1, "now": (T0 + timedelta(minutes=60)).isoformat()})  # fmt: skip
    assert p.status_code == 200, p.text
    (episode,) = p.json()["episodes"]
    assert episode["opened_at"] == (T0 + timedelta(minutes=45)).isoformat()
    assert episode["severity"] == "critical" and episode["resolved_at"] is None


def test_a_grouped_rule_opens_one_alert_per_group_with_its_level(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    key = make_key("admin")
    ingest(client, key, traffic(T0, 20, agent="shop", failing_from=0)
           + traffic(T0, 20, agent="bank", per_minute=4, failing_from=None))  # fmt: skip
    settle(engine)
    rule = error_rule(group_by=["agent"], condition={"for_seconds": 0, "critical": 0.6})
    rid = client.post("/api/v1/rules", headers=auth(key),
                      json={"name": "per agent", "rule": rule, "labels": {"team": "ops"}}).json()["id"]  # fmt: skip
    run = run_at(client, key, rid, T0 + timedelta(minutes=10))
    assert run["fired"]
    (alert,) = alerts(engine)
    assert alert.labels == {"team": "ops", "agent": "shop"}
    assert alert.severity == "warning"  # 50%: above the warning level, not the critical
    # a silence on the group's label matches its alert like any alert's
    assert "(agent=shop)" in alert.summary
    # the traffic is clean after 10:20: three clean evaluations resolve the group's alert
    for minute in (25, 30, 35):
        run_at(client, key, rid, T0 + timedelta(minutes=minute))
    (alert,) = alerts(engine)
    assert alert.state == "resolved"


@pytest.mark.parametrize(("mode", "fires"), [("ok", False), ("alerting", True), ("keep", True)])
def test_no_data_modes(
    client: TestClient, make_key: Any, engine: Engine, mode: str, fires: bool
) -> None:
    key = make_key("admin")
    ingest(client, key, traffic(T0, 10, failing_from=0))  # failing, then silent from 10:10
    settle(engine)
    rule = error_rule(condition={"for_seconds": 0, "no_data": mode})
    rid = client.post("/api/v1/rules", headers=auth(key), json={"name": "r", "rule": rule}).json()[
        "id"
    ]
    run_at(client, key, rid, T0 + timedelta(minutes=10))  # fires on the failing traffic
    run = run_at(client, key, rid, T0 + timedelta(minutes=20))  # no traffic in the window
    group = run["evidence"]["groups"][0]
    assert group["no_data"] and bool(group["fired"]) is fires
    for minute in (25, 30):
        run_at(client, key, rid, T0 + timedelta(minutes=minute))
    (alert,) = alerts(engine)
    assert (alert.state == "firing") is fires


def test_rules_crud_and_refusals_name_the_field(client: TestClient, make_key: Any) -> None:
    key, reader = make_key("admin"), make_key("read")
    bad = [
        ({"metric": "latency_p95", "condition": {"type": "static", "op": "above"}},
         "rule.condition.static.warning"),
        ({"metric": "score_mean", "condition": {"type": "static", "op": "below", "warning": 1}},
         "rule.filter.score_name"),
        ({"metric": "loop_rate", "group_by": ["model"],
          "condition": {"type": "static", "op": "above", "warning": 1}}, "rule.group_by.0"),
        ({"metric": "cost", "window_seconds": 299,
          "condition": {"type": "static", "op": "above", "warning": 1}}, "rule.window_seconds"),
        ({"metric": "nope", "condition": {"type": "static", "op": "above", "warning": 1}},
         "rule.metric"),
        ({"metric": "cost", "condition": {"type": "static", "op": "above", "warning": 2,
                                          "critical": 1}}, "rule.condition.static.critical"),
    ]  # fmt: skip
    for rule, field in bad:
        for path in ("/api/v1/rules", "/api/v1/rules/preview"):
            r = client.post(path, headers=auth(key), json={"name": "x", "rule": rule}
                            if path.endswith("rules") else {"rule": rule})  # fmt: skip
            assert r.status_code == 422, (rule, r.text)
            fields = {e["field"].removeprefix("body.") for e in r.json()["errors"]}
            assert field in fields, (field, fields)
    r = client.post("/api/v1/rules/preview", headers=auth(key),
                    json={"rule": error_rule(), "days": 31})  # fmt: skip
    assert r.status_code == 422 and "days" in r.text
    good = {"name": "cost", "rule": {"metric": "cost_per_hour", "filter": {"model": "gpt-x"},
            "condition": {"type": "static", "op": "above", "critical": 5}}}  # fmt: skip
    assert client.post("/api/v1/rules", headers=auth(reader), json=good).status_code == 403
    made = client.post("/api/v1/rules", headers=auth(key), json=good)
    assert made.status_code == 201, made.text
    assert client.post("/api/v1/rules", headers=auth(key), json=good).status_code == 422
    rid = made.json()["id"]
    patched = client.patch(f"/api/v1/rules/{rid}", headers=auth(key),
                           json={"rule": {**good["rule"], "window_seconds": 3600}})  # fmt: skip
    assert patched.status_code == 200 and patched.json()["rule"]["window_seconds"] == 3600
    listed = client.get("/api/v1/rules", headers=auth(reader)).json()["rules"]
    assert [x["name"] for x in listed] == ["cost"]
    assert client.get("/api/v1/rules/999", headers=auth(reader)).status_code == 404
    assert client.delete(f"/api/v1/rules/{rid}", headers=auth(key)).status_code == 204


def test_a_calibrated_rule_previews_and_fires_against_its_own_history(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    """A day of 5 % errors, then 40 %: the calibrated rule (no levels to write) fires."""
    import numpy as np

    key = make_key("admin")
    rng = np.random.default_rng(4)
    start = T0 - timedelta(days=1)
    events: list[dict[str, Any]] = []
    for m in range(0, 24 * 60 + 30, 2):  # a trace every 2 minutes, 40 % failing from +24 h
        at = start + timedelta(minutes=m)
        failed = rng.random() < (0.4 if m >= 24 * 60 else 0.05)
        events += trace(f"c{m}", at=at, status="error" if failed else "ok")
    ingest(client, key, events)
    settle(engine)
    rule = {"metric": "trace_error_rate", "window_seconds": 1800, "evaluation_delay_seconds": 0,
            "condition": {"type": "calibrated", "reference_seconds": 86400,
                          "expected_days_between_false_alerts": 30}}  # fmt: skip
    p = client.post("/api/v1/rules/preview", headers=auth(key), json={
        "rule": rule, "days": 1, "now": (T0 + timedelta(minutes=30)).isoformat()})  # fmt: skip
    assert p.status_code == 200, p.text
    body = p.json()
    assert body["condition"] == "calibrated" and body["warning"] is None
    (episode,) = body["episodes"]
    assert T0.isoformat() <= episode["opened_at"] <= (T0 + timedelta(minutes=30)).isoformat()
    assert any(pt["baseline"] is not None for pt in body["groups"][0]["points"])
    rid = client.post(
        "/api/v1/rules", headers=auth(key), json={"name": "calibrated", "rule": rule}
    ).json()["id"]
    run = run_at(client, key, rid, T0 + timedelta(minutes=30))
    assert run["fired"] and run["p_value"] < 1e-4, run
    (alert,) = alerts(engine)
    assert alert.severity == "warning" and "up from" in alert.summary, alert.summary
    assert "calibrated for 30 days between false alerts" in alert.summary
