"""FM-4 without confidences: a trace's outcome predicted from what every trace carries.

Tool-calling agents emit neither logprobs nor a self-reported confidence, so the
confidence-based estimate (CBPE) has nothing to read. What they do carry predicts the
outcome too: failed tool calls, retries of the same tool, long or short trajectories,
the final decision. :class:`OutcomeModel` is a regularised logistic regression of the
label on those features, fitted on the *reference* window's labeled traces only (the
frozen baseline, so the current window's labels stay out of the model that scores it);
its log-odds then stand where the confidence stood, and the detector's isotonic
recalibration on every labeled trace and its bootstrap give the estimate and its
interval exactly as for a confidence (NannyML's DLE and PAPE, arXiv 2401.08348, follow
the same two steps: a model of the outcome, then a calibration of it on labeled data).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import LogisticRegression

from detectors.records import TraceRecord, is_tool_step, step_error

# Numeric features, in column order (the decision one-hots follow them).
FEATURES = (
    "log_steps",
    "log_tool_calls",
    "failed_tool_calls",
    "failed_tool_share",
    "failed_other_steps",
    "trace_error",
    "log_duration_s",
    "distinct_tools",
    "repeated_tool_calls",
    "longest_failure_run",
)
MAX_DECISIONS = 8  # one-hot columns for the reference's most common decisions


def numeric_features(trace: TraceRecord) -> list[float]:
    """The :data:`FEATURES` of one trace.

    >>> from detectors.records import Step
    >>> t = TraceRecord("a", "bot", started_at=0.0, ended_at=3.0, steps=(
    ...     Step(0, "tool", "x", "error", tool_name="db"), Step(1, "llm", "reply"),
    ...     Step(2, "tool", "x", "error", tool_name="db")))
    >>> dict(zip(FEATURES, numeric_features(t)))["repeated_tool_calls"]
    1.0
    """
    steps = sorted(trace.steps, key=lambda s: s.index)
    tools = [s for s in steps if is_tool_step(s)]
    failed_tools = sum(step_error(s) for s in tools)
    other_failed = sum(step_error(s) for s in steps if not is_tool_step(s))
    names = [s.tool_name or s.name for s in tools]
    repeated = sum(a == b for a, b in zip(names, names[1:], strict=False))
    run = longest = 0
    for s in steps:
        if step_error(s):
            run += 1
            longest = max(longest, run)
        elif is_tool_step(s):  # an ok model reply between failures does not end the run
            run = 0
    return [
        float(np.log1p(len(steps))),
        float(np.log1p(len(tools))),
        float(failed_tools),
        failed_tools / len(tools) if tools else 0.0,
        float(other_failed),
        float(trace.status == "error"),
        float(np.log1p(max(0.0, trace.ended_at - trace.started_at))),
        float(len(set(names))),
        float(repeated),
        float(longest),
    ]


class OutcomeModel:
    """Logistic regression of a 0/1 label on trace features, fitted once on reference traces.

    ``score`` returns log-odds (a monotone score; the detector calibrates it). Labels are
    read as ``label >= 0.5``. The decision one-hots are the reference's most common
    decisions, so a decision never seen before adds nothing rather than a new column.
    """

    def __init__(self, *, c: float = 1.0, seed: int = 0) -> None:
        self.c = c
        self.seed = seed
        self.decisions: tuple[str, ...] = ()
        self._mean = np.zeros(0)
        self._scale = np.ones(0)
        self._model: LogisticRegression | None = None
        self.informative = False

    def matrix(self, traces: Sequence[TraceRecord]) -> np.ndarray:
        rows = []
        for t in traces:
            onehot = [float(t.decision == d) for d in self.decisions]
            rows.append(numeric_features(t) + onehot)
        return np.array(rows, dtype=float).reshape(len(rows), len(FEATURES) + len(self.decisions))

    def fit(
        self,
        traces: Sequence[TraceRecord],
        labels: np.ndarray,
        *,
        decisions: tuple[str, ...] | None = None,
    ) -> OutcomeModel:
        if decisions is None:
            counted = Counter(t.decision for t in traces if t.decision is not None)
            decisions = tuple(d for d, _ in counted.most_common(MAX_DECISIONS))
        self.decisions = decisions
        x = self.matrix(traces)
        self._mean = x.mean(axis=0)
        varies = np.ptp(x, axis=0) > 0  # not std: a constant column's std can be 1e-16
        self._scale = np.where(varies, x.std(axis=0), 1.0)
        # No feature varies: the model can only say the base rate.
        self.informative = bool(varies.any())
        y = (np.asarray(labels) >= 0.5).astype(int)
        self._model = LogisticRegression(C=self.c, max_iter=500, random_state=self.seed)
        self._model.fit((x - self._mean) / self._scale, y)
        return self

    def fit_out_of_fold(
        self, traces: Sequence[TraceRecord], labels: np.ndarray, *, folds: int = 5
    ) -> np.ndarray:
        """Fit on every trace, and return each trace's score from a model that did not see
        it (``folds``-fold cross-fitting): a calibration fitted on in-sample scores would
        believe the model sharper than it is on new traces."""
        self.fit(traces, labels)
        y = (np.asarray(labels) >= 0.5).astype(int)
        out = self.score(traces)
        order = np.random.default_rng(self.seed).permutation(len(traces))
        for k in range(folds):
            held = order[k::folds]
            train = np.setdiff1d(order, held)
            if held.size == 0 or np.ptp(y[train]) == 0:
                continue
            part = OutcomeModel(c=self.c, seed=self.seed)
            part.fit([traces[i] for i in train], y[train], decisions=self.decisions)
            out[held] = part.score([traces[i] for i in held])
        return out

    def score(self, traces: Sequence[TraceRecord]) -> np.ndarray:
        if self._model is None:
            raise RuntimeError("fit the model first")
        if not traces:
            return np.empty(0)
        x = (self.matrix(traces) - self._mean) / self._scale
        return np.asarray(self._model.decision_function(x), dtype=float)

    def weights(self) -> dict[str, float]:
        """Standardised coefficients by feature name (the evidence says what the model reads)."""
        if self._model is None:
            return {}
        names = list(FEATURES) + [f"decision={d}" for d in self.decisions]
        return {n: float(w) for n, w in zip(names, self._model.coef_[0], strict=True)}
