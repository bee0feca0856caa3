"""The vocabulary every part of Telltale shares: failure modes and alert severities.

Monitors detect failure modes and alerts carry severities; channels route on both. The
names live here, apart from either package, so neither has to import the other for them.
"""

from __future__ import annotations

from typing import Literal

# The seven failure modes; OUTCOME: the outcomes they all end in (task success, error
# rates, latency), watched by default (detectors/outcomes.py); SILENCE: traffic or a signal
# that stops; EARLY: static guards until the calibrated monitors speak; JUDGE: an online
# evaluator's judge that agrees less with the labels (detectors/judge_drift.py); ISSUES:
# failure issues that are new or rising (detectors/issue_rates.py).
DetectorMode = Literal[
    "FM-1", "FM-2", "FM-3", "FM-4", "FM-5", "FM-6", "FM-7", "OUTCOME", "SILENCE", "EARLY",
    "JUDGE", "ISSUES",
]
# And RULE: the alert rules a team writes (app/rules), monitors of their own family whose
# alerts are routed, silenced and listed like every mode's.
FailureMode = Literal[DetectorMode, "RULE"]
Severity = Literal["info", "warning", "critical"]
