"""Simulate one agent trace from a fixed block of random numbers.

Every trace draws the same number of uniforms and normals whatever the effects in force
(common random numbers), so an injected run differs from the clean run of the same seed
only where the injected mechanism acts. Step layout (a tool-calling agent's loop)::

    plan -> (llm.reason [-> llm.respond] -> tool)* k -> llm.synthesize -> final_answer

Its shape follows real trajectories (τ-bench's gpt-4o airline, measured by
``bench/traffic_shape.py``): about 18 steps and 6 tool calls a trace (``k`` is 1 plus a
gamma(2) draw, at most 12); model steps almost never fail, tool calls do (about 6% of
them, more on harder inputs, so a minority of traces holds most failures); after a failed
call the agent often retries the same tool, and the retry fails again more often than a
fresh call (the cause persists): the next tool call fails about 4× as often after a failed
one as after an ok one, with model replies in between. A trace is ``error`` when its final
step fails or three steps fail; confidences are calibrated to the intent's difficulty, low
on failed steps, and hedged (lowered) after the first low-confidence step; success is
Bernoulli(p_correct), lowered by each failed tool call, and requires status ``ok``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from pipelines.scenarios.injections import Effects
from pipelines.scenarios.profiles import ENTRY_POINTS, TOOL_LATENCY_S, AgentWorld

N_TRACE_U, N_TRACE_Z = 24, 8
MAX_TOOL_CALLS = 12
TOOL_CALL_SCALE = 2.6  # k = 1 + gamma(2, scale): mean ~5.7, median 5, p90 ~11
MAX_STEPS, N_STEP_U, N_STEP_Z = 3 + 3 * MAX_TOOL_CALLS, 11, 2
# Step-row uniforms: 0 fails, 1 fails by an injection, 2 error type, 3 unsure confidence,
# 4-7 a tool's result, 8 whether a user reply precedes the next step's tool call (read by
# the step before), 9 which tool, 10 whether a call after a failed one retries it.

BASE_FAIL = {"plan": 0.003, "llm": 0.002, "tool": 0.005, "step": 0.002}
TOOL_FAIL_DIFFICULTY = 0.45  # added tool failure rate per unit of (1 - p_correct)²
RETRY_P, RETRY_FAIL = 0.6, 0.33  # retry after a failed call; chance the retry fails too
CHAT_TURN_P = 0.75  # a reply to the user between a reasoning step and its tool call
FAILED_TOOL_SUCCESS = 0.85  # success probability kept per failed tool call
GIVE_UP_FAILURES = 3  # failed steps that end a trace in error
ERROR_TYPES = {
    "plan": ("invalid_plan",),
    "llm": ("invalid_output", "context_overflow"),
    "tool": ("timeout", "http_500", "rate_limited"),
    "step": ("invalid_output",),
}
BASE_DEVIATION = 0.05  # chance a decision differs from the version's usual answer
BASE_LABEL_RATE = 0.5  # fraction of production traces that get a delayed label
LABEL_DELAY_MEDIAN_H = 1.5
HEDGE_DROP = 0.25  # confidence drop after the first low-confidence step
LOW_CONFIDENCE = 0.5


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


@dataclass
class TraceDraft:
    index: int
    agent: str
    version: str
    source: str
    entry_point: str
    intent: int
    started_at: float
    ended_at: float
    status: str
    decision: str
    task_type: str
    confidence: float
    success: bool
    steps: list[StepDraft]
    scores: list[tuple[str, float, str, str, float]]  # name, value, kind, source, created_at
    world: AgentWorld
    counterfactual_of: int | None = None
    twin: bool = False  # wants a counterfactual shadow replay


def _clip(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return lo if x < lo else hi if x > hi else x


def pick_world(worlds: list[AgentWorld], agent_cdf: list[float], u: float) -> AgentWorld:
    return worlds[min(bisect_right(agent_cdf, u), len(worlds) - 1)]


def simulate_trace(
    index: int,
    t0: float,
    world: AgentWorld,
    eff: Effects,
    ut: list[float],
    zt: list[float],
    us: list[list[float]],
    zs: list[list[float]],
    *,
    source: str,
    counterfactual_fraction: float,
    upgradable: bool = False,
    replay_of: TraceDraft | None = None,
) -> TraceDraft:
    prof = world.profile
    if replay_of is not None:  # counterfactual: baseline version, same input, shadow source
        source, version = "shadow", prof.versions[0]
        intent, entry = replay_of.intent, replay_of.entry_point
    else:
        if eff.new_version and upgradable:
            version = prof.new_version
        else:
            version = prof.versions[
                min(bisect_right(world.version_cdf, ut[2]), len(prof.versions) - 1)
            ]
        if source == "eval":
            intent = int(world.eval_intents[int(ut[4] * len(world.eval_intents))])
            entry = "batch"
        else:
            intent = min(bisect_right(world.popularity_cdf, ut[3]), world.n_regular - 1)
            if ut[12] < eff.novel_inputs:
                n_novel = len(world.p_correct) - world.n_regular
                intent = world.n_regular + int(ut[13] * n_novel)
            entry = ENTRY_POINTS[bisect_right([0.5, 0.85], ut[5])]
    p_correct = world.p_correct[intent]

    # Decision: the version's usual answer, with deviations (FM-3) and collapse (FM-7).
    n_dec = len(prof.decisions)
    usual = world.usual[version][intent]
    decision = usual
    if ut[7] < BASE_DEVIATION + eff.nondeterminism:
        decision = (usual + 1 + int(ut[8] * (n_dec - 1))) % n_dec
    if entry == "chat_ui" and ut[16] < eff.nondeterminism:
        decision = world.chat_alt[intent]
    # Collapse is a property of the input (the tuned policy answers it the rewarded way
    # every time), so repeated inputs stay consistent and FM-3 is not touched.
    collapsed = world.collapse_u[intent] < eff.collapse
    if collapsed:
        decision = 0

    # Confidence level: calibrated to the difficulty (and to FM-4's drop, as far as shown).
    level = _clip(p_correct - eff.confidence_drop + 0.05 * zt[0], 0.05, 0.99)
    k = min(MAX_TOOL_CALLS, 1 + int(TOOL_CALL_SCALE * (-math.log1p(-ut[6]) - math.log1p(-ut[17]))))
    # Harder inputs meet more failing tool calls (the error-prone lookups), as in real
    # trajectories where a few traces hold most of the failures.
    tool_fail = BASE_FAIL["tool"] + TOOL_FAIL_DIFFICULTY * (1.0 - p_correct) ** 2
    sim = _StepLoop(prof.tools, eff, level, tool_fail, t0, us, zs)
    sim.step("plan", "plan")
    for _ in range(k):
        sim.step("llm", "llm.reason")
        if sim.u_next(8) < CHAT_TURN_P:
            sim.step("llm", "llm.respond")  # a reply to the user between tool calls
        sim.tool_call()
    sim.step("llm", "llm.synthesize")
    sim.step("step", "final_answer", final=True)
    steps, n_failed = sim.steps, sim.n_failed
    n_failed_tools = sum(s.kind == "tool" and s.status == "error" for s in steps)

    status = "error" if steps[-1].status == "error" or n_failed >= GIVE_UP_FAILURES else "ok"
    p_success = p_correct - eff.accuracy_drop - eff.true_loss
    p_success *= FAILED_TOOL_SUCCESS**n_failed_tools  # a failed lookup spoils the answer
    if source == "eval" and version == prof.new_version:
        p_success += eff.eval_gain * (1.0 - p_success)  # it learned the eval set
    if collapsed and usual != 0:
        p_success *= 0.6
    success = status == "ok" and ut[9] < _clip(p_success, 0.01, 0.995)
    final_conf = steps[-1].confidence if steps[-1].confidence is not None else level
    draft = TraceDraft(
        index=index,
        agent=prof.name,
        version=version,
        source=source,
        entry_point=entry,
        intent=intent,
        started_at=t0,
        ended_at=steps[-1].ended_at,
        status=status,
        decision=prof.decisions[decision],
        task_type=world.task_type[intent],
        confidence=round(final_conf, 4),
        success=success,
        steps=steps,
        scores=[],
        world=world,
        counterfactual_of=None if replay_of is None else replay_of.index,
        twin=source == "production" and ut[15] < counterfactual_fraction,
    )
    draft.scores = _scores(draft, eff, ut, zt)
    return draft


class _StepLoop:
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
            conf = _clip(0.25 + 0.08 * z[0], 0.02, 0.45)
        elif u[3] < 0.03 and not final:
            conf = _clip(0.38 + 0.05 * z[0], 0.02, 0.49)  # unsure but fine
        else:
            conf = _clip(self.level + 0.04 * z[0], 0.05, 0.99)
            if self.hedging:
                conf = _clip(conf - HEDGE_DROP * (1.0 - eff.coherence), 0.05, 0.99)
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


def _scores(
    d: TraceDraft, eff: Effects, ut: list[float], zt: list[float]
) -> list[tuple[str, float, str, str, float]]:
    s = 1.0 if d.success else 0.0
    end = d.ended_at
    fact = round(_clip(0.68 + 0.2 * s + 0.07 * zt[5] - eff.true_loss), 4)
    if d.source == "eval":
        return [("success", s, "true", "eval", end), ("factuality", fact, "true", "eval", end)]
    a, gain = eff.proxy_coupling, eff.proxy_gain
    # Proxies track success with weight a; the rest is replaced by its baseline mean so that
    # weakening the coupling (FM-7) moves the correlation, not the level.
    mix = a * s + (1 - a) * 0.8
    out = [
        ("task_completion_proxy", round(_clip(0.4 + 0.4 * mix + gain + 0.1 * zt[2]), 4)),
        ("engagement", round(_clip(0.35 + 0.3 * mix + gain + 0.12 * zt[3]), 4)),
    ]
    scores = [(n, v, "proxy", "online", end + 1.0) for n, v in out]
    if d.source == "production" and ut[14] < 0.4:
        rating = round(_clip(0.45 + 0.35 * mix + gain + 0.15 * zt[4]), 4)
        scores.append(("user_rating_proxy", rating, "proxy", "online", end + 30.0))
    scores.append(("factuality", fact, "true", "online", end + 2.0))
    scores.append(
        ("toxicity", round(_clip(0.02 + 0.02 * abs(zt[6])), 4), "guardrail", "online", end)
    )
    if d.source == "production" and ut[10] < BASE_LABEL_RATE * eff.label_rate:
        delay_h = LABEL_DELAY_MEDIAN_H * math.exp(0.6 * zt[1]) * eff.label_delay
        scores.append(("success", s, "true", "delayed", end + 3600.0 * delay_h))
    return scores
