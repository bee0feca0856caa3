"""All models, imported here so ``Base.metadata`` knows every table (Alembic reads it)."""

from app.models.alerts import (  # noqa: F401
    Alert,
    AlertEvent,
    Channel,
    Notification,
    Silence,
)
from app.models.base import Base
from app.models.core import (
    ApiKey,
    Embedding,
    EmbeddingStream,
    IngestEvent,
    IngestMinute,
    Project,
    Score,
    Span,
    SpanEvent,
    Trace,
)
from app.models.derive import InputGroup  # noqa: F401
from app.models.evaluators import Evaluation, Evaluator, EvaluatorUsage  # noqa: F401
from app.models.issues import (  # noqa: F401
    FailureEvent,
    FailureIssue,
    FailureTemplate,
    IssueStateChange,
)
from app.models.labeling import Label, LabelQueue, QueueItem, RejectedLabel  # noqa: F401
from app.models.media import MediaJob  # noqa: F401
from app.models.monitors import DetectorRun, Finding, Monitor, MonitorBaseline  # noqa: F401
from app.models.pricing import ModelPrice  # noqa: F401
from app.models.retention import OrphanTrace  # noqa: F401
from app.models.rollups import (  # noqa: F401
    ModelRollup,
    RollupDirty,
    ScoreRollup,
    ToolRollup,
    TraceRollup,
    UserRollup,
)
from app.models.scheduling import SchedulerLease  # noqa: F401
from app.models.score_roles import ScoreRoleConfig  # noqa: F401
from app.models.web import InstallationSecret, WebSession  # noqa: F401

__all__ = [
    "ApiKey",
    "Base",
    "Embedding",
    "EmbeddingStream",
    "IngestEvent",
    "IngestMinute",
    "InputGroup",
    "Project",
    "Score",
    "Span",
    "SpanEvent",
    "Trace",
]
