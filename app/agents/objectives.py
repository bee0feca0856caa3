"""Which score names measure an agent's success: its ``true`` objectives.

The score rollups keep a score's name, not the kind it was sent with. A name is a ``true``
objective when the project's roles say so (:mod:`app.scores.roles`), else when its latest
score was sent as ``true`` (one index seek on ``(project_id, name, created_at)`` per name
the range holds: a handful). Success is the share of an objective's scores at or above
:data:`app.rollups.facts.PASS_AT`, read from ``score_rollups.passed``.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Score
from app.scores.roles import get_roles


def true_objectives(session: Session, *, project_id: int, names: Iterable[str]) -> set[str]:
    """The names among ``names`` that are read as ``true`` objectives."""
    roles = get_roles(session, project_id=project_id)
    out = set()
    for name in set(names):
        if name in roles.as_dict:
            stored = roles.as_dict[name]
        else:
            stored = session.scalar(
                select(Score.kind)
                .where(Score.project_id == project_id, Score.name == name)
                .order_by(Score.created_at.desc())
                .limit(1)
            ) or "proxy"
        if roles.kind_of(name, stored) == "true":
            out.add(name)
    return out


def main_objective(by_name: dict[str, int], objectives: set[str]) -> str | None:
    """The objective with the most scores (ties: by name), or None.

    >>> main_objective({"resolved": 40, "csat": 90, "helpful": 500}, {"resolved", "csat"})
    'csat'
    """
    found = [(-n, name) for name, n in by_name.items() if name in objectives and n > 0]
    return min(found)[1] if found else None
