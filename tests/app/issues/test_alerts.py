"""ISSUES monitors (detectors/issue_rates.py through the monitor pipeline): a tool that
starts failing with a new message opens an alert of its own that names the tool and the
message, through the usual lifecycle; a steady old failure does not; on both databases."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from tests.app.derive.test_derive_job import derive
from tests.app.issues.traffic import failing_trace, send
from tests.conftest import auth
from tests.web.test_pages import login

NOW = datetime(2026, 12, 1, 12, 0).astimezone()
TIMEOUT = ("lookup", "error", "Timeout after 30 s")
SEATS = ("seat_map", "error", "Error: seat map unavailable for flight HAT030")


def _traffic() -> list[list[dict[str, Any]]]:
    """160 traces over the 10 hours before NOW, one in ten timing out (steady); in the last
    hour, 8 of its 16 traces also fail in seat_map with a message never seen before."""
    out = []
    for i in range(160):
        at = NOW - timedelta(minutes=3.75 * (160 - i)) + timedelta(minutes=1)
        calls = [TIMEOUT if i % 10 == 0 else ("lookup", "ok", "")]
        if at > NOW - timedelta(hours=1) and i % 2 == 0:
            calls.append(SEATS)
        out.append(failing_trace(f"t{i}", calls, at=at.isoformat()))
    return out


def test_a_new_failure_alerts_by_its_tool_and_message(client: TestClient, make_key: Any,
                                                      engine: Engine) -> None:  # fmt: skip
    send(client, make_key("ingest"), _traffic())
    derive(engine)
    admin = make_key("admin")
    # The project's first issue brought its ISSUES monitor, once.
    monitors = client.get("/api/v1/monitors", headers=auth(admin)).json()["monitors"]
    (made,) = [m for m in monitors if m["failure_mode"] == "ISSUES"]
    assert made["name"] == "Failure issues: new or rising"
    derive(engine)  # nothing new to derive, no second monitor
    monitors = client.get("/api/v1/monitors", headers=auth(admin)).json()["monitors"]
    assert [m["id"] for m in monitors if m["failure_mode"] == "ISSUES"] == [made["id"]]
    run = client.post(f"/api/v1/monitors/{made['id']}/run", headers=auth(admin),
                      json={"now": NOW.isoformat()}).json()  # fmt: skip
    assert run["status"] == "ok" and run["fired"], json.dumps(run, indent=1)[:3000]
    alerts = client.get("/api/v1/alerts", headers=auth(admin)).json()["alerts"]
    assert len(alerts) == 1, alerts  # the new one; the steady timeout stays quiet
    (alert,) = alerts
    issues = client.get("/api/v1/issues", headers=auth(admin)).json()["issues"]
    seats = next(i for i in issues if i["tool"] == "seat_map")
    assert alert["labels"] == {"issue": str(seats["id"])} and alert["state"] == "firing"
    assert alert["failure_mode"] == "ISSUES"
    assert alert["summary"].startswith(
        'New failure in tool seat_map of support: "Error: seat map unavailable for flight <ID>"'
        " in 8 of 16 traces (0 of "
    ), alert["summary"]

    # The issue lists its alert; the alert page names the issue; the issue page links back.
    one = client.get(f"/api/v1/issues/{seats['id']}", headers=auth(admin)).json()
    assert [(a["id"], a["state"]) for a in one["alerts"]] == [(alert["id"], "firing")]
    login(client, admin)
    page = client.get(f"/alerts/{alert['id']}").text
    assert (f'Failure issue: <a href="/issues/{seats["id"]}">Error: seat map unavailable for '
            "flight &lt;ID&gt;</a> (seat_map)") in page  # fmt: skip
    assert f'<a href="/alerts/{alert["id"]}">alert {alert["id"]}</a>' in client.get(
        f"/issues/{seats['id']}").text  # fmt: skip
