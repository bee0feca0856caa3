"""A project's prices as the API answers and the settings page shows them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from app.pricing.coverage import cost_coverage
from app.pricing.overrides import list_prices, prices_of
from app.pricing.schemas import (
    CoverageOut,
    ModelPriceOut,
    ModelPricesOut,
    PriceFoundOut,
    PriceTableOut,
)


def prices_view(
    session: Session, *, project_id: int, now: datetime, model: str | None = None
) -> ModelPricesOut:
    """The project's own prices, the shipped table's version, the calls of the last days
    left without a cost, and, when ``model`` is given, the price its calls are billed at."""
    rows = list_prices(session, project_id=project_id)
    prices = prices_of(rows)
    found = prices.find(model) if model else None
    return ModelPricesOut(
        prices=[ModelPriceOut.model_validate(r) for r in rows],
        table=PriceTableOut.of(prices.table),
        coverage=CoverageOut.of(
            cost_coverage(session, project_id=project_id, prices=prices, now=now)
        ),
        found=PriceFoundOut.of(model, found) if model and found else None,
    )
