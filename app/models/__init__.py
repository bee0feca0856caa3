"""All models, imported here so ``Base.metadata`` knows every table (Alembic reads it)."""

from app.models.base import Base
from app.models.core import (
    ApiKey,
    Embedding,
    EmbeddingStream,
    IngestEvent,
    Project,
    Score,
    Span,
    Trace,
)

__all__ = [
    "ApiKey",
    "Base",
    "Embedding",
    "EmbeddingStream",
    "IngestEvent",
    "Project",
    "Score",
    "Span",
    "Trace",
]
