"""The steps of one simulated agent trace: model steps, tool calls, retries and injected
failures, each drawing from its own row of the trace's random block.

Shaped like real tool-calling agents (τ-bench's gpt-4o airline trajectories, measured by
``bench/traffic_shape.py``): model steps almost never fail, tool calls do (more on harder
inputs), and after a failed call the agent often retries the same tool, which fails again
more often than a fresh call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pipelines.scenarios.injections import Effects
from pipelines.scenarios.profiles import TOOL_LATENCY_S

BASE_FAIL = {"plan": 0.003, "llm": 0.002, "tool": 0.005, "step": 0.002}
RETRY_P, RETRY_FAIL = 0.6, 0.33  # retry after a failed call; chance the retry fails too
ERROR_TYPES = {
    "plan": ("invalid_plan",),
    "llm": ("invalid_output", "context_overflow"),
    "tool": ("timeout", "http_500", "rate_limited"),
    "step": ("invalid_output",),
}
HEDGE_DROP = 0.25  # confidence drop after the first low-confidence step
LOW_CONFIDENCE = 0.5


def clip(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return lo if x < lo else hi if x > hi else x


@dataclass
class StepDraft:
    kind: str
    name: str
    tool_name: str | None
    status: str
    error_type: str | None
    started_at: float
    ended_at: float
    confidence: float | None
    attributes: dict[str, Any] = field(default_factory=dict)


class StepLoop:
    """The steps of one trace in order, step ``j`` drawing from row ``j`` of the block.

    Injections act where their failure mode lives. FM-1 (``compound_p``): once a step has
    failed, later tool calls fail more (except the call right after a failed one, which is
    FM-2's cascade), and once a decision step has failed later decision steps fail more
    with healthy-looking confidences (the coherence illusion). FM-2 (``cascade_p``): a
    failed tool call makes the next tool calls fail, decaying down the run; the model
    replies between them stay ok, as in real agents.
    """

    def __init__(
        self,
        tools: tuple[str, ...],
        eff: Effects,
        level: float,
        tool_fail: float,
        t0: float,
        us: list[list[float]],
        zs: list[list[float]],
    ) -> None:
        self.tools, self.eff, self.level, self.tool_fail = tools, eff, level, tool_fail
        self.t, self.us, self.zs = t0, us, zs
        self.steps: list[StepDraft] = []
        self.n_failed = 0
        self.error_seen = False  # any earlier failed step: later tool calls are exposed
        self.decision_error_seen = False
        self.hedging = False
        self.last_tool: str | None = None
        self.cascade_depth = 0  # failed tool calls in a row so far (0: the last call was ok)

    def u_next(self, i: int) -> float:
        return self.us[len(self.steps)][i]

    def step(self, kind: str, name: str, *, final: bool = False) -> None:
        """A model step (plan, reasoning, reply, synthesis) or the final answer."""
        u, z = self.us[len(self.steps)], self.zs[len(self.steps)]
        eff = self.eff
        compounding = self.decision_error_seen and eff.compound_p > 0
        base_fail = u[0] < BASE_FAIL[kind]
        extra_fail = not base_fail and compounding and u[1] < eff.compound_p
        failed = base_fail or extra_fail
        error_type = None
        if base_fail:
            error_type = ERROR_TYPES[kind][int(u[2] * len(ERROR_TYPES[kind]))]
        elif extra_fail:
            error_type = "reasoning_error"
        # Compounding failures keep the confidence of a healthy step (FM-1's illusion).
        if failed and not extra_fail:
            conf = clip(0.25 + 0.08 * z[0], 0.02, 0.45)
        elif u[3] < 0.03 and not final:
            conf = clip(0.38 + 0.05 * z[0], 0.02, 0.49)  # unsure but fine
        else:
            conf = clip(self.level + 0.04 * z[0], 0.05, 0.99)
            if self.hedging:
                conf = clip(conf - HEDGE_DROP * (1.0 - eff.coherence), 0.05, 0.99)
        if conf < LOW_CONFIDENCE and not final:
            self.hedging = True
        if failed and not final:
            self.decision_error_seen = True
        latency = {"plan": 0.7, "llm": 1.2, "step": 0.15}[kind] * math.exp(0.4 * z[1])
        self._append(
            StepDraft(kind, name, None, "ok", error_type, self.t, 0.0, conf), failed, latency
        )

    def tool_call(self) -> None:
        u, z = self.us[len(self.steps)], self.zs[len(self.steps)]
        eff = self.eff
        after_failed = self.cascade_depth > 0
        retry = after_failed and u[10] < RETRY_P
        if retry:
            assert self.last_tool is not None
            tool = self.last_tool
        else:
            tool = self.tools[int(u[9] * len(self.tools))]
        base_fail = u[0] < (RETRY_FAIL if retry else self.tool_fail)
        extra, error_type = 0.0, None
        if after_failed and eff.cascade_p > 0:
            extra, error_type = eff.cascade_p * 0.6 ** (self.cascade_depth - 1), "upstream_error"
        elif self.error_seen and not after_failed and eff.compound_p > 0:
            extra, error_type = eff.compound_p, "invalid_arguments"
        extra_fail = not base_fail and u[1] < extra
        failed = base_fail or extra_fail
        if base_fail:
            error_type = ERROR_TYPES["tool"][int(u[2] * len(ERROR_TYPES["tool"]))]
        elif not extra_fail:
            error_type = None
        latency = TOOL_LATENCY_S[tool] * math.exp(0.5 * z[1])
        attrs = _tool_result(tool, u, z, failed, eff)
        draft = StepDraft("tool", f"tool.{tool}", tool, "ok", error_type, self.t, 0.0, None, attrs)
        self._append(draft, failed, latency)
        if failed:
            self.hedging = True  # the agent noticed the missing tool result
        self.last_tool = tool
        self.cascade_depth = self.cascade_depth + 1 if failed else 0

    def _append(self, draft: StepDraft, failed: bool, latency: float) -> None:
        draft.status = "error" if failed else "ok"
        draft.ended_at = self.t + latency
        self.steps.append(draft)
        self.t += latency + 0.005
        self.n_failed += failed
        self.error_seen = self.error_seen or failed


def _tool_result(
    tool: str, u: list[float], z: list[float], failed: bool, eff: Effects
) -> dict[str, Any]:
    if failed:
        return {"result_count": 0, "partial": False, "stale": False}
    count = 1 if tool in ("calculator", "http_fetch") else 1 + int(u[6] * 9)
    partial = stale = False
    if tool in ("search", "db_query") and u[4] < 0.03:  # a legitimate empty result
        count = 0
    elif u[4] < 0.045:  # rare baseline partial / stale answers
        partial, stale = u[7] < 0.5, u[7] >= 0.5
    # FM-2 "available but wrong": ok status, degraded data, more often on slow calls.
    if u[5] < eff.degraded_p * (1.6 if z[1] > 0.5 else 0.6):
        which = int(u[7] * 3)
        partial, stale = which == 0 or partial, which == 1 or stale
        count = 0 if which == 2 else count
    return {"result_count": count, "partial": partial, "stale": stale}
