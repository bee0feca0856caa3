"""First-hours guards: static checks against a project's first hour, until the calibrated
monitors have the history they need.

The calibrated monitors give no verdict before a whole reference window of data (8 h, and
40 h for OUTCOME's day-long baseline): a tool broken from a project's second hour went
unreported for 10 h. Any peer's static threshold pages on that. These guards compare the
last window (20 minutes by default) with the project's first hour and fire only on a gross
change, at the monitor's level of significance as well:

* **a tool failing in most traces**: of the traces calling it, the share in which a call
  of it failed is at least ``min_failing`` (0.5) and ``min_rise`` (0.2) above the first
  hour's; one-sided Fisher exact test;
* **the agent failing in most traces**: the same for trace status;
* **latency several times the first hour's**: the median at least ``latency_factor`` (3)
  times the first hour's; one-sided Mann-Whitney U.

Each needs ``min_traces`` (10) traces in both windows. The sub-tests are Bonferroni-combined
at ``alpha``. The service runs it only until the calibrated monitors speak (it steps aside
then, :mod:`app.monitors.plan`), and its alerts say they come from these guards.

Examples
--------
>>> from detectors.records import Step, TraceRecord
>>> def traces(start, n, failing):
...     return [TraceRecord(f"t{start}-{i}", "bot", started_at=start + i, ended_at=start + i + 5.0,
...                         steps=(Step(0, "tool", "search", tool_name="search",
...                                     status="error" if i < failing * n else "ok"),))
...             for i in range(n)]
>>> r = FirstHoursDetector(alpha=1e-4).test(traces(0, 80, 0.05), traces(5000, 27, 0.7))
>>> r.fired, r.evidence["summary"]
(True, 'tool search failed in 70% of 27 traces calling it (5% in the first hour)')
>>> FirstHoursDetector(alpha=1e-4).test(traces(0, 80, 0.05), traces(5000, 27, 0.1)).fired
False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from detectors.outcome_values import latencies, tool_calls
from detectors.params import Parameters, TraceSources, param
from detectors.records import DetectorResult, TraceRecord, TraceWindow

FAILURE_MODE = "EARLY"


@dataclass(frozen=True, kw_only=True)
class FirstHoursDetector(TraceSources, Parameters):
    """Gross failures against the first hour: tools, traces, latency."""

    needs: ClassVar[tuple[str, ...]] = ("steps", "tool_steps")
    window_counts: ClassVar[tuple[str, ...]] = ()
    checks_silence: ClassVar[bool] = False

    min_failing: float = param(0.5, gt=0.0, le=1.0)
    min_rise: float = param(0.2, ge=0.0, le=1.0)
    latency_factor: float = param(3.0, gt=1.0)
    min_traces: int = param(10, ge=2)

    def test(
        self, reference: TraceWindow, current: TraceWindow, *, now: float | None = None
    ) -> DetectorResult:
        ref, cur = self.of_sources(reference), self.of_sources(current)
        if min(len(ref), len(cur)) < self.min_traces:
            return DetectorResult.insufficient(
                FAILURE_MODE,
                f"{len(ref)} traces in the first hour and {len(cur)} now "
                f"(the guards need {self.min_traces} in each)",
            )
        found = [*self._tools(ref, cur), self._traces(ref, cur), self._latency(ref, cur)]
        rows = [r for r in found if r is not None]
        if not rows:
            return DetectorResult.insufficient(FAILURE_MODE, "nothing to compare")
        m = len(rows)
        for r in rows:
            r["p_adjusted"] = min(1.0, r["p_value"] * m)
            r["fired"] = bool(r["effect_ok"] and r["p_adjusted"] <= self.alpha)
        fired = sorted((r for r in rows if r["fired"]), key=lambda r: r["p_adjusted"])
        p_min = min(r["p_adjusted"] for r in rows)
        evidence: dict[str, Any] = {"guards": rows, "n_reference": len(ref), "n_current": len(cur)}
        if fired:
            evidence["summary"] = "; ".join(describe(r) for r in fired)
        closest = min(rows, key=lambda r: r["p_adjusted"])
        evidence["closest"] = f"{describe(closest)}, p={closest['p_adjusted']:.2g}"
        return DetectorResult.on_log_p(
            FAILURE_MODE, p_value=p_min, alpha=self.alpha, fired=bool(fired), evidence=evidence
        )

    def _rate(self, guard: str, name: str, kc: int, nc: int, kr: int, nr: int) -> dict[str, Any]:
        p = float(stats.fisher_exact([[kc, nc - kc], [kr, nr - kr]], alternative="greater").pvalue)
        after, before = kc / nc, kr / nr
        return {
            "guard": guard, "name": name, "before": before, "after": after, "n_current": nc,
            "n_reference": nr, "p_value": p,
            "effect_ok": after >= self.min_failing and after - before >= self.min_rise,
        }  # fmt: skip

    def _tools(
        self, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]
    ) -> list[dict[str, Any]]:
        now, first = tool_calls(cur), tool_calls(ref)
        return [
            self._rate("tool", tool, *now[tool], *first.get(tool, (0, 0)))
            for tool in sorted(now)
            if now[tool][1] >= self.min_traces and first.get(tool, (0, 0))[1] >= self.min_traces
        ]

    def _traces(self, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]) -> dict[str, Any]:
        kc = sum(t.status == "error" for t in cur)
        kr = sum(t.status == "error" for t in ref)
        return self._rate("traces", "traces", kc, len(cur), kr, len(ref))

    def _latency(
        self, ref: Sequence[TraceRecord], cur: Sequence[TraceRecord]
    ) -> dict[str, Any] | None:
        x_ref, x_cur = latencies(ref), latencies(cur)
        if min(x_ref.size, x_cur.size) < self.min_traces:
            return None
        before, after = float(np.median(x_ref)), float(np.median(x_cur))
        if np.ptp(np.concatenate([x_ref, x_cur])) == 0.0:
            return None
        p = float(stats.mannwhitneyu(x_cur, x_ref, alternative="greater").pvalue)
        return {
            "guard": "latency", "name": "latency_s", "before": before, "after": after,
            "n_current": int(x_cur.size), "n_reference": int(x_ref.size), "p_value": p,
            "effect_ok": before > 0 and after >= self.latency_factor * before,
        }  # fmt: skip


def describe(row: dict[str, Any]) -> str:
    """A guard in words, against the first hour."""
    if row["guard"] == "tool":
        return (
            f"tool {row['name']} failed in {row['after']:.0%} of {row['n_current']} traces "
            f"calling it ({row['before']:.0%} in the first hour)"
        )
    if row["guard"] == "traces":
        return (
            f"{row['after']:.0%} of {row['n_current']} traces failed "
            f"({row['before']:.0%} in the first hour)"
        )
    return (
        f"median latency {row['after']:.3g} s, {row['after'] / max(row['before'], 1e-9):.1f}x "
        f"the first hour's {row['before']:.3g} s"
    )
