"""The caller's project's model prices: read (read role) and set (admin role).

Its own prices win over the shipped table for the calls priced from then on; the answer
also says the table's version and the calls of the last days left without a cost
(:mod:`app.pricing`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import ReadKey, SessionDep
from app.api.errors import AdminProject
from app.models.base import utcnow
from app.pricing.overrides import put_prices
from app.pricing.schemas import ModelPricesIn, ModelPricesOut
from app.pricing.table import MAX_MODEL_CHARS
from app.pricing.view import prices_view

router = APIRouter(prefix="/api/v1/project/model-prices", tags=["model prices"])


@router.get("")
def get_model_prices(
    principal: ReadKey,
    session: SessionDep,
    model: Annotated[
        str | None,
        Query(max_length=MAX_MODEL_CHARS, description="say the price this model is billed at"),
    ] = None,
) -> ModelPricesOut:
    return prices_view(session, project_id=principal.project_id, now=utcnow(), model=model)


@router.put("")
def put_model_prices(
    body: ModelPricesIn, project: AdminProject, session: SessionDep
) -> ModelPricesOut:
    """Make these the project's own prices (those left out are deleted). Calls priced from
    now on use them; costs already computed keep the price they were computed with."""
    now = utcnow()
    put_prices(session, project_id=project.id, wanted=[p.model_dump() for p in body.prices],
               now=now)  # fmt: skip
    session.commit()
    return prices_view(session, project_id=project.id, now=now)
