"""GET/PUT/DELETE /api/v1/project/derived-fields: an admin reads and sets the derive rules; a
bad rule is a 422 naming its field, and no rule can make derivation backtrack. The first path,
/api/v1/project/signals, still answers, as a deprecated alias."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from app.derive.config import DEFAULT_EXCLUDE_PATTERNS
from app.derive.job import derive_pending
from app.models import Trace
from app.models.base import utcnow
from tests.app.derive.otlp_agent import agent_run, send
from tests.conftest import auth

URL = "/api/v1/project/derived-fields"
OLD_URL = "/api/v1/project/signals"  # the deprecated alias


def test_defaults_then_rules_then_back(client: TestClient, make_key: Any) -> None:
    admin = auth(make_key("admin"))
    got = client.get(URL, headers=admin).json()
    assert got["customised"] is False and got["text_embeddings_on_server"] is True
    config = got["config"]
    assert config["input_identity"]["exclude_patterns"] == list(DEFAULT_EXCLUDE_PATTERNS)
    assert config["input_identity"]["include_system_prompt"] is False
    assert config["decision"] == {"default": "tools_and_finish", "agents": {}}
    assert config["source"]["eval_environments"][:2] == ["eval", "evaluation"]
    assert config["counterfactual"] is None and config["text_embeddings"] == {"enabled": True}
    rules = {
        "input_identity": {"exclude_patterns": ["ticket-\\d+"], "include_system_prompt": True},
        "decision": {"agents": {"bot": {"regex": "ACTION: (\\w+)"}}},
        "confidence": {"field": "$.confidence"},
        "source": {"eval_environments": ["staging-eval"]},
        "counterfactual": {"agent": "bot", "baseline_version": "v1", "candidate_version": "v2"},
        "text_embeddings": {"enabled": False},
    }
    answer = client.put(URL, json=rules, headers=admin)
    assert answer.status_code == 200, answer.text
    config = client.get(URL, headers=admin).json()["config"]
    assert config["input_identity"]["exclude_patterns"] == ["ticket-\\d+"]
    assert config["decision"]["agents"] == {"bot": {"json_path": None, "regex": "ACTION: (\\w+)"}}
    assert config["counterfactual"]["candidate_version"] == "v2"
    assert client.delete(URL, headers=admin).json()["customised"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"input_identity": {"exclude_patterns": ["(a)\\1"]}}, "input_identity.exclude_patterns"),
        ({"input_identity": {"exclude_patterns": ["(?=x)y"]}}, "input_identity.exclude_patterns"),
        (
            {"input_identity": {"exclude_patterns": ["x" * 501]}},
            "input_identity.exclude_patterns.0",
        ),
        ({"input_identity": {"exclude_patterns": ["ok", "x*"]}}, "input_identity.exclude_patterns"),
        ({"input_identity": {"group_threshold": 1.5}}, "input_identity.group_threshold"),
        ({"input_identity": {"exclude": []}}, "input_identity.exclude"),
        ({"decision": {"agents": {"bot": {"regex": "[unclosed"}}}}, "decision.agents.bot"),
        ({"decision": {"agents": {"bot": {}}}}, "decision.agents.bot"),
        (
            {"decision": {"agents": {"bot": {"json_path": "$.a", "regex": "a"}}}},
            "decision.agents.bot",
        ),
        ({"decision": {"agents": {"bot": {"json_path": "$..a"}}}}, "decision.agents.bot"),
        ({"decision": {"default": "sometimes"}}, "decision.default"),
        ({"confidence": {"field": "$[*]"}}, "confidence.field"),
        (
            {"counterfactual": {"agent": "bot", "baseline_version": "v1"}},
            "counterfactual.candidate_version",
        ),
        (
            {"counterfactual": {"agent": "b", "baseline_version": "v", "candidate_version": "v"}},
            "counterfactual",
        ),
        ({"text_embeddings": {"enabled": "maybe"}}, "text_embeddings.enabled"),
        ({"decisions": {}}, "decisions"),
    ],
)
def test_bad_rules_are_422_naming_the_field(
    client: TestClient, make_key: Any, body: dict[str, Any], field: str
) -> None:
    answer = client.put(URL, json=body, headers=auth(make_key("admin")))
    assert answer.status_code == 422, answer.text
    fields = [e["field"] for e in answer.json()["errors"]]
    assert any(f == f"body.{field}" or f.startswith(f"body.{field}.") for f in fields), fields


def test_only_admins(client: TestClient, make_key: Any) -> None:
    reader = auth(make_key("read"))
    assert client.get(URL, headers=reader).status_code == 403
    assert client.put(URL, json={}, headers=reader).status_code == 403


def test_a_backtracking_pattern_runs_in_linear_time(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    # (a+)+$ takes exponential time in Python's re on "aaa...!"; RE2 is linear.
    rules = {
        "input_identity": {"exclude_patterns": ["(a+)+$"]},
        "decision": {"agents": {"support-agent": {"regex": "(x+x+)+y"}}},
    }
    assert client.put(URL, json=rules, headers=auth(make_key("admin"))).status_code == 200
    evil = "a" * 5000 + "!"
    run = agent_run(evil, answer="x" * 5000)
    send(client, make_key("ingest"), [run])
    started = time.perf_counter()
    report = derive_pending(engine, now=utcnow() + timedelta(seconds=60), text_embeddings=False)
    assert report.traces == 1
    assert time.perf_counter() - started < 10  # backtracking would take longer than the universe
    with engine.connect() as conn:
        row = conn.execute(select(Trace.input_hash, Trace.attributes)).one()
    assert row.input_hash is not None and "decision" not in row.attributes


def test_the_old_path_is_a_deprecated_alias(client: TestClient, make_key: Any) -> None:
    """The same handlers answer the same bodies there, each answer marked deprecated and
    pointing at the new path; the new path's answers carry neither header."""
    admin = auth(make_key("admin"))
    successor = f'<{URL}>; rel="successor-version"'

    def marked(answer: Any) -> bool:
        return (
            answer.headers.get("deprecation") == "true" and answer.headers.get("link") == successor
        )

    rules = {"source": {"eval_environments": ["staging-eval"]}}
    for method, body in (("GET", None), ("PUT", rules), ("GET", None), ("DELETE", None)):
        new = client.request(method, URL, json=body, headers=admin)
        old = client.request(method, OLD_URL, json=body, headers=admin)
        assert new.status_code == old.status_code == 200, (method, old.text)
        assert old.json() == new.json(), method
        assert marked(old), (method, old.headers)
        assert "deprecation" not in new.headers and "link" not in new.headers, method
    # One store behind both: what the old path sets, the new path reads.
    client.put(OLD_URL, json=rules, headers=admin)
    assert client.get(URL, headers=admin).json()["config"]["source"]["eval_environments"] == [
        "staging-eval"
    ]
    # Its refusals are marked too, and are the new path's refusals.
    bad = {"decisions": {}}
    old, new = (client.put(u, json=bad, headers=admin) for u in (OLD_URL, URL))
    assert old.status_code == new.status_code == 422 and old.json() == new.json()
    assert marked(old) and "deprecation" not in new.headers
    reader = auth(make_key("read"))
    old, new = (client.get(u, headers=reader) for u in (OLD_URL, URL))
    assert old.status_code == new.status_code == 403 and marked(old)
    assert "deprecation" not in new.headers
