"""The range of a score's value, however it arrives: one bound, checked at the door.

A score (feedback, an evaluation result, a ``telltale.score.*`` attribute, a queue's label
written back to its trace) is a rate, a grade or a rating. One label of 1e200 made
OUTCOME's effect test overflow (its variance became infinite, so the test never fired)
and its alert read "fell 0.847 → 2.09e+197". Values are therefore finite and within
±:data:`SCORE_VALUE_LIMIT`; each way in refuses a value outside it by name (the rest of
its batch is stored), and the window load (:mod:`app.monitors.windows.rows`) leaves out a
stored value outside it, so rows written before the bound cannot reach a detector.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.orm import InstrumentedAttribute

SCORE_VALUE_LIMIT = 1e9
OUT_OF_RANGE = f"must be a finite number from -{SCORE_VALUE_LIMIT:.0e} to {SCORE_VALUE_LIMIT:.0e}"


def score_value(value: Any) -> float | None:
    """``value`` as a score's number, or None when it is no number or out of range.

    >>> score_value(0.75), score_value(-3), score_value(2e9), score_value(10**400)
    (0.75, -3.0, None, None)
    >>> score_value(float("nan")), score_value(True), score_value("1")
    (None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int past float's range (JSON allows any digits)
        return None
    return number if math.isfinite(number) and abs(number) <= SCORE_VALUE_LIMIT else None


def stored_in_range(value: InstrumentedAttribute[float]) -> ColumnElement[bool]:
    """SQL: a stored score ``value`` within the bound; NaN (PostgreSQL) and NULL (SQLite
    stores NaN so) are not, on both databases."""
    return value.between(-SCORE_VALUE_LIMIT, SCORE_VALUE_LIMIT)
