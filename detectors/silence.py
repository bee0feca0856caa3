r"""Silence: traffic, or a signal of it, that stops or falls far below its usual level.

When an agent dies, a deploy breaks its exporter or content capture is turned off, every
other detector sees less data and goes quiet (``insufficient_data``): the failure that
matters most reads as calm. This detector reads arrival counts, never records, and asks
per agent (or stream, or score name) whether what arrives now is far below what usually
arrives. The service counts (:mod:`app.monitors.windows.arrivals`); each
:class:`ArrivalCount` is one comparison.

* **counts** (traces per agent, vectors per stream, scores per name): ``k`` arrivals in
  the current window of ``w`` seconds against ``k_ref`` in a reference period of ``w_ref``
  seconds. Under :math:`H_0: \lambda \ge g\,\lambda_{ref}` the conditional test of two
  Poisson rates (Przyborowski and Wilenski, 1940) gives :math:`p = P(X \le k)`,
  :math:`X \sim \mathrm{Bin}(k + k_{ref}, \pi)`, :math:`\pi = g w / (g w + w_{ref})`: exact,
  and the reference's own noise is in it. The references are the same clock window a day
  and a week earlier (a day/night cycle, and a weekend after the first week, are then no
  change); the comparison is significant only against each of them (an intersection-union
  test: ``p`` is the largest), with ``g`` = ``null_ratio`` (0.9) and an effect floor: the
  count is at most ``max_ratio`` (0.6) of each reference's. A young project (no day of
  history yet) is compared with the hours just before, which a night can fall below:
  ``g`` = ``young_null_ratio`` (0.3, a night's level) and a floor of ``young_max_ratio``
  (0.15): only a near stop is judged there.
* **shares** (traces carrying captured content, or tool spans, among the traces that
  keep coming): ``k`` of ``n`` now against the reference share :math:`s_{ref}`;
  :math:`p = P(X \le k)`, :math:`X \sim \mathrm{Bin}(n, g\,s_{ref})` with ``g`` =
  ``max_share_ratio`` (0.5). A share is a ratio of two things that rise and fall together:
  no day/night adjustment is needed.

The **derive job falling behind** is a static rule beside them (``max_derive_lag_s``, 15
minutes): traces settled longer than that and not derived yet (``kind`` "backlog"); every
detector reading derived fields waits on it.

A comparison is made only where the reference expects enough (``min_expected``
arrivals in the window, or ``min_reference_share``); all made are Bonferroni-combined at
``alpha``, so on stationary traffic the detector fires at most at rate ``alpha``. A long
window's deficit counts only while the short window still shows one (empty, or below at
p <= 0.01: ``short_of``): once traffic is back, an alert resolves within a short window instead of
waiting for the long window to fill again. A **gap** since an agent's last trace shorter
than the short window is compared too (``k = 0`` over the gap): a stop is seen as soon as
the silence is long enough to be significant, not only once a whole short window is empty.

Examples
--------
>>> quiet = ArrivalCount("traffic", "support", 900.0, 0, 240, 3 * 900.0, same_hour=True)
>>> r = SilenceDetector(alpha=1e-4).test([], [quiet])
>>> r.fired, r.evidence["summary"]
(True, 'traffic from support stopped: 0 traces in the last 15 min (80 expected, from the same hours of earlier days)')
>>> usual = ArrivalCount("traffic", "support", 900.0, 75, 240, 3 * 900.0, same_hour=True)
>>> SilenceDetector(alpha=1e-4).test([], [usual]).fired
False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from scipy import stats

from detectors.params import Parameters, param
from detectors.result import DetectorResult

FAILURE_MODE = "SILENCE"
SHORT_DEFICIT_P = 0.01
UNITS = {"traffic": "traces", "scores": "scores", "embeddings": "vectors"}
SHARE_WORDS = {"content": "captured content", "tool_spans": "tool spans"}


@dataclass(frozen=True)
class ArrivalCount:
    """One comparison. ``kind`` "count": ``k`` arrivals in ``window_s`` seconds against
    ``k_ref`` in ``ref_s`` seconds; "share": ``k`` of ``n`` traces carry the signal,
    against ``k_ref`` of ``n_ref``. ``same_hour``: the reference is the same clock hours
    of earlier days; ``short_of``: the window this one extends (its deficit counts only
    while that one's does)."""

    signal: str  # traffic | embeddings | scores | content | tool_spans
    scope: str  # the agent, stream or score name
    window_s: float
    k: int
    k_ref: int  # "count": the first reference's count; "share": the pooled references'
    ref_s: float = 0.0
    same_hour: bool = False
    # "count": further references, (count, seconds) each (a week back beside a day back).
    more_refs: tuple[tuple[int, float], ...] = ()
    kind: str = "count"
    n: int = 0
    n_ref: int = 0
    short_of: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.signal, self.scope


@dataclass(frozen=True, kw_only=True)
class SilenceDetector(Parameters):
    """Arrivals far below their usual level, per agent, stream and score name."""

    needs: ClassVar[tuple[str, ...]] = ("arrivals",)
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False
    # One alert per agent, stream, score name (and the derive job): ``evidence["groups"]``.
    alerts_per_group: ClassVar[bool] = True

    null_ratio: float = param(0.9, gt=0.0, le=1.0)
    max_ratio: float = param(0.6, gt=0.0, lt=1.0)
    young_null_ratio: float = param(0.3, gt=0.0, le=1.0)
    young_max_ratio: float = param(0.15, gt=0.0, lt=1.0)
    share_null_ratio: float = param(0.9, gt=0.0, le=1.0)
    max_share_ratio: float = param(0.5, gt=0.0, lt=1.0)
    min_expected: float = param(5.0, ge=1.0)
    min_reference_share: float = param(0.2, gt=0.0, le=1.0)
    min_share_traces: int = param(10, ge=1)
    max_derive_lag_s: float = param(900.0, gt=0.0)

    def test(
        self,
        reference: Sequence[ArrivalCount],
        current: Sequence[ArrivalCount],
        *,
        now: float | None = None,
    ) -> DetectorResult:
        """``current`` holds the comparisons (``reference`` is unused: each carries its own)."""
        rows = [row for c in current if (row := self._row(c)) is not None]
        if not rows:
            return DetectorResult.insufficient(
                FAILURE_MODE, "no agent, stream or score with enough usual arrivals to judge"
            )
        # The short window's deficit must be clear, not a dip: a 15-minute count at 60% of
        # its usual level by chance (4% of windows at 80 traces/h) would let the hour's
        # deficit, still there for ~45 minutes after traffic returns, reopen the alert.
        deficit = {
            (r["signal"], r["scope"], r["window_s"])
            for r in rows
            if r["below"] and (r["p_value"] <= SHORT_DEFICIT_P or r["k"] == 0)
        }
        for r in rows:
            short = r.pop("short_of")
            r["counts"] = short is None or (r["signal"], r["scope"], short) in deficit
        judged = [r for r in rows if r["counts"]]
        m = len(rows)
        for r in rows:
            r["p_adjusted"] = min(1.0, r["p_value"] * m)
            r["fired"] = bool(r["counts"] and r["below"] and r["p_adjusted"] <= self.alpha)
        fired = [r for r in rows if r["fired"]]
        p_min = min((r["p_adjusted"] for r in judged), default=1.0)
        evidence: dict[str, Any] = {
            "comparisons": rows, "n_comparisons": m, "groups": _groups(rows),
        }  # fmt: skip
        shown = _worst_per_key(fired) if fired else []
        evidence["silent"] = [{"signal": r["signal"], "scope": r["scope"]} for r in shown]
        if fired:
            evidence["summary"] = "; ".join(describe(r) for r in shown)
        closest = min(rows, key=lambda r: r["p_adjusted"])
        evidence["closest"] = f"{describe(closest)}, p={closest['p_adjusted']:.2g}"
        return DetectorResult.on_log_p(
            FAILURE_MODE, p_value=p_min, alpha=self.alpha, fired=bool(fired), evidence=evidence
        )

    def _row(self, c: ArrivalCount) -> dict[str, Any] | None:
        base = {"signal": c.signal, "scope": c.scope, "window_s": c.window_s,
                "same_hour": c.same_hour, "short_of": c.short_of, "k": c.k}  # fmt: skip
        if c.kind == "backlog":  # a static rule: no test, the age against its bound
            behind = c.window_s >= self.max_derive_lag_s
            return {**base, "kind": "backlog", "p_value": 0.0 if behind else 1.0,
                    "below": behind}  # fmt: skip
        if c.kind == "share":
            if c.n < self.min_share_traces or c.n_ref <= 0:
                return None
            share_ref = c.k_ref / c.n_ref
            if share_ref < self.min_reference_share:
                return None
            p = float(stats.binom.cdf(c.k, c.n, self.share_null_ratio * share_ref))
            return {**base, "kind": "share", "n": c.n, "share": c.k / c.n,
                    "reference_share": share_ref, "p_value": p,
                    "below": c.k / c.n <= self.max_share_ratio * share_ref}  # fmt: skip
        refs = [(k, s) for k, s in ((c.k_ref, c.ref_s), *c.more_refs) if s > 0]
        if not refs:
            return None
        expected = min(k * c.window_s / s for k, s in refs)
        if expected < self.min_expected:
            return None
        g = self.null_ratio if c.same_hour else self.young_null_ratio
        floor = self.max_ratio if c.same_hour else self.young_max_ratio
        p = max(
            float(stats.binom.cdf(c.k, c.k + k, g * c.window_s / (g * c.window_s + s)))
            for k, s in refs
        )
        return {**base, "kind": "count", "expected": expected, "p_value": p,
                "below": c.k <= floor * expected}  # fmt: skip


GROUP_LABEL = {"scores": "score", "embeddings": "stream", "derive": "derive"}


def _groups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One verdict per agent (its traffic, content and tool spans together), stream, score
    name and the derive job, as the service raises one alert per group
    (``app.alerts.lifecycle.record_groups``). ``fired`` "" is the monitor's severity."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault((GROUP_LABEL.get(r["signal"], "agent"), r["scope"]), []).append(r)
    out = []
    for (label, scope), mine in sorted(by.items()):
        fired = [r for r in mine if r["fired"]]
        said = "; ".join(describe(r) for r in _worst_per_key(fired)) if fired else ""
        out.append({
            "labels": {label: scope},
            "fired": "" if fired else None,
            "clean": True,
            "summary": (said[:1].upper() + said[1:] + ".") if said else "",
        })  # fmt: skip
    return out


def _worst_per_key(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        key = (r["signal"], r["scope"])
        if key not in best or r["p_adjusted"] < best[key]["p_adjusted"]:
            best[key] = r
    return sorted(best.values(), key=lambda r: r["p_adjusted"])


def _minutes(seconds: float) -> str:
    minutes = seconds / 60.0
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.0f} h"


def describe(row: dict[str, Any]) -> str:
    """One comparison in words: what stopped or fell, where, how far."""
    span = _minutes(row["window_s"])
    if row["kind"] == "backlog":
        return (
            f"the derive job is behind: {row['k']} traces wait for their input identity, "
            f"decision and embeddings, the oldest for {span}"
        )
    if row["kind"] == "share":
        what = SHARE_WORDS.get(row["signal"], row["signal"])
        verb = "stopped" if row["k"] == 0 else "fell"
        return (
            f"{what} from {row['scope']} {verb}: {row['share']:.0%} of {row['n']} traces in "
            f"the last {span} carry it ({row['reference_share']:.0%} usually)"
        )
    unit = UNITS.get(row["signal"], "arrivals")
    unit = unit[:-1] if row["k"] == 1 else unit
    where = {
        "traffic": f"traffic from {row['scope']}",
        "embeddings": f"vectors on stream {row['scope']}",
        "scores": f"scores named {row['scope']}",
    }.get(row["signal"], f"{row['signal']} of {row['scope']}")
    verb = "stopped" if row["k"] == 0 else "fell"
    usual = "the same hours of earlier days" if row["same_hour"] else "the hours before"
    return (
        f"{where} {verb}: {row['k']} {unit} in the last {span} "
        f"({row['expected']:.0f} expected, from {usual})"
    )
