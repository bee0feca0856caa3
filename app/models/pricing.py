"""A project's own model prices, which win over the shipped table (app/pricing)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime, utcnow
from app.models.columns import IntId, ProjectOwned


class ModelPrice(IntId, ProjectOwned, Base):
    """USD per million tokens for the models ``model`` names: a name, or a pattern with
    ``*`` (app/pricing/overrides.py). ``updated_at`` versions the price: a cost computed
    with it records that time (``spans.cost_source``)."""

    __tablename__ = "model_prices"
    __table_args__ = (UniqueConstraint("project_id", "model"),)

    model: Mapped[str] = mapped_column(String(128))
    input_per_million: Mapped[float] = mapped_column(Float)
    output_per_million: Mapped[float] = mapped_column(Float)
    # None: cached input is billed as input; cache writes as input too.
    cached_input_per_million: Mapped[float | None] = mapped_column(Float, nullable=True)
    cache_write_per_million: Mapped[float | None] = mapped_column(Float, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
