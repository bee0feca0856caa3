"""Which traces of a window a monitor run reads: all of them, or a stratified sample.

A window at volume holds more traces than a detector needs for its power, and loading
every trace with its steps is what a run's time goes on (at 10,000 traces/h, 98% of a run
was loading). The old rule, the newest N, changed what the detectors saw with volume: the
eval burst at the start of a window fell off (FM-5 turned ``insufficient_data``) and at
100,000 traces/h "the last 2 h" was the last 12 minutes. The sample here keeps the window's
whole time range and what each statistic depends on:

* every ``eval``-source trace (FM-5 compares them with production; they are few: a burst
  per agent and hour);
* production traces by a two-stage hash sample (:func:`plan_sample`): input groups
  (``input_hash``), then inside each kept group the pairs (a run with the counterfactuals
  that name it). A counterfactual pair (FM-7) is never split; repeats of one input (FM-3)
  stay together in proportion; every production trace is kept with the same probability,
  labeled or not, so shares (label coverage, error rates, lifts) stay unbiased estimates of
  the window's;
* hashes, not random draws: the same trace is in or out in every run and in both the
  reference and the current window, so consecutive runs see consistent data.

Each sampled production trace stands for ``1 / rate`` traces: the rate and the counts are
written to the run's evidence (``window_sample``) so a reader can scale counts back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_SCALE = float(1 << 64)
# Groups a sampled window keeps at least (when it has them): enough that the number of
# traces kept does not hang on a few large groups.
MIN_GROUPS = 1000


@dataclass(frozen=True)
class SamplePlan:
    """The trace ids to load and how they were chosen."""

    trace_ids: list[str]
    total: int
    production_total: int
    production_kept: int
    eval_kept: int
    rate: float
    group_rate: float = 1.0

    def evidence(self) -> dict[str, Any]:
        """What the run's evidence records of this window's sample."""
        return {
            "traces_in_window": self.total,
            "traces_loaded": len(self.trace_ids),
            "production_in_window": self.production_total,
            "production_loaded": self.production_kept,
            "eval_loaded": self.eval_kept,
            "production_rate": round(self.rate, 6),
            "group_rate": round(self.group_rate, 6),
            "weight": round(1.0 / self.rate, 6) if self.rate > 0 else None,
            "method": "all" if self.rate >= 1.0 else "input-group then pair hash",
        }


def group_key(row: Mapping[str, Any]) -> str:
    """The input group a trace is sampled with: its input identity, else its pair.

    >>> group_key({"trace_id": "t3", "input_hash": "h9", "counterfactual_of": "t1"})
    'input:h9'
    >>> group_key({"trace_id": "t1", "input_hash": None, "counterfactual_of": None})
    'pair:t1'
    """
    if row.get("input_hash"):
        return f"input:{row['input_hash']}"
    return pair_key(row)


def pair_key(row: Mapping[str, Any]) -> str:
    """The unit kept or dropped whole inside a group: a run and its counterfactuals.

    >>> pair_key({"trace_id": "t2", "input_hash": "h", "counterfactual_of": "t1"})
    'pair:t1'
    >>> pair_key({"trace_id": "t1", "input_hash": "h", "counterfactual_of": None})
    'pair:t1'
    """
    return f"pair:{row.get('counterfactual_of') or row['trace_id']}"


def unit_hash(key: str) -> float:
    """A key's place in [0, 1): uniform, and the same in every process and run.

    >>> unit_hash("pair:t1") == unit_hash("pair:t1"), 0.0 <= unit_hash("x") < 1.0
    (True, True)
    """
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE


def plan_sample(
    rows: Iterable[Mapping[str, Any]], *, max_production: int, min_groups: int = MIN_GROUPS
) -> SamplePlan:
    """Choose the traces to load from the window's key rows.

    ``rows`` carry ``trace_id``, ``source``, ``input_hash`` and ``counterfactual_of``.
    The production rate is ``r = max_production / count`` (capped at 1). Sampling is in
    two stages, each by hash: a group (:func:`group_key`) is in with ``r_g``, and inside
    it a pair (:func:`pair_key`) with ``r / r_g``, so every trace is kept with ``r``.
    ``r_g`` keeps about ``min_groups`` groups (all if there are fewer): production inputs
    repeat with a long tail (in the scenario generator the largest of 450 inputs is 10% of
    the traffic), and sampling whole groups alone let two or three of them decide how
    many traces a window kept; sampling pairs inside kept groups keeps repeats (FM-3)
    together in proportion and never splits a counterfactual pair (FM-7).

    >>> rows = [{"trace_id": f"t{i}", "source": "production", "input_hash": None,
    ...          "counterfactual_of": None} for i in range(1000)]
    >>> rows += [{"trace_id": "e1", "source": "eval", "input_hash": "h",
    ...           "counterfactual_of": None}]
    >>> plan = plan_sample(rows, max_production=100)
    >>> plan.rate, plan.eval_kept, 60 < plan.production_kept < 140, "e1" in plan.trace_ids
    (0.1, 1, True, True)
    >>> plan_sample(rows, max_production=5000).trace_ids == [r["trace_id"] for r in rows]
    True
    """
    rows = list(rows)
    production = [r for r in rows if (r.get("source") or "production") != "eval"]
    n_prod = len(production)
    rate = 1.0 if n_prod <= max_production else max_production / n_prod
    n_groups = len({group_key(r) for r in production}) if rate < 1.0 else 0
    group_rate = 1.0 if rate >= 1.0 else min(1.0, max(rate, min_groups / max(n_groups, 1)))
    pair_rate = rate / group_rate
    kept: list[str] = []
    n_eval = n_kept = 0
    for r in rows:
        if (r.get("source") or "production") == "eval":
            n_eval += 1
        elif rate < 1.0 and (
            # Salted apart: a trace alone is its own group and pair, and the two stages
            # must draw independently for the rates to multiply.
            unit_hash("group|" + group_key(r)) >= group_rate
            or unit_hash("pair|" + pair_key(r)) >= pair_rate
        ):
            continue
        else:
            n_kept += 1
        kept.append(str(r["trace_id"]))
    return SamplePlan(
        trace_ids=kept,
        total=len(rows),
        production_total=n_prod,
        production_kept=n_kept,
        eval_kept=n_eval,
        rate=rate,
        group_rate=group_rate,
    )
