"""The one result every detector returns, trace detectors and embedding-drift tests alike."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DetectorResult:
    """Outcome of one detector run (or one drift test) on a reference and a current window.

    Parameters
    ----------
    failure_mode : str
        "FM-1" ... "FM-7"; the embedding-drift tests of ``detectors.drift`` say "FM-6".
    statistic : float
        The test statistic (compounding ratio, cascade lift, KS distance, unbiased MMD²,
        |z_t − μ0| of an EWMA chart...). NaN when there is none.
    threshold : float
        The value of ``statistic`` it must reach to fire (a critical value or an effect gate).
    p_value : float or None
        The p-value, where the test defines one (Holm-adjusted when it combines sub-tests).
    fired : bool
        Whether the detector signals its failure mode at its configured false-alarm rate.
    evidence : mapping
        Plain JSON-serialisable values for the on-call human and dashboards: sample sizes,
        rates, sub-tests, example trace ids. Never arrays of data.
    status : str, default "ok"
        "ok" or "insufficient_data"; an insufficient result never fires.

    Examples
    --------
    >>> r = DetectorResult("FM-6", statistic=0.3, threshold=0.1, p_value=0.001, fired=True)
    >>> r.fired, r.status, dict(r.evidence)
    (True, 'ok', {})
    >>> few = DetectorResult.insufficient("FM-2", "no tool calls in current window")
    >>> few.status, few.fired, few.evidence["reason"]
    ('insufficient_data', False, 'no tool calls in current window')
    """

    failure_mode: str
    statistic: float
    threshold: float
    p_value: float | None
    fired: bool
    evidence: Mapping[str, Any] = field(default_factory=dict)
    status: str = "ok"

    @classmethod
    def on_log_p(
        cls, failure_mode: str, *, p_value: float, alpha: float, fired: bool,
        evidence: dict[str, Any],
    ) -> DetectorResult:  # fmt: skip
        """A result whose statistic is -log10 of its (adjusted) smallest p-value and whose
        threshold is -log10(alpha): the families of sub-tests (SILENCE, EARLY) report so."""
        return cls(
            failure_mode=failure_mode,
            statistic=float(-math.log10(max(p_value, 1e-300))),
            threshold=float(-math.log10(alpha)),
            p_value=float(p_value),
            fired=bool(fired),
            evidence=evidence,
        )

    @classmethod
    def insufficient(cls, failure_mode: str, reason: str, **evidence: Any) -> DetectorResult:
        """A result that does not fire: too little data; ``reason`` says what was missing."""
        return cls(
            failure_mode=failure_mode,
            statistic=float("nan"),
            threshold=float("nan"),
            p_value=None,
            fired=False,
            evidence={"reason": reason, **evidence},
            status="insufficient_data",
        )
