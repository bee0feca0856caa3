"""Settings · Model prices (admin): the project's own prices, the calls left without a cost,
the price a model is billed at, and the shipped table.

The form holds every price of the project in rows (plus empty ones to add) and saves the
set through the API's own model (:class:`app.pricing.schemas.ModelPricesIn`) and store
function, as ``PUT /api/v1/project/model-prices`` does: a bad value is a 422 page naming
the field (``prices.1.output_per_million: ...``) that keeps what was typed.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from sqlalchemy.orm import Session

from app.db import write_session
from app.deps import EngineDep, SessionDep
from app.models.base import utcnow
from app.pricing.overrides import PRICE_FIELDS, put_prices
from app.pricing.schemas import ModelPricesIn
from app.pricing.table import MAX_MODEL_CHARS, shipped_table
from app.pricing.view import prices_view
from app.web.deps import WebContext, WebDep
from app.web.form_values import parse_form
from app.web.settings_pages import act, require_admin, settings_page

router = APIRouter(prefix="/settings/prices", include_in_schema=False)
BLANK_ROWS = 3


def _render(
    web: WebContext, session: Session, *, model: str | None = None, add: str | None = None,
    **extra: Any,
) -> Any:  # fmt: skip
    view = prices_view(session, project_id=web.principal.project_id, now=utcnow(), model=model)
    if "form" not in extra:
        rows = [{"model": p.model, **{k: _text(getattr(p, k)) for k in PRICE_FIELDS}}
                for p in view.prices]  # fmt: skip
        extra["form"] = {"rows": rows + [{"model": add or ""}] + [{}] * (BLANK_ROWS - 1)}
    return settings_page(
        web, session, "prices", prices=view, asked=model, table=shipped_table(),
        price_fields=PRICE_FIELDS, **extra,
    )  # fmt: skip


def _text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


@router.get("")
def prices_page(
    web: WebDep, session: SessionDep,
    model: str | None = Query(None, max_length=MAX_MODEL_CHARS),
    add: str | None = Query(None, max_length=MAX_MODEL_CHARS),
) -> Any:  # fmt: skip
    require_admin(web)
    return _render(web, session, model=(model or "").strip() or None, add=add)


@router.post("")
async def put_prices_form(request: Request, web: WebDep, session: SessionDep,
                          engine: EngineDep) -> Any:  # fmt: skip
    form = await request.form()
    columns = {k: [str(v) for v in form.getlist(k)] for k in ("model", *PRICE_FIELDS)}
    typed = [dict(zip(columns, values, strict=False)) for values in zip(*columns.values(),
                                                                        strict=False)]  # fmt: skip
    rows = [r for r in typed if r.get("model", "").strip()]

    def action() -> str:
        body = parse_form(ModelPricesIn, {"prices": [
            {k: (v.strip() or None) for k, v in r.items()} for r in rows
        ]})  # fmt: skip
        with write_session(engine) as s:
            put_prices(s, project_id=web.principal.project_id,
                       wanted=[p.model_dump() for p in body.prices], now=utcnow())  # fmt: skip
        n = len(body.prices)
        return (f"Saved {n} model price{'' if n == 1 else 's'}. Calls priced from now on use "
                "them; costs already computed keep the price they were computed with.")  # fmt: skip

    return act(web, session, "prices", str(form.get("csrf", "")), action,
               {"rows": typed + [{}]}, renderer=_render)  # fmt: skip
