"""The typed result every batch drift test returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class DriftResult:
    """Outcome of one drift test on a reference window and a current window.

    Parameters
    ----------
    statistic : float
        The test statistic (KS distance, unbiased MMD², standardised EWMA value...).
    threshold : float
        The critical value of ``statistic`` at the configured false-alarm rate.
    p_value : float or None
        The p-value, where the test defines one.
    fired : bool
        Whether the test signals drift at its configured level.
    evidence : dict
        Plain values for humans and dashboards: sample sizes, means, bandwidth,
        whether inputs were subsampled. Never arrays of data.

    Examples
    --------
    >>> r = DriftResult(statistic=0.3, threshold=0.1, p_value=0.001, fired=True)
    >>> r.fired, r.evidence
    (True, {})
    """

    statistic: float
    threshold: float
    p_value: float | None
    fired: bool
    evidence: dict[str, Any] = field(default_factory=dict)
