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
from dataclasses import dataclass

from pipelines.scenarios.injections import Effects
from pipelines.scenarios.profiles import ENTRY_POINTS, AgentWorld
from pipelines.scenarios.steps import BASE_FAIL, StepDraft, StepLoop, clip

N_TRACE_U, N_TRACE_Z = 24, 8
MAX_TOOL_CALLS = 12
TOOL_CALL_SCALE = 2.6  # k = 1 + gamma(2, scale): mean ~5.7, median 5, p90 ~11
MAX_STEPS, N_STEP_U, N_STEP_Z = 3 + 3 * MAX_TOOL_CALLS, 11, 2
# Step-row uniforms: 0 fails, 1 fails by an injection, 2 error type, 3 unsure confidence,
# 4-7 a tool's result, 8 whether a user reply precedes the next step's tool call (read by
# the step before), 9 which tool, 10 whether a call after a failed one retries it.

TOOL_FAIL_DIFFICULTY = 0.45  # added tool failure rate per unit of (1 - p_correct)²
CHAT_TURN_P = 0.75  # a reply to the user between a reasoning step and its tool call
FAILED_TOOL_SUCCESS = 0.85  # success probability kept per failed tool call
GIVE_UP_FAILURES = 3  # failed steps that end a trace in error
BASE_DEVIATION = 0.05  # chance a decision differs from the version's usual answer
BASE_LABEL_RATE = 0.5  # fraction of production traces that get a delayed label
LABEL_DELAY_MEDIAN_H = 1.5


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
    level = clip(p_correct - eff.confidence_drop + 0.05 * zt[0], 0.05, 0.99)
    k = min(MAX_TOOL_CALLS, 1 + int(TOOL_CALL_SCALE * (-math.log1p(-ut[6]) - math.log1p(-ut[17]))))
    # Harder inputs meet more failing tool calls (the error-prone lookups), as in real
    # trajectories where a few traces hold most of the failures.
    tool_fail = BASE_FAIL["tool"] + TOOL_FAIL_DIFFICULTY * (1.0 - p_correct) ** 2
    sim = StepLoop(prof.tools, eff, level, tool_fail, t0, us, zs)
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
    success = status == "ok" and ut[9] < clip(p_success, 0.01, 0.995)
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


def _scores(
    d: TraceDraft, eff: Effects, ut: list[float], zt: list[float]
) -> list[tuple[str, float, str, str, float]]:
    s = 1.0 if d.success else 0.0
    end = d.ended_at
    fact = round(clip(0.68 + 0.2 * s + 0.07 * zt[5] - eff.true_loss), 4)
    if d.source == "eval":
        return [("success", s, "true", "eval", end), ("factuality", fact, "true", "eval", end)]
    a, gain = eff.proxy_coupling, eff.proxy_gain
    # Proxies track success with weight a; the rest is replaced by its baseline mean so that
    # weakening the coupling (FM-7) moves the correlation, not the level.
    mix = a * s + (1 - a) * 0.8
    out = [
        ("task_completion_proxy", round(clip(0.4 + 0.4 * mix + gain + 0.1 * zt[2]), 4)),
        ("engagement", round(clip(0.35 + 0.3 * mix + gain + 0.12 * zt[3]), 4)),
    ]
    scores = [(n, v, "proxy", "online", end + 1.0) for n, v in out]
    if d.source == "production" and ut[14] < 0.4:
        rating = round(clip(0.45 + 0.35 * mix + gain + 0.15 * zt[4]), 4)
        scores.append(("user_rating_proxy", rating, "proxy", "online", end + 30.0))
    scores.append(("factuality", fact, "true", "online", end + 2.0))
    scores.append(
        ("toxicity", round(clip(0.02 + 0.02 * abs(zt[6])), 4), "guardrail", "online", end)
    )
    if d.source == "production" and ut[10] < BASE_LABEL_RATE * eff.label_rate:
        delay_h = LABEL_DELAY_MEDIAN_H * math.exp(0.6 * zt[1]) * eff.label_delay
        scores.append(("success", s, "true", "delayed", end + 3600.0 * delay_h))
    return scores
