"""What the demo prints: the banner with URLs and keys, and the one-screen summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from app.demo.replay import ReplayResult, Schedule, format_delay
from pipelines.scenarios import FAILURE_MODES


@dataclass(frozen=True)
class Outcome:
    """What the service reports after the replay (read back through the API)."""

    alerts_by_state: dict[str, int]
    queues: dict[str, tuple[int, int]]  # name -> (items waiting, added by this run's fill)
    delivered: int
    delivered_by_event: dict[str, int]
    rejected_deliveries: int


def banner(
    *, base_url: str, db_url: str, keys: dict[str, str], reused: bool, hint: bool
) -> list[str]:
    lines = [
        "Telltale demo",
        f"  UI       {base_url}/  (log in at /login with the admin key)",
        # What the app serves: /docs is off (its pages load scripts from a CDN, app.main),
        # and /api/v1 alone is no route; the schema is, and the reference is in the docs site.
        f"  API      {base_url}/openapi.json  (reference: docs/reference/http-api.md)",
        f"  metrics  {base_url}/metrics",
        f"  database {db_url}" + ("  (project 'demo' reused)" if reused else ""),
        *(f"  {role + ' key':<12} {key}" for role, key in keys.items()),
    ]
    if hint:
        lines.append(f"  Open {base_url}/alerts in a browser to watch the alerts arrive.")
    return lines


def schedule_lines(schedule: Schedule, *, speed: float, tick_min: float) -> list[str]:
    per_hour = 3600.0 / speed
    return [
        f"Replaying {schedule.hours:g} simulated hours from {_t(schedule.start)}:",
        f"  1 simulated hour per {per_hour:.3g} s real (slower if the monitors need longer),",
        f"  monitors run every {tick_min:g} simulated minutes;",
        f"  a clean baseline for {schedule.baseline_h:g} h (the monitors' first verdicts come "
        "after 8 h of data),",
        f"  then one mode every {format_delay(schedule.slot)} ({schedule.strength}); "
        "each stays on.",
        "  FM-4 and OUTCOME read 2 h against 4 h here, like the others; their defaults read",
        "  8 h against a day (labels arrive late) and speak 24 h after a project's first trace.",
    ]


def summary_lines(schedule: Schedule, result: ReplayResult, outcome: Outcome) -> list[str]:
    false_alarms = Counter(mode for mode, _ in result.false_alarms)
    lines = [
        "",
        "Summary" + ("" if result.completed else " (interrupted before the end of the replay)"),
        f"  {'mode':<5} {'failure mode':<36} {'injected':<17} {'detected':<17} delay",
    ]
    for mode, det in result.detections.items():
        name = FAILURE_MODES[mode].split(" (")[0][:36]
        found = det.detected_at is not None and det.delay is not None
        detected = _t(det.detected_at) if det.detected_at else "missed"
        delay = format_delay(det.delay) if found and det.delay is not None else "-"
        lines.append(f"  {mode:<5} {name:<36} {_t(det.injected_at):<17} {detected:<17} {delay}")
    n_found = sum(d.detected_at is not None for d in result.detections.values())
    fa = ", ".join(f"{m} x{n}" for m, n in sorted(false_alarms.items())) or "none"
    cross = Counter((m, c) for m, c, _ in result.cross_mode)
    seen: dict[str, list[str]] = {}
    for (monitor, cause), n in sorted(cross.items()):
        seen.setdefault(monitor, []).append(f"{cause} x{n}")
    states = ", ".join(f"{n} {s}" for s, n in sorted(outcome.alerts_by_state.items())) or "none"
    events = ", ".join(f"{n} {e}" for e, n in sorted(outcome.delivered_by_event.items()))
    # One fact a line, each short enough for a terminal.
    lines += [
        f"  detected {n_found} of {len(result.detections)}",
        f"  false alarms: {fa}",
        f"  monitor runs {result.runs} ({result.failed_runs} failed); "
        f"replay took {result.wall_s:.0f} s",
        f"  events sent {result.events_accepted} new, {result.events_duplicate} duplicates",
        f"  alerts: {states}",
        *(
            f"  labeling queue {name}: {waiting} items waiting ({added} added by this run's fill)"
            for name, (waiting, added) in outcome.queues.items()
        ),
        f"  notifications delivered to the receiver: {outcome.delivered} signed and verified"
        + (f"; {outcome.rejected_deliveries} rejected" if outcome.rejected_deliveries else ""),
    ]
    if seen:  # OUTCOME sees every mode's change: a line per monitor, not one per sighting
        lines.append("  other modes' changes seen (real drifts, not false alarms):")
        lines += [f"    {monitor} saw {', '.join(causes)}" for monitor, causes in seen.items()]
    if events:
        lines.append(f"    by event: {events}")
    return lines


def _t(t: datetime | None) -> str:
    return "-" if t is None else t.strftime("%Y-%m-%d %H:%MZ")
