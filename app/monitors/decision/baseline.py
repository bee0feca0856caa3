"""Which time ranges a run compares: the current window and a baseline that does not follow
the failure.

A reference that slides with the current window absorbs every persistent change within
its length: a step is detected, then the reference fills with the degraded traffic and
the alert auto-resolves while the failure is still there; a slow ramp is never far from
its own recent past. So the reference here is

* **rolling and lagged** by default: ``[now - current - lag - reference, now - current - lag)``
  while the monitor is clean, so it only covers traffic that earlier runs saw pass
  (``baseline_lag_seconds``, default one current window; the default monitors use 22 h,
  yesterday's hours, so that a slow ramp is compared with traffic from before it began).
  Where the data do not reach back that far (:mod:`app.monitors.windows.history`), the lag is
  ``min(lag, current)`` until the whole lag fits;
* **frozen** at the last known-good period from the run that opens an alert until it
  resolves, and **held** there for ``baseline_hold_seconds`` after (default lag +
  reference: the first reference after the hold lies wholly after the resolution), so an
  alert resolves only when the *current* window is back within that baseline;
* **pinned** when the selection names ``reference_start``/``reference_end``;
* **version**: the traffic of the agent version before the one the current window runs
  (``reference_version: "previous"``, or a named version), resolved from the database by
  :mod:`app.monitors.decision.version_baseline`, which replaces the reference :func:`windows_for`
  gives.

This module decides time ranges only; how rows are loaded for them is
:mod:`app.monitors.windows.trace_window`' business. Everything is pure: the state comes in and goes out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from app.db import as_utc

BaselineMode = Literal["rolling", "frozen", "held", "pinned", "version"]
# The shortest reference a young project's verdict rests on, where the reference window is
# longer than the current one (BaselinePolicy.min_reference).
MIN_YOUNG_REFERENCE = timedelta(hours=4)


@dataclass(frozen=True)
class BaselinePolicy:
    current: timedelta
    reference: timedelta
    lag: timedelta
    hold: timedelta
    pinned: tuple[datetime, datetime] | None = None
    reference_version: str | None = None  # "previous" or a version (version_baseline)
    # The reference is the project's first ``reference`` of data (the first-hours guards).
    first_data: bool = False
    # Shorter windows until this policy's first verdict is due (policy_in_force), and
    # whether they need an online evaluator that predicts an objective.
    young: BaselinePolicy | None = None
    young_requires_judge: bool = True

    @property
    def min_lag(self) -> timedelta:
        """The lag a history too short for ``lag`` shrinks to (never below one current
        window, so the newest untested stretch stays out of the reference)."""
        return min(self.lag, self.current)

    @property
    def min_reference(self) -> timedelta:
        """The shortest reference a young project's verdict rests on: the whole reference
        window, or for a long one (a day, for labels that arrive late) the current window's
        length and never under :data:`MIN_YOUNG_REFERENCE`. Shorter is a sliver of a
        project's first hours (see :func:`young_reason`)."""
        return min(self.reference, max(self.current, MIN_YOUNG_REFERENCE))

    @property
    def history_needed(self) -> timedelta:
        """How much data a rolling reference needs before the first verdict: the current
        window, the shortest lag and the shortest reference. The one place this figure is
        computed: the runner refuses a verdict before it (:func:`young_reason`), and the
        README, ``telltale init`` and every page quote it (:mod:`app.web.health`).

        >>> BaselinePolicy.from_selection({"current_window_seconds": 7200,
        ...     "reference_window_seconds": 14400}).history_needed / timedelta(hours=1)
        8.0
        >>> BaselinePolicy.from_selection({"current_window_seconds": 8 * 3600,
        ...     "reference_window_seconds": 24 * 3600}).history_needed / timedelta(hours=1)
        24.0
        """
        return self.current + self.min_lag + self.min_reference

    def first_verdict_at(self, history_start: datetime) -> datetime:
        """When a project whose data begin at ``history_start`` gets its first verdict."""
        return as_utc(history_start) + self.history_needed

    @classmethod
    def from_selection(cls, selection: Mapping[str, Any]) -> BaselinePolicy:
        """The policy a monitor's stored ``selection`` describes (defaults as documented)."""
        cur = timedelta(seconds=int(selection.get("current_window_seconds", 3600)))
        ref = timedelta(seconds=int(selection.get("reference_window_seconds", 6 * 3600)))
        lag_s = selection.get("baseline_lag_seconds")
        lag = cur if lag_s is None else timedelta(seconds=int(lag_s))
        hold_s = selection.get("baseline_hold_seconds")
        hold = lag + ref if hold_s is None else timedelta(seconds=int(hold_s))
        pinned = None
        if selection.get("reference_start") and selection.get("reference_end"):
            pinned = (
                as_utc(datetime.fromisoformat(selection["reference_start"])),
                as_utc(datetime.fromisoformat(selection["reference_end"])),
            )
        young, requires_judge = None, True
        spec = selection.get("young_windows")
        if spec:
            young = cls.from_selection(
                {**{k: v for k, v in selection.items() if k != "young_windows"},
                 "current_window_seconds": spec["current_window_seconds"],
                 "reference_window_seconds": spec["reference_window_seconds"]}
            )  # fmt: skip
            requires_judge = bool(spec.get("requires_judge", True))
        return cls(
            cur, ref, lag, hold, pinned, selection.get("reference_version") or None,
            bool(selection.get("reference_from_first_data")), young, requires_judge,
        )  # fmt: skip

    def rolling_end(self, now: datetime, history_start: datetime | None = None) -> datetime:
        """Where the rolling reference ends: ``lag`` before the current window, or
        ``min_lag`` before it while data starting at ``history_start`` do not reach back
        ``lag`` (the reference keeps rolling; it is never pinned to the oldest data, which
        every run of a young monitor would then share: see :mod:`app.monitors.decision.sequential`).

        >>> from datetime import UTC
        >>> p = BaselinePolicy.from_selection({"current_window_seconds": 7200,
        ...     "reference_window_seconds": 14400, "baseline_lag_seconds": 22 * 3600})
        >>> now = datetime(2025, 3, 3, 12, tzinfo=UTC)
        >>> [(now - p.rolling_end(now, now - timedelta(hours=h))) / timedelta(hours=1)
        ...  for h in (5, 10, 27, 28, 40)]
        [4.0, 4.0, 4.0, 24.0, 24.0]
        """
        lag = self.lag
        if history_start is not None and now - self.current - self.reference - history_start < lag:
            lag = self.min_lag
        return now - self.current - lag


@dataclass(frozen=True)
class BaselineState:
    """What a monitor carries from run to run (persisted as ``monitor_baselines``)."""

    good_until: datetime
    frozen_since: datetime | None = None
    hold_until: datetime | None = None
    degradation_started_at: datetime | None = None
    # How ``degradation_started_at`` was found, for the alert's words: "change point" (the
    # detector's estimate within the window) or "first fired run". Not persisted: the
    # alert's evidence keeps it (app.alerts.lifecycle).
    onset_basis: str | None = None


@dataclass(frozen=True)
class Windows:
    current_start: datetime
    current_end: datetime
    reference_start: datetime
    reference_end: datetime
    mode: BaselineMode = "rolling"
    # Mode "version": the traces each window reads (the current window's dominant version).
    current_version: str | None = None
    reference_version: str | None = None

    @property
    def versions(self) -> tuple[str | None, str | None]:
        """The agent versions the reference and current windows read (None: every version)."""
        if self.mode != "version":
            return None, None
        return self.reference_version, self.current_version


def windows_for(
    policy: BaselinePolicy,
    state: BaselineState | None,
    now: datetime,
    *,
    history_start: datetime | None = None,
) -> Windows:
    """The current window and the reference this run tests it against (``history_start``:
    where the project's data begin, which bounds a rolling reference's lag).

    >>> from datetime import UTC
    >>> now = datetime(2025, 3, 3, 12, tzinfo=UTC)
    >>> p = BaselinePolicy.from_selection({"current_window_seconds": 7200,
    ...                                    "reference_window_seconds": 14400})
    >>> w = windows_for(p, None, now)
    >>> w.mode, w.reference_start.hour, w.reference_end.hour, w.current_start.hour
    ('rolling', 4, 8, 10)
    >>> frozen = BaselineState(good_until=now - timedelta(hours=20), frozen_since=now)
    >>> w = windows_for(p, frozen, now + timedelta(days=1))
    >>> w.mode, w.reference_end == frozen.good_until
    ('frozen', True)
    """
    cur_start = now - policy.current
    if policy.pinned is not None:
        return Windows(cur_start, now, policy.pinned[0], policy.pinned[1], "pinned")
    if policy.first_data and history_start is not None:
        begun = as_utc(history_start)
        return Windows(cur_start, now, begun, begun + policy.reference, "pinned")
    end, mode = policy.rolling_end(now, history_start), "rolling"
    if state is not None and state.frozen_since is not None:
        end, mode = min(end, state.good_until), "frozen"
    elif state is not None and state.hold_until is not None and now < state.hold_until:
        end, mode = min(end, state.good_until), "held"
    start = end - policy.reference
    if history_start is not None and start < as_utc(history_start) < end:
        # A young project's reference is the data there are (young_reason says whether
        # that is enough), never a window reaching before the first trace.
        start = as_utc(history_start)
    return Windows(cur_start, now, start, end, mode)  # type: ignore[arg-type]


def policy_in_force(
    policy: BaselinePolicy,
    history_start: datetime | None,
    now: datetime,
    *,
    judged: Callable[[], bool],
) -> BaselinePolicy:
    """The policy a run uses: ``policy.young`` (shorter windows) while ``policy``'s own
    first verdict is still ahead and, where the young windows ask for it, the project has
    an enabled online evaluator predicting an objective (``judged``, asked only then);
    otherwise ``policy``.

    OUTCOME's day of baseline holds the labels that arrive late for a share of traces; its
    first verdict comes 24 h after the first trace. A judge scores every trace within
    minutes, so two hours hold hundreds of judged traces: with one on, OUTCOME judges on
    2-hour windows against 4 hours of reference from 8 h, then its own windows from 24 h.
    The switch depends on the clock and the project's set-up, never on the data's values.

    >>> from datetime import UTC
    >>> p = BaselinePolicy.from_selection({"current_window_seconds": 8 * 3600,
    ...     "reference_window_seconds": 24 * 3600, "baseline_lag_seconds": 22 * 3600,
    ...     "young_windows": {"current_window_seconds": 7200,
    ...                       "reference_window_seconds": 14400}})
    >>> began = datetime(2025, 3, 3, 0, tzinfo=UTC)
    >>> [policy_in_force(p, began, began + timedelta(hours=h), judged=lambda: j).history_needed
    ...  / timedelta(hours=1) for h, j in ((9, True), (9, False), (25, True))]
    [8.0, 24.0, 24.0]
    """
    young = policy.young
    if young is None or history_start is None or now >= policy.first_verdict_at(history_start):
        return policy
    if policy.young_requires_judge and not judged():
        return policy
    return young


def young_reason(policy: BaselinePolicy, w: Windows, history_start: datetime | None) -> str | None:
    """Why a run gives no verdict yet: its rolling reference holds less than
    :attr:`BaselinePolicy.min_reference` of the project's data (None: it holds enough).

    A reference that covers only part of its window is a project's first hours, thinner
    and often unlike what follows (a young project's FM-1 fired 6.5 h after its first trace
    against 2.5 h of reference and stayed open all day, held against that frozen sliver:
    bench/real_traffic.py). So no verdict comes before a whole reference window of data (or,
    for a day-long one, the current window's length of it), whatever the detector's own
    minimum counts would allow: :meth:`BaselinePolicy.first_verdict_at`.

    >>> from datetime import UTC
    >>> p = BaselinePolicy.from_selection({"current_window_seconds": 7200,
    ...     "reference_window_seconds": 14400, "baseline_lag_seconds": 22 * 3600})
    >>> began = datetime(2025, 3, 3, 0, tzinfo=UTC)
    >>> young_reason(p, windows_for(p, None, began + timedelta(hours=7), history_start=began),
    ...              began)[:46]
    'the reference needs 8 h of data from the first'
    >>> young_reason(p, windows_for(p, None, began + timedelta(hours=8), history_start=began),
    ...              began) is None
    True
    """
    if history_start is None:
        return None
    begun = as_utc(history_start)
    if policy.first_data:  # the reference is the first data: the current window follows it
        if w.current_start >= w.reference_end:
            return None
    elif w.mode not in ("rolling", "held") or (
        w.reference_start >= begun and w.reference_end - w.reference_start >= policy.min_reference
    ):
        return None
    at = policy.first_verdict_at(begun)
    hours = policy.history_needed / timedelta(hours=1)
    return (
        f"the reference needs {hours:g} h of data from the first trace; "
        f"first verdict at {at.strftime('%Y-%m-%d %H:%M')} UTC"
    )


def advance(
    policy: BaselinePolicy,
    state: BaselineState | None,
    *,
    used: Windows,
    now: datetime,
    alert_open: bool,
    degraded_from: datetime | None = None,
    onset: datetime | None = None,
) -> BaselineState:
    """The state after a run that compared ``used`` and left the alert open or not.

    An alert opening freezes the baseline where this run's reference ended and marks when
    the degradation started: ``onset``, the detector's change-point estimate, when it lies
    in the current window; otherwise the first run that fired (``degraded_from``, the first
    run of a ``for`` pending period, or this one), never the window's start, which is hours
    before the change in a long window. Its resolution starts the hold; after the hold the
    rolling baseline takes over again.

    >>> from datetime import UTC
    >>> now = datetime(2025, 3, 3, 12, tzinfo=UTC)
    >>> p = BaselinePolicy.from_selection({"current_window_seconds": 3600,
    ...                                    "reference_window_seconds": 3600})
    >>> s = advance(p, None, used=windows_for(p, None, now), now=now, alert_open=True)
    >>> s.frozen_since == now, s.good_until.hour, s.degradation_started_at.hour, s.onset_basis
    (True, 10, 12, 'first fired run')
    >>> later = now + timedelta(hours=5)
    >>> s = advance(p, s, used=windows_for(p, s, later), now=later, alert_open=False)
    >>> s.frozen_since, s.hold_until.hour, s.good_until.hour
    (None, 19, 10)
    """
    if alert_open:
        if state is not None and state.frozen_since is not None:
            return state
        if onset is not None and used.current_start <= onset <= used.current_end:
            started, basis = onset, "change point"
        else:
            started, basis = (degraded_from or now), "first fired run"
        return BaselineState(
            good_until=used.reference_end,
            frozen_since=now,
            hold_until=None,
            degradation_started_at=started,
            onset_basis=basis,
        )
    if state is not None and state.frozen_since is not None:
        return replace(state, frozen_since=None, hold_until=now + policy.hold)
    if state is not None and state.hold_until is not None and now < state.hold_until:
        return state
    return BaselineState(good_until=used.reference_end)


def describe(state: BaselineState | None, used: Windows) -> dict[str, Any]:
    """The baseline an alert is held against, for its evidence, payload and page."""

    def iso(dt: datetime | None) -> str | None:
        return dt.isoformat().replace("+00:00", "Z") if dt is not None else None

    versions = (
        {"current_version": used.current_version, "reference_version": used.reference_version}
        if used.mode == "version"
        else {}
    )
    return {
        "mode": used.mode,
        **versions,
        "reference_start": iso(used.reference_start),
        "reference_end": iso(used.reference_end),
        "frozen_since": iso(state.frozen_since) if state else None,
        "hold_until": iso(state.hold_until) if state else None,
        "degradation_started_at": iso(state.degradation_started_at) if state else None,
        **({"onset": state.onset_basis} if state and state.onset_basis else {}),
    }
