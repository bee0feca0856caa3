"""Two versions of one agent and a second agent, sent natively and rolled up: the traffic
the agent pages, API and comparison are tested on.

``shop`` 1.0 (40 traces from 20 h ago): 4 failed, 2 s each, 100 tokens and $0.01, one
``search`` call (every fifth failed); ``shop`` 2.0 (40 traces from 10 h ago): 12 failed,
4 s, 300 tokens and $0.03, and every tenth trace calls ``search`` three times (a loop);
``helper`` 1 (5 traces). Every other ``shop`` trace is labeled ``resolved`` (a ``true``
objective): 1.0 passes 16 of 20, 2.0 passes 8 of 20.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.app.rollups.traffic import ingest, settle, trace


def _version(events: list[dict[str, Any]], version: str) -> list[dict[str, Any]]:
    events[0]["body"]["agent_version"] = version
    return events


def shop_traffic(now: datetime | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    now = (now or datetime.now(UTC)).replace(minute=0, second=0, microsecond=0)
    events: list[dict[str, Any]] = []
    ids: dict[str, list[str]] = {"1.0": [], "2.0": []}
    for v, start, fail_every, seconds, tokens, cost in (
        ("1.0", now - timedelta(hours=20), 10, 2.0, 100, 0.01),
        ("2.0", now - timedelta(hours=10), 10, 4.0, 300, 0.03),
    ):
        for i in range(40):
            tid = f"{v}-{i:02d}"
            failed = (i % fail_every == 0) if v == "1.0" else (i % 10 in (0, 3, 6))
            tools = (("search", "error" if i % 5 == 0 and v == "1.0" else "ok"),)
            if v == "2.0" and i % 10 == 9:
                tools = (("search", "ok"),) * 3
            events += _version(trace(tid, at=start + timedelta(minutes=7 * i), seconds=seconds,
                                     status="error" if failed else "ok", tools=tools,
                                     model_tokens=tokens, cost=cost), v)  # fmt: skip
            ids[v].append(tid)
            if i % 2 == 0:
                passed = (i // 2) % 5 != 0 if v == "1.0" else (i // 2) % 5 in (0, 1)
                events.append({"id": f"l-{tid}", "type": "score", "body": {
                    "trace_id": tid, "name": "resolved", "value": 1.0 if passed else 0.0,
                    "kind": "true", "source": "delayed"}})  # fmt: skip
    for i in range(5):
        events += trace(f"h-{i}", agent="helper", at=now - timedelta(hours=2, minutes=i))
    return events, ids


def send_shop(client: Any, key: str, engine: Any, now: datetime | None = None) -> dict[str, Any]:
    events, ids = shop_traffic(now)
    ingest(client, key, events)
    settle(engine)
    return ids
