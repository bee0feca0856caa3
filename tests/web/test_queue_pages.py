"""Settings · Queues without a browser: an admin creates a queue with its guidelines, label
set, selector and budget, sees a bad value refused 422 beside the input it names in the
API's words with what was typed kept, edits it, and deletes it; the API reads back what the
form saved; read and annotate keys get 403. The labeling index then counts its items."""

from __future__ import annotations

import re
from html import unescape

import pytest

from tests.conftest import auth, sqlite_only
from tests.web.test_evaluator_pages import text
from tests.web.test_pages import login
from tests.web.test_settings_pages import HTML, csrf, post

FORM = {
    "name": "answers", "description": "Resolved: the answer does what was asked.",
    "agents": "support-agent, billing-agent", "streams": "", "sources": "production",
    "label_name": "success", "label_type": "categorical",
    "values": "resolved, not resolved, can't tell", "correct_values": "resolved",
    "budget_per_period": "25", "fill_interval_seconds": "600", "lease_seconds": "300",
    "reference_size": "2000",
}  # fmt: skip


def _error_beside(page: str, name: str) -> str:
    found = re.search(rf'<span class="field-error" id="q-err-{name}">([^<]*)</span>', page)
    assert found, f"no error beside {name}:\n{text(page)[:2000]}"
    return unescape(found.group(1))


@sqlite_only
def test_admin_creates_edits_and_deletes_a_queue_through_the_api_models(client, make_key):
    admin = make_key("admin")
    login(client, admin)
    page = client.get("/settings/queues").text
    assert "No queues yet" in text(page)
    token = csrf(page)

    r = post(client, "/settings/queues", {**FORM, "budget_per_period": "0"}, token)
    assert r.status_code == 422
    assert "greater than or equal to 1" in _error_beside(r.text, "budget_per_period")
    assert 'value="support-agent, billing-agent"' in r.text  # what was typed is kept
    r = post(client, "/settings/queues", {**FORM, "agents": ""}, token)
    assert r.status_code == 422
    assert "select at least one stream or one agent" in _error_beside(r.text, "streams")
    r = post(client, "/settings/queues", {**FORM, "correct_values": "yes"}, token)
    assert r.status_code == 422 and "not among values" in _error_beside(r.text, "values")
    r = post(client, "/settings/queues", {**FORM, "name": "a b"}, token)
    assert r.status_code == 422 and "pattern" in _error_beside(r.text, "name")

    r = post(client, "/settings/queues", FORM, token)
    assert r.status_code == 200, text(r.text)
    assert "Queue 'answers' saved" in text(r.text)
    got = client.get("/api/v1/queues/answers", headers=auth(admin)).json()
    assert got["selection"] == {"streams": [], "agents": ["support-agent", "billing-agent"],
                                "sources": ["production"]}  # fmt: skip
    assert got["label_schema"]["values"] == ["resolved", "not resolved", "can't tell"]
    assert got["label_schema"]["correct_values"] == ["resolved"]
    assert got["budget_per_period"] == 25 and got["description"] == FORM["description"]
    r = post(client, "/settings/queues", FORM, token)
    assert r.status_code == 422 and "already exists" in _error_beside(r.text, "name")

    edit = client.get("/settings/queues/answers").text
    assert "Edit queue answers" in text(edit) and 'value="25"' in edit
    r = post(client, "/settings/queues/answers", {**FORM, "label_type": "score", "min": "5",
                                                  "max": "1"}, token)  # fmt: skip
    assert r.status_code == 422 and "min < max" in _error_beside(r.text, "min")
    r = post(client, "/settings/queues/answers", {**FORM, "budget_per_period": "40",
                                                  "description": "New <b>rules</b>"}, token)  # fmt: skip
    assert r.status_code == 200 and "Queue 'answers' saved." in text(r.text)
    got = client.get("/api/v1/queues/answers", headers=auth(admin)).json()
    assert got["budget_per_period"] == 40 and got["description"] == "New <b>rules</b>"
    assert "New &lt;b&gt;rules&lt;/b&gt;" in client.get("/label").text  # escaped

    r = post(client, "/settings/queues/answers/delete", {}, token)
    assert r.status_code == 200 and "Queue 'answers' deleted" in text(r.text)
    assert client.get("/api/v1/queues/answers", headers=auth(admin)).status_code == 404


@sqlite_only
@pytest.mark.parametrize("role", ["read", "annotate"])
def test_queue_settings_are_for_admins_only(client, make_key, role):
    login(client, make_key(role))
    token = csrf(client.get("/label").text)
    assert client.get("/settings/queues", headers=HTML).status_code == 403
    assert post(client, "/settings/queues", FORM, token).status_code == 403
