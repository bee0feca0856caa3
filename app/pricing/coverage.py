"""The model calls left without a cost, per model: read from the model rollups.

A call is unpriced when it was sent without a cost and none could be computed: its model
has no price (a project price fixes it for later calls), or it sent no token counts or no
model name. The rollups count them per bucket (``model_rollups.unpriced_calls``), so the
report over days reads a few rows per model, not the spans.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import ModelRollup
from app.pricing.overrides import ProjectPrices
from app.rollups.buckets import bucket_of

COVERAGE_DAYS = 7
SETTINGS_PAGE = "Settings · Model prices"


def _calls(n: int) -> str:
    return f"{n:,} call{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class ModelCoverage:
    model: str  # "" for calls that named no model
    calls: int
    unpriced_calls: int
    has_price: bool  # whether a price is found for it now


@dataclass(frozen=True)
class Coverage:
    days: int
    calls: int
    unpriced_calls: int
    models: tuple[ModelCoverage, ...]  # those with unpriced calls, most first

    @property
    def share(self) -> float | None:
        return self.unpriced_calls / self.calls if self.calls else None

    @property
    def sentence(self) -> str | None:
        """What a person reads: how many calls have no cost and what to do; None if all do.

        >>> c = Coverage(7, 100, 12, (ModelCoverage("foo-7b", 12, 12, False),))
        >>> c.sentence
        'Cost unknown for 12% of model calls in the last 7 days (12 of 100): model foo-7b (12 calls) has no price; set one in Settings · Model prices.'
        """
        if not self.unpriced_calls or self.share is None:
            return None
        share = f"{self.share:.0%}" if self.share >= 0.005 else "under 1%"
        head = (f"Cost unknown for {share} of model calls in the last {self.days} days "
                f"({self.unpriced_calls:,} of {self.calls:,})")  # fmt: skip
        missing = [m for m in self.models if m.model and not m.has_price]
        other = sum(m.unpriced_calls for m in self.models if not m.model or m.has_price)
        parts = []
        if missing:
            listed = [f"{m.model} ({_calls(m.unpriced_calls)})" for m in missing]
            names = " and ".join(filter(None, (", ".join(listed[:-1]), listed[-1])))
            many = len(missing) > 1
            parts.append(f"{'models' if many else 'model'} {names} {'have' if many else 'has'} "
                         f"no price; set one in {SETTINGS_PAGE}")  # fmt: skip
        if other:
            parts.append(f"{_calls(other)} sent no token counts or no model, or came before "
                         "their model's price was set")  # fmt: skip
        return f"{head}: {'; '.join(parts)}."


def cost_coverage(
    session: Session, *, project_id: int, prices: ProjectPrices, now: datetime,
    days: int = COVERAGE_DAYS,
) -> Coverage:  # fmt: skip
    """The project's model calls of the last ``days`` days, and those without a cost."""
    since = bucket_of(now - timedelta(days=days))
    rows = session.execute(
        select(ModelRollup.model, func.sum(ModelRollup.calls), func.sum(ModelRollup.unpriced_calls))
        .where(ModelRollup.project_id == project_id, ModelRollup.bucket >= since)
        .group_by(ModelRollup.model)
    ).all()
    models = sorted(
        (ModelCoverage(str(m), int(c or 0), int(u or 0), prices.find(str(m)) is not None)
         for m, c, u in rows if u),
        key=lambda m: (-m.unpriced_calls, m.model),
    )  # fmt: skip
    return Coverage(days, sum(int(c or 0) for _, c, _ in rows),
                    sum(int(u or 0) for _, _, u in rows), tuple(models))  # fmt: skip
