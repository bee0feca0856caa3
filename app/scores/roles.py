"""Per-project score roles, applied when monitor windows are read.

Evaluators and products name their scores as they like (an LLM judge's ``helpfulness``,
a ticket system's ``resolved``) and OTLP evaluation results all arrive as ``proxy`` /
``online``. A project says once which names are ``proxy``, ``true`` or ``guardrail`` and
which sources count as ground-truth labels; the stored scores are never rewritten, so a
role change re-reads history on the next run. A score whose name has no role keeps the
kind it was sent with. Labels (FM-4, FM-2's true outcomes) are ``true`` scores from a
label source (default ``delayed`` and ``human``: :data:`detectors.records.LABEL_SOURCES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sqlalchemy import and_, or_
from sqlalchemy.orm import Session

from app.models import Score
from app.models.base import utcnow
from app.models.score_roles import ScoreRoleConfig
from detectors.records import LABEL_SOURCES

_DEFAULT_SOURCES = frozenset(LABEL_SOURCES)


@dataclass(frozen=True)
class ScoreRoles:
    """A project's roles, hashable (it is part of a window's cache key).

    >>> r = ScoreRoles(roles=(("resolved", "true"),), label_sources=("delayed", "online"))
    >>> r.kind_of("resolved", "proxy"), r.kind_of("csat", "proxy")
    ('true', 'proxy')
    >>> r.apply({"name": "resolved", "kind": "proxy", "source": "online"})["label_source"]
    True
    """

    roles: tuple[tuple[str, str], ...] = ()
    label_sources: tuple[str, ...] = LABEL_SOURCES
    # (score name, objective): an online evaluator's score predicts that `true` objective
    # (its judge), read by prediction-powered estimates (:func:`with_predictions`).
    predicts: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_mapping(cls, roles: Mapping[str, str], label_sources: Iterable[str]) -> ScoreRoles:
        return cls(tuple(sorted(roles.items())), tuple(sorted(set(label_sources))))

    @cached_property
    def as_dict(self) -> dict[str, str]:
        return dict(self.roles)

    @cached_property
    def _label_sources(self) -> frozenset[str]:
        return frozenset(self.label_sources)

    def kind_of(self, name: str, stored_kind: str) -> str:
        """The kind a score is read with: its name's role, else the kind it was sent with."""
        return self.as_dict.get(name, stored_kind)

    def names_with(self, role: str) -> list[str]:
        return sorted(n for n, r in self.roles if r == role)

    def apply(self, row: Mapping[Any, Any]) -> dict[str, Any]:
        """A stored score row as detectors read it (``kind`` and ``label_source`` set)."""
        out = dict(row)
        out["kind"] = self.as_dict.get(str(row["name"]), str(row.get("kind") or "proxy"))
        if self._label_sources != _DEFAULT_SOURCES:  # else records use LABEL_SOURCES themselves
            out["label_source"] = str(row.get("source") or "online") in self._label_sources
        if self.predicts:
            objective = dict(self.predicts).get(str(row["name"]))
            if objective is not None:
                out["predicts"] = objective
        return out


DEFAULT_ROLES = ScoreRoles()


def kind_is(roles: ScoreRoles, kind: str) -> Any:
    """SQL: the stored score is read with ``kind`` (its name's role, else its stored kind)."""
    own: Any = Score.kind == kind
    named = [n for n, _ in roles.roles]
    if named:
        own = and_(own, Score.name.not_in(named))
    role_names = roles.names_with(kind)
    return or_(Score.name.in_(role_names), own) if role_names else own


def is_label(roles: ScoreRoles) -> Any:
    """SQL: the stored score is a ground-truth label (a ``true`` score from a label source)."""
    return and_(kind_is(roles, "true"), Score.source.in_(list(roles.label_sources) or [""]))


def get_roles(session: Session, *, project_id: int) -> ScoreRoles:
    """The project's roles (the defaults when it never set any)."""
    row = session.get(ScoreRoleConfig, project_id)
    if row is None:
        return DEFAULT_ROLES
    return ScoreRoles.from_mapping(row.roles or {}, row.label_sources or ())


def with_predictions(session: Session, roles: ScoreRoles, *, project_id: int) -> ScoreRoles:
    """``roles`` with the project's evaluators' predictions: each evaluator with an
    objective says its score predicts it (the monitors' windows read them)."""
    from dataclasses import replace

    from sqlalchemy import select

    from app.models.evaluators import Evaluator

    pairs = session.execute(
        select(Evaluator.score_name, Evaluator.objective).where(
            Evaluator.project_id == project_id, Evaluator.objective.is_not(None)
        )
    ).all()
    return replace(roles, predicts=tuple(sorted((n, o) for n, o in pairs if o))) if pairs else roles


def put_roles(session: Session, *, project_id: int, roles: ScoreRoles) -> ScoreRoles:
    """Replace the project's roles (the caller commits)."""
    row = session.get(ScoreRoleConfig, project_id)
    if row is None:
        row = ScoreRoleConfig(project_id=project_id)
        session.add(row)
    row.roles = roles.as_dict
    row.label_sources = list(roles.label_sources)
    row.updated_at = utcnow()
    session.flush()
    return roles
