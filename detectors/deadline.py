"""Cooperative cancellation: a detector's resampling loops stop at its caller's deadline.

Python cannot stop a thread from outside, so a detector past its time limit used to go on
computing until it returned, holding its detector slot: two FM-6 monitors set to a billion
permutations held both slots of the process for good. Instead, the caller sets a deadline
for the computation (:func:`deadline`, a context variable, so it belongs to the thread or
task that set it and never leaks into another), and every loop whose length a parameter
sets (permutations, bootstrap resamples) calls :func:`checkpoint` once per chunk, which
raises :class:`DetectorCancelled` once the deadline has passed. The work between two
checkpoints is bounded by the parameters' upper bounds, so a cancelled detector ends
within one chunk of its deadline. Without a deadline a checkpoint costs one lookup.

Examples
--------
>>> with deadline(3600.0):
...     checkpoint()  # well before the deadline: nothing happens
>>> with deadline(-1.0):
...     checkpoint()
Traceback (most recent call last):
...
detectors.deadline.DetectorCancelled: the detector passed its deadline and stopped
>>> checkpoint()  # outside any deadline
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("detector_deadline", default=None)


class DetectorCancelled(Exception):
    """The computation passed the deadline its caller set, and stopped."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Within the block, :func:`checkpoint` raises once ``seconds`` have passed."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def checkpoint() -> None:
    """Raise :class:`DetectorCancelled` if the current deadline has passed."""
    at = _DEADLINE.get()
    if at is not None and time.monotonic() > at:
        raise DetectorCancelled("the detector passed its deadline and stopped")
