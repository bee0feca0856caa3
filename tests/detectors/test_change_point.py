"""The step-onset estimate: where a step is, on seeded streams (detectors/change_point.py)."""

from __future__ import annotations

import numpy as np
import pytest

from detectors.change_point import step_onset


@pytest.mark.parametrize("seed", range(5))
def test_a_rate_step_is_dated_within_a_few_observations(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = np.arange(400.0)
    x = np.where(t < 300, rng.random(400) < 0.1, rng.random(400) < 0.5).astype(float)
    assert abs(step_onset(t, x, before=0.1, direction=1.0) - 300) <= 15


def test_a_fall_is_dated_when_direction_says_it_fell() -> None:
    rng = np.random.default_rng(0)
    t = np.arange(300.0)
    x = np.where(t < 100, rng.random(300) < 0.6, rng.random(300) < 0.2).astype(float)
    assert abs(step_onset(t, x, before=0.6, direction=-1.0) - 100) <= 15
    # Asked for a rise where the level only fell: no split moved that way.
    assert step_onset(t, x, before=0.95, direction=1.0) is None


def test_order_of_input_does_not_matter_and_few_points_give_none() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(200.0)
    x = np.where(t < 150, 0.0, 1.0) + rng.normal(0, 0.1, 200)
    perm = rng.permutation(200)
    assert step_onset(t[perm], x[perm], before=0.0, direction=1.0) == 150.0
    assert step_onset(t[:9], x[:9], before=0.0, direction=1.0) is None
