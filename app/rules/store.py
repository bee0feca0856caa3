"""Rule CRUD: a rule is stored as a monitor of the ``RULE`` family.

The rule itself is the monitor's ``detector_params["rule"]`` (plain JSON of the validated
spec); the rest maps onto the monitor's columns, set so that the monitor pipeline does what
a rule means: no sequential chart and no monitor-level ``for`` (the rule's ``for`` is
evaluated over its own steps), a current window as long as the rule's (what a run records),
a severity naming its worst level (each group's alert takes the level that fired).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import project_row
from app.models import Monitor
from app.models.base import utcnow
from app.monitors.detection import DetectorConfigError
from app.rules.schemas import RuleCreate, RuleOut, RulePatch
from detectors.rules.detector import MODE
from detectors.rules.spec import CalibratedCondition, RuleSpec


def _spec_columns(spec: RuleSpec) -> dict[str, Any]:
    return {
        "detector_params": {"rule": spec.model_dump(mode="json")},
        "selection": {"current_window_seconds": spec.window_seconds},
        "severity": _severity(spec),
    }


def _severity(spec: RuleSpec) -> str:
    """The monitor's severity: the worst level its rule can fire at."""
    cond = spec.condition
    if isinstance(cond, CalibratedCondition):
        return cond.severity
    return "critical" if cond.critical is not None else "warning"


def _name_taken(session: Session, project_id: int, name: str) -> bool:
    q = select(Monitor.id).where(Monitor.project_id == project_id, Monitor.name == name)
    return session.scalar(q) is not None


def create_rule(session: Session, *, project_id: int, body: RuleCreate) -> Monitor:
    """A new rule; ``DetectorConfigError`` naming ``name`` when the name is a monitor's."""
    if _name_taken(session, project_id, body.name):
        raise DetectorConfigError(f"name: a monitor or rule named {body.name!r} already exists")
    now = utcnow()
    monitor = Monitor(
        project_id=project_id, name=body.name, failure_mode=MODE,
        interval_seconds=body.interval_seconds, auto_resolve_after=body.auto_resolve_after,
        labels=dict(body.labels), enabled=body.enabled,
        repeat_interval_seconds=body.repeat_interval_seconds, sequential=False, for_seconds=0,
        next_run_at=now, created_at=now, updated_at=now, **_spec_columns(body.rule),
    )  # fmt: skip
    session.add(monitor)
    session.flush()
    return monitor


def update_rule(session: Session, *, rule: Monitor, patch: RulePatch) -> Monitor:
    changes = patch.model_dump(exclude_unset=True, exclude={"rule"})
    name = changes.get("name")
    if name and name != rule.name and _name_taken(session, rule.project_id, name):
        raise DetectorConfigError(f"name: a monitor or rule named {name!r} already exists")
    for key, value in changes.items():
        if value is not None:
            setattr(rule, key, value)
    if patch.rule is not None:
        for key, value in _spec_columns(patch.rule).items():
            setattr(rule, key, value)
    if "interval_seconds" in changes or changes.get("enabled"):
        rule.next_run_at = utcnow()
    rule.updated_at = utcnow()
    session.flush()
    return rule


def list_rules(session: Session, *, project_id: int) -> list[Monitor]:
    q = select(Monitor).where(Monitor.project_id == project_id, Monitor.failure_mode == MODE)
    return list(session.scalars(q.order_by(Monitor.id)))


def get_rule(session: Session, *, project_id: int, rule_id: int) -> Monitor | None:
    """The rule, or None when the project has no rule of that id (a monitor that is not a
    rule is not one)."""
    row = project_row(session, Monitor, rule_id, project_id=project_id)
    return row if row is not None and row.failure_mode == MODE else None


def rule_out(monitor: Monitor) -> RuleOut:
    return RuleOut(
        id=monitor.id, name=monitor.name, rule=(monitor.detector_params or {}).get("rule", {}),
        interval_seconds=monitor.interval_seconds, auto_resolve_after=monitor.auto_resolve_after,
        labels=monitor.labels or {}, enabled=monitor.enabled,
        repeat_interval_seconds=monitor.repeat_interval_seconds, severity=monitor.severity,
        last_run_at=monitor.last_run_at, created_at=monitor.created_at,
        updated_at=monitor.updated_at,
    )  # fmt: skip


def spec_of(monitor: Monitor) -> RuleSpec:
    return RuleSpec.model_validate((monitor.detector_params or {}).get("rule"))
