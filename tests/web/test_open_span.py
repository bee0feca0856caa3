""" "firing for" counts to now while the monitor keeps evaluating the alert, and stops at
its last evaluation when that lies behind (a replay's alert, the demo's), saying so."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from app.models import Alert
from app.web.open_span import open_span
from tests.web.test_alert_page import _alert
from tests.web.test_pages import login

NOW = datetime(2026, 12, 4, 21, 0, tzinfo=UTC)


def alert(first: datetime, last: datetime, resolved: datetime | None = None) -> Alert:
    return Alert(first_fired_at=first, last_fired_at=last, resolved_at=resolved)


def test_a_live_alert_counts_to_now_as_grafana_does() -> None:
    a = alert(NOW - timedelta(hours=3, minutes=5), NOW - timedelta(hours=1))
    span = open_span(a, evaluated=NOW - timedelta(minutes=4), interval_s=900, now=NOW)
    assert str(span) == "3h 05m" and span.until is None
    resolved = alert(NOW - timedelta(hours=3), NOW - timedelta(hours=2), NOW - timedelta(hours=1))
    span = open_span(resolved, evaluated=NOW - timedelta(hours=1), interval_s=900, now=NOW)
    assert str(span) == "2h 00m"


def test_a_replayed_alert_stops_at_its_last_evaluation() -> None:
    first = NOW - timedelta(days=33, hours=18)
    a = alert(first, first + timedelta(hours=1))
    span = open_span(a, evaluated=first + timedelta(hours=2, minutes=10), interval_s=900, now=NOW)
    assert str(span) == ("2h 10m, until its last evaluation at 2026-11-01 05:10 UTC (33d 15h ago)")
    # No run recorded (a deleted monitor): its last firing is the last evaluation known.
    span = open_span(a, evaluated=None, interval_s=None, now=NOW)
    assert span.duration == "1h 00m" and span.until == first + timedelta(hours=1)
    # Within two intervals of its last evaluation it is live.
    span = open_span(a, evaluated=NOW - timedelta(minutes=29), interval_s=900, now=NOW)
    assert span.until is None and span.duration == "33d 18h"


def test_the_alert_page_and_list_say_until_the_last_evaluation(client, make_key, engine):
    key = make_key("read")
    alert_id = _alert(engine)  # first fired 2026-12-03 22:00, last run 23:00
    login(client, key)
    html = client.get(f"/alerts/{alert_id}").text
    cell = re.search(r'<td id="open-for" class="open-for">([^<]*)</td>', html).group(1)
    assert cell.startswith("firing for 1h 00m, until its last evaluation at 2026-12-03 23:00 UTC (")
    listed = client.get("/alerts").text
    row = re.search(r'<span class="open-for">([^<]*)</span>', listed).group(1)
    assert row.startswith("for 1h 00m, until its last evaluation at 2026-12-03 23:00 UTC (")
