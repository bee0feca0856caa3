"""Channel secrets are write-only: URLs, routing keys and signing secrets come back masked
to every role, admin included, in the answers of create and list."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.alerts.outbound import OutboundPolicy
from app.api.deps import get_outbound
from app.db import write_session
from app.models import Channel
from tests.app.engine_helpers import LOCAL_ALLOW, setup_project
from tests.conftest import auth

SLACK_PATH = "services/T0AAAAAAA/B0BBBBBBB/XXXXXXXXXXXXXXXXXXXXvw9z"
SLACK = f"https://hooks.slack.com/{SLACK_PATH}"
ROUTING_KEY = "R0UT1NGKEYR0UT1NGKEYR0UT1NGk3y7"
HMAC_SECRET = "whsec-9f8e7d6c5b4a3928"
HOOK_TOKEN = "tok-5566778899aabbcc"
SECRETS = (SLACK_PATH, ROUTING_KEY, HMAC_SECRET, HOOK_TOKEN)
BODIES = [
    {"type": "slack", "url": SLACK},
    {"type": "pagerduty", "routing_key": ROUTING_KEY},
    {"type": "webhook", "url": f"http://127.0.0.1:9/hook?token={HOOK_TOKEN}",
     "secret": HMAC_SECRET},
]  # fmt: skip


def _public_slack(host: str, port: int) -> list[str]:
    return ["34.117.0.1"] if host == "hooks.slack.com" else []


def test_no_secret_in_any_answer_for_admin_or_reader(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    policy = OutboundPolicy.from_allow(LOCAL_ALLOW, resolver=_public_slack)
    client.app.dependency_overrides[get_outbound] = lambda: policy  # type: ignore[attr-defined]
    admin, reader = make_key(role="admin"), make_key(role="read")
    created = []
    for body in BODIES:
        r = client.post("/api/v1/channels", headers=auth(admin), json=body)
        assert r.status_code == 201, r.text
        assert not [s for s in SECRETS if s in r.text], r.text
        created.append(r.json())
    assert [c["url"] for c in created] == [
        "https://hooks.slack.com/…vw9z", "", "http://127.0.0.1:9/…bbcc",
    ]  # fmt: skip
    assert created[1]["routing_key"] == "…k3y7" and created[2]["has_secret"] is True
    assert created[0]["name"] == "slack https://hooks.slack.com/…vw9z"
    for key in (admin, reader):
        r = client.get("/api/v1/channels", headers=auth(key))
        assert r.status_code == 200 and len(r.json()["channels"]) == 3
        assert not [s for s in SECRETS if s in r.text], r.text


def test_names_defaulted_from_secrets_before_masking_are_masked(
    client: TestClient, make_key: Any, engine: Engine
) -> None:
    pid = setup_project(engine)
    with write_session(engine) as s:  # the default names older versions stored
        s.add(Channel(project_id=pid, name=f"slack-{SLACK}", type="slack", url=SLACK, config={}))
        s.add(Channel(project_id=pid, name=f"pagerduty-{ROUTING_KEY}", type="pagerduty",
                      url="", config={"routing_key": ROUTING_KEY}))  # fmt: skip
    r = client.get("/api/v1/channels", headers=auth(make_key(role="read")))
    assert [c["name"] for c in r.json()["channels"]] == [
        "slack-https://hooks.slack.com/…vw9z", "pagerduty-…k3y7",
    ]  # fmt: skip
    assert not [s for s in SECRETS if s in r.text], r.text
