"""One settings object, read from ``TELLTALE_*`` environment variables.

Only ``app/`` reads settings; it passes plain values down to ``detectors/`` and ``pipelines/``.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.ingest.limits import IngestLimits

_LIMITS = IngestLimits()


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TELLTALE_", extra="ignore")

    database_url: str = "sqlite:///./telltale.db"
    # Request limits: a body over max_request_bytes gets 413, a batch over
    # max_events_per_batch gets 413 too (it is a size limit, not a malformed envelope).
    max_request_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    max_events_per_batch: int = Field(default=5000, gt=0)
    max_header_bytes: int = Field(default=32 * 1024, gt=0)
    # Per-event limits (app/ingest/limits.py says why these defaults): an event past one is
    # refused by name in the 200 answer, the rest of its batch still lands.
    max_attribute_depth: int = Field(default=_LIMITS.max_attribute_depth, gt=0, le=128)
    max_attributes_bytes: int = Field(default=_LIMITS.max_attributes_bytes, gt=0)
    max_embedding_dim: int = Field(default=_LIMITS.max_embedding_dim, gt=0)
    # Backpressure: at most this many write transactions run at once, and at most
    # max_pending_writes batches wait; beyond that the answer is 429 + Retry-After.
    max_concurrent_writes: int = Field(default=4, gt=0)
    max_pending_writes: int = Field(default=32, ge=0)
    retry_after_seconds: int = Field(default=1, gt=0)
    db_pool_size: int = Field(default=8, gt=0)
    # Scheduler: runs in the API process by default; `telltale scheduler` runs it alone.
    scheduler_enabled: bool = True
    # Where uploaded media is kept for the labeling UI, and for how long.
    media_dir: str = "./media"
    media_retention_days: int = Field(default=30, gt=0)
    # Upload limits per image: bytes (413) and pixels from the header (413, before decoding).
    media_max_bytes: int = Field(default=20 * 1024 * 1024, gt=0)
    media_max_pixels: int = Field(default=40_000_000, gt=0)
    # A media job whose embedding failed this many times (transient errors) is dead-lettered.
    embed_max_attempts: int = Field(default=5, gt=0)
    # Embed worker: open_clip model name, and a local checkpoint path or pretrained tag.
    embed_model: str = "ViT-B-32"
    embed_pretrained: str | None = None
    embed_device: str = "auto"
    embed_batch_size: int = Field(default=256, gt=0)
    # Secret used to sign session cookies of the web UI. Refused at its default outside local.
    secret_key: str = "change-me-local-only"
    environment: str = "local"
    public_url: str = "http://127.0.0.1:8000"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    def check_secrets(self) -> None:
        if self.environment != "local" and self.secret_key == "change-me-local-only":
            raise ValueError(
                "TELLTALE_SECRET_KEY must be set when TELLTALE_ENVIRONMENT is not 'local'"
            )


@lru_cache
def get_settings() -> Settings:
    return Settings()
