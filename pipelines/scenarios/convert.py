"""Native ingest events -> the detectors' records (the mapping ``app/`` does from rows).

Benches and tests use this to feed detectors without a database: ``events_to_records``
builds :class:`~detectors.records.TraceRecord` values, ``embedding_stream`` one stream's
vectors and times, and ``as_of`` hides what would not be stored yet at a given time (late
labels), which is how a scheduled monitor sees the data.
"""

from __future__ import annotations

import base64
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from detectors.records import Score, Step, TraceRecord

_HEADS: dict[int, str] = {}
_BASES: dict[str, float] = {}


def iso(t: float) -> str:
    """Epoch seconds as ISO-8601 UTC with milliseconds and a ``Z``."""
    secs, milli = divmod(int(round(t * 1000.0)), 1000)
    head = _HEADS.get(secs)
    if head is None:
        if len(_HEADS) > 200_000:  # formatting is the hot path of the generator
            _HEADS.clear()
        head = _HEADS[secs] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    return f"{head}.{milli:03d}Z"


def epoch(value: str | float | int | None, default: float = 0.0) -> float:
    """ISO-8601 string (``Z`` or offset) or number -> float epoch seconds."""
    if value is None:
        return default
    if isinstance(value, int | float):
        return float(value)
    if len(value) == 24 and value[19] == "." and value[23] == "Z":  # our own format, fast
        base = _BASES.get(value[:19])
        if base is None:
            if len(_BASES) > 200_000:
                _BASES.clear()
            base = _BASES[value[:19]] = datetime.fromisoformat(value[:19] + "+00:00").timestamp()
        return base + int(value[20:23]) / 1000.0
    return datetime.fromisoformat(value).timestamp()


def vector_of(body: Mapping[str, Any]) -> np.ndarray:
    """The float32 vector of an embedding body (``vector`` list or ``vector_b64``)."""
    if body.get("vector") is not None:
        return np.asarray(body["vector"], dtype=np.float32)
    dtype = np.dtype(body.get("dtype", "float32")).newbyteorder("<")
    raw = base64.b64decode(body["vector_b64"])
    return np.frombuffer(raw, dtype=dtype).astype(np.float32)


def events_to_records(events: Iterable[Mapping[str, Any]]) -> list[TraceRecord]:
    """Group trace, span, score and embedding events into records, sorted by start time.

    Steps are ordered by ``step_index`` then start time; scores without ``created_at``
    take the trace's end time; ``<agent>.input`` / ``<agent>.output`` embeddings with a
    ``trace_id`` become the record's input / output embedding. Spans, scores and
    embeddings of unknown traces are dropped.
    """
    traces: dict[str, Mapping[str, Any]] = {}
    spans: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    scores: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    embs: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    for ev in events:
        body, kind = ev["body"], ev["type"]
        if kind == "trace":
            traces[body["trace_id"]] = body
        elif kind == "span":
            spans[body["trace_id"]].append(body)
        elif kind == "score":
            scores[body["trace_id"]].append(body)
        elif kind == "embedding" and body.get("trace_id"):
            role = str(body["stream"]).rsplit(".", 1)[-1]
            if role in ("input", "output"):
                embs[body["trace_id"]][role] = vector_of(body)
    records = []
    for tid, tb in traces.items():
        ended = epoch(tb.get("ended_at"))
        steps = sorted(
            (_step(sb) for sb in spans.get(tid, ())), key=lambda s: (s.index, s.started_at)
        )
        sc = tuple(
            Score(
                name=str(b["name"]),
                value=float(b["value"]),
                kind=str(b.get("kind", "proxy")),
                source=str(b.get("source", "online")),
                created_at=epoch(b.get("created_at"), ended),
            )
            for b in scores.get(tid, ())
        )
        emb = embs.get(tid, {})
        records.append(
            TraceRecord(
                trace_id=tid,
                agent=str(tb["agent"]),
                agent_version=str(tb.get("agent_version") or ""),
                started_at=epoch(tb.get("started_at")),
                ended_at=ended,
                status=str(tb.get("status", "ok")),
                input_hash=tb.get("input_hash"),
                entry_point=tb.get("entry_point"),
                source=str(tb.get("source") or "production"),
                counterfactual_of=tb.get("counterfactual_of"),
                attributes=dict(tb.get("attributes") or {}),
                steps=tuple(steps),
                scores=sc,
                input_embedding=emb.get("input"),
                output_embedding=emb.get("output"),
            )
        )
    records.sort(key=lambda r: (r.started_at, r.trace_id))
    return records


def _step(b: Mapping[str, Any]) -> Step:
    conf = b.get("confidence")
    return Step(
        index=int(b.get("step_index") or 0),
        kind=str(b.get("kind", "step")),
        name=str(b.get("name", "")),
        status=str(b.get("status", "ok")),
        tool_name=b.get("tool_name"),
        error_type=b.get("error_type"),
        started_at=epoch(b.get("started_at")),
        ended_at=epoch(b.get("ended_at")),
        confidence=None if conf is None else float(conf),
        attributes=dict(b.get("attributes") or {}),
    )


def embedding_stream(
    events: Iterable[Mapping[str, Any]], stream: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(vectors (n, dim) float32, times (n,) float64 epoch s)`` of one stream, by time."""
    vecs, times = [], []
    for ev in events:
        if ev["type"] == "embedding" and ev["body"].get("stream") == stream:
            vecs.append(vector_of(ev["body"]))
            times.append(epoch(ev["body"].get("created_at")))
    if not vecs:
        return np.zeros((0, 0), dtype=np.float32), np.zeros(0)
    t = np.asarray(times, dtype=np.float64)
    order = np.argsort(t, kind="stable")
    return np.stack(vecs)[order].astype(np.float32), t[order]


def as_of(records: Sequence[TraceRecord], now: float) -> list[TraceRecord]:
    """What a monitor sees at ``now``: traces ended by then, scores created by then."""
    out = []
    for r in records:
        if r.ended_at > now:
            continue
        if any(s.created_at > now for s in r.scores):
            r = replace(r, scores=tuple(s for s in r.scores if s.created_at <= now))
        out.append(r)
    return out


def window(records: Sequence[TraceRecord], lo: float, hi: float) -> list[TraceRecord]:
    """Records that started in ``[lo, hi)`` (``records`` sorted by start time)."""
    starts = [r.started_at for r in records]
    a, b = np.searchsorted(starts, [lo, hi], side="left")
    return list(records[int(a) : int(b)])
