"""Text that agents send (tool, stream, score names, decisions) reaches Slack inert: no
mention, no link, no formatting of its own, one line; Telltale's own links still work."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from app.alerts import channels, groups, sentences, slack

SPOOF = "<!channel> <https://evil.example/login|Telltale: sign in again>"
OUR_LINK = "<https://telltale.example/alerts/7|Open in Telltale>"


def _outcome_ctx(*, monitor_name: str = "outcome watch", project_name: str = "shop & co") -> Any:
    evidence = {
        "objectives": [
            {"signal": "objective", "name": f"{SPOOF}\nresolved", "before": 0.847, "after": 0.41,
             "n_current": 300, "n_reference": 150, "fired": True, "p_adjusted": 1e-6},
        ],
        "operations": [
            {"signal": "tool_error_rate", "name": SPOOF, "before": 0.01, "after": 0.3,
             "n_current": 120, "fired": True, "p_adjusted": 1e-5},
        ],
        f"{SPOOF} key": f"{SPOOF}\n• *fake*: line",
    }  # fmt: skip
    alert = SimpleNamespace(
        id=7, fingerprint="f" * 64, state="firing", severity="critical", failure_mode="OUTCOME",
        labels={}, evidence=evidence, count=1, first_fired_at=datetime(2026, 12, 3, 22, tzinfo=UTC),
        last_fired_at=datetime(2026, 12, 3, 23, tzinfo=UTC), acknowledged_at=None,
        resolved_at=None, summary=sentences.sentence(failure_mode="OUTCOME", evidence=evidence),
    )  # fmt: skip
    return channels.AlertContext(
        alert=alert,
        monitor_name=monitor_name,
        project_name=project_name,
        public_url="https://telltale.example/",
    )


def _mrkdwn_texts(payload: dict[str, Any]) -> list[str]:
    texts = [payload["text"]]
    for block in payload["blocks"]:
        for part in [block.get("text") or {}, *block.get("fields", [])]:
            if part.get("type") == "mrkdwn":
                texts.append(part["text"])
    return texts


def _assert_inert(texts: list[str]) -> None:
    for text in texts:
        assert "<!channel>" not in text and "<https://evil" not in text, text
        assert "|Telltale: sign in again>" not in text, text


def test_span_text_reaches_slack_escaped_and_our_links_still_work() -> None:
    payload = slack.message(_outcome_ctx(), "trigger")
    texts = _mrkdwn_texts(payload)
    _assert_inert(texts)
    escaped = "&lt;!channel&gt; &lt;https://evil.example/login|Telltale: sign in again&gt;"
    assert escaped in payload["text"]
    assert payload["text"].endswith(OUR_LINK)
    assert "*Project*\nshop &amp; co" in texts
    summary, evidence = texts[-2], texts[-1]
    link = "https://telltale.example/alerts/7"
    assert summary.endswith(f"\n<{link}|{link}>")
    assert "\n" not in summary.split("\n<https://telltale")[0]
    # One evidence line per key: a value's newline cannot forge another line.
    assert evidence.count("\n") == len(_outcome_ctx().alert.evidence) - 1


def test_a_group_message_escapes_each_alerts_line() -> None:
    ctx = _outcome_ctx()
    channel = SimpleNamespace(type="slack", config={})
    items = [
        {**channels.item(channel, ctx, "trigger"), "alert_id": n}  # type: ignore[arg-type]
        for n in (1, 2)
    ]
    payload = groups.combine("slack", items, key="1/1")
    _assert_inert(_mrkdwn_texts(payload))
    assert payload["blocks"][1]["text"]["text"].endswith(f"(<{ctx.link}|open>)")


def test_names_with_newlines_are_one_line_in_every_channels_one_line_fields() -> None:
    ctx = _outcome_ctx(monitor_name="outcome\nwatch", project_name="shop\r\nA")
    assert "\n" not in ctx.alert.summary
    assert slack.message(ctx, "trigger")["blocks"][0]["text"]["text"] == (
        "Firing: OUTCOME outcome watch"
    )
    pd = channels.pagerduty_payload(ctx, "trigger", "rk")["payload"]
    assert "\n" not in pd["summary"] and "\n" not in pd["source"]
    [am] = channels.alertmanager_payload(ctx, "trigger")
    assert "\n" not in am["annotations"]["summary"]
    assert "\n" not in channels.webhook_payload(ctx, "trigger")["alert"]["title"]
