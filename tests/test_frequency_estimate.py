"""The one estimate of k frequencies (issue 15, parts 1 and 3): the k-ary design (GRR) and
every frequency oracle return ``deniable.designs.FrequencyEstimate``, under its old names
too, and every one states both variances by the same rule: ``se`` for respondents sampled
from a population (the default, named by ``se_convention``) and ``se_fixed`` for the fixed
population of the n respondents (Wang, Blocki, Li & Jha 2017, Theorem 2).

The closed forms below are written from the support counts and the channel's support
probabilities, not from the estimate; the variances are also checked by seeded simulation
with a stated false-alarm rate.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

import deniable.oracles as oracles
from deniable.designs import Categorical, CategoricalEstimate, FrequencyEstimate, Tally
from deniable.designs._frequency import SE_FIXED, SE_SAMPLING
from deniable.exceptions import DataError, ParameterError
from deniable.oracles import (
    OUE,
    exact_variance,
    sampling_variance,
    support_probabilities,
)
from deniable.oracles._results import SE_EXACT
from deniable.oracles._results import FrequencyEstimate as OracleResultsEstimate


def _tally(mechanism: Any, n: int = 3000, seed: int = 7) -> Tally:
    k = mechanism.channel.n_truths
    gen = np.random.default_rng(seed)
    values = np.minimum(gen.geometric(0.3, n) - 1, k - 1)  # skewed: some values rare
    return mechanism.tally(mechanism.randomize(values, rng=gen))


def _support(mechanism: Any, tally: Tally) -> tuple[np.ndarray, int]:
    """``(c, n)``: the support counts of the k values and the number of reports (a support
    tally ends with n; k-ary RR's tally counts the reports of each value)."""
    counts = np.asarray(tally.counts, dtype=float)
    k = mechanism.channel.n_truths
    if counts.size == k + 1:
        return counts[:-1], int(counts[-1])
    return counts, int(counts.sum())


# ------------------------------------------------------------------ one type, old names


def test_the_old_names_are_the_one_type() -> None:
    assert CategoricalEstimate is FrequencyEstimate
    assert oracles.FrequencyEstimate is FrequencyEstimate is OracleResultsEstimate
    assert SE_EXACT == SE_FIXED


def test_old_and_new_names_give_identical_numbers(oracle: Any) -> None:
    """Every oracle and the k-ary design: the estimate through each name is the same object
    type with the same numbers, and the attributes each old class had are there."""
    tally = _tally(oracle)
    est = oracle.estimate(tally)
    assert type(est) is FrequencyEstimate
    for make in (CategoricalEstimate.from_tally, oracles.FrequencyEstimate.from_tally):
        other = make(oracle, tally)
        assert other == est
        for name in ("values", "bounded", "variances", "variances_fixed", "se", "se_unbiased"):
            np.testing.assert_array_equal(getattr(other, name), getattr(est, name))
        np.testing.assert_array_equal(other.ci(0.9), est.ci(0.9))
    # what CategoricalEstimate offered and what the oracles' FrequencyEstimate offered
    assert est.design is est.oracle is est.mechanism is oracle
    np.testing.assert_array_equal(est.se_plug_in, est.se)
    np.testing.assert_array_equal(est.variances_plug_in, est.variances)
    c, n = _support(oracle, tally)
    np.testing.assert_array_equal(est.support_shares, c / n)
    assert est.n == n and est.k == oracle.channel.n_truths
    j = int(np.argmax(c))
    assert est.category(j).value == pytest.approx(float(est.values[j]), rel=1e-12)
    data = json.loads(json.dumps(est.to_dict(rows=3)))
    shown = min(3, est.k)
    assert data["rows"] == shown and len(data["se_fixed"]) == len(data["ci_exact"]) == shown
    assert len(est.table(rows=1).rows) == 1
    assert f"... {est.k - 1} more categories" in str(est.table(rows=1))


# ------------------------------------------------------------------ both conventions


def test_both_variances_match_their_closed_forms(oracle: Any) -> None:
    """sampling ``lambda (1 - lambda) / (n (p - q)^2)``, fixed ``(pi p (1 - p) + (1 - pi) q
    (1 - q)) / (n (p - q)^2)`` at the estimate, and the identity sampling = fixed + pi (1 -
    pi) / n; ``se`` is the sampling one, named, for every mechanism."""
    tally = _tally(oracle)
    est = oracle.estimate(tally)
    p, q = support_probabilities(oracle)
    c, n = _support(oracle, tally)
    lam = c / n
    pi = (lam - q) / (p - q)
    sampling = lam * (1 - lam) / (n * (p - q) ** 2)
    fixed = (pi * p * (1 - p) + (1 - pi) * q * (1 - q)) / (n * (p - q) ** 2)
    np.testing.assert_allclose(est.values, pi, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(est.variances, sampling, rtol=1e-10, atol=1e-18)
    np.testing.assert_allclose(est.se, np.sqrt(sampling), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(est.se_unbiased, np.sqrt(sampling * n / (n - 1)), rtol=1e-10)
    np.testing.assert_allclose(est.variances_fixed, np.maximum(fixed, 0), rtol=1e-9, atol=1e-18)
    np.testing.assert_allclose(est.se_fixed, np.sqrt(np.maximum(fixed, 0)), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(
        est.variances - est.variances_fixed, pi * (1 - pi) / n, rtol=1e-9, atol=1e-15
    )
    assert est.se_convention == SE_SAMPLING and "sampling" in SE_SAMPLING
    data = est.to_dict()
    assert data["se_convention"] == SE_SAMPLING and data["se_fixed_convention"] == SE_FIXED
    np.testing.assert_allclose(data["se_fixed"], est.se_fixed, rtol=1e-12)
    # each category as a binary design has the same (sampling) SE, within float rounding
    j = int(np.argmax(c))
    assert est.category(j).se == pytest.approx(float(est.se[j]), rel=1e-12)
    # the Wald interval uses the named SE
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(est.ci(0.95, "wald")[:, 1] - est.values, z * est.se, rtol=1e-12)


def test_a_non_uniform_k_ary_design_uses_each_categorys_probabilities() -> None:
    """Forced shares f_j: category j is the binary design P1 = t + (1 - t) f_j, P0 = (1 -
    t) f_j, and both variances use them (not one p and q)."""
    t, f = 0.6, np.array([0.1, 0.2, 0.3, 0.4])
    design = Categorical(4, t, tuple(f))
    counts = np.array([130, 240, 290, 340])
    est = design.estimate(design.tally_counts(counts))
    n, lam = counts.sum(), counts / counts.sum()
    p0, p1 = (1 - t) * f, t + (1 - t) * f
    pi = (lam - p0) / t
    np.testing.assert_allclose(est.values, pi, rtol=1e-12)
    np.testing.assert_allclose(est.variances, lam * (1 - lam) / (n * t * t), rtol=1e-12)
    fixed = (pi * p1 * (1 - p1) + (1 - pi) * p0 * (1 - p0)) / (n * t * t)
    np.testing.assert_allclose(est.variances_fixed, fixed, rtol=1e-12)
    for j in range(4):
        cat = est.category(j)
        assert cat.value == pytest.approx(pi[j], rel=1e-12)
        assert cat.se == pytest.approx(math.sqrt(lam[j] * (1 - lam[j]) / n) / t, rel=1e-12)
        assert tuple(est.ci(0.9, "exact")[j]) == pytest.approx(cat.ci(0.9, "exact"), rel=1e-12)
        assert tuple(est.ci(0.9, "wilson")[j]) == pytest.approx(cat.ci(0.9, "wilson"), rel=1e-12)


# ------------------------------------------------------------------ by simulation

#: Repetitions and reports per repetition of the simulations below.
REPEATS, REPORTS = 1500, 1000
#: The chi-square(REPEATS - 1) band of a variance ratio at 1e-6 on each side: 4 values of
#: 2 mechanisms per test, so a false alarm has probability about 2e-6 * 8 = 1.6e-5.
BAND = stats.chi2.ppf([1e-6, 1 - 1e-6], REPEATS - 1) / (REPEATS - 1)
FREQUENCIES = np.array([0.5, 0.3, 0.15, 0.05])

SIMULATED = [
    pytest.param(lambda: Categorical.from_epsilon(1.0, k=4), id="grr"),
    pytest.param(lambda: OUE.from_epsilon(1.0, k=4), id="oue"),
]


@pytest.mark.parametrize("make", SIMULATED)
def test_the_fixed_population_variance_is_wangs_by_simulation(make: Any) -> None:
    """One population of 1000 values randomized 1500 times (seed 31): the variance of each
    value's estimate is Wang et al.'s exact variance (within the chi-square band, false
    alarm 1.6e-5 over the test), and ``variances_fixed`` averages to it (within 6 of its
    SEs, ~2e-9 per value); the sampling ``variances`` lie above it by ``pi_hat (1 -
    pi_hat) / n``, on average ``(pi (1 - pi) - exact) / n`` (within 6 SEs)."""
    mechanism = make()
    counts = np.round(FREQUENCIES * REPORTS).astype(int)
    values = np.repeat(np.arange(4), counts)
    truth = counts / REPORTS
    gen = np.random.default_rng(31)
    estimates, reported, sampling = (np.empty((REPEATS, 4)) for _ in range(3))
    for r in range(REPEATS):
        est = mechanism.estimate(mechanism.randomize(values, rng=gen))
        estimates[r], reported[r], sampling[r] = est.values, est.variances_fixed, est.variances
    exact = exact_variance(mechanism, REPORTS, truth)
    ratio = estimates.var(axis=0, ddof=1) / exact
    assert np.all((BAND[0] <= ratio) & (ratio <= BAND[1])), ratio
    se = reported.std(axis=0, ddof=1) / math.sqrt(REPEATS)
    assert np.all(np.abs(reported.mean(axis=0) - exact) <= 6 * se + 1e-12), (reported, exact)
    # per run the gap is pi_hat (1 - pi_hat) / n, whose mean is (pi (1 - pi) - exact) / n
    gap = sampling - reported
    z = (gap.mean(axis=0) - (truth * (1 - truth) - exact) / REPORTS) / (
        gap.std(axis=0, ddof=1) / math.sqrt(REPEATS)
    )
    assert np.all(np.abs(z) <= 6), z


@pytest.mark.parametrize("make", SIMULATED)
def test_the_sampling_variance_by_simulation(make: Any) -> None:
    """1000 respondents drawn afresh from a population with the frequencies (0.5, 0.3,
    0.15, 0.05) 1500 times (seed 32): the variance of each value's estimate is the sampling
    variance ``lambda (1 - lambda) / (n (p - q)^2)`` (chi-square band, false alarm 1.6e-5
    over the test), the reported ``variances`` average to it (within 6 of their SEs), and
    it exceeds the fixed-population variance at the same frequencies by pi (1 - pi) / n."""
    mechanism = make()
    gen = np.random.default_rng(32)
    estimates, reported = np.empty((REPEATS, 4)), np.empty((REPEATS, 4))
    for r in range(REPEATS):
        values = gen.choice(4, size=REPORTS, p=FREQUENCIES)
        est = mechanism.estimate(mechanism.randomize(values, rng=gen))
        estimates[r], reported[r] = est.values, est.variances
    expected = sampling_variance(mechanism, REPORTS, FREQUENCIES)
    np.testing.assert_allclose(
        expected - exact_variance(mechanism, REPORTS, FREQUENCIES),
        FREQUENCIES * (1 - FREQUENCIES) / REPORTS,
        rtol=1e-9,
    )
    ratio = estimates.var(axis=0, ddof=1) / expected
    assert np.all((BAND[0] <= ratio) & (ratio <= BAND[1])), ratio
    se = reported.std(axis=0, ddof=1) / math.sqrt(REPEATS)
    assert np.all(np.abs(reported.mean(axis=0) - expected) <= 6 * se), (reported, expected)


# ------------------------------------------------------------------ what stays the design's


def test_an_oracles_variance_names_the_population() -> None:
    oue = OUE.from_epsilon(1.0, k=4)
    np.testing.assert_array_equal(
        oue.variance(500, FREQUENCIES), exact_variance(oue, 500, FREQUENCIES)
    )
    np.testing.assert_array_equal(
        oue.variance(500, FREQUENCIES, population="iid"), sampling_variance(oue, 500, FREQUENCIES)
    )
    with pytest.raises(ParameterError, match="`population` must be one of"):
        oue.variance(500, population="sampling")


def test_the_covariance_is_the_k_ary_designs_and_an_oracle_says_why_not() -> None:
    design = Categorical.from_epsilon(1.0, k=3)
    est = design.estimate(design.tally_counts([500, 300, 200]))
    lam, t, n = np.array([0.5, 0.3, 0.2]), design.p_truthful, 1000
    np.testing.assert_allclose(est.covariance, (np.diag(lam) - np.outer(lam, lam)) / (n * t * t))
    np.testing.assert_allclose(np.diag(est.covariance), est.variances, rtol=1e-15)
    oue = OUE.from_epsilon(1.0, k=3)
    with pytest.raises(DataError, match="`covariance` needs reports that each support one"):
        _ = oue.estimate(oue.randomize([0, 1, 2] * 10, rng=1)).covariance


def test_intervals_default_to_exact_and_name_their_methods() -> None:
    oue = OUE.from_epsilon(1.0, k=4)
    est = oue.estimate(oue.randomize(np.arange(400) % 4, rng=2))
    np.testing.assert_array_equal(est.ci(0.9), est.ci(0.9, "exact"))
    assert np.all((est.ci(0.9) >= 0) & (est.ci(0.9) <= 1))
    for j in range(4):
        assert tuple(est.ci(0.9, "wilson")[j]) == pytest.approx(
            est.category(j).ci(0.9, "wilson"), rel=1e-12, abs=1e-15
        )
    with pytest.raises(ParameterError, match="`method` must be one of"):
        est.ci(0.9, "likelihood")


def test_the_k_ary_designs_table_keeps_reports_and_the_simplex_mle() -> None:
    design = Categorical(3, 0.6, (0.2, 0.3, 0.5))
    est = design.estimate(Tally((30, 300, 670)))
    table = est.table()
    assert table.columns[:4] == ("category", "reports", "estimate", "MLE")
    assert table.column("reports") == [30, 300, 670]
    assert table.column("MLE") == ["0.000000", "0.274227", "0.725773"]
    assert est.simplex and "MLE: on the simplex" in str(table)
    oue = OUE.from_epsilon(1.0, k=3)
    other = oue.estimate(oue.randomize([0, 1, 2] * 10, rng=1))
    assert not other.simplex and "MLE" not in other.table().columns
    np.testing.assert_array_equal(other.bounded, np.clip(other.values, 0, 1))
