"""The closed-form standard deviation of a longitudinal unary row's MSE / theory
(``benchmarks/peers/longitudinal.py``, ``unary_ratio_sd``), which the table of
``scripts/bench-peers --only longitudinal`` shows as its standard error: against the spread
of independent seeded runs of the same row's code.  The rounds of a run share the devices'
permanent responses, so a run's ratio varies more than that of independent rounds; the
closed form must say by how much."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.oracles import LOSUE, LOUE, LSUE, exact_variance
from deniable.simulation import DevicePopulation, Fleet

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from peers.longitudinal import mse, our_run, unary_ratio_sd


def _fleet(n: int, rounds: int, switch: float, seed: int) -> Any:
    fleet = Fleet(DevicePopulation.zipf(16), devices=n, switch=switch)
    return fleet.values(rounds, rng=np.random.default_rng(seed))


@pytest.mark.parametrize("cls", [LSUE, LOUE, LOSUE], ids=lambda c: c.name)
def test_the_closed_theory_is_the_mean_exact_variance(cls: Any) -> None:
    mech = cls.from_epsilon(1.0, 16, eps_1=0.5)
    values = _fleet(3000, 5, 0.3, 1)
    theory, _ = unary_ratio_sd(mech, values)
    want = np.mean([np.mean(exact_variance(mech, x.size, np.bincount(x, minlength=16) / x.size))
                    for x in values])  # fmt: skip
    assert theory == pytest.approx(want, rel=1e-12)


def test_values_that_never_change_make_the_rounds_one_draw_of_the_prr() -> None:
    """With every device keeping its value, rounds r and r' share every PRR: the sd of the
    ratio over 30 rounds is well above the sqrt(2 / (R k)) of independent rounds (here 2.3
    times); with one round it is sqrt(2 / k) (k independent estimates, normal)."""
    mech = LOSUE.from_epsilon(1.0, 16, eps_1=0.9)
    _, still = unary_ratio_sd(mech, _fleet(2000, 30, 0.0, 2))
    assert still > 2 * math.sqrt(2 / (30 * 16))
    _, one = unary_ratio_sd(mech, _fleet(2000, 1, 1.0, 2))
    assert one == pytest.approx(math.sqrt(2 / 16), rel=0.01)


@pytest.mark.slow
def test_the_closed_sd_is_the_spread_of_independent_runs() -> None:
    """300 seeded runs of 20 rounds of 1000 devices whose values move with probability 0.1
    (L-OSUE at eps_1 = 0.9, where the shared PRRs dominate: closed sd 0.18, 2.3 times the
    sqrt(2 / (R k)) = 0.079 of independent rounds).  The sample sd of the ratio has a
    relative standard error near 4.5% (1 / sqrt(2 * 299), widened for the ratio's
    skew); the tolerance of 20% is about 4.4 of them (false alarm about 1e-5), and the
    normal approximation of the closed form is off by O(1 / n)."""
    mech = LOSUE.from_epsilon(1.0, 16, eps_1=0.9)
    values = _fleet(1000, 20, 0.1, 3)
    theory, sd = unary_ratio_sd(mech, values)
    ratios = np.array(
        [mse(our_run(mech, "losue", values, np.random.default_rng((5, r)))[1], values) / theory
         for r in range(300)]
    )  # fmt: skip
    assert ratios.std(ddof=1) == pytest.approx(sd, rel=0.20)
    assert abs(ratios.mean() - 1) < 4.5 * sd / math.sqrt(ratios.size)  # unbiased: ~7e-6
    assert sd > 2 * math.sqrt(2 / (20 * 16))  # what independent rounds would say is refused
