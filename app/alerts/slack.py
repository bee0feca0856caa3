"""The Slack message for one alert event, and for a group of them.

Every string that comes from outside Telltale (the alert's sentence, which quotes tool,
stream, score and decision names from span text; monitor, project and label names;
evidence keys and values) goes through :func:`inert` before it enters a ``mrkdwn``
text. Slack reads ``<...>`` as a link or a mention (``<!channel>`` pings everyone,
``<https://x|Sign in>`` shows any text for any address) and asks that ``&``, ``<`` and
``>`` in text be escaped as HTML entities (api.slack.com/reference/surfaces/formatting,
"Escaping text"); only Telltale's own links (``<link|Open in Telltale>``) are written as
markup, around text that is already escaped. A name also loses its line breaks, so it
cannot start a forged line of its own.

The header block is ``plain_text``, which Slack never parses for links or mentions: there
the text is only put on one line (escaping would show ``&amp;``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app.alerts.sentences import one_line

if TYPE_CHECKING:
    from app.alerts.context import AlertContext

MAX_LINES = 45  # header + lines + overflow note stay under Slack's 50 blocks
VERBS = {"trigger": "Firing", "acknowledge": "Acknowledged", "resolve": "Resolved"}


def inert(text: object) -> str:
    """``text`` on one line, with Slack's three control characters escaped.

    >>> inert("<!channel> <https://evil.example|sign in>\\n& more")
    '&lt;!channel&gt; &lt;https://evil.example|sign in&gt; &amp; more'
    """
    return one_line(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _evidence_lines(evidence: Mapping[str, Any], limit: int = 8) -> str:
    lines = []
    for key, value in list(evidence.items())[:limit]:
        text = value if isinstance(value, (str, int, float, bool)) or value is None else "…"
        lines.append(f"• *{inert(key)}*: {inert(text)}")
    return "\n".join(lines) or "(no evidence)"


def message(ctx: AlertContext, event: str) -> dict[str, Any]:
    """One alert event: a fallback text, a header, the facts, the sentence, the evidence."""
    a = ctx.alert
    verb = VERBS[event]
    title = f"{verb}: {ctx.title}"
    return {
        "text": f"{verb}: {inert(ctx.headline)} <{ctx.link}|Open in Telltale>",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": one_line(title)[:150]}},
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": f"*Severity*\n{inert(a.severity)}"},
                    {"type": "mrkdwn", "text": f"*Project*\n{inert(ctx.project_name)}"},
                    {"type": "mrkdwn", "text": f"*Count*\n{a.count}"},
                    {"type": "mrkdwn", "text": f"*Since*\n{ctx.since}"},
                ],
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": f"{inert(a.summary or title)}\n<{ctx.link}|{ctx.link}>",
                },
            },
            {"type": "section", "text": {"type": "mrkdwn", "text": _evidence_lines(a.evidence)}},
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Open in Telltale"},
                        "url": ctx.link,
                    }
                ],
            },
        ],
    }


def group_message(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several alert events in one message: a header and one line per alert
    (:func:`app.alerts.channels.item` keeps each line's text raw; it is escaped here)."""
    if len(items) == 1:
        return dict(items[0]["payload"])
    title = f"{len(items)} Telltale alerts"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title}}
    ]
    for i in items[:MAX_LINES]:
        # Trim the text, not the line, so the link's markup is never cut open.
        line = f"{inert(i['text'])[:2800]} (<{i['link']}|open>)"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": line}})
    if len(items) > MAX_LINES:
        more = f"… and {len(items) - MAX_LINES} more"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": more}})
    text = f"{title}: " + "; ".join(inert(i["text"]) for i in items)
    return {"text": text[:3000], "blocks": blocks}
