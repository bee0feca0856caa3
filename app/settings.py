"""One settings object, read from ``TELLTALE_*`` environment variables.

Only ``app/`` reads settings; it passes plain values down to ``detectors/`` and ``pipelines/``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.alerts.outbound import allow_entry
from app.ingest.limits import IngestLimits

MIN_SECRET_CHARS = 32
_LIMITS = IngestLimits()


class Settings(BaseSettings):
    # An empty variable is an unset one (compose writes `${VAR:-}` as ""), so
    # TELLTALE_SECRET_KEY= keeps the generated secret rather than being refused as short.
    model_config = SettingsConfigDict(env_prefix="TELLTALE_", extra="ignore", env_ignore_empty=True)

    database_url: str = "sqlite:///./telltale.db"
    # Where scheduled monitor runs read their windows (a streaming replica of
    # database_url); runs, alerts and monitor state are still written to database_url.
    read_database_url: str | None = None
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
    # Spans one trace may hold; later spans of a full trace are refused by name
    # (app/ingest/trace_size.py): the derive job, windows and trace page read a trace whole.
    max_spans_per_trace: int = Field(default=_LIMITS.max_spans_per_trace, gt=0, le=1_000_000)
    # Backpressure: at most this many write transactions run at once, and at most
    # max_pending_writes batches wait; beyond that the answer is 429 + Retry-After.
    max_concurrent_writes: int = Field(default=4, gt=0)
    max_pending_writes: int = Field(default=32, ge=0)
    # Both gates share their slots fairly among projects (app/admission.py): one project
    # runs at most max_concurrent - max(1, max_concurrent // 4) requests at once and holds
    # at most half the waiting places.
    retry_after_seconds: int = Field(default=1, gt=0)
    # Reads (GET) alike: at most this many run at once and max_pending_reads wait; beyond,
    # 429 + Retry-After at once (app/api/read_admission.py). The request threads (40) must
    # hold the reads and writes admitted.
    max_concurrent_reads: int = Field(default=8, gt=0, le=32)
    max_pending_reads: int = Field(default=64, ge=0)
    # A read whose client takes no part of the answer for this long is dropped, giving its
    # slot back (a socket that never reads held a slot for as long as it stayed open).
    read_send_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    # The database pool of the requests; at least what the admitted requests need (see
    # app/api/read_admission.py:pool_size_for). Background jobs have their own small pool.
    db_pool_size: int = Field(default=8, gt=0)
    # Scheduler: runs in the API process by default; `telltale scheduler` runs it alone.
    scheduler_enabled: bool = True
    # Detector computations at once in one process, those past their time limit included
    # (a thread cannot be killed); beyond it a scheduled run fails fast, `run now` gets 429.
    max_concurrent_detectors: int = Field(default=2, gt=0, le=64)
    # `/metrics` names every project's monitors and queues: unset, it answers only to
    # clients on the loopback interface; set, it wants `Authorization: Bearer <token>`.
    metrics_token: SecretStr | None = None
    # Where uploaded media is kept for the labeling UI, and for how long.
    media_dir: str = "./media"
    media_retention_days: int = Field(default=30, gt=0)
    # Traces, spans, scores, embeddings, event ids, runs and delivered notifications older
    # than this are deleted hourly (app/retention); a project's retention_days overrides it.
    retention_days: int = Field(default=30, gt=0)
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
    # JPEG decoder of the embed worker's device path (pipelines/embedding/device_decoders.py):
    # auto takes DALI, else nvImageCodec, else torchvision on CUDA, and PIL on CPU.
    image_decoder: Literal["auto", "dali", "nvimgcodec", "torchvision", "pil"] = "auto"
    # Derived fields (app/derive): input identity, decision, confidence, source,
    # counterfactual pairs and MiniLM text embeddings, for traces that got no new span or
    # GenAI event for derive_settle_seconds. derive_text_embeddings=false turns the text
    # embeddings off for every project (they are the costly part; a project can also).
    derive_enabled: bool = True
    derive_settle_seconds: float = Field(default=30.0, ge=0)
    derive_batch_traces: int = Field(default=256, gt=0, le=10_000)
    # Spans a derive batch reads at most, shared among the projects waiting (app/derive/load.py,
    # whose DEFAULT_BATCH_SPANS library callers get).
    derive_batch_spans: int = Field(default=10_000, gt=0, le=1_000_000)
    derive_text_embeddings: bool = True
    derive_embed_device: str = "auto"
    # Signs the web UI's session cookies and CSRF tokens. Unset (the default), each
    # installation generates a random one on first use and keeps it in its database, so
    # there is no public default that works anywhere; set it only to choose your own.
    secret_key: SecretStr | None = None
    public_url: str = "http://127.0.0.1:8000"
    # Outbound: channels post only to public addresses, plus these CIDRs and host names
    # (``*.corp.example`` for subdomains). Env: comma-separated or a JSON list, e.g.
    # TELLTALE_OUTBOUND_ALLOW=10.20.0.0/16,alerts.corp.example. docs: alert-routing.
    outbound_allow: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Online evaluators' judge endpoints may also reach these (a model server on a private
    # address or loopback: vLLM, Ollama), without opening them to channels. Same syntax.
    # TELLTALE_JUDGE_ALLOW=127.0.0.1,10.0.0.0/8. docs: online-evaluators.
    judge_allow: Annotated[list[str], NoDecode] = Field(default_factory=list)

    @field_validator("outbound_allow", "judge_allow", mode="before")
    @classmethod
    def _split_allow(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("[") else text.split(",")
        return value

    @field_validator("outbound_allow", "judge_allow")
    @classmethod
    def _check_allow(cls, value: list[str]) -> list[str]:
        entries = [e.strip() for e in value if e.strip()]
        for entry in entries:
            allow_entry(entry)  # raises ValueError naming the bad entry
        return entries

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @field_validator("secret_key")
    @classmethod
    def _strong_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_SECRET_CHARS:
            raise ValueError(
                f"TELLTALE_SECRET_KEY must be at least {MIN_SECRET_CHARS} characters "
                "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(48))'`), "
                "or unset so Telltale generates one"
            )
        return value


@lru_cache
def get_settings() -> Settings:
    return Settings()
