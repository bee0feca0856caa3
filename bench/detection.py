"""Detection-quality bench: false alarms, detection rate and delay, specificity. Prints JSON.

    python -m bench.detection [--runs 50] [--seed 0] [--quick]

Per seeded run the scenario generator builds one clean workload (8 h, ~100 traces/h,
32-d embeddings, a ``vlm.image`` stream). The reference window is the first 4 h; failure
modes are injected at 4 h. A monitor evaluates every hour after the injection (at +1 h ..
+4 h) on a trailing 2 h current window against the reference, seeing only the labels that
had arrived by then (:func:`pipelines.scenarios.as_of`).

* ``false_alarm_rate``: clean reference vs the last clean 2 h window, one evaluation;
  ``false_alarm_rate_sliding``: any of the four hourly evaluations fires on clean data
  (the figure to compare with the sliding detection rate).
* ``detection``: per strength, the share of runs where the mode's own detector fires at
  some hourly evaluation, and the delay (injection -> first firing evaluation, hours).
* ``specificity``: ``matrix[k][j]`` = share of runs in which FM-k's detector fires at
  some evaluation when only FM-j is injected (moderate); the diagonal is detection.

Every detector is built by ``detectors.registry.build_detector`` and called
``test(reference, current, now=...)``, as a monitor builds and calls it. FM-6 runs on the
``vlm.image`` stream with method ``mmd`` (alpha 0.01), as the default FM-6 monitor does. The variant row is ``cosine_drift`` (KS on cosine similarity to the
reference centroid) on each window, or an EWMA chart on 15-minute batch mean similarities
(fitted on bootstrap batches of the reference, limits for ARL0 = 2000 batches) alarming
by then. Injections other than FM-6 leave the image stream identical to the clean one
(common random numbers), so it is reused; for FM-6 only the image stream is regenerated.

Resampling counts are lowered from the detectors' defaults (permutations 999 -> 399 for
FM-1/2/3, the least their alpha allows, and 199 for FM-7; bootstrap 1000 -> 200 for
FM-4) to fit 50 runs in about 10 CPU minutes; a permutation p-value is valid at any count, so this costs a
little power and no false-alarm control. Variants beside the table: FM-4 injected with
confidences that do not show the accuracy drop, FM-5 on its gap and trend tests alone
(``fire_on_coverage=False``; its production success mixes visible labels and ``status``), and
FM-6 by cosine KS or EWMA (the KS-on-centroid-similarity test cannot see a new cluster
that sits as far from the reference centroid as the old ones, which is why the default
monitor uses MMD).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import sklearn
from threadpoolctl import threadpool_limits

from detectors.records import TraceRecord
from detectors.registry import build_detector
from pipelines.scenarios import (
    FAILURE_MODES,
    IMAGE_STREAM,
    STRENGTHS,
    Injection,
    as_of,
    embedding_stream,
    events_to_records,
    generate_workload,
    window,
)
from pipelines.scenarios.vlm import image_vectors

START = datetime(2025, 3, 3, tzinfo=UTC)
HOUR = 3600.0
REF_H, INJECT_H, DURATION_H, WINDOW_H = 4.0, 4.0, 8.0, 2.0
EVAL_AFTER_H = (1.0, 2.0, 3.0, 4.0)
TRACES_PER_HOUR, EVAL_PER_AGENT_HOUR, IMAGES_PER_HOUR, DIM = 100.0, 20, 120.0, 32
BATCH_S, EWMA_LAMBDA, EWMA_ARL0, EWMA_BOOT = 900.0, 0.2, 2000.0, 300

# Every mode is built as a monitor builds it (detectors.registry.build_detector) with these
# parameters: resampling counts lowered (see above); FM-6 as the default FM-6 monitor.
BENCH_PARAMS: dict[str, dict[str, Any]] = {
    "FM-1": {"n_permutations": 399},
    "FM-2": {"n_permutations": 399},
    "FM-3": {"n_permutations": 399},
    "FM-4": {"n_bootstrap": 400},
    "FM-5": {},
    "FM-6": {"method": "mmd", "alpha": 0.01},
    "FM-7": {"n_permutations": 199},
}


EXTRA_ROWS = (
    "FM-4 confidence unchanged",
    "FM-5 fire_on_coverage=False",
    "FM-6 cosine_drift or EWMA",
)
EXTRA_FM5 = {"fire_on_coverage": False}


@dataclass
class Scenario:
    """One run's data: trace records and the image stream (times, vectors)."""

    records: list[TraceRecord]
    image_times: np.ndarray
    image_vecs: np.ndarray


@dataclass
class _Tally:
    fa: int = 0
    fa_sliding: int = 0
    delays: list[float | None] = field(default_factory=list)


Check = Callable[[Scenario, float], tuple[bool, str]]  # (scenario, eval time) -> fired, status


def _make_trace_check(mode: str, params: dict[str, Any]) -> Check:
    detector = build_detector(mode, params)
    t_ref = START.timestamp()

    def check(sc: Scenario, now: float) -> tuple[bool, str]:
        ref = as_of(window(sc.records, t_ref, t_ref + REF_H * HOUR), now)
        cur = as_of(window(sc.records, now - WINDOW_H * HOUR, now), now)
        # sklearn's per-call argument validation dominates FM-4's bootstrap; the inputs
        # are finite by construction, so skipping it changes speed only.
        with sklearn.config_context(skip_parameter_validation=True, assume_finite=True):
            res = detector.test(ref, cur, now=now)
        return bool(res.fired), res.status

    return check


def _fm6_check() -> Check:
    from detectors.drift import EWMAChart, cosine_drift, ewma_limit_for_arl0

    limit = ewma_limit_for_arl0(EWMA_ARL0, EWMA_LAMBDA)
    t_ref = START.timestamp()

    def check(sc: Scenario, now: float) -> tuple[bool, str]:
        t, x = sc.image_times, sc.image_vecs
        ref = x[(t >= t_ref) & (t < t_ref + REF_H * HOUR)]
        cur = x[(t >= now - WINDOW_H * HOUR) & (t < now)]
        if len(ref) < 20 or len(cur) < 20:
            return False, "insufficient_data"
        if cosine_drift(ref, cur).fired:
            return True, "ok"
        # EWMA on batch mean cosine similarity to the reference centroid, streamed from the
        # end of the reference window to ``now``; in-control law from bootstrap batches.
        centre = ref.mean(axis=0)
        centre /= np.linalg.norm(centre)
        sims_ref = ref @ centre
        per_batch = max(2, int(round(len(ref) / (REF_H * HOUR / BATCH_S))))
        rng = np.random.default_rng(0)
        boot = sims_ref[rng.integers(0, len(ref), (EWMA_BOOT, per_batch))].mean(axis=1)
        chart = EWMAChart(lam=EWMA_LAMBDA, L=limit).fit(boot)
        edges = np.arange(t_ref + REF_H * HOUR, now + 1e-9, BATCH_S)
        sims = x @ centre
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            batch = sims[(t >= lo) & (t < hi)]
            if batch.size:
                chart.update(float(batch.mean()))
        return chart.drift_detected, "ok"

    return check


def _fm6_stream_check(params: dict[str, Any]) -> Check:
    """FM-6 on the image stream, called as the monitor calls it: streams in, a result out."""
    detector = build_detector("FM-6", params)
    t_ref = START.timestamp()

    def check(sc: Scenario, now: float) -> tuple[bool, str]:
        t, x = sc.image_times, sc.image_vecs
        ref = x[(t >= t_ref) & (t < t_ref + REF_H * HOUR)]
        cur = x[(t >= now - WINDOW_H * HOUR) & (t < now)]
        res = detector.test({IMAGE_STREAM: ref}, {IMAGE_STREAM: cur}, now=now)
        return bool(res.fired), res.status

    return check


def build_checks() -> dict[str, Check]:
    """One check per failure mode, each built by the registry from ``BENCH_PARAMS``."""
    return {
        mode: _fm6_stream_check(params) if mode == "FM-6" else _make_trace_check(mode, params)
        for mode, params in sorted(BENCH_PARAMS.items())
    }


def clean_scenario(seed: int) -> Scenario:
    events = generate_workload(
        seed, START, timedelta(hours=DURATION_H), TRACES_PER_HOUR,
        embedding_dim=DIM, images_per_hour=IMAGES_PER_HOUR, eval_per_agent_hour=EVAL_PER_AGENT_HOUR,
    )  # fmt: skip
    vecs, times = embedding_stream(events, IMAGE_STREAM)
    return Scenario(events_to_records(events), times, vecs)


def injected_scenario(
    seed: int,
    clean: Scenario,
    mode: str,
    strength: str,
    overrides: tuple[tuple[str, float], ...] = (),
) -> Scenario:
    """The clean run up to the injection, the injected run after it (same seed)."""
    at = START + timedelta(hours=INJECT_H)
    inj = [Injection(mode, at, strength, overrides=overrides)]
    if mode == "FM-6":
        times, vecs = image_vectors(
            seed, START.timestamp(), DURATION_H * HOUR, IMAGES_PER_HOUR, DIM, inj
        )
        return Scenario(clean.records, times, vecs)
    events = generate_workload(
        seed, START, timedelta(hours=DURATION_H), TRACES_PER_HOUR, injections=inj,
        embedding_dim=DIM, images_per_hour=0, eval_per_agent_hour=EVAL_PER_AGENT_HOUR,
        emit_between=(at, START + timedelta(hours=DURATION_H)),
    )  # fmt: skip
    # Shadow replays travel with their production trace: keep the clean ones whose trace
    # started before the injection.
    early = {r.trace_id for r in clean.records if r.started_at < at.timestamp()}
    pre = [r for r in clean.records if r.trace_id.removesuffix("-cf") in early]
    records = sorted(pre + events_to_records(events), key=lambda r: (r.started_at, r.trace_id))
    return Scenario(records, clean.image_times, clean.image_vecs)


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 3) if values else None


def first_fire(check: Check, sc: Scenario) -> tuple[float | None, list[str]]:
    """Hours from injection to the first firing hourly evaluation (None: never)."""
    statuses = []
    for after in EVAL_AFTER_H:
        fired, status = check(sc, START.timestamp() + (INJECT_H + after) * HOUR)
        statuses.append(status)
        if fired:
            return after, statuses
    return None, statuses


def run(n_runs: int, seed0: int, strengths: Sequence[str]) -> dict[str, Any]:
    t_begin, cpu0 = time.perf_counter(), time.process_time()
    checks = build_checks()
    modes = list(checks)
    injected_modes = list(FAILURE_MODES)
    fa = {m: 0 for m in modes}
    fa_sliding = {m: 0 for m in modes}
    insufficient = {m: 0 for m in modes}
    delays: dict[str, dict[str, list[float | None]]] = {
        m: {s: [] for s in strengths} for m in modes
    }
    spec = {k: {j: 0 for j in injected_modes} for k in modes}
    seconds = {m: 0.0 for m in modes}
    # Variants reported beside the table: FM-4 with confidences that do not show the
    # accuracy drop (the CBPE blind spot), FM-5 with its coverage sub-test enabled.
    extra = {k: _Tally() for k in EXTRA_ROWS}
    fm5_coverage = _make_trace_check("FM-5", {**BENCH_PARAMS["FM-5"], **EXTRA_FM5})
    fm6_alt = _fm6_check()
    end = START.timestamp() + DURATION_H * HOUR
    for r in range(n_runs):
        seed = seed0 + r
        clean = clean_scenario(seed)
        for m, check in checks.items():
            t0 = time.perf_counter()
            fired, status = check(clean, end)
            fa[m] += fired
            insufficient[m] += status != "ok"
            delay, _ = first_fire(check, clean)
            fa_sliding[m] += delay is not None
            seconds[m] += time.perf_counter() - t0
        for j in injected_modes:
            for s in strengths:
                if j not in checks and s != "moderate":
                    continue
                sc = injected_scenario(seed, clean, j, s)
                targets = modes if s == "moderate" else [j]
                for k in targets:
                    t0 = time.perf_counter()
                    delay, _ = first_fire(checks[k], sc)
                    seconds[k] += time.perf_counter() - t0
                    if k == j:
                        delays[k][s].append(delay)
                    if s == "moderate":
                        spec[k][j] += delay is not None
                if j == "FM-6" and s == "moderate":
                    row6 = extra["FM-6 cosine_drift or EWMA"]
                    row6.fa += fm6_alt(clean, end)[0]
                    row6.fa_sliding += first_fire(fm6_alt, clean)[0] is not None
                    row6.delays.append(first_fire(fm6_alt, sc)[0])
                if j == "FM-5" and s == "moderate":
                    row5 = extra["FM-5 fire_on_coverage=False"]
                    row5.fa += fm5_coverage(clean, end)[0]
                    row5.fa_sliding += first_fire(fm5_coverage, clean)[0] is not None
                    row5.delays.append(first_fire(fm5_coverage, sc)[0])
        if "FM-4" in checks:
            sc = injected_scenario(seed, clean, "FM-4", "moderate", (("confidence_drop", 0.0),))
            row4 = extra["FM-4 confidence unchanged"]
            row4.delays.append(first_fire(checks["FM-4"], sc)[0])
        print(
            f"run {r + 1}/{n_runs} cpu {time.process_time() - cpu0:.0f}s",
            file=sys.stderr,
            flush=True,
        )
    table: dict[str, Any] = {}
    for m in modes:
        det = {}
        for s in strengths:
            got = [d for d in delays[m][s] if d is not None]
            det[s] = {
                "rate": len(got) / n_runs,
                "median_delay_h": float(np.median(got)) if got else None,
                "mean_delay_h": round(float(np.mean(got)), 3) if got else None,
            }
        row = {
            "name": FAILURE_MODES[m],
            "false_alarm_rate": fa[m] / n_runs,
            "false_alarm_rate_sliding": fa_sliding[m] / n_runs,
            "insufficient_rate_clean": insufficient[m] / n_runs,
            "detection": det,
            "detector_seconds": round(seconds[m], 2),
        }
        if "moderate" in det:
            moderate_rate = float(det["moderate"]["rate"] or 0.0)
            row["meets_targets"] = bool(fa[m] / n_runs <= 0.05 and moderate_rate >= 0.9)
        table[m] = row
    return {
        "bench": "detection",
        "runs": n_runs,
        "seed": seed0,
        "setup": {
            "traces_per_hour": TRACES_PER_HOUR,
            "images_per_hour": IMAGES_PER_HOUR,
            "embedding_dim": DIM,
            "reference_window_h": [0.0, REF_H],
            "injection_at_h": INJECT_H,
            "current_window_h": WINDOW_H,
            "evaluations_after_injection_h": list(EVAL_AFTER_H),
            "fm6": "mmd_drift(alpha=0.01), as the default FM-6 monitor; variant row: "
            f"cosine_drift(alpha=0.01) or EWMA(lambda={EWMA_LAMBDA}, ARL0={EWMA_ARL0:g})",
            "resampling": "permutations FM-1/2/3 399, FM-7 199; FM-4 bootstrap 400",
        },
        "targets": {"false_alarm_rate_max": 0.05, "detection_rate_moderate_min": 0.9},
        "modes": table,
        "specificity": {
            "rows_detector": modes,
            "cols_injected_moderate": injected_modes,
            "matrix": [[spec[k][j] / n_runs for j in injected_modes] for k in modes],
        },
        "variants_moderate": {
            k: {
                "false_alarm_rate": None if k.startswith("FM-4") else v.fa / n_runs,
                "false_alarm_rate_sliding": None if k.startswith("FM-4") else v.fa_sliding / n_runs,
                "detection_rate": sum(d is not None for d in v.delays) / n_runs,
                "mean_delay_h": _mean([d for d in v.delays if d is not None]),
            }
            for k, v in extra.items()
        },
        "missing_detectors": [],
        "elapsed_s": round(time.perf_counter() - t_begin, 1),
        "cpu_s": round(time.process_time() - cpu0, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="5 runs (smoke test)")
    args = parser.parse_args(argv)
    n_runs = 5 if args.quick else args.runs
    if n_runs < 1:
        parser.error("--runs must be >= 1")
    # One BLAS/OpenMP thread: on a small shared machine thread pools cost more than they
    # save on these small matrices.
    with threadpool_limits(1):
        result = run(n_runs, args.seed, STRENGTHS)
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
