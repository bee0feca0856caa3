"""The derived-field rules edited field by field, beside the JSON form: what the fields show,
what they save (read back through the API), and a refused value kept with its field named."""

from __future__ import annotations

import re

from tests.conftest import auth
from tests.web.test_pages import login
from tests.web.test_settings_pages import HTML, csrf, post

FIELDS = {
    "decision_default": "tools_and_finish",
    "agent": ["support", ""], "how": ["json_path", "json_path"], "expr": ["$.action", ""],
    "confidence_field": "$.confidence", "eval_environments": "eval, staging",
    "exclude_patterns": r"\d{6,}" + "\n" + r"(?i)order-\w+",
    "include_system_prompt": "on", "group_threshold": "0.9",
    "cf_agent": "support", "cf_baseline": "1.0", "cf_candidate": "1.1",
}  # fmt: skip


def value(page: str, field_id: str) -> str:
    found = re.search(rf'id="{field_id}"[^>]*value="([^"]*)"', page)
    assert found, field_id
    return found.group(1)


def test_the_common_fields_save_what_the_json_would(client, make_key):
    admin = make_key("admin")
    login(client, admin)
    page = client.get("/settings/derived", headers=HTML).text
    # The defaults, field by field; the JSON form is still there as the advanced path.
    assert "Common fields" in page and "Advanced: every rule as JSON" in page
    assert value(page, "df-eval") == "eval, evaluation, ci, test"
    assert value(page, "df-threshold") == "0.85" and value(page, "df-agent-1") == ""
    assert re.search(r'name="text_embeddings" checked', page)
    r = post(client, "/settings/derived/fields", FIELDS, csrf(page))
    assert r.status_code == 200 and "Derived fields saved" in r.text, r.text[:300]
    config = client.get("/api/v1/project/derived-fields", headers=auth(admin)).json()["config"]
    assert config["decision"]["agents"] == {"support": {"json_path": "$.action", "regex": None}}
    assert config["confidence"]["field"] == "$.confidence"
    assert config["source"]["eval_environments"] == ["eval", "staging"]
    assert config["input_identity"] == {
        "exclude_patterns": [r"\d{6,}", r"(?i)order-\w+"],
        "include_system_prompt": True, "group_threshold": 0.9,
    }  # fmt: skip
    assert config["counterfactual"] == {
        "agent": "support",
        "baseline_version": "1.0",
        "candidate_version": "1.1",
    }
    assert config["text_embeddings"]["enabled"] is False  # its box was not sent: unticked
    # The page reads back what was saved, with a blank row for another agent.
    page = client.get("/settings/derived", headers=HTML).text
    assert value(page, "df-agent-1") == "support" and value(page, "df-expr-1") == "$.action"
    assert value(page, "df-agent-2") == "" and value(page, "df-cf-candidate") == "1.1"
    # Emptying a row's expression and the counterfactual removes them.
    emptied = {**FIELDS, "expr": ["", ""], "cf_agent": "", "cf_baseline": "", "cf_candidate": ""}
    r = post(client, "/settings/derived/fields", {**emptied, "text_embeddings": "on"}, csrf(page))
    config = client.get("/api/v1/project/derived-fields", headers=auth(admin)).json()["config"]
    assert config["decision"]["agents"] == {} and config["counterfactual"] is None


def test_a_refused_field_is_named_and_what_was_typed_stays(client, make_key):
    login(client, make_key("admin"))
    token = csrf(client.get("/settings/derived", headers=HTML).text)
    bad = {**FIELDS, "how": ["regex", "json_path"], "expr": ["(?<=x)y", ""]}  # RE2: no lookbehind
    r = post(client, "/settings/derived/fields", bad, token)
    assert r.status_code == 422 and "decision.agents.support" in r.text, r.text[:500]
    assert value(r.text, "df-expr-1") == "(?&lt;=x)y" and value(r.text, "df-cf-agent") == "support"
    r = post(client, "/settings/derived/fields", {**FIELDS, "group_threshold": "high"}, token)
    assert r.status_code == 422 and "input_identity.group_threshold" in r.text
    r = post(client, "/settings/derived/fields", {**FIELDS, "agent": ["", ""]}, token)
    assert r.status_code == 422 and "give the agent its json_path is for" in r.text
    r = post(client, "/settings/derived/fields", {**FIELDS, "cf_candidate": "1.0"}, token)
    assert r.status_code == 422 and "must differ" in r.text
