"""How long a failed job waits before its next attempt, and when it stops trying.

One policy for the two queues that retry work: the notification outbox
(:mod:`app.alerts.outbox`) and the media jobs (:mod:`app.media.jobs`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: retry ``k`` (1-based) waits ``backoff_base_s * 2**(k - 1)``, at
    most ``backoff_max_s``, shortened by up to ``jitter`` of itself ("equal jitter": the
    wait is drawn from ``[(1 - jitter) d, d]``); after ``max_attempts`` attempts the work is
    dead.

    >>> Backoff(backoff_base_s=2.0, backoff_max_s=600.0).seconds(3)
    8.0
    >>> Backoff(backoff_base_s=2.0, backoff_max_s=10.0, jitter=0.5).seconds(5, draw=1.0)
    5.0
    """

    max_attempts: int = 5
    backoff_base_s: float = 2.0
    backoff_max_s: float = 600.0
    jitter: float = 0.0

    def seconds(self, attempt: int, draw: float = 0.0) -> float:
        """Seconds before retry ``attempt``; ``draw`` in [0, 1) picks the point of the
        jitter range (0: the full wait)."""
        delay = min(self.backoff_max_s, self.backoff_base_s * 2 ** max(0, attempt - 1))
        return delay * (1.0 - self.jitter * draw)
