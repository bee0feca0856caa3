"""Per-event input limits, one frozen value passed from ``Settings`` down to the checkers.

The defaults here are the defaults of the matching ``TELLTALE_*`` settings
(docs/guides/native-api.md, "Input limits"); library callers (tests, benches) that pass
nothing get the same limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class IngestLimits:
    # Arrays/maps an attribute value may nest (OTLP arrayValue / kvlistValue count too).
    # Far below where serialisers give up (orjson and pydantic-core at ~255 levels).
    max_attribute_depth: int = 32
    # One attributes map as JSON: room for an LLM prompt and completion, not a data dump.
    max_attributes_bytes: int = 1024 * 1024
    # Vector length; the widest common text embedding models are 3072-4096 wide.
    max_embedding_dim: int = 4096
    # Spans one trace may hold (app/ingest/trace_size.py): the derive job, the monitors'
    # windows and the trace page read a trace whole.
    max_spans_per_trace: int = 10_000

    @classmethod
    def from_settings(cls, settings: Any) -> IngestLimits:
        return cls(
            max_attribute_depth=settings.max_attribute_depth,
            max_attributes_bytes=settings.max_attributes_bytes,
            max_embedding_dim=settings.max_embedding_dim,
            max_spans_per_trace=settings.max_spans_per_trace,
        )
