"""A project's own model prices: stored, replaced as a set, and matched before the table.

A project price names a model as the lookup reads it (lower case; a provider prefix and
snapshot suffixes are tried off as for the table: :func:`app.pricing.table.candidates`), or
a pattern with ``*`` (``ft:gpt-4o-mini:*``, ``*-7b``) matched in linear time (no user
pattern reaches a backtracking matcher, as RE2 matches the others). A project price named
for one of the model's candidate names wins (the most specific name first), then the
matching pattern with the most literal characters, then the shipped table's entry.

Saving the set keeps ``updated_at`` of a price that did not change: the time is the price's
version, recorded with each cost computed from it (``spans.cost_source``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from app.db import as_utc
from app.models.pricing import ModelPrice
from app.pricing.table import Price, PriceTable, candidates, shipped_table

PRICE_FIELDS = ("input_per_million", "output_per_million", "cached_input_per_million",
                "cache_write_per_million")  # fmt: skip


def glob_match(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern``, whose only wildcard is ``*``; linear in both.

    >>> glob_match("ft:gpt-4o-mini:*", "ft:gpt-4o-mini:acme::x1"), glob_match("*-7b", "foo-7b")
    (True, True)
    >>> glob_match("a*b*c", "abxc"), glob_match("a*b*c", "acb"), glob_match("ab*b", "ab")
    (True, False, False)
    """
    parts = pattern.split("*")
    if len(parts) == 1:
        return pattern == text
    first, last = parts[0], parts[-1]
    end = len(text) - len(last)
    if end < len(first) or not text.startswith(first) or not text.endswith(last):
        return False
    pos = len(first)
    for part in parts[1:-1]:  # leftmost is right for '*'-only globs
        at = text.find(part, pos, end)
        if at < 0:
            return False
        pos = at + len(part)
    return True


def project_label(updated_at: datetime) -> str:
    """``cost_source`` of a cost from a project price: the price's version (UTC minute)."""
    return f"project {as_utc(updated_at):%Y-%m-%dT%H:%MZ}"


@dataclass(frozen=True)
class Found:
    """The price a model call is billed at, and what it came from."""

    matched: str  # the table's model name or the project's model pattern
    by: Literal["project", "table"]
    price: Price
    label: str  # written as the span's cost_source
    source: str | None = None  # the table entry's source page


@dataclass(frozen=True)
class ProjectPrices:
    """A project's prices over the shipped table."""

    table: PriceTable
    exact: dict[str, Found] = field(default_factory=dict)
    patterns: tuple[tuple[str, Found], ...] = ()  # most literal characters first

    def find(self, model: str | None) -> Found | None:
        if not model:
            return None
        names = candidates(model)
        for name in names:
            hit = self.exact.get(name)
            if hit is not None:
                return hit
        for pattern, found in self.patterns:
            if any(glob_match(pattern, name) for name in names):
                return found
        entry = self.table.find(model)
        if entry is None:
            return None
        return Found(entry.model, "table", entry.price, self.table.label, entry.source)


def prices_of(rows: Iterable[Any], table: PriceTable | None = None) -> ProjectPrices:
    exact: dict[str, Found] = {}
    patterns: list[tuple[str, Found]] = []
    for r in rows:
        price = Price(r.input_per_million, r.output_per_million, r.cached_input_per_million,
                      r.cache_write_per_million)  # fmt: skip
        found = Found(r.model, "project", price, project_label(r.updated_at))
        if "*" in r.model:
            patterns.append((r.model, found))
        else:
            exact[r.model] = found
    patterns.sort(key=lambda p: (-len(p[0].replace("*", "")), p[0]))
    return ProjectPrices(table or shipped_table(), exact, tuple(patterns))


def load_prices(conn: Connection, project_ids: Sequence[int]) -> dict[int, ProjectPrices]:
    """Each project's prices (one read for all of them)."""
    by_project: dict[int, list[Any]] = {p: [] for p in project_ids}
    if project_ids:
        table = ModelPrice.__table__
        for row in conn.execute(select(table).where(table.c.project_id.in_(list(project_ids)))):
            by_project[row.project_id].append(row)  # a Row: the columns as attributes
    return {p: prices_of(rows) for p, rows in by_project.items()}


def list_prices(session: Session, *, project_id: int) -> list[ModelPrice]:
    return list(
        session.scalars(
            select(ModelPrice).where(ModelPrice.project_id == project_id).order_by(ModelPrice.model)
        )
    )


def put_prices(
    session: Session, *, project_id: int, wanted: Sequence[dict[str, object]], now: datetime
) -> list[ModelPrice]:
    """Make the project's prices ``wanted`` (each a ``model`` and the :data:`PRICE_FIELDS`):
    others are deleted, a changed price gets ``updated_at = now``, an unchanged one keeps
    its time. The caller commits."""
    stored = {r.model: r for r in list_prices(session, project_id=project_id)}
    keep = {str(w["model"]) for w in wanted}
    for model, old in stored.items():
        if model not in keep:
            session.delete(old)
    for w in wanted:
        row = stored.get(str(w["model"]))
        if row is None:
            session.add(ModelPrice(project_id=project_id, model=w["model"], updated_at=now,
                                   **{k: w.get(k) for k in PRICE_FIELDS}))  # fmt: skip
        elif any(getattr(row, k) != w.get(k) for k in PRICE_FIELDS):
            for k in PRICE_FIELDS:
                setattr(row, k, w.get(k))
            row.updated_at = now
    session.flush()
    return list_prices(session, project_id=project_id)
