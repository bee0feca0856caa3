"""The alert page's evidence as people read it: example traces, tables of the evidence's
records and its plain values (the raw JSON stays behind a toggle on the page)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
        shared = "; ".join(f"{c.replace('_', ' ')}: {_cell(rows[0].get(c))}" for c in same)
        columns = [c for c in columns if c not in same]
        body = [[_cell(r.get(c)) for c in columns] for r in rows]
        out.append((key.replace("_", " "), shared, columns, body))
    return out


def scalars(evidence: Any) -> list[tuple[str, Any]]:
    """The evidence's plain values (numbers, words) as (name, value) rows."""
    ev = mapping(evidence)
    return [
        (k.replace("_", " "), _cell(v))
        for k, v in ev.items()
        if _scalar(v) and k not in ("summary", "window_sample")
    ]


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _cell(v: Any) -> Any:
    if isinstance(v, float) and not isinstance(v, bool):
        return fmt_number(v, 4)
    return "" if v is None else v
