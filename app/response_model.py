"""The base of every JSON answer: built from ORM rows, times written as they always were.

Pydantic writes a UTC time as ``...Z``; the API has always answered ``...+00:00``
(``datetime.isoformat``), so :data:`Time` keeps that text while the schema still says
``date-time``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, PlainSerializer, WithJsonSchema


class ResponseModel(BaseModel):
    """``BaseModel`` for answers; ``model_validate(row)`` reads an ORM row's attributes."""

    model_config = ConfigDict(from_attributes=True)


Time = Annotated[
    datetime,
    PlainSerializer(lambda t: t.isoformat(), return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
