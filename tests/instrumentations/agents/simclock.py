"""A simulated wall clock for the agent scripts, so a few hundred traces span many hours.

The default monitors compare a 2-hour window with a 4-hour baseline lagged by 2 hours;
real instrumentations stamp spans with the wall clock. Imported *before* OpenTelemetry and
the framework, this module makes the clocks they stamp with simulated ones: trace ``i``
(:func:`trace`) starts at ``SIM_START_EPOCH + i * SIM_SECONDS_PER_TRACE`` and time inside
it runs at real speed, so latencies stay real.

Patched: ``time.time_ns`` (the OTel SDK's span, event and log timestamps, bound by
``from time import time_ns`` at its import) and, by :func:`patch_datetime_in`, the
``datetime`` a named module uses (LangChain's run start and end times, which OpenInference's
LangChain tracer turns into span times). Replacing ``datetime.datetime`` itself would break
pydantic, which builds schemas from the class its models are annotated with.
``time.time`` is left alone on purpose: the OTLP exporter and the batch processor compute
their timeouts and deadlines with it, and a clock that jumps by minutes between traces
would time their exports out. Without ``SIM_START_EPOCH`` nothing is patched.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import os
import time as _time

_real_time_ns = _time.time_ns
START_NS = int(float(os.environ.get("SIM_START_EPOCH", "0")) * 1e9)
STEP_NS = int(float(os.environ.get("SIM_SECONDS_PER_TRACE", "60")) * 1e9)
_offset_ns = 0


def now_ns() -> int:
    return _real_time_ns() + _offset_ns


def trace(i: int) -> None:
    """Trace ``i`` starts now: move the simulated clock to its start time (never back)."""
    global _offset_ns
    if START_NS:
        target = START_NS + i * STEP_NS
        _offset_ns = max(_offset_ns, target - _real_time_ns())


class _SimDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz: _dt.tzinfo | None = None) -> _SimDatetime:
        return cls.fromtimestamp(now_ns() / 1e9, tz)

    @classmethod
    def utcnow(cls) -> _SimDatetime:
        return cls.fromtimestamp(now_ns() / 1e9, _dt.UTC).replace(tzinfo=None)


def patch_datetime_in(*modules: str) -> None:
    """Make ``datetime.now()`` in these modules (which did ``from datetime import datetime``)
    read the simulated clock."""
    if START_NS:
        for name in modules:
            importlib.import_module(name).datetime = _SimDatetime


if START_NS:
    _offset_ns = START_NS - _real_time_ns()
    _time.time_ns = now_ns
