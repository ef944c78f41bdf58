"""Greenberg's unrelated quantitative question with the innocuous mean estimated, or
unknown (two subsamples, RRreg's mix.unknown): closed forms, unbiasedness, the design-based
SE of the two-subsample estimate, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterError
from deniable.quantitative import Normal, UnrelatedQuantitative, UnrelatedQuantitativeUnknown
from deniable.sampling import SampleDesign

X = np.tile([8.0, 12.0], 50_000)  # mean 10, variance 4


def test_estimated_innocuous_mean_adds_its_variance() -> None:
    d = UnrelatedQuantitative(0.6, Normal(0, 1))  # the drawn Y is not used below
    rng = np.random.default_rng(3)
    y = rng.normal(50, 5, X.size)  # each respondent's answer to a real innocuous question
    z = d.randomize(X, innocuous_values=y, rng=12)
    est = d.estimate(z, innocuous_mean=50.0, innocuous_se=0.4)
    # by hand: X^ = (Z - 0.4 * 50) / 0.6, Var(mean) = s^2 / n + (0.4 / 0.6)^2 0.4^2
    xhat = (z - 0.4 * 50.0) / 0.6
    assert est.value == pytest.approx(xhat.mean(), rel=1e-12)
    assert est.se == pytest.approx(
        math.sqrt(xhat.var(ddof=1) / X.size + (0.4 / 0.6 * 0.4) ** 2), rel=1e-12
    )
    # unbiased (the known E[Y] here): within 4.5 SE, false alarm 7e-6
    assert abs(est.value - 10.0) < 4.5 * est.se
    # the drawn innocuous distribution's mean (0) would be badly wrong for this question
    assert abs(d.estimate(z).value - 10.0) > 20
    with pytest.raises(ParameterError, match="`innocuous_se` applies to an estimated"):
        d.estimate(z, innocuous_se=0.3)
    with pytest.raises(ParameterError, match="`innocuous_se`"):
        d.estimate(z, innocuous_mean=50, innocuous_se=-1)
    with pytest.raises(DataError, match="`innocuous_values` must have one entry per answer"):
        d.randomize(X, innocuous_values=y[:5], rng=1)


def test_two_subsamples_estimate_by_hand_and_unbiased() -> None:
    d = UnrelatedQuantitativeUnknown(0.8, 0.3, Normal(100, 10))
    group = np.tile([1, 1, 2, 2], X.size // 4)  # both answers in both subsamples
    z = d.randomize(X, group=group, rng=21)
    est = d.estimate(z, group=group)
    z1, z2 = z[group == 1], z[group == 2]
    # mu = ((1 - p2) Z1 - (1 - p1) Z2) / (p1 - p2); Var = ((1-p2)^2 s1^2/n1 + (1-p1)^2 s2^2/n2)
    # / (p1 - p2)^2
    assert est.value == pytest.approx((0.7 * z1.mean() - 0.2 * z2.mean()) / 0.5, rel=1e-12)
    var = (0.49 * z1.var(ddof=1) / z1.size + 0.04 * z2.var(ddof=1) / z2.size) / 0.25
    assert est.se == pytest.approx(math.sqrt(var), rel=1e-12)
    assert abs(est.value - 10.0) < 4.5 * est.se  # false alarm 7e-6
    # the planning variance: n Var(mean) from the moments, against the data's
    planned = d.descrambled_variance(10.0, 4.0, share=0.5) / X.size
    assert var == pytest.approx(planned, rel=0.05)  # over 5 SE of the sample variances
    assert math.isinf(d.epsilon)


def test_two_subsamples_under_a_design_is_the_taylor_se_of_the_linear_combination() -> None:
    # mu = a1 m1 + a2 m2 with Hajek domain means m_g: linearized scores
    # u_i = sum_g a_g w_i 1_g(i) (z_i - m_g) / W_g, and V = sum_h n_h/(n_h - 1) sum_j (u_hj - u_h)^2
    rng = np.random.default_rng(8)
    strata, psus, size = 5, 4, 12
    n = strata * psus * size
    stratum = np.repeat(np.arange(strata), psus * size)
    psu = np.tile(np.repeat(np.arange(psus), size), strata)
    w = rng.uniform(1, 3, n)
    x = rng.gamma(3.0, 10.0, n)
    group = rng.integers(1, 3, n)
    d = UnrelatedQuantitativeUnknown(0.75, 0.25, Normal(40, 8))
    z = d.randomize(x, group=group, rng=9)
    est = d.estimate(z, group=group, sample_design=SampleDesign(w, stratum, psu))
    a = np.array([0.75, -0.25]) / 0.5
    u = np.zeros(n)
    means = []
    for j, g in enumerate((1, 2)):
        ind = group == g
        m = (w[ind] @ z[ind]) / w[ind].sum()
        means.append(m)
        u += a[j] * np.where(ind, w * (z - m), 0.0) / w[ind].sum()
    var = 0.0
    for h in range(strata):
        totals = np.array([u[(stratum == h) & (psu == j)].sum() for j in range(psus)])
        var += psus / (psus - 1) * ((totals - totals.mean()) ** 2).sum()
    assert est.value == pytest.approx(a @ np.array(means), rel=1e-12)
    assert est.se == pytest.approx(math.sqrt(var), rel=1e-10)
    assert est.df == strata * psus - strata


def test_two_subsamples_bad_input() -> None:
    with pytest.raises(ParameterError, match="`p2` must differ from `p1`"):
        UnrelatedQuantitativeUnknown(0.5, 0.5, Normal())
    with pytest.raises(ParameterError, match="`p1`"):
        UnrelatedQuantitativeUnknown(0.0, 0.5, Normal())
    d = UnrelatedQuantitativeUnknown(0.9, 0.2, Normal())
    with pytest.raises(DataError, match="`group`"):
        d.randomize([1.0, 2.0], group=[1, 0], rng=1)
    with pytest.raises(DataError, match="at least 2 reports in each subsample"):
        d.estimate([1.0, 2.0, 3.0], group=[1, 1, 2])
    with pytest.raises(DataError, match="no per-report de-scrambled value"):
        d.descramble([1.0, 2.0])
    with pytest.raises(DataError, match="one entry per respondent of the design"):
        d.estimate([1.0, 2.0, 3.0, 4.0], group=[1, 1, 2, 2], sample_design=SampleDesign(np.ones(5)))
