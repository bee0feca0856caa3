"""The alert page without a browser: the sentence, the chart around the alert, example
traces as links (current beside reference), evidence tables, raw JSON behind a toggle,
routine repeats folded, and who may see it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import write_session
from app.keys import create_key
from app.models import Alert, AlertEvent, DetectorRun, Project, Silence
from tests.app.alerts.test_sentences import EVIDENCE
from tests.app.engine_helpers import add_monitor, ingest
from tests.web.test_pages import login

T0 = datetime(2026, 12, 3, 12, tzinfo=UTC)


def _alert(engine: Any, *, named: bool = True, extra: dict[str, Any] | None = None) -> int:
    with write_session(engine) as session:
        project_id = session.scalar(select(Project.id).where(Project.name == "p1"))
    mid = add_monitor(engine, project_id, "FM-2", name="FM-2 tool failure cascades")
    evidence = {
        **EVIDENCE["FM-2"],
        **(extra or {}),
        "example_trace_ids": ["cur-1", "cur-2", "gone-3"] if named else [],
        "baseline": {
            "mode": "frozen", "reference_start": "2026-12-03T12:00:00Z",
            "reference_end": "2026-12-03T16:00:00Z", "frozen_since": "2026-12-03T22:00:00Z",
            "degradation_started_at": "2026-12-03T20:30:00Z",
        },
    }  # fmt: skip
    ingest(engine, project_id, [
        {"id": f"e-{tid}", "type": "trace", "body": {"trace_id": tid, "agent": "support-agent",
         "agent_version": "1.5.0", "status": status, "started_at": at.isoformat()}}
        for tid, status, at in [("cur-1", "error", T0 + timedelta(hours=10)),
                                ("cur-2", "error", T0 + timedelta(hours=10, minutes=5)),
                                ("ref-1", "ok", T0 + timedelta(hours=1))]
    ])  # fmt: skip
    with write_session(engine) as session:
        runs = []
        for h in range(12):
            at = T0 + timedelta(hours=h)
            fired = h >= 10
            run = DetectorRun(
                project_id=project_id, monitor_id=mid, failure_mode="FM-2", at=at,
                window_start=at - timedelta(hours=1), window_end=at, status="ok",
                statistic=10.0 if fired else 2.0, threshold=3.7, p_value=1e-6 if fired else 0.4,
                fired=fired, evidence=evidence if fired else {}, n_current=272, n_reference=583,
            )  # fmt: skip
            session.add(run)
            runs.append(run)
        session.flush()
        alert = Alert(
            project_id=project_id, monitor_id=mid, fingerprint="a" * 64, failure_mode="FM-2",
            severity="critical", labels={}, state="firing", summary="statistic 10 over 3.7",
            evidence=evidence, count=2, first_fired_at=T0 + timedelta(hours=10),
            last_fired_at=T0 + timedelta(hours=11),
        )  # fmt: skip
        session.add(alert)
        session.flush()

        def event(kind: str, minutes: int, run: DetectorRun | None = None) -> AlertEvent:
            return AlertEvent(
                project_id=project_id, alert_id=alert.id, kind=kind, actor="system",
                from_state=None if kind == "fired" else "firing", to_state="firing",
                at=T0 + timedelta(hours=10, minutes=minutes),
                detail={"run_id": run.id} if run is not None else {},
            )  # fmt: skip

        session.add(event("fired", 0, runs[10]))
        session.add(event("notified", 0))
        for i in range(1, 35):
            session.add(event("repeat", i, runs[11]))
            if i % 4 == 0:
                session.add(event("notified", i))
        return alert.id


def test_the_alert_page_explains_itself(client, make_key, engine):
    key = make_key("read")
    alert_id = _alert(engine)
    login(client, key)
    html = client.get(f"/alerts/{alert_id}").text
    sentence = re.search(r'<p class="sentence" id="sentence">([^<]*)</p>', html).group(1)
    # Worded from the run that last fired it, as notifications word it now.
    assert sentence.startswith("Tool http_fetch returns wrong results with a success status")
    assert sentence.endswith("Since 2026-12-03 20:30 UTC, on 272 traces.")
    assert "firing for" in html and "critical" in html
    # The chart: 12 runs, 2 fired, the threshold, the onset and the reference window.
    assert html.count('class="point') == 12 and html.count('class="point fired"') == 2
    for part in ('class="threshold"', 'class="onset"', 'class="reference"', 'class="open"'):
        assert part in html, part
    assert "Cascade lift per run, around the alert" in html
    # Examples: stored ones are links, a missing one says so; reference beside them.
    assert '<a href="/traces/cur-1"><code>cur-1</code></a>' in html
    assert "<code>gone-3</code> <span" in html and "(not stored)" in html
    assert '<a href="/traces/ref-1"><code>ref-1</code></a>' in html
    # Evidence tables, raw JSON behind a toggle.
    assert "<h3>Available but wrong</h3>" in html and "<td>http_fetch</td>" in html
    assert re.search(r"<details class=\"raw\">\s*<summary>Raw evidence \(JSON\)</summary>", html)
    # The first notification, 34 repeats and their 8 reminders fold into one row.
    assert "notified ×9 · repeat ×34" in html
    assert html.count('<tr class="event') == 2


def test_evidence_reads_in_words_and_unnamed_examples_come_from_the_failing_window(
    client, make_key, engine
):
    key = make_key("read")
    alert_id = _alert(engine, named=False, extra={
        "still_degraded": True, "reference_used": False, "counted_traces": "records",
        "mu0": 0.25, "change_started_at": "2026-12-03T20:30:00+00:00"})  # fmt: skip
    login(client, key)
    html = client.get(f"/alerts/{alert_id}").text
    rows = dict(re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", html))
    assert rows["still worse than the baseline"] == "yes"
    assert rows["compared with the reference"] == "no"
    assert rows["traces counted"] == "the loaded sample"
    assert rows["reference mean"] == "0.25"
    assert rows["change began"] == "2026-12-03 20:30 UTC"
    for code in ("still degraded", "mu0", "counted traces", "True", "False"):
        assert f"<th>{code}</th>" not in html and f"<td>{code}</td>" not in html, code
    # No example named: the latest traces of the window where the monitor last fired.
    assert "The detector named no example; these are the latest traces" in html
    assert '<a href="/traces/cur-2"><code>cur-2</code></a>' in html
    assert "gone-3" not in html


def test_the_alert_page_is_for_readers_only_and_bad_ids_get_4xx(client, make_key, engine):
    key = make_key("annotate")
    alert_id = _alert(engine)
    login(client, key)
    assert client.get(f"/alerts/{alert_id}").status_code == 200
    for bad in ("999999", "abc", "-1"):
        r = client.get(f"/alerts/{bad}", headers={"accept": "text/html"})
        assert 400 <= r.status_code < 500, (bad, r.status_code)
    client.cookies.clear()
    login(client, make_key("admin", project="other"))
    assert client.get(f"/alerts/{alert_id}").status_code == 404  # another project's alert
    client.cookies.clear()
    r = client.get(f"/alerts/{alert_id}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_ack_and_resolve_work_as_forms_for_annotators(client, make_key, engine):
    annotator, reader = make_key("annotate"), make_key("read")
    alert_id = _alert(engine)
    login(client, reader)
    page = client.get(f"/alerts/{alert_id}").text
    assert "Acknowledge" not in page  # a reader sees no actions
    token = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)
    for action in ("ack", "silence"):
        r = client.post(
            f"/alerts/{alert_id}/{action}", data={"csrf": token}, follow_redirects=False
        )
        assert r.status_code == 403 and "annotate role" in r.text, action
    client.cookies.clear()
    login(client, annotator)
    page = client.get(f"/alerts/{alert_id}").text
    token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    assert client.post(f"/alerts/{alert_id}/ack", data={"csrf": "x"}).status_code == 403
    r = client.post(f"/alerts/{alert_id}/ack", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/alerts/{alert_id}"
    page = client.get(f"/alerts/{alert_id}").text
    assert 'data-state="acknowledged"' in page and "acknowledged just now by key tt_" in page
    r = client.post(
        f"/alerts/{alert_id}/ack", data={"csrf": token}, headers={"accept": "text/html"}
    )
    assert r.status_code == 409 and "only firing alerts can be acknowledged" in r.text
    r = client.post(f"/alerts/{alert_id}/silence", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/alerts/{alert_id}"
    with Session(engine) as s:
        (silence,) = s.scalars(select(Silence)).all()
        assert {m["name"]: m["value"] for m in silence.matchers}["failure_mode"] == "FM-2"
        assert (silence.ends_at - silence.starts_at).total_seconds() == 4 * 3600
    r = client.post(f"/alerts/{alert_id}/resolve", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303
    assert 'data-state="resolved"' in client.get(f"/alerts/{alert_id}").text
    assert client.post(f"/alerts/{alert_id}/delete", data={"csrf": token}).status_code == 404
    assert client.post("/alerts/999999/resolve", data={"csrf": token}).status_code == 404


def test_an_acknowledged_alert_says_when_and_by_which_key(client, engine):
    with Session(engine) as s:
        key = create_key(s, project_name="p1", role="annotate", name="pager")
        s.commit()
    alert_id = _alert(engine)
    login(client, key)
    page = client.get(f"/alerts/{alert_id}").text
    token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    assert client.post(f"/alerts/{alert_id}/ack", data={"csrf": token}).status_code == 200
    page = client.get(f"/alerts/{alert_id}").text
    cell = re.search(r'<td id="open-for" class="open-for">([^<]*)</td>', page).group(1)
    # Open since its first firing; acknowledged a moment ago, by the key's name.
    assert cell.startswith("open 1h 00m") and cell.endswith(" · acknowledged just now by pager")
    assert "acknowledged for" not in page
    assert '<td class="meta" data-label="Who">pager</td>' in page  # the history names it too
    listed = client.get("/alerts").text
    line = re.search(r'<span class="small open-for acked">([^<]*)</span>', listed).group(1)
    assert line == cell
