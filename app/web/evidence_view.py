"""The alert page's evidence as people read it: example traces, tables of the evidence's
records and its plain values (the raw JSON stays behind a toggle on the page).

Names and values are the detectors' own keys, written for people: :data:`PLAIN` gives the
words for the keys that read as code (``mu0``, ``still_degraded``, ``counted_traces``),
yes and no for true and false, and every time one way (``2026-03-02 09:15 UTC``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from app.alerts.mode_wording import fmt_number, mapping, records


def examples(evidence: Any) -> list[str]:
    """Example current trace ids the evidence names, in its order, without repeats."""
    ev = mapping(evidence)
    ids: list[str] = [str(t) for t in ev.get("example_trace_ids") or [] if isinstance(t, str)]
    for row in records(ev.get("most_inconsistent_inputs")):
        ids += [str(t) for t in row.get("trace_ids") or [] if isinstance(t, str)]
    return list(dict.fromkeys(ids))[:10]


FIRST_COLUMNS = (
    "name", "tool", "agent", "agent_version", "task_type", "stream", "signal", "test", "scope",
    "before", "after", "reference_rate", "rate", "reference_mean", "current_mean", "calls",
    "n_reference", "n_current", "fired",
)  # fmt: skip


PLAIN = {
    "still_degraded": "still worse than the baseline",
    "resolve_alpha": "level an open alert stays open at",
    "counted_traces": "traces counted",
    "coverage_counted_traces": "traces counted for coverage",
    "reference_used": "compared with the reference",
    "mu0": "reference mean",
    "sigma0": "reference spread",
    "mean_current": "current mean",
    "n_reference": "reference count",
    "n_current": "current count",
    "n_reference_used": "reference count used",
    "p_value": "p-value",
    "p_holm": "p-value after Holm",
    "p_adjusted": "p-value adjusted",
    "alpha": "level (alpha)",
    "effect_ok": "change large enough",
    "most_drifted_stream": "stream that moved most",
    "bonferroni_streams": "streams tested",
    "centroid_shift_z": "centre shift (z)",
    "change_started_at": "change began",
    "judge_before": "judge pass rate before",
    "judge_after": "judge pass rate after",
    "true_positive": "judge passes of successes",
    "false_positive": "judge passes of failures",
    "stability_p": "p-value that the judge's error rates moved",
    "labels_lean_p": "p-value of the labels' fall",
}
# Values that are the detectors' own words for how they counted.
VALUE_WORDS = {"records": "the loaded sample", "whole window": "every trace of the window"}


def plain(key: str) -> str:
    """The words for an evidence key: :data:`PLAIN`, else the key with spaces."""
    return PLAIN.get(key, key.replace("_", " "))


def tables(evidence: Any) -> list[tuple[str, str, list[str], list[list[Any]]]]:
    """The evidence's lists of records as (title, shared, columns, rows) for the alert page;
    ``shared`` names the values every row has in common, said once above the table."""
    ev = mapping(evidence)
    out: list[tuple[str, str, list[str], list[list[Any]]]] = []
    for key, value in ev.items():
        rows: Sequence[Mapping[str, Any]] = []
        if isinstance(value, list):
            rows = records(value)
        elif (
            isinstance(value, Mapping)
            and value
            and all(isinstance(v, Mapping) for v in value.values())
        ):
            rows = [{"name": k, **v} for k, v in value.items()]
        if not rows or key == "baseline":
            continue
        columns: list[str] = []
        for r in rows:
            columns += [c for c, v in r.items() if c not in columns and _scalar(v)]
        # Who or what first, then before/after: stored JSON (jsonb) may sort keys by name.
        columns.sort(key=lambda c: FIRST_COLUMNS.index(c) if c in FIRST_COLUMNS else 99)
        same = [
            c
            for c in columns
            if len(rows) > 1 and c != "name" and len({repr(r.get(c)) for r in rows}) == 1
        ]
        columns = [c for c in columns if c not in same]
        body = [[_cell(r.get(c), key=c) for c in columns] for r in rows]
        shared = "; ".join(f"{plain(c)}: {_cell(rows[0].get(c), key=c)}" for c in same)
        out.append((plain(key), shared, [plain(c) for c in columns], body))
    return out


def scalars(evidence: Any) -> list[tuple[str, Any]]:
    """The evidence's plain values (numbers, words) as (name, value) rows."""
    ev = mapping(evidence)
    return [
        (plain(k), _cell(v, key=k))
        for k, v in ev.items()
        if _scalar(v) and k not in ("summary", "window_sample")
    ]


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _cell(v: Any, *, key: str = "") -> Any:
    """A value as a person reads it.

    >>> [_cell(v) for v in (True, False, None, 0.000123456, "2026-03-02T09:15:00+00:00")]
    ['yes', 'no', '', '0.0001235', '2026-03-02 09:15 UTC']
    >>> _cell("records", key="counted_traces")
    'the loaded sample'
    """
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return fmt_number(v, 4)
    if v is None:
        return ""
    if isinstance(v, str):
        if key.endswith("counted_traces"):
            return VALUE_WORDS.get(v, v)
        return time_words(v) or v
    return v


def time_words(v: str) -> str | None:
    """An ISO time as ``2026-03-02 09:15 UTC``; None for any other text."""
    if len(v) < 16 or v[4:5] != "-" or "T" not in v:
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.strftime("%Y-%m-%d %H:%M UTC")
