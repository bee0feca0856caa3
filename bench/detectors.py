"""Benchmark the FM-6 drift detectors and the active-learning selector; prints JSON.

    python bench/detectors.py                   # full size, CPU (DESIGN.md §9 targets)
    python bench/detectors.py --scale 0.1       # quick run
    python bench/detectors.py --device cuda     # torch paths on the GPU

Data: unit-normalised 512-d embeddings from a 64-component Gaussian mixture around a
common direction (like CLIP embeddings). "drift" windows move 30% of the mass to new
clusters and tilt the rest; "control" windows are fresh draws from the reference law.
Peers (Evidently, alibi-detect) run only where importable in this environment.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from detectors.active_learning import select_for_active_learning  # noqa: E402
from detectors.drift import EWMAChart, centroid_similarities, cosine_drift, ks_drift, mmd_drift  # noqa: E402

DIM = 512


class Mixture:
    def __init__(self, rng: np.random.Generator, k: int = 64) -> None:
        self.base = np.zeros(DIM, dtype=np.float32)
        self.base[0] = 1.0
        self.centers = (rng.standard_normal((k, DIM)) * 0.04).astype(np.float32) + self.base
        self.rng = rng

    def sample(self, n: int, drift: bool = False, chunk: int = 100_000) -> np.ndarray:
        out = np.empty((n, DIM), dtype=np.float32)
        new_centers = self.centers[:8] + (self.rng.standard_normal((8, DIM)) * 0.04).astype(
            np.float32
        )
        for s in range(0, n, chunk):
            m = min(chunk, n - s)
            block = self.rng.standard_normal((m, DIM), dtype=np.float32)
            block *= 0.02
            block += self.centers[self.rng.integers(0, len(self.centers), m)]
            if drift:
                k = int(0.3 * m)
                block[:k] = new_centers[self.rng.integers(0, 8, k)] + block[:k] - block[:k].mean(0)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            out[s : s + m] = block
        return out


def timed(fn: Callable[[], Any], repeats: int) -> tuple[Any, float, list[float]]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, statistics.median(times), [round(t, 4) for t in times]


def cosine_and_ewma(reference: np.ndarray, current: np.ndarray, batch: int) -> dict[str, Any]:
    ref_sim, cur_sim = centroid_similarities(reference, current)
    ks = ks_drift(ref_sim, cur_sim, alpha=0.01)
    usable = len(ref_sim) // batch * batch
    chart = EWMAChart(lam=0.1, L=2.814).fit(ref_sim[:usable].reshape(-1, batch).mean(axis=1))
    for value in cur_sim[: len(cur_sim) // batch * batch].reshape(-1, batch).mean(axis=1):
        chart.update(value)
    return {"ks_fired": ks.fired, "ks_statistic": ks.statistic, "ewma_fired": chart.drift_detected}


def peer_evidently(reference: np.ndarray, current: np.ndarray) -> dict[str, Any]:
    try:
        import evidently  # noqa: F401
    except ImportError:
        return {"skipped": "not installed"}
    return {"skipped": "installed, but no stable embedding-drift API is wired up here"}


def peer_alibi(reference: np.ndarray, current: np.ndarray, n_permutations: int) -> dict[str, Any]:
    try:
        from alibi_detect.cd import MMDDrift
    except ImportError:
        return {"skipped": "not installed"}
    t0 = time.perf_counter()
    detector = MMDDrift(reference, backend="pytorch", p_val=0.05, n_permutations=n_permutations)
    fired = bool(detector.predict(current)["data"]["is_drift"])
    return {"seconds": time.perf_counter() - t0, "fired": fired}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every size")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--peers", action="store_true", help="run Evidently/alibi-detect if importable"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--backend", choices=["numpy", "torch"], help="default: torch on cuda, numpy on cpu"
    )
    args = parser.parse_args()
    backend = args.backend or ("torch" if args.device == "cuda" else "numpy")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device cuda but torch.cuda.is_available() is False")
    rng = np.random.default_rng(args.seed)
    law = Mixture(rng)
    n_ref, n_cur = int(1_000_000 * args.scale), int(100_000 * args.scale)
    n_mmd = max(20, int(5_000 * args.scale))
    budget = max(10, min(1000, int(1000 * args.scale)))
    reference = law.sample(n_ref)
    drifted, control = law.sample(n_cur, drift=True), law.sample(n_cur)
    report: dict[str, Any] = {
        "device": args.device,
        "backend": backend,
        "sizes": {
            "reference": n_ref,
            "current": n_cur,
            "dim": DIM,
            "mmd_each": n_mmd,
            "kcenter_pool": n_ref,
            "budget": budget,
        },
    }
    if backend == "torch":  # warm up: torch import, CUDA context, kernels
        mmd_drift(reference[:64], drifted[:64], n_permutations=10, backend=backend)
        select_for_active_learning(reference[:256], 4, backend=backend)
    batch = max(10, n_cur // 100)
    out, t_drift, runs = timed(lambda: cosine_and_ewma(reference, drifted, batch), args.repeats)
    control_out = cosine_and_ewma(reference, control, batch)
    _, t_cos, _ = timed(lambda: cosine_drift(reference, drifted), args.repeats)
    report["cosine_ewma"] = {
        "seconds_median": t_drift,
        "runs": runs,
        "cosine_drift_only_seconds": t_cos,
        "target_seconds_cpu": 1.0,
        "drift": out,
        "control": control_out,
        "ewma_batch": batch,
    }
    mmd_ref, mmd_drift_w, mmd_ctrl = reference[:n_mmd], drifted[:n_mmd], control[:n_mmd]
    r, t_mmd, runs = timed(
        lambda: mmd_drift(mmd_ref, mmd_drift_w, n_permutations=200, backend=backend), args.repeats
    )
    rc = mmd_drift(mmd_ref, mmd_ctrl, n_permutations=200, backend=backend)
    report["mmd"] = {
        "seconds_median": t_mmd,
        "runs": runs,
        "permutations": 200,
        "target_seconds_cpu": 5.0,
        "drift": {"fired": r.fired, "p_value": r.p_value},
        "control": {"fired": rc.fired, "p_value": rc.p_value},
    }
    if args.peers:
        alibi = peer_alibi(mmd_ref, mmd_drift_w, 200)
        if "seconds" in alibi:
            alibi["time_ratio_vs_telltale"] = alibi["seconds"] / t_mmd
            alibi["control_fired"] = peer_alibi(mmd_ref, mmd_ctrl, 200)["fired"]
        report["peers"] = {
            "alibi_detect_mmd": alibi,
            "evidently": peer_evidently(mmd_ref, mmd_drift_w),
        }
    else:
        report["peers"] = {"skipped": "pass --peers"}
    labeled = control[: max(10, n_cur // 100)]
    sel, t_kc, runs = timed(
        lambda: select_for_active_learning(reference, budget, labeled=labeled, backend=backend), 1
    )
    kc: dict[str, Any] = {
        "seconds": t_kc,
        "labeled_anchors": len(labeled),
        "coverage_radius": sel.coverage_radius,
        "first_novelty": float(sel.novelty[0]),
        "last_novelty": float(sel.novelty[-1]),
        "target_seconds": 1.0 if args.device == "cuda" else 60.0,
    }
    if args.device == "cuda":
        import torch

        t0 = time.perf_counter()
        torch.from_numpy(reference).to("cuda")
        torch.cuda.synchronize()
        kc["host_to_device_seconds"] = time.perf_counter() - t0
        kc["on_device_seconds"] = t_kc - kc["host_to_device_seconds"]
    report["kcenter"] = kc
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
