"""Input and output text embeddings of derived traces, written as native ones are.

One MiniLM model per process, loaded on first use (``pipelines.embedding.text``: the
bundled all-MiniLM-L6-v2, offline; CUDA when present), fed the whole batch's texts in one
call so it batches them by length; each distinct text is embedded once, and the last
20,000 distinct texts' vectors are kept (:class:`VectorCache`). Vectors go to the streams ``<agent>.input`` and
``<agent>.output`` with ``trace_id`` set, through :func:`app.ingest.store.write_events`
(the API's own write path): a stream another encoder already fixed at another width
refuses them by name, and the event id hashes the text, so re-deriving an unchanged trace
writes nothing twice.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np
from sqlalchemy import Engine

from app.ingest.events import ValidEvent
from app.ingest.store import write_events

log = logging.getLogger("telltale.derive")
MINILM_NAME = "all-MiniLM-L6-v2"
MAX_STREAM = 128


class TextEncoder(Protocol):
    dim: int

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...


class SharedMiniLM:
    """The process's MiniLM (``pipelines.embedding.text.embed_texts``: loaded once per device)."""

    dim = 384
    name = MINILM_NAME

    def __init__(self, device: str = "auto", batch_size: int = 128) -> None:
        self.device = device
        self.batch_size = batch_size

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        from pipelines.embedding.text import embed_texts  # torch loads only when used

        return embed_texts(texts, device=self.device, batch_size=self.batch_size)


@dataclass(frozen=True)
class TextItem:
    project_id: int
    trace_id: str
    agent: str
    side: str  # input | output
    text: str
    # The trace's start: the vector's time in FM-6's stream windows (derived later, or in a
    # backlog, it still belongs to the traffic it came from, not to the derive run).
    at: datetime | None = None

    @property
    def stream(self) -> str:
        return f"{self.agent}.{self.side}"

    @property
    def event_id(self) -> str:
        digest = hashlib.sha256(self.text.encode()).hexdigest()[:16]
        return f"derive:{self.trace_id}:{self.side}:{digest}"


class VectorCache:
    """The vectors of the last :data:`CACHED_TEXTS` distinct texts, per encoder (LRU).

    Repeated inputs are what FM-3 and FM-5 look for, and agents repeat their answers: a
    text seen before costs a dict lookup, not a forward pass (the encoder dominates the
    job's time on CPU, bench/text_embed.py). 20,000 MiniLM vectors are 30 MB.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
            return vector

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def put(self, key: tuple[str, str], vector: np.ndarray) -> None:
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)


CACHED_TEXTS = 20_000
CACHE = VectorCache(CACHED_TEXTS)


def embed_items(encoder: TextEncoder, items: list[TextItem]) -> np.ndarray:
    """Unit vectors, one row per item, in order: each distinct text not cached is
    embedded once, all of them in one encoder call."""
    if not items:
        return np.empty((0, encoder.dim), np.float32)
    model = str(getattr(encoder, "name", type(encoder).__name__))
    keys = [(model, hashlib.sha256(i.text.encode()).hexdigest()) for i in items]
    found = {k: v for k in set(keys) if (v := CACHE.get(k)) is not None}
    todo = {k: i.text for k, i in zip(keys, items, strict=True) if k not in found}
    if todo:
        fresh = np.asarray(encoder.embed_texts(list(todo.values())), dtype=np.float32)
        for k, vector in zip(todo, fresh, strict=True):
            found[k] = vector
            CACHE.put(k, vector)
    return np.stack([found[k] for k in keys])


def write_vectors(engine: Engine, *, items: list[TextItem], vectors: np.ndarray, model: str) -> int:
    """Store the vectors per project; return how many were new."""
    by_project: dict[int, list[ValidEvent]] = {}
    for item, vector in zip(items, vectors, strict=True):
        if not item.agent or len(item.stream) > MAX_STREAM:
            continue
        row = {
            "stream": item.stream,
            "model": model,
            "dim": int(vector.shape[0]),
            "vector": vector.astype("<f4").tobytes(),
            "trace_id": item.trace_id,
            "sample_id": None,
        }
        if item.at is not None:
            row["created_at"] = item.at
        events = by_project.setdefault(item.project_id, [])
        events.append(ValidEvent(len(events), item.event_id, "embedding", row, vector))
    written = 0
    for project_id, events in by_project.items():
        result = write_events(engine, project_id=project_id, events=events)
        written += result.accepted
        for rejection in result.rejected[:3]:
            log.warning("derived embedding refused (project %s): %s", project_id, rejection.error)
    return written
