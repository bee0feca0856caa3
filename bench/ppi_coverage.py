"""PPI coverage: how often the prediction-powered interval covers a window's true mean, over
judges of 70-95% agreement, judge biases of -0.15 to +0.15 and 1-20% of traces labeled.
Prints JSON.

    .venv/bin/python bench/ppi_coverage.py [--runs 5000] [--seed 0]

Each run is one window: ``N`` judged traces (uniform in 1,000-2,000), a binary ``true``
objective with success rate ``p`` (uniform in 0.3-0.6, drawn per run), a judge and a random
labeled subset (each trace labeled with probability ``label fraction``). The judge's
verdict (its score read at 0.5) agrees with the outcome at ``agreement``; its bias (mean
judge score minus mean outcome) is ``bias``, carried as far as a verdict can by one-sided
errors (at most ``1 - agreement``) and the rest by its scores (a lenient judge gives failed
traces partial credit, a strict one gives passed traces less than 1), so every cell is a
judge a team could meet. Per cell (``--runs`` windows each):

* ``ppi``: :func:`detectors.ppi.ppi_mean` as OUTCOME uses it (PPI++ power tuning, the
  small-sample adjustment): coverage of the rate ``p`` (``coverage``, the quantity two
  windows are compared on) and of the realised mean of the objective over the window's
  judged traces (``coverage_window``), mean width, mean lambda;
* ``ppi_textbook``: the same estimate with the textbook PPI++ variance and normal quantile
  (a window whose residuals show no variance gets no interval from it: ``no_interval``,
  counted as not covering; its width is over the others);
* ``labels_only``: Wilson's interval on the labels alone; ``judge_only``: the judge's mean
  with its standard error (what a dashboard of judge scores shows).

Runs whose window holds fewer than 2 labels have no PPI interval (counted in
``insufficient``; coverage is over the others). The target (DESIGN.md section 9) is
``coverage >= 0.94`` in every cell. A cell's coverage is a mean of ``--runs`` hits, with
Monte Carlo standard error ``sqrt(0.95 * 0.05 / runs)`` (``mc_standard_error``): at 2,000
runs (0.005) a cell whose coverage is 0.95 reads below 0.94 about 2% of the time, one or
two of the 75 cells a run; 5,000 runs (0.003) make that rare.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from detectors.ppi import ppi_mean  # noqa: E402

AGREEMENTS = (0.7, 0.8, 0.85, 0.9, 0.95)
BIASES = (-0.15, 0.0, 0.15)
LABEL_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2)
LEVEL = 0.95
Z = 1.959963984540054


def judge_scores(
    rng: np.random.Generator, y: np.ndarray, p: float, agreement: float, bias: float
) -> np.ndarray:
    """A judge's scores of outcomes ``y`` (rate ``p``): verdicts agreeing at ``agreement``,
    mean score ``bias`` above the outcome's mean (in expectation)."""
    from_errors = math.copysign(min(abs(bias), 1.0 - agreement), bias)
    false_pass = (1.0 - agreement + from_errors) / 2.0  # P(verdict 1, outcome 0)
    false_fail = (1.0 - agreement - from_errors) / 2.0  # P(verdict 0, outcome 1)
    u = rng.random(y.size)
    verdict = np.where(y == 1.0, u >= false_fail / p, u < false_pass / (1.0 - p))
    scores = verdict.astype(float)
    rest = bias - from_errors
    passed = p - false_fail + false_pass  # P(verdict 1)
    if rest > 0:  # lenient: failed traces get partial credit (below 0.5)
        scores[~verdict] = rest / (1.0 - passed)
    elif rest < 0:  # strict: passed traces get less than full marks (at least 0.5)
        scores[verdict] = 1.0 + rest / passed
    return scores


def wilson(k: int, n: int) -> tuple[float, float]:
    phat = k / n
    centre = (phat + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(phat * (1 - phat) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def cell(rng: np.random.Generator, runs: int, agreement: float, bias: float,
         fraction: float) -> dict[str, Any]:  # fmt: skip
    hits: dict[str, list[float]] = {k: [] for k in (
        "ppi", "ppi_window", "ppi_textbook", "labels_only", "judge_only")}  # fmt: skip
    widths: dict[str, list[float]] = {k: [] for k in ("ppi", "ppi_textbook", "labels_only",
                                                      "judge_only")}  # fmt: skip
    lams, agreements, biases, insufficient, textbook_none = [], [], [], 0, 0
    for _ in range(runs):
        n_judged = int(rng.integers(1000, 2001))
        p = float(rng.uniform(0.3, 0.6))
        y = (rng.random(n_judged) < p).astype(float)
        f = judge_scores(rng, y, p, agreement, bias)
        labeled = rng.random(n_judged) < fraction
        agreements.append(float(np.mean((f >= 0.5) == (y == 1.0))))
        biases.append(float(f.mean() - y.mean()))
        est = ppi_mean(f, f[labeled], y[labeled], level=LEVEL)
        if not est.sufficient:
            insufficient += 1
            continue
        textbook = ppi_mean(f, f[labeled], y[labeled], level=LEVEL, adjusted=False)
        lo_l, hi_l = wilson(int(y[labeled].sum()), int(labeled.sum()))
        half_j = Z * float(f.std(ddof=1)) / math.sqrt(n_judged)
        intervals = {
            "ppi": est.interval,
            "labels_only": (lo_l, hi_l),
            "judge_only": (est.judge_only - half_j, est.judge_only + half_j),
        }
        if textbook.sufficient:
            intervals["ppi_textbook"] = textbook.interval
        else:  # no residual variance: the textbook gives no interval; counted as a miss
            textbook_none += 1
            hits["ppi_textbook"].append(0.0)
        for name, (lo, hi) in intervals.items():
            hits[name].append(float(lo <= p <= hi))
            widths[name].append(hi - lo)
        hits["ppi_window"].append(float(est.interval[0] <= y.mean() <= est.interval[1]))
        lams.append(est.lam)
    mean = lambda v: round(float(np.mean(v)), 4) if v else None  # noqa: E731
    return {
        "agreement": agreement,
        "bias": bias,
        "label_fraction": fraction,
        "measured_agreement": mean(agreements),
        "measured_bias": mean(biases),
        "insufficient": insufficient,
        "ppi": {"coverage": mean(hits["ppi"]), "coverage_window": mean(hits["ppi_window"]),
                "width": mean(widths["ppi"]), "lambda": mean(lams)},
        "ppi_textbook": {"coverage": mean(hits["ppi_textbook"]),
                         "width": mean(widths["ppi_textbook"]), "no_interval": textbook_none},
        **{name: {"coverage": mean(hits[name]), "width": mean(widths[name])}
           for name in ("labels_only", "judge_only")},
    }  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5000, help="windows per cell")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    cells = []
    grid = [(a, b, q) for a in AGREEMENTS for b in BIASES for q in LABEL_FRACTIONS]
    for i, (agreement, bias, fraction) in enumerate(grid):
        rng = np.random.default_rng([args.seed, i])
        cells.append(cell(rng, args.runs, agreement, bias, fraction))
        print(f"{agreement} {bias:+} {fraction}: {cells[-1]['ppi']}", file=sys.stderr,
              flush=True)  # fmt: skip
    worst = min(cells, key=lambda c: c["ppi"]["coverage"])
    worst_window = min(cells, key=lambda c: c["ppi"]["coverage_window"])

    def by_fraction(method: str, key: str) -> dict[str, float]:
        return {str(q): round(float(np.mean([c[method][key] for c in cells
                                             if c["label_fraction"] == q])), 4)
                for q in LABEL_FRACTIONS}  # fmt: skip

    out = {
        "config": {"runs_per_cell": args.runs, "seed": args.seed, "level": LEVEL,
                   "agreements": AGREEMENTS, "biases": BIASES,
                   "label_fractions": LABEL_FRACTIONS, "n_judged": [1000, 2000],
                   "rate": [0.3, 0.6]},
        "summary": {
            "min_coverage": worst["ppi"]["coverage"],
            "min_coverage_cell": {k: worst[k] for k in ("agreement", "bias", "label_fraction")},
            "min_coverage_window": worst_window["ppi"]["coverage_window"],
            "cells_below_0.94": sum(c["ppi"]["coverage"] < 0.94 for c in cells),
            "mc_standard_error": round(math.sqrt(LEVEL * (1 - LEVEL) / args.runs), 4),
            "min_coverage_textbook": min(c["ppi_textbook"]["coverage"] for c in cells),
            "min_coverage_labels_only": min(c["labels_only"]["coverage"] for c in cells),
            "min_coverage_judge_only": min(c["judge_only"]["coverage"] for c in cells),
            "width_by_label_fraction": {m: by_fraction(m, "width") for m in
                                        ("ppi", "ppi_textbook", "labels_only", "judge_only")},
            "seconds": round(time.perf_counter() - started, 1),
        },
        "cells": cells,
    }  # fmt: skip
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
