"""A monitor's false-alert budget (ERT) -> the per-run alpha the runner passes its detector;
false alerts per day do not depend on the interval."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from app.models import Alert, DetectorRun
from app.monitors.decision.calibration import alpha_per_run, calibrated_params, resamples_for
from app.monitors.runner import run_monitor
from detectors.registry import build_detector, detector_parameters
from detectors.result import DetectorResult
from tests.app.engine_helpers import T0, add_monitor, setup_project


class StationaryP:
    """A valid test on stationary data: p ~ U(0, 1) per run, fires at the alpha it is given."""

    needs: tuple[str, ...] = ()

    def __init__(self, alpha: float) -> None:
        self.alpha = alpha

    def test(self, reference: Any, current: Any, *, now: float | None = None) -> DetectorResult:
        p = float(np.random.default_rng(int(now or 0)).uniform())
        return DetectorResult("FM-2", 1 - p, 1 - self.alpha, p, p <= self.alpha, {})


def _factory(mode: str, params: Any) -> StationaryP:
    return StationaryP(float(params["alpha"]))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"])  # the claim is about the schedule, not storage
@pytest.mark.parametrize(("sequential", "ert_days", "days"), [(False, 0.125, 10), (True, 0.5, 20)])
def test_interval_change_keeps_false_alerts_per_day(
    engine: Engine, sequential: bool, ert_days: float, days: int
) -> None:
    """A short budget, so that some simulated days show its rate. With the chart on, the
    per-run test has half the budget (alpha = interval / 2 ERT) and the chart the rest."""
    pid = setup_project(engine)
    per_day: dict[int, tuple[float, float]] = {}
    for interval in (900, 1800):
        mid = add_monitor(engine, pid, "FM-2", name=f"every {interval}", interval_seconds=interval,
                          expected_days_between_false_alerts=ert_days, auto_resolve_after=1,
                          sequential=sequential)  # fmt: skip
        for k in range(days * 86400 // interval):
            now = T0 + timedelta(seconds=k * interval)
            run_monitor(engine, monitor_id=mid, now=now, detector_factory=_factory)
        with Session(engine) as s:
            fired = s.scalar(
                select(func.count()).where(DetectorRun.monitor_id == mid, DetectorRun.fired)
            )
            episodes = s.scalar(select(func.count()).where(Alert.monitor_id == mid))
            alphas = set(
                s.scalars(select(DetectorRun.threshold).where(DetectorRun.monitor_id == mid))
            )
        share = 0.5 if sequential else 1.0
        assert {round(1 - a, 9) for a in alphas} == {
            round(share * interval / (ert_days * 86400), 9)
        }
        per_day[interval] = ((fired or 0) / days, (episodes or 0) / days)
    expected = 1 / ert_days  # false episodes per day the budget allows
    for fired_per_day, episodes_per_day in per_day.values():
        assert episodes_per_day <= 1.3 * expected, per_day
        if not sequential:  # fired runs per day: N * alpha_run per ERT = 1
            assert 0.6 * expected <= fired_per_day <= 1.4 * expected, per_day
    # A fixed per-run alpha would halve the rate at the doubled interval.
    assert abs(per_day[900][1] - per_day[1800][1]) <= 0.3 * expected, per_day


def test_alpha_and_resamples_from_ert() -> None:
    assert alpha_per_run(ert_days=30, interval_seconds=900) == pytest.approx(900 / 2_592_000)
    assert alpha_per_run(ert_days=30, interval_seconds=3600) == pytest.approx(
        4 * alpha_per_run(ert_days=30, interval_seconds=900)
    )
    with pytest.raises(ValueError, match="expected_days_between_false_alerts"):
        alpha_per_run(ert_days=0, interval_seconds=900)
    for mode in ("FM-1", "FM-4", "FM-6", "FM-7"):
        params = calibrated_params(
            {}, defaults=detector_parameters(mode), ert_days=30, interval_seconds=900
        )
        assert params["alpha"] == pytest.approx(900 / 2_592_000)
        build_detector(mode, params)  # the library accepts the level with its resamples
    assert resamples_for(1e-3) == 4000
    # An explicit alpha is an override; resamples still follow it.
    explicit = calibrated_params(
        {"alpha": 0.001, "n_permutations": 99},
        defaults=detector_parameters("FM-2"),
        ert_days=30,
        interval_seconds=900,
    )
    assert explicit["alpha"] == 0.001 and explicit["n_permutations"] == 4000
    # Past the resampling cap a derived alpha is floored where the cap can still reach it.
    tiny = calibrated_params(
        {}, defaults=detector_parameters("FM-2"), ert_days=3650, interval_seconds=1
    )
    build_detector("FM-2", tiny)
    # FM-5 has no resampling count: its alpha follows the ERT exactly.
    fm5 = calibrated_params({}, defaults=detector_parameters("FM-5"), ert_days=3650,
                            interval_seconds=1)  # fmt: skip
    assert fm5["alpha"] == pytest.approx(1 / (3650 * 86400))
