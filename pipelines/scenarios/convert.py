"""Native ingest events -> the detectors' records (the mapping ``app/`` does from rows).

Benches and tests use this to feed detectors without a database: ``events_to_records``
builds :class:`~detectors.records.TraceRecord` values, ``embedding_stream`` one stream's
vectors and times, and ``as_of`` hides what would not be stored yet at a given time (late
labels), which is how a scheduled monitor sees the data.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from detectors.records import TraceRecord, from_rows
from detectors.stored_times import epoch_seconds

_HEADS: dict[int, str] = {}


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
    return epoch_seconds(value, default)


def vector_of(body: Mapping[str, Any]) -> np.ndarray:
    """The float32 vector of an embedding body (``vector`` list or ``vector_b64``)."""
    if body.get("vector") is not None:
        return np.asarray(body["vector"], dtype=np.float32)
    dtype = np.dtype(body.get("dtype", "float32")).newbyteorder("<")
    raw = base64.b64decode(body["vector_b64"])
    return np.frombuffer(raw, dtype=dtype).astype(np.float32)


def events_to_records(events: Iterable[Mapping[str, Any]]) -> list[TraceRecord]:
    """Group trace, span, score and embedding events into records, sorted by start time.

    The event bodies are the stored rows: :func:`detectors.records.from_rows` maps them, as
    it maps the database rows for a monitor (step order, scores without ``created_at``
    taking the trace's end time, ``<agent>.input`` / ``<agent>.output`` embeddings with a
    ``trace_id`` becoming the record's input / output embedding, rows of unknown traces
    dropped).
    """
    traces: list[Mapping[str, Any]] = []
    spans: list[Mapping[str, Any]] = []
    scores: list[Mapping[str, Any]] = []
    embeddings: list[Mapping[str, Any]] = []
    for ev in events:
        body, kind = ev["body"], ev["type"]
        if kind == "trace":
            traces.append(body)
        elif kind == "span":
            spans.append(body)
        elif kind == "score":
            scores.append(body)
        elif kind == "embedding" and body.get("trace_id"):
            # decode only the per-trace streams; from_rows keeps those of the trace's agent
            if str(body["stream"]).endswith((".input", ".output")):
                embeddings.append(
                    {
                        "trace_id": body["trace_id"],
                        "stream": body["stream"],
                        "vector": vector_of(body),
                    }
                )
    return from_rows(traces, spans, scores, embeddings)


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
