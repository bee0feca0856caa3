"""The words for each failure mode's evidence: one function per mode, in :data:`WORDING`.

Each reads the detector's evidence and says what changed, before -> after and where, or
gives None where the evidence does not carry what it words (an older shape: the sentence
then falls back, :func:`app.alerts.sentences.sentence`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from detectors.outcome_judged import describe_stable

ARROW = "→"


def _n(x: Any, digits: int = 3) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "?"
    return f"{x:.{digits}g}"


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _pct(x: Any) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "?"
    return f"{x:.0%}" if abs(x) >= 0.01 or x == 0 else f"{x:.1%}"


def _rows(value: Any) -> list[Mapping[str, Any]]:
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _fired_subtest(ev: Mapping[str, Any], name: str) -> bool:
    sub = _map(ev.get("sub_tests") or ev.get("subtests")).get(name)
    return bool(_map(sub).get("fired"))


def _fm1(ev: Mapping[str, Any]) -> str | None:
    parts = []
    if _is_num(ev.get("compounding_ratio")) and (
        _fired_subtest(ev, "compounding") or "sub_tests" not in ev
    ):
        parts.append(_compounding(ev, "", "steps", depth=True))
    if _is_num(ev.get("tool_compounding_ratio")) and _fired_subtest(ev, "tool_compounding"):
        parts.append(_compounding(ev, "tool_", "tool calls", depth=False))
    if _fired_subtest(ev, "coherence_illusion"):
        change = ev.get("coherence_illusion_change")
        parts.append(
            f"confidence stays high after a low-confidence step ({_n(ev.get('coherence_illusion'))}"
            + (f", up {_n(change)}" if change is not None else "")
            + ")"
        )
    return "; ".join(parts) or None


def _compounding(ev: Mapping[str, Any], key: str, unit: str, *, depth: bool) -> str:
    """FM-1's finding for one family of steps (``unit``; ``key`` prefixes its evidence, as
    the detector writes it): failures after a failure, against independent errors."""
    text = (
        f"after a failed step, later {unit} of the same trace fail "
        f"{_n(ev[f'{key}compounding_ratio'], 2)}× as often as independent errors predict"
    )
    if _is_num(ev.get(f"{key}reference_ratio")):
        text += f" (reference {_n(ev[f'{key}reference_ratio'], 2)}×)"
    if depth and ev.get(f"{key}compounding_begins_at_depth") is not None:
        text += f", from step depth {ev[f'{key}compounding_begins_at_depth']}"
    if ev.get(f"{key}steps_after_error") is not None:
        text += f", over {ev[f'{key}steps_after_error']} {unit} that followed an error"
    return text


def _fm2(ev: Mapping[str, Any]) -> str | None:
    parts = []
    wrong = [r for r in _rows(ev.get("available_but_wrong")) if r.get("effect_ok")]
    if wrong and (_fired_subtest(ev, "available_but_wrong") or "sub_tests" not in ev):
        wrong.sort(key=lambda r: r.get("p_value", 1.0))
        top = wrong[0]
        text = (
            f"tool {top.get('tool')} returns wrong results with a success status in "
            f"{_pct(top.get('rate'))} of {top.get('calls')} calls ({_pct(top.get('reference_rate'))} "
            "before)"
        )
        others = [
            f"{r.get('tool')} {_pct(r.get('reference_rate'))} {ARROW} {_pct(r.get('rate'))}"
            for r in wrong[1:3]
        ]
        if others:
            text += "; also " + ", ".join(others)
        parts.append(text)
    lift = ev.get("cascade_lift")
    if _is_num(lift) and (_fired_subtest(ev, "cascade_lift") or "sub_tests" not in ev):
        text = (
            f"after a failed tool call, what follows up to the next tool call fails {_n(lift, 3)}× "
            "as often as after a good one"
        )
        if _is_num(ev.get("reference_lift")):
            text += f" ({_n(ev['reference_lift'], 3)}× before)"
        tools = _rows(ev.get("cascade_tools"))
        if tools:
            t = max(tools, key=lambda r: r.get("cascades", 0))
            text += (
                f"; cascades start most at {t.get('tool')} ({t.get('cascades')} of "
                f"{t.get('failures')} failures)"
            )
        parts.append(text)
    if _fired_subtest(ev, "latency_quality"):
        parts.append(
            "slower tool calls now return worse results (latency-quality correlation "
            f"{_n(ev.get('reference_latency_quality_rho'), 2)} {ARROW} "
            f"{_n(ev.get('latency_quality_rho'), 2)})"
        )
    return "; ".join(parts) or None


def _fm3(ev: Mapping[str, Any]) -> str | None:
    d = ev.get("decision_disagreement")
    if not _is_num(d):
        return None
    text = (
        f"the same input now gets a different decision {_pct(d)} of the time "
        f"({_pct(ev.get('reference_decision_disagreement'))} before), over "
        f"{ev.get('groups', '?')} repeated inputs"
    )
    worst = _rows(ev.get("most_inconsistent_inputs"))
    if worst:
        w = worst[0]
        decisions = " / ".join(str(k) for k in _map(w.get("decisions")))
        where = " ".join(str(x) for x in (w.get("agent"), w.get("agent_version")) if x)
        text += f"; e.g. {where} decided {decisions} for one input"
    return text


def _fm4(ev: Mapping[str, Any]) -> str | None:
    est, ref = ev.get("estimated_accuracy"), ev.get("reference_accuracy")
    cov = ev.get("label_coverage")
    parts = []
    if (
        _is_num(est)
        and _is_num(ref)
        and (
            _fired_subtest(ev, "estimated_accuracy")
            or _fired_subtest(ev, "estimated_accuracy_recent")
            or "sub_tests" not in ev
        )
    ):
        text = f"estimated accuracy fell {_n(ref, 2)} {ARROW} {_n(est, 2)}"
        if ev.get("estimate_scope") == "recent half":
            text += " in the window's recent half"
        interval = ev.get("estimated_accuracy_interval")
        if isinstance(interval, list) and len(interval) == 2:
            text += f" (interval {_n(interval[0], 2)}–{_n(interval[1], 2)})"
        n, labels = ev.get("n_current_unlabeled_estimated"), ev.get("n_current_labeled")
        if n is not None:
            source = "trace features" if ev.get("estimator") == "trace_features" else "confidences"
            text += f", {n} unlabeled traces estimated from {source}"
        if labels is not None:
            text += f" beside {labels} labels"
        if cov is not None:
            text += f"; label coverage {_pct(cov)}"
        parts.append(text)
    at_age = ev.get("coverage_at_age")
    if isinstance(at_age, Mapping) and (
        _fired_subtest(ev, "label_coverage_fall")
        or _fired_subtest(ev, "label_coverage_fall_recent")
    ):
        hours = at_age.get("age_s", 0) / 3600
        parts.append(
            f"labels stopped arriving: {_pct(at_age.get('current'))} of traces labeled within "
            f"{_n(hours, 2)} h, {_pct(at_age.get('reference'))} before"
        )
    if parts:
        return "; ".join(parts)
    if _is_num(cov):
        cohorts = _rows(ev.get("cohorts_needing_labels"))
        text = f"label coverage is {_pct(cov)}"
        if cohorts:
            c = max(cohorts, key=lambda r: r.get("n_traces", 0))
            where = " ".join(str(c[k]) for k in ("agent", "agent_version", "task_type") if c.get(k))
            text += (
                f"; {len(cohorts)} cohorts need labels, the largest {where} "
                f"({c.get('n_traces')} traces, {_pct(c.get('coverage'))} labeled)"
            )
        return text
    return None


def _fm5(ev: Mapping[str, Any]) -> str | None:
    parts = []
    for r in _rows(ev.get("coverage")):
        if r.get("fired"):
            parts.append(
                f"{r.get('agent')}: {_pct(r.get('outside_fraction'))} of production inputs lie "
                f"outside what the eval set covers ({_pct(r.get('reference_outside_fraction'))} "
                "before)"
            )
    for r in _rows(ev.get("gaps")):
        if r.get("fired"):
            parts.append(
                f"{r.get('agent')} {r.get('agent_version') or ''}".rstrip()
                + f": eval success {_pct(r.get('eval_success'))} vs production "
                f"{_pct(r.get('production_success'))} (gap {_n(r.get('reference_gap'), 2)} "
                f"{ARROW} {_n(r.get('gap'), 2)})"
            )
    for r in _rows(ev.get("trends")):
        if r.get("fired") and isinstance(r.get("summary"), str):
            parts.append(r["summary"])
    return "; ".join(parts) or None


def _moved(stream: Mapping[str, Any]) -> float:
    """How far a stream moved: its statistic over its threshold, else its -log10 p."""
    stat, threshold, p = (stream.get(k) for k in ("statistic", "threshold", "p_value"))
    if isinstance(stat, (int, float)) and isinstance(threshold, (int, float)) and threshold > 0:
        return float(stat) / float(threshold)
    return -math.log10(max(float(p), 1e-300)) if isinstance(p, (int, float)) else 0.0


def _fm6(ev: Mapping[str, Any]) -> str | None:
    streams = _map(ev.get("streams"))
    shifts = _map(ev.get("centroid_shift"))
    # The stream that moved most first: its statistic over its threshold (stored JSON may
    # order the streams by name, which once put a stream at 1.25x before one at 9x).
    fired = sorted(
        (name for name, s in streams.items() if _map(s).get("fired")),
        key=lambda name: -_moved(_map(streams.get(name))),
    )
    if not fired and isinstance(ev.get("most_drifted_stream"), str):
        fired = [ev["most_drifted_stream"]]
    if not fired:
        return None
    parts = []
    for name in fired[:3]:
        s, shift = _map(streams.get(name)), _map(shifts.get(name))
        if "mean_similarity_reference" in s:
            before, after = s["mean_similarity_reference"], s.get("mean_similarity_current")
        else:
            before, after = shift.get("mu0"), shift.get("mean_current")
        text = f"stream {name} moved"
        if before is not None and after is not None:
            text += f": similarity to the reference centre {_n(before, 2)} {ARROW} {_n(after, 2)}"
        if s.get("n_current") is not None:
            text += f" on {s['n_current']} vectors ({s.get('n_reference', '?')} reference)"
        parts.append(text)
    if len(fired) > 3:
        parts.append(f"and {len(fired) - 3} more streams")
    text = "; ".join(parts)
    if ev.get("silent") is True:
        text += "; silent: the error-rate monitors are quiet"
    elif ev.get("error_rate_alerts_open"):
        ids = ", ".join(f"#{i}" for i in ev["error_rate_alerts_open"])
        text += f"; error-rate alerts {ids} are open too"
    return text


def _fm7(ev: Mapping[str, Any]) -> str | None:
    rose, fell = _rows(ev.get("proxy_rose")), _rows(ev.get("true_fell"))
    parts = []
    if rose or fell:
        up = ", ".join(
            f"{r.get('name')} {_n(r.get('reference_mean'), 2)} {ARROW} {_n(r.get('current_mean'), 2)}"
            for r in rose[:3]
        )
        down = ", ".join(
            f"{r.get('name')} {_n(r.get('reference_mean'), 2)} {ARROW} {_n(r.get('current_mean'), 2)}"
            for r in fell[:3]
        )
        if up and down:
            parts.append(f"proxies rose ({up}) while true objectives fell ({down})")
        elif down:
            parts.append(f"true objectives fell ({down})")
        else:
            parts.append(f"proxies rose ({up})")
    diversity = _map(_map(ev.get("subtests")).get("diversity"))
    if diversity.get("fired"):
        top = _map(diversity.get("top_decision_current"))
        text = (
            f"decisions are less varied (entropy {_n(diversity.get('entropy_reference'), 2)} "
            f"{ARROW} {_n(diversity.get('entropy_current'), 2)}"
        )
        if top:
            text += f", {top.get('decision')} now {_pct(top.get('share'))}"
        parts.append(text + ")")
    counterfactual = _map(_map(ev.get("subtests")).get("counterfactual"))
    if counterfactual.get("fired") and not parts and isinstance(ev.get("summary"), str):
        return str(ev["summary"])
    return "; ".join(parts) or None


def _outcome_row(row: Mapping[str, Any]) -> str:
    before, after, signal = row.get("before"), row.get("after"), row.get("signal")
    name = row.get("name")
    if signal == "objective" and row.get("method") == "judge_stable":
        return describe_stable(dict(row), arrow=ARROW)
    if signal == "objective" and row.get("method") == "ppi":
        # The judge corrected by the labels (detectors.outcome_judged): say both, and how
        # far the judge agrees with the labels.
        agreement = row.get("agreement")
        if agreement is None:
            trust = "judge agreement unknown"
        elif row.get("agreement_measure") == "accuracy":
            trust = f"judge agreement {agreement:.2f}"
        else:
            trust = f"judge mean absolute error {_n(agreement)}"
        return (
            f"{name} estimated {_n(before)} {ARROW} {_n(after)} (judge {row.get('judge')} on "
            f"{row.get('n_judged_current'):,} traces, corrected by {row.get('n_current'):,} "
            f"labels; {trust})"
        )
    if signal == "objective":
        return (
            f"{name} fell {_n(before)} {ARROW} {_n(after)} on {row.get('n_current')} labels "
            f"({row.get('n_reference')} reference)"
        )
    if signal == "tool_error_rate":
        return (
            f"tool {name} failed in {_pct(before)} {ARROW} {_pct(after)} of traces calling it "
            f"({row.get('n_current')} traces)"
        )
    if signal == "trace_error_rate":
        return f"failed traces {_pct(before)} {ARROW} {_pct(after)} ({row.get('n_current')} traces)"
    if signal == "loop_rate":
        return (
            f"traces with a tool loop {_pct(before)} {ARROW} {_pct(after)} "
            f"({row.get('n_current'):,} traces)"
        )
    if signal == "latency_s":
        return f"median latency {_n(before)} s {ARROW} {_n(after)} s"
    if signal == "steps_per_trace":
        return f"median steps per trace {_n(before)} {ARROW} {_n(after)}"
    if signal == "tokens_per_trace" and _is_num(before) and _is_num(after):
        return f"median tokens per trace {before:,.0f} {ARROW} {after:,.0f}"
    if signal == "cost_per_trace" and _is_num(before) and _is_num(after):
        return f"median cost per trace ${before:.4g} {ARROW} ${after:.4g}"
    return f"{name} {_n(before)} {ARROW} {_n(after)}"


def _outcome(ev: Mapping[str, Any]) -> str | None:
    best: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for row in _rows(ev.get("objectives")) + _rows(ev.get("operations")):
        key = (row.get("signal"), row.get("name"))
        p = row.get("p_adjusted", 1.0)
        if row.get("fired") and (key not in best or p < best[key].get("p_adjusted", 1.0)):
            best[key] = row
    rows = sorted(best.values(), key=lambda r: r.get("p_adjusted", 1.0))
    return "; ".join(_outcome_row(r) for r in rows[:3]) or None


def _silence(ev: Mapping[str, Any]) -> str | None:
    """The detector's own words (detectors.silence.describe), worst first."""
    summary = ev.get("summary")
    return summary if isinstance(summary, str) and ev.get("silent") else None


def _first_hours(ev: Mapping[str, Any]) -> str | None:
    """The guard's words, said to come from the first-hours guards (no calibrated baseline)."""
    summary = ev.get("summary")
    if not isinstance(summary, str) or not any(r.get("fired") for r in _rows(ev.get("guards"))):
        return None
    return f"first-hours guard: {summary}"


def _judge(ev: Mapping[str, Any]) -> str | None:
    """The judges whose agreement fell, in the detector's words (detectors.judge_drift)."""
    fell = [r for r in _rows(ev.get("judges")) if r.get("fired")]
    return "; ".join(str(r["summary"]) for r in fell[:2]) or None


def _issues(ev: Mapping[str, Any]) -> str | None:
    """The new or rising failure issues, in the detector's words (detectors.issue_rates)."""
    summary = ev.get("summary")
    fired = any(r.get("fired") for r in _rows(ev.get("issues")))
    return summary if isinstance(summary, str) and fired else None


WORDING: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "FM-1": _fm1,
    "FM-2": _fm2,
    "FM-3": _fm3,
    "FM-4": _fm4,
    "FM-5": _fm5,
    "FM-6": _fm6,
    "FM-7": _fm7,
    "OUTCOME": _outcome,
    "SILENCE": _silence,
    "EARLY": _first_hours,
    "JUDGE": _judge,
    "ISSUES": _issues,
}


# Shared with the sentence and the alert page's evidence tables (app.web.evidence_view).
fmt_number, mapping, records = _n, _map, _rows
