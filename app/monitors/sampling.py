"""Which traces of a window a monitor run reads: all of them, or a stratified sample.

A window at volume holds more traces than a detector needs for its power, and loading
every trace with its steps is what a run's time goes on (at 10,000 traces/h, 98% of a run
was loading). The old rule, the newest N, changed what the detectors saw with volume: the
eval burst at the start of a window fell off (FM-5 turned ``insufficient_data``) and at
100,000 traces/h "the last 2 h" was the last 12 minutes. The sample here keeps the window's
whole time range and what each statistic depends on:

* every ``eval``-source trace (FM-5 compares them with production; they are few: a burst
  per agent and hour);
* the production traces of a uniform, deterministic sample of *groups*, where a trace's
  group is its input identity (``input_hash``) if it has one, else the trace it is a
  counterfactual of, else itself. Repeated-input groups (FM-3) and counterfactual pairs
  (FM-7) are thereby kept whole or dropped whole, never split, and a labeled trace is kept
  at the same rate as an unlabeled one, so shares (label coverage, error rates, lifts) stay
  unbiased estimates of the window's;
* the group sample is ``hash(group) < rate``: the same trace is in or out in every run and
  in both the reference and the current window, so consecutive runs see consistent data.

Each sampled production trace stands for ``1 / rate`` traces: the rate and the counts are
written to the run's evidence (``window_sample``) so a reader can scale counts back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_SCALE = float(1 << 64)


@dataclass(frozen=True)
class SamplePlan:
    """The trace ids to load and how they were chosen."""

    trace_ids: list[str]
    total: int
    production_total: int
    production_kept: int
    eval_kept: int
    rate: float

    def evidence(self) -> dict[str, Any]:
        """What the run's evidence records of this window's sample."""
        return {
            "traces_in_window": self.total,
            "traces_loaded": len(self.trace_ids),
            "production_in_window": self.production_total,
            "production_loaded": self.production_kept,
            "eval_loaded": self.eval_kept,
            "production_rate": round(self.rate, 6),
            "weight": round(1.0 / self.rate, 6) if self.rate > 0 else None,
            "method": "all" if self.rate >= 1.0 else "group-hash",
        }


def group_key(row: Mapping[str, Any]) -> str:
    """The unit a trace is sampled with (its input identity, its pair, or itself).

    >>> group_key({"trace_id": "t2", "input_hash": None, "counterfactual_of": "t1"})
    'pair:t1'
    >>> group_key({"trace_id": "t1", "input_hash": None, "counterfactual_of": None})
    'pair:t1'
    >>> group_key({"trace_id": "t3", "input_hash": "h9", "counterfactual_of": "t1"})
    'input:h9'
    """
    if row.get("input_hash"):
        return f"input:{row['input_hash']}"
    return f"pair:{row.get('counterfactual_of') or row['trace_id']}"


def unit_hash(key: str) -> float:
    """A key's place in [0, 1): uniform, and the same in every process and run.

    >>> unit_hash("pair:t1") == unit_hash("pair:t1"), 0.0 <= unit_hash("x") < 1.0
    (True, True)
    """
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE


def plan_sample(rows: Iterable[Mapping[str, Any]], *, max_production: int) -> SamplePlan:
    """Choose the traces to load from the window's key rows.

    ``rows`` carry ``trace_id``, ``source``, ``input_hash`` and ``counterfactual_of``.
    Production traces are sampled by group at ``rate = max_production / count`` (capped at
    1), so about ``max_production`` are loaded; groups larger than average make the number
    vary around it, never the rate.

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
    kept: list[str] = []
    n_eval = n_kept = 0
    for r in rows:
        if (r.get("source") or "production") == "eval":
            n_eval += 1
        elif rate < 1.0 and unit_hash(group_key(r)) >= rate:
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
    )
