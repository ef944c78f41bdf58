"""Sensitive numbers under a sample design, and their privacy stated honestly.

Under a design the scrambling is one more, independent stage of sampling, so the
de-scrambled values X^_i are the linearization variables: the Hajek mean sum w X^ / sum w
has the Woodruff scores u_i = w_i (X^_i - mean) / sum w, and with the PSU totals u_hj of
stratum h and their mean u_h, V = sum_h (1 - n_h / N_h) n_h / (n_h - 1) sum_j (u_hj - u_h)^2
(Wolter 2007, ch. 6).  The reference below computes exactly that with a loop, and samplics
computes it on its own.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _sampling_data import samplics_taylor
from deniable.exceptions import PrivacyError
from deniable.quantitative import (
    Additive,
    Exponential,
    FDistribution,
    Laplace,
    Multiplicative,
    Normal,
    Uniform,
    UnrelatedQuantitative,
)
from deniable.sampling import SampleDesign, as_replicate, survey_ratio


def _sample(seed: int = 4):  # type: ignore[no-untyped-def]
    """Incomes in 6 strata x 5 clusters x 10 people, weighted."""
    rng = np.random.default_rng(seed)
    strata, psus, size = 6, 5, 10
    n = strata * psus * size
    stratum = np.repeat(np.arange(strata), psus * size)
    psu = np.tile(np.repeat(np.arange(psus), size), strata)
    cluster = rng.normal(0, 0.4, strata * psus)[np.repeat(np.arange(strata * psus), size)]
    income = np.exp(10 + 0.1 * stratum + cluster + rng.normal(0, 0.5, n))
    weights = rng.uniform(50, 150, n)
    return stratum, psu, weights, income


def _taylor_se(y, w, stratum, psu, fpc=None):  # type: ignore[no-untyped-def]
    mean = (w @ y) / w.sum()
    u = w * (y - mean) / w.sum()
    var = 0.0
    for h in np.unique(stratum):
        totals = np.array(
            [u[(stratum == h) & (psu == j)].sum() for j in np.unique(psu[stratum == h])]
        )
        n_h = totals.size
        f = 0.0 if fpc is None else n_h / fpc[h]
        var += (1 - f) * n_h / (n_h - 1) * ((totals - totals.mean()) ** 2).sum()
    return mean, math.sqrt(var)


@pytest.mark.parametrize(
    "design",
    [
        Additive(Normal(0, 20_000)),
        Multiplicative.eichhorn_hayre(20, 20),
        UnrelatedQuantitative.mix_exp(0.7, 30_000),
    ],
    ids=["additive", "eichhorn-hayre", "mix-exp"],
)
def test_design_based_se_is_the_taylor_se_of_the_descrambled_values(design) -> None:  # type: ignore[no-untyped-def]
    stratum, psu, weights, income = _sample()
    z = design.randomize(income, rng=7)
    xhat = design.descramble(z)
    fpc = {h: 40 + h for h in range(6)}
    sd = SampleDesign(weights=weights, strata=stratum, psu=psu,
                      fpc=np.array([fpc[h] for h in stratum]))  # fmt: skip
    est = design.estimate(z, sample_design=sd, population=2.5e6)
    mean, se = _taylor_se(xhat, weights, stratum, psu, fpc)
    assert est.value == pytest.approx(mean, rel=1e-12)
    assert est.se == pytest.approx(se, rel=1e-10)
    assert est.df == 6 * 5 - 6
    assert est.variance_method == "Taylor linearization"
    assert est.total == pytest.approx(2.5e6 * mean, rel=1e-12)
    # samplics on the de-scrambled values (PSU labels made unique, fpc as 1 - f_h)
    ref = samplics_taylor("mean")
    ref.estimate(xhat, weights, stratum=stratum, psu=stratum * 100 + psu,
                 fpc={h: 1 - 5 / fpc[h] for h in fpc})  # fmt: skip
    assert est.value == pytest.approx(float(ref.point_est), rel=1e-12)
    assert est.se == pytest.approx(float(ref.stderror), rel=1e-10)


def test_additive_shift_and_multiplicative_scale_carry_to_the_se() -> None:
    # X^ = Z - E[S]: the scores of Z and X^ are the same, so is the SE; X^ = Z / E[S]:
    # the SE of the mean of Z divided by E[S]
    stratum, psu, weights, income = _sample(5)
    sd = SampleDesign(weights=weights, strata=stratum, psu=psu)
    add = Additive(Uniform(1000, 9000))
    z = add.randomize(income, rng=1)
    _, se_z = _taylor_se(z, weights, stratum, psu)
    assert add.estimate(z, sample_design=sd).se == pytest.approx(se_z, rel=1e-10)
    mul = Multiplicative(Exponential(2.5))
    z = mul.randomize(income, rng=1)
    _, se_z = _taylor_se(z, weights, stratum, psu)
    assert mul.estimate(z, sample_design=sd).se == pytest.approx(se_z / 2.5, rel=1e-10)


def test_equal_weights_one_stratum_no_clusters_is_the_simple_random_sample() -> None:
    d = Additive(Laplace(3000.0))
    income = _sample()[3]
    z = d.randomize(income, rng=3)
    srs = d.estimate(z)
    design = d.estimate(z, sample_design=SampleDesign(weights=np.ones(z.size)))
    assert design.value == pytest.approx(srs.value, rel=1e-13)
    assert design.se == pytest.approx(srs.se, rel=1e-10)  # both divide by n - 1
    assert design.df == srs.df == z.size - 1
    assert design.ci(0.95) == pytest.approx(srs.ci(0.95), rel=1e-9)


def test_domains_and_replicates_go_through_the_sampling_package() -> None:
    stratum, psu, weights, income = _sample(6)
    sd = SampleDesign(weights=weights, strata=stratum, psu=psu)
    d = Additive(Normal(0, 5000))
    z = d.randomize(income, rng=4)
    dom = stratum < 3
    est = d.estimate(z, sample_design=sd, domain=dom)
    ref = survey_ratio(d.descramble(z), np.ones(z.size), sd, domain=dom)
    assert (est.value, est.se, est.n) == (ref.value, ref.se, int(dom.sum()))
    jk = as_replicate(sd, "JKn")
    rep = d.estimate(z, sample_design=jk)
    assert rep.variance_method == jk.variance_method
    # JKn of a linear statistic (a mean, nearly) is close to Taylor's (Wolter 2007, ch. 4)
    assert rep.se == pytest.approx(d.estimate(z, sample_design=sd).se, rel=0.05)


# ---------------------------------------------------------------------- privacy


def _max_log_ratio(design, answers, grid):  # type: ignore[no-untyped-def]
    dens = np.array([design.report_logpdf(grid, a) for a in answers])
    return float((dens.max(axis=0) - dens.min(axis=0)).max())


def test_additive_laplace_with_bounds_has_its_epsilon_tight() -> None:
    d = Additive(Laplace(2000.0), bounds=(0, 10_000))
    eps = d.privacy.epsilon
    assert eps == 5.0  # (high - low) / b, by hand
    grid = np.linspace(-50_000, 60_000, 20_001)
    worst = _max_log_ratio(d, np.linspace(0, 10_000, 11), grid)
    assert worst <= eps * (1 + 1e-12)
    assert worst >= eps * (1 - 1e-12)  # attained (z beyond the bounds): a smaller one fails
    assert d.privacy.require_finite() == eps
    assert "5.0000" in str(d.privacy)


def test_additive_laplace_empirical_likelihood_ratio() -> None:
    # reports from the two extreme answers, binned; each bin with 2,000+ reports in both:
    # the log ratio of the bin shares is within eps + 4.5 sd (sd from the counts,
    # sqrt(1/c1 + 1/c2)); false alarm below 1e-4 over the bins
    d = Additive(Laplace(1.0), bounds=(0, 1))
    n = 400_000
    lo = d.randomize(np.zeros(n), rng=31)
    hi = d.randomize(np.ones(n), rng=32)
    bins = np.linspace(-6, 7, 53)
    c_lo = np.histogram(lo, bins)[0].astype(float)
    c_hi = np.histogram(hi, bins)[0].astype(float)
    ok = (c_lo >= 2000) & (c_hi >= 2000)
    ratio = np.abs(np.log(c_lo[ok] / c_hi[ok]))
    slack = 4.5 * np.sqrt(1 / c_lo[ok] + 1 / c_hi[ok])
    assert (ratio <= d.epsilon + slack).all()
    assert ratio.max() > 0.8 * d.epsilon  # the tails do reach the bound


def test_multiplicative_f_with_positive_bounds_has_a_finite_epsilon() -> None:
    # ln Z = ln X + ln S; the log density of ln S has slopes in (-d2/2, d1/2): the ratio
    # tends to (high / low)^(max(d1, d2) / 2) in a tail and never exceeds it
    d = Multiplicative(FDistribution(6, 12), bounds=(1, 4))
    eps = d.privacy.epsilon
    assert eps == pytest.approx(6 * math.log(4), rel=1e-15)
    grid = np.exp(np.linspace(-40, 40, 8001))
    worst = _max_log_ratio(d, [1.0, 2.0, 4.0], grid)
    assert worst <= eps * (1 + 1e-9)
    assert worst >= eps * 0.999


@pytest.mark.parametrize(
    "design",
    [
        Additive(Normal(0, 1000), bounds=(0, 10)),
        Additive(Laplace(5.0)),
        Additive(Uniform(-50, 50), bounds=(0, 10)),
        Additive(Exponential(10), bounds=(0, 10)),
        Multiplicative(FDistribution(20, 20)),
        Multiplicative(FDistribution(20, 20), bounds=(0, 10)),
        Multiplicative(Normal(1, 0.2), bounds=(1, 10)),
        UnrelatedQuantitative.mix_norm(0.3, 0, 1),
    ],
    ids=str,
)
def test_infinite_epsilon_is_never_printed_finite(design) -> None:  # type: ignore[no-untyped-def]
    p = design.privacy
    assert math.isinf(design.epsilon) and not p.is_finite
    assert "∞" in str(p)
    assert p.to_dict()["epsilon"] == "inf"
    with pytest.raises(PrivacyError, match="no finite epsilon"):
        p.require_finite()


def test_normal_scrambling_ratio_has_no_bound() -> None:
    # the log ratio of N(z - 0) and N(z - 10) is 10 z / sd^2 - 50 / sd^2: past any bound
    d = Additive(Normal(0, 10), bounds=(0, 10))
    assert _max_log_ratio(d, [0.0, 10.0], np.array([1e4])) > 900
    assert _max_log_ratio(d, [0.0, 10.0], np.array([1e6])) > 90_000


def test_privacy_measure_closed_forms() -> None:
    # Yan, Wang & Lai (2009): Delta = E[(Z - X)^2], by hand for X of mean 10, variance 4
    assert Additive(Normal(3, 2)).privacy_measure(10, 4) == pytest.approx(13.0)  # 4 + 9
    # E X^2 E (S - 1)^2 = 104 * (Var S + (E S - 1)^2) = 104 * (4 + 1) for S ~ Exp(2)
    assert Multiplicative(Exponential(2)).privacy_measure(10, 4) == pytest.approx(520.0)
    # (1 - p)(Var Y + Var X + (E Y - E X)^2) = 0.5 * (9 + 4 + 100)
    mix = UnrelatedQuantitative.mix_norm(0.5, 20, 3)
    assert mix.privacy_measure(10, 4) == pytest.approx(56.5)
