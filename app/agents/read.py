"""Sums of the rollups over a range, per agent (and version, tool or score name), in SQL.

Every read is bounded by the project and ``start <= bucket < end`` (the tables' keys lead
with both), sums what the rollup job counted (:mod:`app.rollups.facts`: production traffic,
every environment together) and groups by a few dimensions. Latency sketches are read per
row and added into one dense count matrix per group (:func:`detectors.rules.sketch.accumulate`),
from which any quantile of the range is a cumulative sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import ScoreRollup, ToolRollup, TraceRollup
from detectors.rules import sketch

Key = tuple[str, ...]


@dataclass(frozen=True)
class Scope:
    """What a read covers: a project's buckets ``[start, end)``, of one agent or all."""

    project_id: int
    start: int
    end: int
    agent: str | None = None


@dataclass(frozen=True)
class TraceSums:
    """A group's trace rollups summed over the range."""

    traces: int = 0
    error_traces: int = 0
    loop_traces: int = 0
    labeled_traces: int = 0
    tokens: float = 0.0
    tokens_sq: float = 0.0
    cost: float = 0.0
    cost_sq: float = 0.0
    first_bucket: int | None = None
    last_bucket: int | None = None


_TRACE_SUMS = ("traces", "error_traces", "loop_traces", "labeled_traces", "tokens", "tokens_sq",
               "cost", "cost_sq")  # fmt: skip


def _where(t: Any, scope: Scope) -> list[Any]:
    out = [t.project_id == scope.project_id, t.bucket >= scope.start, t.bucket < scope.end]
    if scope.agent is not None:
        out.append(t.agent == scope.agent)
    return out


def _cols(t: Any, by: Sequence[str]) -> list[Any]:
    return [getattr(t, c) for c in by]


def trace_sums(
    session: Session, scope: Scope, *, by: Sequence[str] = ("agent",),
) -> dict[Key, TraceSums]:  # fmt: skip
    """Per group of ``by`` (columns of ``trace_rollups``): the summed counts and the first
    and last bucket with traffic."""
    t = TraceRollup
    sums = [func.sum(getattr(t, c)) for c in _TRACE_SUMS]
    q = (select(*_cols(t, by), *sums, func.min(t.bucket), func.max(t.bucket))
         .where(*_where(t, scope)).group_by(*_cols(t, by)))  # fmt: skip
    out = {}
    g = len(by)
    for r in session.connection().execute(q):
        vals = [float(v or 0) for v in r[g : g + len(_TRACE_SUMS)]]
        counts = {k: (int(v) if i < 4 else v) for i, (k, v) in enumerate(zip(_TRACE_SUMS, vals, strict=True))}
        out[tuple(str(x) for x in r[:g])] = TraceSums(
            **counts, first_bucket=int(r[-2]), last_bucket=int(r[-1])  # type: ignore[arg-type]
        )
    return out


def tool_sums(
    session: Session, scope: Scope, *, by: Sequence[str] = ("agent",),
) -> dict[Key, tuple[int, int]]:  # fmt: skip
    """Per group of ``by`` (columns of ``tool_rollups``): ``(calls, errors)``."""
    t = ToolRollup
    q = (select(*_cols(t, by), func.sum(t.calls), func.sum(t.errors))
         .where(*_where(t, scope)).group_by(*_cols(t, by)))  # fmt: skip
    g = len(by)
    return {tuple(str(x) for x in r[:g]): (int(r[g] or 0), int(r[g + 1] or 0))
            for r in session.connection().execute(q)}  # fmt: skip


def score_sums(
    session: Session, scope: Scope, *, by: Sequence[str] = ("agent", "name"),
) -> dict[Key, tuple[int, int, float]]:  # fmt: skip
    """Per group of ``by`` (columns of ``score_rollups``): ``(scores, passed, total)``."""
    t = ScoreRollup
    q = (select(*_cols(t, by), func.sum(t.scores), func.sum(t.passed), func.sum(t.total))
         .where(*_where(t, scope)).group_by(*_cols(t, by)))  # fmt: skip
    g = len(by)
    return {tuple(str(x) for x in r[:g]): (int(r[g] or 0), int(r[g + 1] or 0), float(r[g + 2] or 0))
            for r in session.connection().execute(q)}  # fmt: skip


@dataclass(frozen=True)
class Latencies:
    """Dense sketch counts, one row per group or step, columns from key ``key_lo``."""

    key_lo: int
    counts: np.ndarray

    def quantile(self, q: float) -> np.ndarray:
        return sketch.quantiles(self.counts, self.key_lo, q)

    def merged(self) -> Latencies:
        """All rows as one (the whole range's histogram)."""
        return Latencies(self.key_lo, self.counts.sum(axis=0, keepdims=True))


def latencies(
    session: Session, scope: Scope, *, rows_of: Any, n_rows: int,
    by: Sequence[str] = ("agent",), table: Any = TraceRollup,
) -> Latencies:  # fmt: skip
    """Each row's sketches added into row ``rows_of(group values, bucket)`` of a dense
    matrix (a row per group, or per chart step); ``None`` drops the row."""
    t = table
    q = select(*_cols(t, by), t.bucket, t.latency_sketch).where(
        *_where(t, scope), t.latency_sketch != b""
    )
    blobs: list[bytes] = []
    rows: list[int] = []
    g = len(by)
    # A plain loop over ~24,000 rows a week: no per-row tuple or str() it does not need.
    for r in _binary_rows(session, q):
        i = rows_of(r[:g], r[g])
        if i is not None:
            blobs.append(r[-1])
            rows.append(i)
    lo, dense = sketch.accumulate(blobs, rows=rows, n_rows=n_rows)
    return Latencies(lo, dense)


def _binary_rows(session: Session, q: Any) -> list[Any]:
    """The rows of ``q``; on PostgreSQL read in binary. A week of one project's sketches is
    ~13 MB of ``bytea``: as text (hex) psycopg took 120-155 ms to fetch them, in binary
    35-40 ms (bench/agent_pages.py's history)."""
    conn = session.connection()
    if conn.dialect.name != "postgresql":
        return list(conn.execute(q))  # Core rows: the ORM's row processing cost 20 ms here
    compiled = q.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    cur = conn.connection.driver_connection.cursor(binary=True)  # type: ignore[union-attr]
    cur.execute(str(compiled), compiled.params)
    return list(cur.fetchall())


def totals(by_version: dict[Key, TraceSums]) -> dict[Key, TraceSums]:
    """Sums keyed ``(agent, version)`` added up per agent (one read serves both).

    >>> totals({("a", "1"): TraceSums(traces=2, first_bucket=600, last_bucket=900),
    ...         ("a", "2"): TraceSums(traces=3, first_bucket=300, last_bucket=600)})[("a",)].traces
    5
    """
    out: dict[Key, TraceSums] = {}
    for key, s in by_version.items():
        agent = key[:1]
        prev = out.get(agent)
        if prev is None:
            out[agent] = s
            continue
        firsts = [b for b in (prev.first_bucket, s.first_bucket) if b is not None]
        lasts = [b for b in (prev.last_bucket, s.last_bucket) if b is not None]
        out[agent] = TraceSums(
            **{k: getattr(prev, k) + getattr(s, k) for k in _TRACE_SUMS},
            first_bucket=min(firsts, default=None), last_bucket=max(lasts, default=None),
        )  # fmt: skip
    return out


def per_bucket(
    session: Session, scope: Scope, *, table: Any, columns: Sequence[str], by: Sequence[str] = (),
    where: Sequence[Any] = (),
) -> list[tuple[int, Key, list[float]]]:  # fmt: skip
    """``(bucket, group, [sum of each column])`` of ``table``'s rows in scope, per bucket and
    group of ``by``: an agent's page folds one such read into its steps, its totals and its
    per-version or per-name sums, rather than reading the range once for each."""
    t = table
    cols = _cols(t, by)
    q = (select(t.bucket, *cols, *[func.sum(getattr(t, c)) for c in columns])
         .where(*_where(t, scope), *where).group_by(t.bucket, *cols))  # fmt: skip
    g = len(by)
    return [(int(r[0]), tuple(r[1 : 1 + g]), [float(v or 0) for v in r[1 + g :]])
            for r in session.connection().execute(q)]  # fmt: skip
