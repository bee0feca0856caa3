"""Answers of the session routes, and their keyset cursor."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, Field

from app.response_model import ResponseModel, Time
from app.traces.schemas import ScoreOut, TraceOut


@dataclass(frozen=True)
class Position:
    """Where a page ended: a time and a tie-break (a session id, or a trace row id)."""

    at: datetime
    key: str

    def encode(self) -> str:
        text = f"{self.at.isoformat()}|{self.key}"
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, value: str) -> Position:
        try:
            text = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
            at, key = text.split("|", 1)
            when = datetime.fromisoformat(at)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ValueError(
                "not a cursor this listing gave (pass next_cursor back as it is)"
            ) from None
        return cls(when if when.tzinfo else when.replace(tzinfo=UTC), key)


def _checked(value: str) -> str:
    Position.decode(value)
    return value


Cursor = Annotated[
    str,
    Field(max_length=400, description="next_cursor of the previous page"),
    AfterValidator(_checked),
]


class OutcomeOut(ResponseModel):
    """A score read as a ``true`` objective by the project's roles (docs: Scores)."""

    name: str
    value: float
    trace_id: str
    created_at: Time


class SessionOut(ResponseModel):
    session_id: str
    # Its turns' user; the first turn's that names one when they differ.
    user_id: str | None
    first_seen: Time | None
    last_seen: Time | None
    turns: int = Field(description="its traces")
    errors: int = Field(description="its traces that failed")
    agents: list[str]
    outcome: OutcomeOut | None = Field(
        description="the outcome score (a true objective) of its latest turn that has one"
    )


class SessionPage(ResponseModel):
    sessions: list[SessionOut]
    next_cursor: str | None


class TurnOut(TraceOut):
    scores: list[ScoreOut]


class SessionDetail(SessionOut):
    traces: list[TurnOut] = Field(description="its turns in time order, a page of them")
    next_cursor: str | None = Field(description="pass back as cursor for its later turns")
