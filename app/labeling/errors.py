"""Errors of the labeling services; they are HTTP errors, so routes need not translate them."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException


class NotFound(HTTPException):
    def __init__(self, detail: str) -> None:
        super().__init__(404, detail)


class Conflict(HTTPException):
    def __init__(self, detail: str) -> None:
        super().__init__(409, detail)


class Invalid(HTTPException):
    def __init__(self, detail: str) -> None:
        super().__init__(422, detail)


class LeaseConflict(Exception):
    """A label/skip/release on a lease the caller no longer holds (the API answers 409).

    ``body`` is the whole JSON answer: what happened, what to do, and the rejected label.
    """

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body["detail"])
        self.body = body
