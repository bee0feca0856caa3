"""``/api/v1/agents``: the figures equal direct counts of the same traces, the comparison's
tests are the ones it names, the graph shows the loop, and bad parameters are refused by
name."""

from __future__ import annotations

from typing import Any

import pytest
from scipy import stats
from sqlalchemy import Engine, func, select

from app.models import Trace
from tests.app.agents.traffic import send_shop
from tests.app.rollups.traffic import ingest, settle, trace
from tests.conftest import auth, sqlite_only

ROLES = ("ingest", "read", "annotate", "admin")


def _get(client: Any, key: str, path: str, **params: Any) -> Any:
    r = client.get(path, params=params, headers=auth(key))
    assert r.status_code == 200, r.text
    return r.json()


def test_the_list_and_an_agent_equal_direct_counts(client, make_key, engine: Engine) -> None:
    send_shop(client, make_key("ingest"), engine)
    key = make_key("read")
    body = _get(client, key, "/api/v1/agents", range="7d")
    assert [a["agent"] for a in body["agents"]] == ["shop", "helper"]
    shop = body["agents"][0]
    with engine.connect() as conn:
        traces, failed = conn.execute(
            select(func.count(), func.count().filter(Trace.status == "error"))
            .where(Trace.agent == "shop")
        ).one()  # fmt: skip
    assert (shop["traces"], round(shop["failure_rate"] * traces)) == (traces, failed) == (80, 16)
    assert shop["loop_rate"] == pytest.approx(4 / 80)
    assert shop["tool_calls"] is None  # the list leaves the widest rollup to each agent's page
    assert shop["tokens_per_trace"] == pytest.approx(200) and shop["cost_per_trace"] == pytest.approx(0.02)
    assert shop["p50_ms"] == pytest.approx(2000, rel=0.011) and shop["p95_ms"] == pytest.approx(4000, rel=0.011)
    assert shop["success"] == {"objective": "resolved", "rate": pytest.approx(24 / 40), "scores": 40}
    assert (shop["versions"], shop["open_alerts"]) == (2, 0) and shop["last_seen"]
    assert body["agents"][1]["success"] is None  # no objective scored: no success, not 0

    one = _get(client, key, "/api/v1/agents/shop", range="24h")
    assert one["summary"]["traces"] == 80 and len(one["points"]) == 24
    assert one["summary"]["tool_calls"] == 40 + 36 + 12
    assert one["summary"]["tool_error_rate"] == pytest.approx(8 / 88)
    assert sum(p["traces"] for p in one["points"]) == 80
    assert [v["version"] for v in one["versions"]] == ["2.0", "1.0"]  # newest first
    hot = [p for p in one["points"] if p["traces"]]
    assert {round(p["p50_ms"], -2) for p in hot} == {2000, 4000}
    assert sum(d["cost"] for d in one["days"]) == pytest.approx(80 * 0.02)
    assert (one["model_calls"], one["unpriced_calls"]) == (80, 0)
    month = _get(client, key, "/api/v1/agents/shop", range="30d")
    assert (len(month["points"]), month["step_seconds"]) == (120, 6 * 3600)
    assert sum(p["traces"] for p in month["points"]) == 80
    assert len(month["days"]) in (30, 31)  # 31 UTC dates unless the range ends at midnight


def test_an_agents_unpriced_model_calls_are_counted(client, make_key, engine: Engine) -> None:
    from datetime import UTC, datetime, timedelta

    events = trace("u-1", agent="helper", at=datetime.now(UTC) - timedelta(hours=1))
    del events[1]["body"]["cost"]  # a model call of an unknown model, sent without a cost
    ingest(client, make_key("ingest"), events)
    settle(engine)
    one = _get(client, make_key("read"), "/api/v1/agents/helper")
    assert (one["model_calls"], one["unpriced_calls"]) == (1, 1)


def test_the_version_comparison_names_its_tests(client, make_key, engine: Engine) -> None:
    send_shop(client, make_key("ingest"), engine)
    body = _get(client, make_key("read"), "/api/v1/agents/shop/compare", range="7d")
    assert (body["a"], body["b"]) == ("1.0", "2.0")  # the newest against the one before
    m = {x["measure"]: x for x in body["measures"]}
    fail = m["trace failure rate"]
    assert (fail["a"], fail["b"], fail["test"]) == (0.1, 0.3, "Fisher exact")
    assert fail["p_value"] == pytest.approx(stats.fisher_exact([[12, 28], [4, 36]]).pvalue)
    assert m["success (resolved)"]["change"] == pytest.approx(8 / 20 - 16 / 20)
    lat = m["p50 latency"]
    assert lat["test"] == "Mann-Whitney U" and lat["statistic"] == 1.0  # every 2.0 trace slower
    assert lat["b"] / lat["a"] == pytest.approx(2, rel=0.03) and lat["significant"]
    cost = m["cost per trace"]
    assert cost["relative_change"] == pytest.approx(2.0) and cost["test"] == "Welch t"
    assert all(x["p_holm"] >= x["p_value"] for x in body["measures"] if x["p_value"] is not None)
    assert body["examples_b"][0]["status"] == "error" and len(body["examples_b"]) == 5
    assert all(e["trace_id"].startswith("1.0-") for e in body["examples_a"])


def test_the_graph_shows_tools_models_and_the_loop(client, make_key, engine: Engine) -> None:
    send_shop(client, make_key("ingest"), engine)
    g = _get(client, make_key("read"), "/api/v1/agents/shop/graph", range="24h")
    nodes = {n["id"]: n for n in g["nodes"]}
    assert set(nodes) == {"start", "llm:gpt-x", "tool:search", "end"}
    assert (nodes["tool:search"]["calls"], nodes["tool:search"]["errors"]) == (88, 8)
    assert nodes["tool:search"]["counted"] == nodes["llm:gpt-x"]["counted"] == "range"
    assert nodes["tool:search"]["examples"] == ["1.0-00", "1.0-05", "1.0-10"]  # failed first
    assert nodes["llm:gpt-x"]["examples"] == ["1.0-00", "1.0-01", "1.0-02"] and not nodes["start"]["examples"]
    edges = {(e["source"], e["target"]): e["count"] for e in g["edges"]}
    assert edges[("start", "llm:gpt-x")] == 80 and edges[("llm:gpt-x", "tool:search")] == 80
    assert edges[("tool:search", "tool:search")] == 8  # 4 loops of three calls: 2 each
    assert g["sampled_traces"] == 80 and g["traces_in_range"] == 80


@sqlite_only  # refused while the parameters are read, or by role
def test_bad_parameters_and_roles(client, make_key, engine: Engine) -> None:
    send_shop(client, make_key("ingest"), engine)
    key = make_key("read")
    r = client.get("/api/v1/agents", params={"range": "1y"}, headers=auth(key))
    assert r.status_code == 422 and "range" in r.text
    r = client.get("/api/v1/agents/shop/compare", params={"a": "9.9"}, headers=auth(key))
    assert r.status_code == 422 and r.json()["detail"].startswith("a: no traffic of version '9.9'")
    r = client.get("/api/v1/agents/shop/compare", params={"a": "1.0", "b": "1.0"}, headers=auth(key))
    assert r.status_code == 422 and r.json()["detail"].startswith("b: the same version")
    r = client.get("/api/v1/agents/helper/compare", headers=auth(key))
    assert r.status_code == 422 and r.json()["detail"].startswith("a: agent 'helper' has 1 version")
    assert client.get("/api/v1/agents/nobody", headers=auth(key)).status_code == 404
    for role in ROLES:  # the read routes' roles: any key but an ingest key
        k = make_key(role)
        for path in ("", "/shop", "/shop/compare", "/shop/graph"):
            r = client.get("/api/v1/agents" + path, headers=auth(k))
            assert r.status_code == (403 if role == "ingest" else 200), (role, path, r.text)
    other = make_key("read", project="p2")
    assert _get(client, other, "/api/v1/agents", range="30d")["agents"] == []
    assert client.get("/api/v1/agents/shop/graph", headers=auth(other)).status_code == 404
