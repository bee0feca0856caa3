"""The issues pages (app/web/issue_pages.py) as a reader and an annotator read them: the
list, one issue with its chart, versions, examples and history, the state form, and the
issue named on the trace page."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from tests.app.derive.test_derive_job import derive
from tests.app.issues.test_api import traffic
from tests.app.issues.traffic import send
from tests.web.test_pages import login


def _issue_id(html: str) -> str:
    found = re.search(r'href="/issues/(\d+)">Error: reservation &lt;ID&gt; not found', html)
    assert found, html
    return found.group(1)


def test_a_reader_reads_the_list_the_issue_and_the_trace(client: TestClient, make_key: Any,
                                                         engine: Engine) -> None:  # fmt: skip
    send(client, make_key("ingest"), traffic())
    derive(engine)
    login(client, make_key("read"))
    listed = client.get("/issues").text
    assert '<a href="/issues">Issues</a>' in listed
    assert (
        '3 events in 3 traces <span class="small muted trend">(up from 0 the day before)' in listed
    )
    assert "Timeout after &lt;NUM&gt; s" in listed and "(down from 1 the day before)" in listed
    issue_id = _issue_id(listed)
    page = client.get(f"/issues/{issue_id}").text
    assert "ToolError in tool <strong>get_reservation</strong> of agent" in page
    assert "75% of the agent's traces in the last 24 hours" in page
    assert "2 users and 2 sessions hit, most: " in page and ">mia</a> (2)" in page
    assert page.count('class="bar"') == 3 and page.count('class="version"') == 2
    assert '<a href="/traces/c"><code>c</code></a>' in page
    assert "No state changes yet" in page and 'id="issue-actions"' not in page
    trace = client.get("/traces/c").text
    assert f'<a href="/issues/{issue_id}">Error: reservation &lt;ID&gt; not found</a>' in trace
    assert client.get("/issues?version=v2").text.count('class="issue-row"') == 1
    bad = client.get("/issues?state=sleeping")
    assert bad.status_code == 422 and "state: must be one of" in bad.text


def test_an_annotator_resolves_from_the_page(client: TestClient, make_key: Any,
                                             engine: Engine) -> None:  # fmt: skip
    send(client, make_key("ingest"), traffic()[:1])
    derive(engine)
    login(client, make_key("annotate"))
    issue_id = _issue_id(client.get("/issues").text)
    page = client.get(f"/issues/{issue_id}").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    r = client.post(f"/issues/{issue_id}/state", data={"csrf": csrf, "state": "resolved",
                                                       "note": "fixed in v3"})  # fmt: skip
    assert r.status_code == 200  # after the redirect
    assert '<span class="badge state-resolved" id="issue-state">resolved</span>' in r.text
    assert "Note (resolved): fixed in v3" in r.text
    assert re.search(r"<td[^>]*>new</td><td[^>]*>resolved</td><td[^>]*>key:\d+</td>", r.text)
    refused = client.post(f"/issues/{issue_id}/state", data={"csrf": csrf, "state": "new"})
    assert refused.status_code == 422 and "state: must be one of" in refused.text


def test_label_examples_from_the_page(client: TestClient, make_key: Any, engine: Engine) -> None:
    from tests.app.labeling.test_queues import queue_body
    from tests.conftest import auth

    send(client, make_key("ingest"), traffic())
    derive(engine)
    client.post("/api/v1/queues", json=queue_body("triage"), headers=auth(make_key("admin")))
    login(client, make_key("annotate"))
    issue_id = _issue_id(client.get("/issues").text)
    page = client.get(f"/issues/{issue_id}").text
    assert '<option value="triage">triage</option>' in page
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    r = client.post(f"/issues/{issue_id}/label-examples", data={"csrf": csrf, "queue": "triage"})
    assert "Queued 3 new traces in triage." in r.text
    again = client.post(
        f"/issues/{issue_id}/label-examples", data={"csrf": csrf, "queue": "triage"}
    )
    assert "Queued 0 new traces in triage." in again.text
