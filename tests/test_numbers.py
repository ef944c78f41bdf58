"""Scrambled-response designs for sensitive numbers (deniable.quantitative): closed-form
moments, unbiasedness and coverage by seeded simulation, the degenerate designs, bad input.

The closed forms below are derived by hand in the comments, never read from the code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.quantitative import (
    Additive,
    Constant,
    Exponential,
    FDistribution,
    Laplace,
    Multiplicative,
    Normal,
    OptionalAdditive,
    Uniform,
    UnrelatedQuantitative,
)
from deniable.randomness import ArrayWords

# answers with mean 10 and (population) variance 4 exactly
X = np.tile([8.0, 12.0], 100_000)
MEAN_X, VAR_X = 10.0, 4.0

# (design, E[Z], Var X^), derived by hand for X above:
CASES = [
    # additive, S ~ N(3, 2^2): E Z = 10 + 3; Var X^ = Var X + Var S = 4 + 4
    (Additive(Normal(3, 2)), 13.0, 8.0),
    # additive, S ~ Laplace(b = 1.5): Var S = 2 b^2 = 4.5
    (Additive(Laplace(1.5)), 10.0, 8.5),
    # multiplicative, S ~ U(0.5, 1.5): E S = 1, Var S = 1/12; Var(XS) = E X^2 E S^2 - (E X E S)^2
    # = 104 (1 + 1/12) - 100 = 12.6667; X^ = Z / 1
    (Multiplicative(Uniform(0.5, 1.5)), 10.0, 104 * 13 / 12 - 100),
    # multiplicative, S ~ Exp(mean 2): E S^2 = 8; Var Z = 104 * 8 - 400 = 432; / E[S]^2 = 108
    (Multiplicative(Exponential(2.0)), 20.0, 108.0),
    # Greenberg: p = 0.5, Y ~ N(20, 3^2): E Z = 15; E Z^2 = (104 + 409) / 2 = 256.5;
    # Var Z = 31.5; Var X^ = 31.5 / 0.25 = 126
    (UnrelatedQuantitative.mix_norm(0.5, 20, 3), 15.0, 126.0),
    # mix.exp: p = 0.8, Y ~ Exp(mean 5): E Z = 8 + 1 = 9; E Z^2 = 0.8 * 104 + 0.2 * 50 = 93.2;
    # Var Z = 12.2; Var X^ = 12.2 / 0.64
    (UnrelatedQuantitative.mix_exp(0.8, 5), 9.0, 12.2 / 0.64),
]


@pytest.mark.parametrize(("design", "mean_z", "var_xhat"), CASES, ids=lambda c: str(c)[:40])
def test_moments_closed_forms(design, mean_z, var_xhat) -> None:  # type: ignore[no-untyped-def]
    assert design.report_mean(MEAN_X) == pytest.approx(mean_z, rel=1e-12)
    assert design.descrambled_variance(MEAN_X, VAR_X) == pytest.approx(var_xhat, rel=1e-12)


@pytest.mark.parametrize(("design", "mean_z", "var_xhat"), CASES, ids=lambda c: str(c)[:40])
def test_unbiased_and_variance_by_simulation(design, mean_z, var_xhat) -> None:  # type: ignore[no-untyped-def]
    z = design.randomize(X, rng=20261127)
    xhat = design.descramble(z)
    n = X.size
    # the report mean and the de-scrambled mean within 4.5 SE: false alarm 7e-6 each
    assert abs(z.mean() - mean_z) < 4.5 * math.sqrt(design.report_variance(MEAN_X, VAR_X) / n)
    assert abs(xhat.mean() - MEAN_X) < 4.5 * math.sqrt(var_xhat / n)
    # the sample variance of X^ within 6% of the closed form: with n = 2e5 its relative SE
    # is below 1% for every case here (at most the exponential's sqrt(kurtosis / n)), so
    # 6% is over 6 SE (false alarm below 1e-9)
    assert xhat.var() == pytest.approx(var_xhat, rel=0.06)
    est = design.estimate(z)
    assert est.value == pytest.approx(xhat.mean(), rel=1e-12)
    assert est.se == pytest.approx(xhat.std(ddof=1) / math.sqrt(n), rel=1e-12)
    assert est.df == n - 1


def test_interval_coverage() -> None:
    # 600 samples of 80 respondents, additive Laplace: the 95% t interval covers 10 in a
    # Binomial(600, 0.95) number of samples (SD 0.9%); the band [0.91, 0.985] is beyond
    # 4.4 and 3.3 SD: false alarm below 1e-3
    d = Additive(Laplace(3.0))
    reps, n = 600, 80
    z = d.randomize(np.tile(X[:n], reps), rng=11).reshape(reps, n)
    covered = 0
    for row in z:
        lo, hi = d.estimate(row).ci(0.95)
        covered += lo <= MEAN_X <= hi
    assert 0.91 <= covered / reps <= 0.985


@pytest.mark.parametrize(
    "design",
    [Additive(Constant(0)), Multiplicative(Constant(1)), UnrelatedQuantitative(1.0, Normal(5, 1))],
    ids=["additive-0", "multiplicative-1", "p-1"],
)
def test_degenerate_scrambling_is_the_plain_mean(design) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(5).gamma(2.0, 1000.0, 300)
    z = design.randomize(x, rng=1)
    np.testing.assert_array_equal(z, x)
    est = design.estimate(z)
    assert est.value == pytest.approx(x.mean(), rel=1e-13)
    assert est.se == pytest.approx(x.std(ddof=1) / math.sqrt(x.size), rel=1e-13)
    assert est.se_plug_in == pytest.approx(x.std() / math.sqrt(x.size), rel=1e-13)
    assert math.isinf(design.epsilon)
    assert design.privacy_measure(x.mean(), x.var()) == 0


def test_total_given_the_population() -> None:
    d = Additive(Normal(0, 50))
    z = d.randomize(X[:1000], rng=2)
    est = d.estimate(z, population=25_000)
    assert est.total == pytest.approx(25_000 * est.value, rel=1e-15)
    assert est.se_total == pytest.approx(25_000 * est.se, rel=1e-15)
    lo, hi = est.total_ci(0.9)
    m_lo, m_hi = est.ci(0.9)
    assert (lo, hi) == pytest.approx((25_000 * m_lo, 25_000 * m_hi), rel=1e-15)
    with pytest.raises(ParameterError, match="`population`"):
        d.estimate(z).total_ci()
    with pytest.raises(ParameterError, match=r"`population`.*at least the number of reports"):
        d.estimate(z, population=999)


def test_the_randomizer_does_the_same_work_whatever_the_answer() -> None:
    words = np.random.default_rng(9).integers(0, 2**64, 40, dtype=np.uint64)
    for d in (Additive(Laplace(2.0)), UnrelatedQuantitative.mix_norm(0.6, 0, 1)):
        a = d.randomize(np.zeros(20), rng=ArrayWords(words))
        b = d.randomize(np.full(20, 7.0), rng=ArrayWords(words))
        if isinstance(d, Additive):  # the same noise: the reports differ by the answers
            np.testing.assert_allclose(b - a, 7.0, rtol=0, atol=1e-12)
        else:  # the same coins: the same respondents report the answer
            assert ((a == 0) == (b == 7)).all()


def test_optional_additive_mean_and_sensitivity() -> None:
    d = OptionalAdditive(Normal(0, 10), Normal(0, 40))
    group = np.tile([1, 1, 2, 2], 25_000)  # both answers in both subsamples
    z = d.randomize(X[:100_000], group=group, scramble=0.3, rng=8)
    mean = d.estimate(z)
    t = d.estimate_sensitivity(z, group=group)
    # both within 4.5 SE of the truth (false alarm 7e-6 each)
    assert abs(mean.value - MEAN_X) < 4.5 * mean.se
    assert abs(t.value - 0.3) < 4.5 * t.se
    # the mean's variance: Var X + T (Var S_1 + Var S_2) / 2 = 4 + 0.3 * 850
    assert d.descrambled_variance(MEAN_X, VAR_X, sensitivity=0.3) == pytest.approx(259.0)
    assert mean.se == pytest.approx(math.sqrt(259.0 / 100_000), rel=0.05)
    # every respondent scrambling (a boolean choice) gives T^ near 1
    everyone = d.randomize(X[:100_000], group=group, scramble=np.ones(100_000, bool), rng=8)
    assert abs(d.estimate_sensitivity(everyone, group=group).value - 1) < 0.05


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: Laplace(-1.0), "scale"),
        (lambda: Laplace(0.0), "scale"),
        (lambda: Normal(0, -2), "sd"),
        (lambda: Normal(math.nan, 1), "mean"),
        (lambda: Exponential(-3), "mean"),
        (lambda: Uniform(2, 1), "high"),
        (lambda: FDistribution(20, 4), "d2"),
        (lambda: UnrelatedQuantitative(0.0, Normal()), "p"),
        (lambda: UnrelatedQuantitative(1.5, Normal()), "p"),
        (lambda: UnrelatedQuantitative(math.nan, Normal()), "p"),
        (lambda: Multiplicative(Normal(0, 1)), "scrambler"),
        (lambda: Multiplicative(Uniform(-1, 1)), "scrambler"),
        (lambda: Additive(Normal(), bounds=(3, 1)), "bounds"),
        (lambda: Additive(Normal(), bounds=(0, math.inf)), "bounds"),
        (lambda: OptionalAdditive(Normal(1, 1), Normal(0, 2)), "first"),
        (lambda: OptionalAdditive(Normal(0, 2), Normal(0, 2)), "second"),
    ],
)
def test_bad_parameters_raise_naming_the_parameter(make, name) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParameterError, match=f"`{name}`"):
        make()


def test_bad_kinds_and_data() -> None:
    with pytest.raises(ParameterTypeError, match="`scrambler` must be a Distribution"):
        Additive(3.0)  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`p` must be a real number"):
        UnrelatedQuantitative("0.5", Normal())  # type: ignore[arg-type]
    d = Additive(Laplace(100.0), bounds=(0, 1000))
    for bad in ([1.0, math.nan], [math.inf], [[1.0, 2.0]], ["a"], []):
        with pytest.raises(DataError, match="`values`") as err:
            d.randomize(bad, rng=1)
        assert "inf" not in str(err.value) and "nan" not in str(err.value)  # no answer echoed
    with pytest.raises(DataError, match=r"`values` must lie in .*\[0, 1000\].* row 1") as err:
        d.randomize([5.0, 1234.5], rng=1)
    assert "1234" not in str(err.value)  # the true answer is never in a message
    with pytest.raises(DataError, match="`reports` must hold finite numbers, got nan at row 2"):
        d.estimate([1.0, 2.0, math.nan])
    with pytest.raises(DataError, match="at least 2 reports"):
        d.estimate([1.0])
    with pytest.raises(ParameterError, match="`population`"):
        d.estimate([1.0, 2.0], population=-5)
    with pytest.raises(ParameterTypeError, match="`sample_design`"):
        d.estimate([1.0, 2.0], sample_design="srs")
    with pytest.raises(DataError, match="`domain`"):
        d.estimate([1.0, 2.0, 3.0], domain=[True, False])
    opt = OptionalAdditive(Normal(0, 1), Normal(0, 2))
    with pytest.raises(DataError, match="`group`"):
        opt.randomize([1.0, 2.0], group=[1, 3], scramble=0.5, rng=1)
    with pytest.raises(ParameterError, match="`scramble`"):
        opt.randomize([1.0, 2.0], group=[1, 2], scramble=1.5, rng=1)
    with pytest.raises(DataError, match="each subsample"):
        opt.estimate_sensitivity([1.0, 2.0, 3.0], group=[1, 1, 2])


def test_huge_values_never_overflow_silently() -> None:
    # reports near the largest double: the mean and SE are computed on values / max|value|
    # and scaled back; what cannot be represented is refused, naming the row
    big = np.array([1e200, -1e200, 1e200, -1e200] * 5)
    est = Additive(Normal(0, 1)).estimate(big)
    assert est.value == 0.0
    assert est.se == pytest.approx(1e200 * math.sqrt(20 / 19 / 20), rel=1e-12)
    huge = np.array([1.7e308, 1.7e308, -1.7e308, 1.7e308])
    est = Additive(Normal(0, 1)).estimate(huge)
    assert math.isfinite(est.value) and math.isfinite(est.se)
    with pytest.raises(DataError, match=r"`reports` is too large at row 0: its de-scrambled"):
        Multiplicative(Uniform(0.001, 0.002)).estimate(huge)
    with pytest.raises(DataError, match="`values` is too large at row 0: its scrambled report"):
        Additive(Normal(1e308, 1)).randomize([1.7e308], rng=1)
    opt = OptionalAdditive(Normal(0, 1), Normal(0, 2))
    with pytest.raises(DataError, match="sensitivity level or its standard error"):
        opt.estimate_sensitivity(huge, group=[1, 1, 2, 2])
    t = opt.estimate_sensitivity(big[:4] * 1e-60, group=[1, 1, 2, 2])
    assert math.isfinite(t.value) and math.isfinite(t.se)
