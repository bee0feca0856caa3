"""The alert as the outside world sees it: what every channel's body is built from."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.alerts import sentences
from app.models import Alert


@dataclass(frozen=True)
class AlertContext:
    """The alert as the outside world sees it."""

    alert: Alert
    monitor_name: str
    project_name: str
    public_url: str

    @property
    def link(self) -> str:
        return f"{self.public_url.rstrip('/')}/alerts/{self.alert.id}"

    @property
    def title(self) -> str:
        return sentences.title(self.alert.failure_mode, self.monitor_name)

    @property
    def headline(self) -> str:
        """``[CRITICAL] FM-2 tool failure cascades: <the alert's sentence>``, on one line."""
        a = self.alert
        return sentences.one_line(f"[{a.severity.upper()}] {self.title}: {a.summary}")

    @property
    def since(self) -> str | None:
        return iso(self.alert.first_fired_at)

    @property
    def labels(self) -> dict[str, str]:
        a = self.alert
        return {
            "alertname": f"telltale_{a.failure_mode.replace('-', '').lower()}",
            "project": self.project_name,
            "monitor": self.monitor_name,
            "failure_mode": a.failure_mode,
            "severity": a.severity,
            **{str(k): str(v) for k, v in (a.labels or {}).items()},
        }


def iso(dt: datetime | None) -> str | None:
    return dt.isoformat().replace("+00:00", "Z") if dt is not None else None
