"""/metrics parses as Prometheus text, moves with ingestion, and backs the Grafana JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.main import create_app
from app.settings import Settings
from tests.conftest import LiveServer, auth

GRAFANA = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "telltale.json"


TOKEN = "scrape-token-" + "x" * 20


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The suite's settings with a scrape token: TestClient's peer is not loopback."""
    return settings.model_copy(
        update={"metrics_token": Settings(metrics_token=TOKEN).metrics_token}
    )


def scrape(client) -> dict[str, float]:
    r = client.get("/metrics", headers=auth(TOKEN))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            key = sample.name + json.dumps(sample.labels, sort_keys=True)
            values[key] = sample.value
    return values


def total(values: dict[str, float], name: str, **labels: str) -> float:
    out = 0.0
    for key, v in values.items():
        if key.startswith(name + "{"):
            got = json.loads(key[len(name) :])
            if all(got.get(k) == val for k, val in labels.items()):
                out += v
    return out


def test_metrics_move_when_events_are_ingested(client, make_key):
    key = make_key("ingest")
    before = scrape(client)
    events = [
        {"id": f"s{i}", "type": "span", "body": {"trace_id": "t", "span_id": f"s{i}"}}
        for i in range(7)
    ]
    client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    after = scrape(client)
    name = "telltale_ingest_events_total"
    assert (
        total(after, name, type="span", result="accepted")
        - total(before, name, type="span", result="accepted")
        == 7
    )
    assert total(after, name, result="duplicate") - total(before, name, result="duplicate") == 7
    assert total(after, "telltale_ingest_bytes_total") > total(
        before, "telltale_ingest_bytes_total"
    )
    lat = "telltale_http_request_duration_seconds_count"
    assert (
        total(after, lat, route="/api/v1/ingest") - total(before, lat, route="/api/v1/ingest") == 2
    )


def test_every_metric_the_grafana_dashboard_queries_exists(client, make_key):
    dash = json.loads(GRAFANA.read_text())
    assert any(v["type"] == "datasource" for v in dash["templating"]["list"])
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert all(
        t["datasource"]["uid"] == "${datasource}" for p in dash["panels"] for t in p["targets"]
    )
    used = {m for e in exprs for m in re.findall(r"\b(telltale_[a-z0-9_]+)", e)}
    assert len(used) >= 10
    # Exposed families (declared even before they have samples) by their sample names.
    r = client.get("/metrics", headers=auth(TOKEN))
    exposed: set[str] = set()
    for family in text_string_to_metric_families(r.text):
        exposed.add(family.name)
        exposed.update(s.name for s in family.samples)
        if family.type == "counter":
            exposed.add(family.name + "_total")
        if family.type == "histogram":
            exposed.update(family.name + sfx for sfx in ("_bucket", "_count", "_sum"))
    missing = used - exposed
    assert not missing, f"the dashboard queries metrics that do not exist: {sorted(missing)}"


def test_metrics_need_the_token_when_one_is_set(client, make_key):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers=auth("wrong")).status_code == 401
    assert client.get("/metrics", headers=auth(make_key("admin"))).status_code == 401
    assert client.get("/metrics", headers=auth(TOKEN)).status_code == 200


def test_without_a_token_metrics_answer_only_loopback(settings):
    open_settings = settings.model_copy(update={"metrics_token": None})
    with TestClient(create_app(open_settings, start_background=False), client=("10.1.2.3", 4)) as c:
        r = c.get("/metrics")
        assert r.status_code == 403 and "TELLTALE_METRICS_TOKEN" in r.json()["detail"]
    with LiveServer(create_app(open_settings, start_background=False)) as server:
        assert httpx.get(f"{server.url}/metrics", timeout=10).status_code == 200
