"""What the silence monitor compares: arrivals now against their usual level, counted in SQL.

:class:`detectors.silence.SilenceDetector` reads counts, never records. Per agent: traces
started in the last 15 minutes and the last hour (both ending :data:`GRACE` before the
run, so traces still in flight are not counted missing), and among the derived ones the
share carrying captured content (an input identity: the first model call's user text) and
the share with a tool span; per embedding stream, vectors; per score name, scores (labels
included), both by arrival time. Against:

* the **same clock window a day and a week earlier** (:data:`REFERENCE_DAYS`, those the
  history reaches) once the project has a day of history before the hour: a day/night
  cycle is then no change, nor, once a week is in, a weekend (the detector asks for a
  fall against each);
* before that, the **hours just before** the hour (up to :data:`YOUNG_REFERENCE`), where
  the detector judges only a near stop (a night can fall below the evening).

Each window is one grouped ``COUNT`` over an index that leads with ``(project_id,
started_at)`` (traces), ``(project_id, name, created_at)`` (scores) or ``(project_id,
stream, created_at)`` (embeddings): the cost follows the windows' traffic, never the
project's history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, exists, func, or_, select
from sqlalchemy.orm import Session

from app.db import as_utc
from app.models import Embedding, EmbeddingStream, Score, Span, Trace
from detectors.records import TOOL_KINDS
from detectors.silence import ArrivalCount

SHORT = timedelta(minutes=15)
LONG = timedelta(hours=1)
# A trace's row exists once its first span is exported (seconds after it starts); a minute
# keeps traces in flight from counting as missing.
GRACE = timedelta(minutes=1)
REFERENCE_DAYS = (1, 7)
DAY = timedelta(days=1)
MIN_GAP = timedelta(minutes=5)
# A trace is derived once no piece of it arrived for the settle time (30 s by default); a
# minute covers that and a derive interval.
SETTLED = timedelta(minutes=1)
YOUNG_REFERENCE = timedelta(hours=3)
MIN_YOUNG_REFERENCE = timedelta(minutes=30)

Window = tuple[datetime, datetime]


def arrival_counts(
    session: Session,
    *,
    project_id: int,
    now: datetime,
    history_start: datetime | None,
    agent: str | None = None,
) -> list[ArrivalCount]:
    """Every comparison the silence detector makes for the project as of ``now``."""
    if history_start is None:
        return []
    end = now - GRACE
    out: list[ArrivalCount] = []
    for span, short_of in ((SHORT, None), (LONG, SHORT)):
        current = (end - span, end)
        refs, same_hour = reference_windows(current, history_start=history_start, long=LONG)
        if not refs:
            continue
        short = short_of.total_seconds() if short_of is not None else None
        common: dict[str, Any] = {
            "window_s": span.total_seconds(), "same_hour": same_hour, "short_of": short,
        }  # fmt: skip
        now_traces = _trace_counts(session, project_id, [current], agent)
        by_ref = [_trace_counts(session, project_id, [w], agent) for w in refs]
        if short_of is None:
            out += _gaps(session, project_id, end, refs, by_ref, agent, same_hour)
        for name in sorted(set(now_traces).union(*by_ref)):
            n, c, t, d = now_traces.get(name, (0, 0, 0, 0))
            each = [r.get(name, (0, 0, 0, 0)) for r in by_ref]
            out.append(ArrivalCount("traffic", name, k=n, **_refs([e[0] for e in each], refs),
                                    **common))  # fmt: skip
            pooled = [sum(e[i] for e in each) for i in range(4)]
            for signal, k, k_ref in (("content", c, pooled[1]), ("tool_spans", t, pooled[2])):
                out.append(
                    ArrivalCount(
                        signal, name, k=k, k_ref=k_ref, kind="share", n=d, n_ref=pooled[3], **common
                    )  # fmt: skip
                )
        if agent is None:
            for signal, counts in (
                ("scores", lambda w: _score_counts(session, project_id, w)),
                ("embeddings", lambda w: _vector_counts(session, project_id, w)),
            ):
                cur, per_ref = counts([current]), [counts([w]) for w in refs]
                for name in sorted(set(cur).union(*per_ref)):
                    out.append(
                        ArrivalCount(signal, name, k=cur.get(name, 0),
                                     **_refs([r.get(name, 0) for r in per_ref], refs), **common)
                    )  # fmt: skip
    backlog = derive_backlog(session, project_id=project_id, now=now)
    if backlog is not None:
        out.append(backlog)
    return out


def derive_backlog(session: Session, *, project_id: int, now: datetime) -> ArrivalCount | None:
    """The project's traces settled but not derived yet: how many, and for how long the
    oldest has waited (None: none waits). The derive queue's partial index serves it."""
    settled = now - SETTLED
    waiting = (
        Trace.project_id == project_id,
        Trace.derived_at.is_(None),
        Trace.derive_error.is_(None),
        Trace.updated_at <= settled,
    )
    n, oldest = session.execute(
        select(func.count(), func.min(Trace.updated_at)).where(*waiting)
    ).one()
    if not n or oldest is None:
        return None
    age = (settled - as_utc(oldest)).total_seconds()
    return ArrivalCount("derive", "derive job", window_s=age, k=int(n), k_ref=0, kind="backlog")


def _gaps(
    session: Session, project_id: int, end: datetime, refs: list[Window],
    by_ref: list[dict[str, tuple[int, int, int, int]]], agent: str | None, same_hour: bool,
) -> list[ArrivalCount]:  # fmt: skip
    """Per agent whose last trace came :data:`MIN_GAP` or more before ``end`` (but inside
    the short window): no arrival over the gap, against the short window's references."""
    q = (
        select(Trace.agent, func.max(Trace.started_at))
        .where(
            Trace.project_id == project_id,
            Trace.source == "production",
            Trace.started_at >= end - SHORT,
            Trace.started_at < end,
        )
        .group_by(Trace.agent)
    )
    if agent is not None:
        q = q.where(Trace.agent == agent)
    out = []
    for name, last in session.execute(q):
        if last is None:
            continue
        gap = end - as_utc(last)
        if gap < MIN_GAP:
            continue
        counts = [r.get(name or "(no agent)", (0, 0, 0, 0))[0] for r in by_ref]
        out.append(
            ArrivalCount(
                "traffic",
                name or "(no agent)",
                window_s=gap.total_seconds(),
                k=0,
                same_hour=same_hour,
                **_refs(counts, refs),
            )  # fmt: skip
        )
    return out


def _refs(counts: list[int], windows: list[Window]) -> dict[str, Any]:
    """The reference counts as :class:`ArrivalCount` takes them: the first, then the rest."""
    pairs = [(k, (b - a).total_seconds()) for k, (a, b) in zip(counts, windows, strict=True)]
    return {"k_ref": pairs[0][0], "ref_s": pairs[0][1], "more_refs": tuple(pairs[1:])}


def reference_windows(
    current: Window, *, history_start: datetime, long: timedelta
) -> tuple[list[Window], bool]:
    """The windows ``current`` is compared with, and whether they are the same clock hours
    of earlier days (else the hours just before the long window: a young project).

    >>> from datetime import UTC
    >>> t = datetime(2026, 12, 5, 12, tzinfo=UTC)
    >>> refs, same = reference_windows((t - timedelta(minutes=15), t),
    ...     history_start=t - timedelta(days=2, hours=3), long=timedelta(hours=1))
    >>> same, [a.day for a, _ in refs]
    (True, [4])
    >>> refs, same = reference_windows((t - timedelta(minutes=15), t),
    ...     history_start=t - timedelta(hours=5), long=timedelta(hours=1))
    >>> same, [(a.hour, b.hour) for a, b in refs]
    (False, [(8, 11)])
    """
    start, end = current
    days = [
        (start - d * DAY, end - d * DAY)
        for d in REFERENCE_DAYS
        if end - long - d * DAY >= history_start
    ]
    if days:
        return days, True
    ref_end = end - long
    ref_start = max(history_start, ref_end - YOUNG_REFERENCE)
    if ref_end - ref_start < MIN_YOUNG_REFERENCE:
        return [], False
    return [(ref_start, ref_end)], False


def _in_any(column: Any, windows: Iterable[Window]) -> Any:
    return or_(*(and_(column >= a, column < b) for a, b in windows))


def _trace_counts(
    session: Session, project_id: int, windows: list[Window], agent: str | None
) -> dict[str, tuple[int, int, int, int]]:
    """Per agent: (traces, derived with content, derived with a tool span, derived)."""
    derived = Trace.derived_at.is_not(None)
    has_tool = exists().where(
        Span.project_id == Trace.project_id,
        Span.trace_id == Trace.trace_id,
        or_(Span.kind.in_(sorted(TOOL_KINDS)), Span.tool_name.is_not(None)),
    )
    q = (
        select(
            Trace.agent,
            func.count(),
            func.sum(case((and_(derived, Trace.input_hash.is_not(None)), 1), else_=0)),
            func.sum(case((and_(derived, has_tool), 1), else_=0)),
            func.sum(case((derived, 1), else_=0)),
        )
        .where(
            Trace.project_id == project_id,
            Trace.source == "production",
            _in_any(Trace.started_at, windows),
        )
        .group_by(Trace.agent)
    )
    if agent is not None:
        q = q.where(Trace.agent == agent)
    return {
        a or "(no agent)": (int(n), int(c or 0), int(t or 0), int(d or 0))
        for a, n, c, t, d in session.execute(q)
    }


def _score_counts(session: Session, project_id: int, windows: list[Window]) -> dict[str, int]:
    q = (
        select(Score.name, func.count())
        .where(Score.project_id == project_id, _in_any(Score.created_at, windows))
        .group_by(Score.name)
    )
    return {name: int(n) for name, n in session.execute(q)}


def _vector_counts(session: Session, project_id: int, windows: list[Window]) -> dict[str, int]:
    """Per stream (one index range per stream: PostgreSQL cannot skip-scan the stream)."""
    counts: dict[str, int] = defaultdict(int)
    streams = session.scalars(
        select(EmbeddingStream.name).where(EmbeddingStream.project_id == project_id)
    )
    for stream in list(streams):
        n = session.scalar(
            select(func.count())
            .select_from(Embedding)
            .where(
                Embedding.project_id == project_id,
                Embedding.stream == stream,
                _in_any(Embedding.created_at, windows),
            )
        )
        counts[stream] += int(n or 0)
    return dict(counts)
