"""A monitor's failure mode and parameters -> its detector, with errors the API can name.

The detectors and their parameter checks are the library's (:mod:`detectors.registry`);
this only says which field of a monitor's body is at fault (``failure_mode`` or
``detector_params.<name>``), which is what the API's 422 answers carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from detectors import registry
from detectors.registry import Detector

__all__ = ["Detector", "DetectorConfigError", "build_detector"]


class DetectorConfigError(ValueError):
    """The monitor does not build a detector; the message starts with the field at fault."""


def build_detector(failure_mode: str, params: Mapping[str, Any]) -> Detector:
    """A ready detector, or :class:`DetectorConfigError` naming the bad field."""
    try:
        return registry.build_detector(failure_mode, params)  # type: ignore[no-any-return]
    except registry.DetectorParameterError as exc:
        where = f"detector_params.{exc.parameter}" if exc.parameter else "detector_params"
        raise DetectorConfigError(f"{where}: {exc}") from None
    except ValueError as exc:  # the failure mode itself is unknown
        raise DetectorConfigError(f"failure_mode: {exc}") from None
