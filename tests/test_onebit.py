"""1BitMean with alpha-point rounding (Ding, Kulkarni & Yekhanin 2017): the exact epsilon
by enumeration, alpha-point rounding's unbiasedness, the estimator's unbiasedness and
variance by seeded simulation, memoization per device, bad input, and the mechanism
contract of tests/test_conformance.py."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import stats

import test_conformance as conformance
from deniable.exceptions import DataError, ParameterError
from deniable.oracles import OneBitMean, OneBitMeanMemo


def bit_probability(mech: OneBitMean, x: float) -> float:
    """P(1 | x) from Ding et al.'s definition on [lower, lower + m]."""
    e = math.exp(mech.epsilon)
    return 1 / (e + 1) + (x - mech.lower) / mech.m * (e - 1) / (e + 1)


@pytest.mark.parametrize(("epsilon", "upper"), [(0.5, 1.0), (1.0, 24.0), (3.0, 100.0)])
def test_one_report_epsilon_is_exact_by_enumeration(epsilon: float, upper: float) -> None:
    mech = OneBitMean(epsilon, upper=upper, s=8)
    grid = np.linspace(0, upper, 33)
    channel = np.array([mech.report_distribution(x) for x in grid])  # [P(0), P(1)]
    # every ratio of two values' probabilities of the same bit; the largest is epsilon
    worst = max(math.log(col.max() / col.min()) for col in channel.T)
    assert worst <= epsilon
    assert worst == pytest.approx(epsilon, abs=1e-12)  # tight: x = 0 against x = m
    assert mech.implemented_epsilon == pytest.approx(worst, abs=1e-12)
    # the implemented probabilities are the definition's (to the 2**-53 grid)
    assert np.allclose(channel[:, 1], [bit_probability(mech, x) for x in grid], atol=1e-15)


def test_alpha_point_rounding_is_unbiased_and_keeps_the_channel() -> None:
    mech = OneBitMean(1.0, upper=10.0, s=5)
    alphas = (np.arange(1000) + 0.5) / 1000  # alpha on an even grid of [0, 1)
    for x in (0.0, 0.3, 2.0, 4.7, 9.99, 10.0):
        points = mech.round_values(np.full(alphas.size, x), alphas)
        # the two ends of x's interval only, each as often as its share
        assert set(points.tolist()) <= {math.floor(x / 2), math.ceil(x / 2)}
        assert points.mean() == pytest.approx(x / 2, abs=1e-3)
        # P(1 | x) over alpha: the mix of the two ends' bits is the unrounded 1BitMean's
        mixed = np.mean([mech.report_distribution(2.0 * r)[1] for r in points])
        assert mixed == pytest.approx(bit_probability(mech, x), abs=1e-3)
    # the rounding is a function of alpha: the same value and alpha, the same point
    assert mech.round_values([3.1, 3.1], [0.2, 0.2]).tolist() == [2, 2]
    assert mech.round_values([3.1, 3.1], [0.6, 0.9]).tolist() == [1, 1]  # 3.1 / 2 = 1.55


def test_estimator_is_unbiased_and_its_variance_exact() -> None:
    mech = OneBitMean(1.0, upper=24.0)
    gen = np.random.default_rng(20260103)
    values = gen.uniform(0, 24, size=2_000)
    values[:500] = 24.0
    var = mech.variance(values)
    reps = 400
    est = [mech.estimate(mech.randomize(values, rng=500 + r)) for r in range(reps)]
    means = np.array([e.value for e in est])
    # false-alarm rates: 1e-5 for the mean (|z| < 4.4), 1e-4 for the variance bounds
    assert abs(means.mean() - values.mean()) < 4.4 * math.sqrt(var / reps)
    lo, hi = stats.chi2.ppf([5e-5, 1 - 5e-5], reps - 1) / (reps - 1)
    assert lo < means.var(ddof=1) / var < hi
    # `se` is for devices sampled from a population: each bit is Bernoulli(mean P(1 | x)),
    # so its variance is (m / (p - q))^2 lam (1 - lam) / n, above the fixed population's
    p, q = mech.probabilities
    lam = np.mean([bit_probability(mech, x) for x in values])
    sampled = (24.0 / (p - q)) ** 2 * lam * (1 - lam) / values.size
    assert sampled > var
    assert np.mean([e.se**2 for e in est]) == pytest.approx(sampled, rel=0.02)


def test_memoized_fleet_with_rounding_is_unbiased_every_day() -> None:
    mech = OneBitMean(2.0, upper=10.0, s=4)
    gen = np.random.default_rng(20260104)
    n, reps = 3_000, 150
    values = gen.uniform(0, 10, size=n)
    var = mech.variance(values)
    means = []
    for r in range(reps):  # a new fleet each time: alpha and the memo are per device
        memo = OneBitMeanMemo(mech)
        memo.report(range(n), values, rng=10_000 + r)
        bits = memo.report(range(n), values, rng=20_000 + r)  # day 2: replayed
        means.append(mech.estimate(bits).value)
    # over alpha each bit is 1 with the unrounded P(1 | x), so the variance is the same;
    # false-alarm rates 1e-5 (mean) and 1e-4 (variance)
    assert abs(np.mean(means) - values.mean()) < 4.4 * math.sqrt(var / reps)
    lo, hi = stats.chi2.ppf([5e-5, 1 - 5e-5], reps - 1) / (reps - 1)
    assert lo < np.var(means, ddof=1) / var < hi


def test_memo_replays_a_rounded_value_and_counts_distinct_ones() -> None:
    mech = OneBitMean(1.0, upper=10.0, s=10)
    memo = OneBitMeanMemo(mech)
    devices = list(range(3_000))
    first = memo.report(devices, np.full(3_000, 3.0), rng=1)
    for day in range(2, 10):  # 3.0 rounds to 3 whatever alpha: the same bits every day
        assert np.array_equal(memo.report(devices, np.full(3_000, 3.0), rng=day), first)
    alphas = [memo.alpha(d) for d in devices]
    # values moving within (3, 4) take at most two rounded values: 3 and 4
    for day, x in enumerate([3.2, 3.9, 3.5, 3.1], start=20):
        memo.report(devices, np.full(3_000, x), rng=day)
    assert max(memo.distinct_values(d) for d in devices) == 2
    assert [memo.alpha(d) for d in devices] == alphas  # alpha is drawn once
    assert {memo.realized_epsilon(d) for d in devices} <= {1.0, 2.0}
    assert memo.realized_epsilon(0) == memo.distinct_values(0) * 1.0
    # a new rounded value gets a fresh bit: at 9.0 (point 9) P(1) is the definition's;
    # false-alarm rate about 1e-4 (binomial test)
    bits = memo.report(devices, np.full(3_000, 9.0), rng=99)
    p_one = bit_probability(mech, 9.0)
    assert stats.binomtest(int(bits.sum()), bits.size, p_one).pvalue > 1e-4
    assert np.array_equal(memo.report(devices, np.full(3_000, 3.0), rng=100), first)
    assert mech.longitudinal_bound == 11.0
    assert memo.realized_epsilon("never seen") == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "`epsilon`"),
        ({"epsilon": -2.0}, "`epsilon`"),
        ({"epsilon": 1.0, "upper": 0.0}, "`lower` and `upper`"),
        ({"epsilon": 1.0, "s": 0}, r"`s` must be"),
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        OneBitMean(**kwargs)


def test_values_outside_the_range_are_refused() -> None:
    mech = OneBitMean(1.0, upper=10.0)
    for bad in ([10.5], [-0.1], [float("nan")]):
        with pytest.raises(DataError, match=r"`values` must be numbers in \[lower, upper\]"):
            mech.randomize(bad, rng=1)
    memo = OneBitMeanMemo(mech)
    with pytest.raises(DataError, match="`values`"):
        memo.report(["a"], [11.0], rng=1)
    assert memo.distinct_values("a") == 0  # nothing stored on a refusal
    with pytest.raises(DataError, match="`devices`"):
        memo.report(["a", "a"], [1.0, 2.0], rng=1)
    with pytest.raises(DataError, match="`alpha`"):
        mech.round_values([1.0], [1.0])


# --- the mechanism contract (tests/test_conformance.py) on 1BitMean --------------------------

CASES = {
    "eps1-0-4": lambda: OneBitMean(1.0, upper=4.0),
    "eps0.5-0-4-s3": lambda: OneBitMean(0.5, upper=4.0, s=3),
}
CHECKS: dict[str, Callable[..., None]] = {
    name: getattr(conformance, name)
    for name in (
        "test_satisfies_the_protocol",
        "test_channel_epsilon_and_dense_form",
        "test_tally_is_bound_and_serializes",
        "test_tallies_add_only_within_one_mechanism",
        "test_estimate_binds_an_unbound_tally_and_refuses_a_foreign_one",
        "test_results_pickle",
        "test_randomize_tally_estimate_recovers_the_truth",
    )
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("check", CHECKS)
def test_conformance(check: str, case: str) -> None:
    CHECKS[check](CASES[case]())


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("n", [0, 1, 7, 70_000])
def test_conformance_randomize_and_tally(case: str, n: int) -> None:
    conformance.test_randomize_and_tally_is_randomize_then_tally(CASES[case](), n)
