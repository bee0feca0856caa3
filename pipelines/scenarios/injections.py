"""Failure-mode injections for the scenario generator.

An :class:`Injection` switches one failure mode on from a chosen time at a chosen strength.
:func:`effects_at` folds the active injections into one :class:`Effects` value that the
workload simulator reads per trace (or per VLM sample). With no injection active the
effects are the clean baseline: every multiplier 1, every added probability 0.

Each mode touches only its own mechanism, so a detector for another mode should stay quiet
(the bench's specificity matrix measures exactly that):

* FM-1 compounding errors: after the first failed *decision* step (plan/llm) further
  decision steps fail much more often, and confidences stay high (coherence illusion).
  Tool failures are left alone so FM-2's tool-failure lift is not touched.
* FM-2 tool cascades: a failed tool call makes the next steps fail; tools answer ``ok``
  with partial, stale or empty results, more often when slow.
* FM-3 output drift: the same input and version gets different decisions, and output
  embeddings spread. Correctness is left as it was (FM-4/FM-7 own correctness).
* FM-4 ground-truth absence: delayed labels thin out and arrive later, and accuracy drops
  silently: no errors, no visible labels. By default the agent's confidences fall with
  the accuracy (the inputs got harder and the agent is calibrated), which is what a
  label-free (CBPE) estimate can see; ``overrides=(("confidence_drop", 0.0),)`` keeps the
  confidences unchanged, a drop no confidence-based estimate can see.
* FM-5 eval overfitting: a new version of the first agent takes its traffic; its eval
  success rises while production success stays flat, and production inputs move to
  intents the eval set does not cover. That moves every agent's ``<agent>.input``
  embedding stream, which an FM-6 monitor watching those streams rightly sees (the demo
  reports it as FM-5's change seen by FM-6).
* FM-6 silent degradation: the ``vlm.image`` embedding stream drifts (a new cluster plus a
  mean shift); traces are untouched.
* FM-7 proxy convergence: proxy scores rise, true scores fall, the proxy-true coupling
  weakens, and for a share of inputs the decision collapses onto one category (the same
  inputs every time, so repeated inputs stay consistent and FM-3 is not touched).

Injections act on the agent, so eval-harness runs see them as production does (an eval
gap appears only with FM-5); counterfactual shadow replays run the clean baseline version.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

FAILURE_MODES: dict[str, str] = {
    "FM-1": "compounding decision errors",
    "FM-2": "tool failure cascades",
    "FM-3": "non-deterministic output drift",
    "FM-4": "long-horizon ground-truth absence",
    "FM-5": "evaluation harness overfitting",
    "FM-6": "silent degradation in production (embedding drift)",
    "FM-7": "proxy goal convergence",
}
STRENGTHS = ("weak", "moderate", "strong")


@dataclass(frozen=True)
class Injection:
    """Inject failure mode ``mode`` from ``at`` on, at ``strength``.

    ``ramp`` (optional) grows the effect linearly from zero at ``at`` to full strength at
    ``at + ramp``; the default is a step change. ``overrides`` replaces single full-strength
    effects, e.g. ``(("confidence_drop", 0.0),)`` makes FM-4's accuracy drop invisible in
    the confidences.
    """

    mode: str
    at: datetime
    strength: str = "moderate"
    ramp: timedelta = timedelta(0)
    overrides: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in FAILURE_MODES:
            raise ValueError(f"mode must be one of {sorted(FAILURE_MODES)}, got {self.mode!r}")
        if self.strength not in STRENGTHS:
            raise ValueError(f"strength must be one of {STRENGTHS}, got {self.strength!r}")
        if self.at.tzinfo is None:
            raise ValueError("at must be timezone-aware (UTC)")
        if self.ramp < timedelta(0):
            raise ValueError("ramp must be >= 0")
        for name, _ in self.overrides:
            if name not in Effects.__dataclass_fields__:
                raise ValueError(f"overrides: unknown effect {name!r}")

    def level(self, t: float) -> float:
        """Fraction of full strength at epoch time ``t`` (0 before ``at``)."""
        at = self.at.timestamp()
        if t < at:
            return 0.0
        ramp = self.ramp.total_seconds()
        return 1.0 if ramp <= 0 else min(1.0, (t - at) / ramp)

    def key(self) -> str:
        extra = ",".join(f"{k}={v:g}" for k, v in self.overrides)
        return f"{self.mode}@{self.at.isoformat()}:{self.strength}:{self.ramp.total_seconds():g}:{extra}"


@dataclass(frozen=True)
class Effects:
    """The knobs of the simulator; the default instance is the clean baseline."""

    # FM-1: added failure probability of decision steps after the first failed decision
    # step, and the fraction of the usual post-error confidence drop that is removed.
    compound_p: float = 0.0
    coherence: float = 0.0
    # FM-2: probability that the step after a failed tool fails (decays down the cascade),
    # and probability that a slow ok tool call returns partial / stale / empty data.
    cascade_p: float = 0.0
    degraded_p: float = 0.0
    # FM-3: probability that a decision deviates from the version's usual answer (added),
    # and the multiplier of the output-embedding noise.
    nondeterminism: float = 0.0
    output_spread: float = 1.0
    # FM-4: multiplier of the label probability and of the label delay; accuracy drop, and
    # how much of it the agent's confidence shows (0 = confidences unchanged).
    label_rate: float = 1.0
    label_delay: float = 1.0
    accuracy_drop: float = 0.0
    confidence_drop: float = 0.0
    # FM-5: new version of the first agent live; share of its eval failures that vanish
    # (it learned the eval set); fraction of production inputs outside the eval set.
    new_version: bool = False
    eval_gain: float = 0.0
    novel_inputs: float = 0.0
    # FM-6: fraction of vlm.image samples from a new cluster; mean shift (norm units).
    image_new_cluster: float = 0.0
    image_shift: float = 0.0
    # FM-7: proxy gain, true-score loss, coupling kept (1 = baseline), decision collapse.
    proxy_gain: float = 0.0
    true_loss: float = 0.0
    proxy_coupling: float = 1.0
    collapse: float = 0.0


CLEAN = Effects()

# Full-strength effects per mode and strength. "moderate" is what the detectors are
# expected to catch >= 90% of the time with a few hours of traffic.
_TABLE: dict[str, dict[str, Effects]] = {
    "FM-1": {
        "weak": Effects(compound_p=0.12, coherence=0.5),
        "moderate": Effects(compound_p=0.25, coherence=0.8),
        "strong": Effects(compound_p=0.45, coherence=1.0),
    },
    "FM-2": {
        "weak": Effects(cascade_p=0.25, degraded_p=0.15),
        "moderate": Effects(cascade_p=0.5, degraded_p=0.3),
        "strong": Effects(cascade_p=0.8, degraded_p=0.6),
    },
    "FM-3": {
        "weak": Effects(nondeterminism=0.12, output_spread=1.5),
        "moderate": Effects(nondeterminism=0.25, output_spread=2.0),
        "strong": Effects(nondeterminism=0.45, output_spread=3.0),
    },
    "FM-4": {
        "weak": Effects(label_rate=0.5, label_delay=2.0, accuracy_drop=0.08, confidence_drop=0.08),
        "moderate": Effects(
            label_rate=0.2, label_delay=3.0, accuracy_drop=0.15, confidence_drop=0.15
        ),
        "strong": Effects(
            label_rate=0.05, label_delay=4.0, accuracy_drop=0.25, confidence_drop=0.25
        ),
    },
    "FM-5": {
        "weak": Effects(new_version=True, eval_gain=0.35, novel_inputs=0.15),
        "moderate": Effects(new_version=True, eval_gain=0.65, novel_inputs=0.3),
        "strong": Effects(new_version=True, eval_gain=0.9, novel_inputs=0.5),
    },
    "FM-6": {
        "weak": Effects(image_new_cluster=0.12, image_shift=0.15),
        "moderate": Effects(image_new_cluster=0.25, image_shift=0.3),
        "strong": Effects(image_new_cluster=0.4, image_shift=0.45),
    },
    "FM-7": {
        "weak": Effects(proxy_gain=0.05, true_loss=0.06, proxy_coupling=0.7, collapse=0.15),
        "moderate": Effects(proxy_gain=0.1, true_loss=0.12, proxy_coupling=0.4, collapse=0.3),
        "strong": Effects(proxy_gain=0.18, true_loss=0.2, proxy_coupling=0.1, collapse=0.5),
    },
}


def full_effects(mode: str, strength: str) -> Effects:
    """The full-strength effects of one mode (for docs and tests)."""
    return _TABLE[mode][strength]


def _scaled(full: Effects, level: float) -> Effects:
    """Interpolate between the clean baseline and ``full`` (``level`` in [0, 1])."""
    if level >= 1.0:
        return full
    values = {}
    for name in Effects.__dataclass_fields__:
        base, target = getattr(CLEAN, name), getattr(full, name)
        if isinstance(target, bool):
            values[name] = target if level > 0 else base
        else:
            values[name] = base + (target - base) * level
    return Effects(**values)


def effects_at(injections: Sequence[Injection], t: float) -> Effects:
    """The effects in force at epoch time ``t`` (modes compose field by field)."""
    levels = tuple(inj.level(t) for inj in injections)
    return _compose(tuple(injections), levels)


@functools.lru_cache(maxsize=4096)
def _compose(injections: tuple[Injection, ...], levels: tuple[float, ...]) -> Effects:
    effects = CLEAN
    for inj, level in zip(injections, levels, strict=True):
        if level <= 0.0:
            continue
        full = replace(_TABLE[inj.mode][inj.strength], **dict(inj.overrides))  # type: ignore[arg-type]
        scaled = _scaled(full, level)
        changed = {
            name: getattr(scaled, name)
            for name in Effects.__dataclass_fields__
            if getattr(scaled, name) != getattr(CLEAN, name)
        }
        effects = replace(effects, **changed)
    return effects
