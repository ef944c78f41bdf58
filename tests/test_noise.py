"""Central-model noise: closed forms, independent numeric checks, exact samplers, errors."""

from __future__ import annotations

import math
import re
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import integrate, stats

from deniable.accounting import GDP, ZCDP, ApproxDP, PureDP
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    noise_error_table,
)
from deniable.mechanisms._exact_sampling import bernoulli_exp, uniform_below
from deniable.plotting import plot_noise_error
from deniable.randomness import SystemRandom

# Statistical checks use fixed seeds; each p-value threshold of 1e-4 is the false-alarm rate
# of one check were the seed drawn at random.
P_MIN = 1e-4


def _chi_square_pvalue(samples: np.ndarray, pmf, support: int) -> float:
    """Pearson chi-square of integer samples against ``pmf`` on -support..support, with the
    two tails beyond pooled into one bin."""
    k = np.arange(-support, support + 1)
    expected = pmf(k) * samples.size
    observed = np.array([np.sum(samples == x) for x in k], dtype=float)
    tail_obs = samples.size - observed.sum()
    tail_exp = samples.size - expected.sum()
    keep = expected >= 5
    obs = np.append(observed[keep], tail_obs + observed[~keep].sum())
    exp = np.append(expected[keep], tail_exp + expected[~keep].sum())
    if exp[-1] < 1e-9:  # no tail mass to speak of
        obs, exp = obs[:-1], exp[:-1]
        exp = exp * obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


# --- Laplace -------------------------------------------------------------------------------


def test_laplace_closed_forms() -> None:
    m = LaplaceMechanism.from_epsilon(0.25, sensitivity=3)
    assert m.scale == 12.0
    assert m.epsilon == 0.25
    assert m.expected_abs_error == 12.0
    assert m.guarantee == PureDP(0.25)
    # scale rounded up: epsilon never above the request
    for eps in (0.1, 0.3, 0.7, 1.1, 3.3):
        assert LaplaceMechanism.from_epsilon(eps, 3).epsilon <= eps * (1 + 1e-15)
        assert Fraction(3) / Fraction(LaplaceMechanism.from_epsilon(eps, 3).scale) <= Fraction(eps)


def test_laplace_samples_follow_laplace() -> None:
    m = LaplaceMechanism(2.0)
    out = m.randomize(np.zeros(40_000), rng=11)
    assert stats.kstest(out, stats.laplace(scale=2.0).cdf).pvalue > P_MIN
    # E|X| = b: sd of |X| is b, so a 4-sigma band (false alarm ~6e-5)
    assert abs(np.mean(np.abs(out)) - 2.0) < 4 * 2.0 / math.sqrt(out.size)


# --- Gaussian ------------------------------------------------------------------------------


def _delta_by_integration(sigma: float, eps: float, sens: float) -> float:
    """Hockey stick between N(0, s^2) and N(sens, s^2) by quadrature (independent of the code)."""
    f = stats.norm(0, sigma).pdf
    g = stats.norm(sens, sigma).pdf
    cut = sens / 2 - eps * sigma**2 / sens  # f > e^eps g left of the cut
    val, _ = integrate.quad(lambda x: f(x) - math.exp(eps) * g(x), -np.inf, cut, epsabs=1e-14)
    return max(val, 0.0)


@pytest.mark.parametrize(
    ("sigma", "eps", "sens"), [(1.0, 0.5, 1.0), (3.0, 1.0, 1.0), (2.0, 0.1, 2.0), (5.0, 2.0, 3.0)]
)
def test_gaussian_delta_matches_integration(sigma: float, eps: float, sens: float) -> None:
    g = GaussianMechanism(sigma, sens)
    assert g.delta_for_epsilon(eps) == pytest.approx(_delta_by_integration(sigma, eps, sens), 1e-7)


def test_gaussian_classic_formula_and_range() -> None:
    g = GaussianMechanism.from_epsilon_delta(0.5, 1e-5, sensitivity=2, method="classic")
    assert g.sigma == pytest.approx(2 * math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-14)
    assert g.sigma >= 2 * math.sqrt(2 * math.log(1.25e5)) / 0.5
    for eps in (1.0, 2.5):
        with pytest.raises(ParameterError, match=r"`epsilon` must be in \(0, 1\).*got"):
            GaussianMechanism.from_epsilon_delta(eps, 1e-5, method="classic")


@pytest.mark.parametrize("eps", [0.05, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_analytic_gaussian_below_classic_and_tight(eps: float, delta: float) -> None:
    analytic = GaussianMechanism.from_epsilon_delta(eps, delta)
    classic = GaussianMechanism.from_epsilon_delta(eps, delta, method="classic")
    assert analytic.sigma < classic.sigma  # Balle & Wang (2018): the classic bound is loose
    # the returned sigma is safe and tight: a 1e-9 smaller sigma breaks delta
    assert _delta_by_integration(analytic.sigma, eps, 1.0) <= delta * (1 + 1e-6)
    assert analytic.delta_for_epsilon(eps) <= delta
    smaller = GaussianMechanism(analytic.sigma * (1 - 1e-9))
    assert smaller.delta_for_epsilon(eps) > delta


def test_analytic_gaussian_large_epsilon() -> None:
    g = GaussianMechanism.from_epsilon_delta(5.0, 1e-6, sensitivity=1)
    assert g.delta_for_epsilon(5.0) <= 1e-6
    assert g.epsilon_for_delta(1e-6) == pytest.approx(5.0, rel=1e-8)
    assert g.epsilon_for_delta(1e-6) <= 5.0 * (1 + 1e-12)


def test_analytic_gaussian_published_value() -> None:
    """Balle & Wang (2018): at eps = 1, delta = 1e-5, Delta = 1 the analytic Gaussian needs
    sigma ~ 3.73 (the classic formula gives 4.84).  Checked by solving Thm. 8,
    Phi(1/(2s) - s) - e Phi(-1/(2s) - s) = 1e-5, independently with scipy's brentq on
    scipy.stats.norm (no code from the module under test)."""
    from scipy import optimize

    def excess(s: float) -> float:
        return float(stats.norm.cdf(0.5 / s - s) - math.e * stats.norm.cdf(-0.5 / s - s)) - 1e-5

    root = optimize.brentq(excess, 1.0, 10.0, xtol=1e-13)
    assert round(root, 2) == 3.73
    sigma = GaussianMechanism.from_epsilon_delta(1.0, 1e-5).sigma
    assert sigma == pytest.approx(root, rel=1e-9)
    assert sigma >= root * (1 - 1e-12)  # never less noise than needed
    classic = GaussianMechanism.from_epsilon_delta(0.999999, 1e-5, method="classic").sigma
    assert round(classic, 2) == 4.84  # sqrt(2 ln(1.25e5)) / eps


@pytest.mark.parametrize("eps", [700.0, 710.0, 1e6, 1e300])
def test_gaussian_delta_at_huge_epsilon_is_positive(eps: float) -> None:
    """delta(eps) of the Gaussian mechanism is positive for every finite eps: where it
    underflows it is the smallest positive double, never 0 or NaN."""
    assert GaussianMechanism(1.0).delta_for_epsilon(eps) == 5e-324
    # sigma = 1/eps: mu = eps, epsilon(1/2) is about mu^2 / 2, infinite where that overflows
    g = GaussianMechanism(1 / eps)
    e = g.epsilon_for_delta(0.5)
    mu = g.sensitivity / g.sigma
    if mu * mu / 2 > sys.float_info.max:
        assert e == math.inf
    else:
        assert mu * mu / 2 - mu <= e <= mu * mu / 2 + mu


def test_gaussian_zcdp_and_gdp() -> None:
    g = GaussianMechanism.from_zcdp(0.125, sensitivity=2)
    assert g.sigma == 4.0  # 2 / sqrt(0.25)
    assert g.rho == 0.125
    assert g.mu == 0.5
    assert g.zcdp == ZCDP(0.125)
    assert g.gdp == GDP(0.5)
    for rho in (0.01, 0.3, 1.7):
        h = GaussianMechanism.from_zcdp(rho)
        assert Fraction(1) / (2 * Fraction(h.sigma) ** 2) <= Fraction(rho)
    ap = GaussianMechanism(3.0).approx_dp(1e-6)
    assert isinstance(ap, ApproxDP)
    assert GaussianMechanism(3.0).delta_for_epsilon(ap.epsilon) <= 1e-6


def test_gaussian_error_and_samples() -> None:
    g = GaussianMechanism(3.0)
    assert g.expected_abs_error == pytest.approx(3.0 * math.sqrt(2 / math.pi), rel=1e-15)
    out = g.randomize(np.full(40_000, 7.0), rng=5)
    assert stats.kstest(out - 7.0, stats.norm(scale=3.0).cdf).pvalue > P_MIN


# --- discrete Laplace ----------------------------------------------------------------------


@pytest.mark.parametrize("t", [0.5, 1.0, 3.7, 20.0])
def test_discrete_laplace_closed_forms(t: float) -> None:
    m = DiscreteLaplaceMechanism(t, sensitivity=2)
    k = np.arange(-4000, 4001)
    p = m.pmf(k)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert m.expected_abs_error == pytest.approx(float(np.sum(np.abs(k) * p)), rel=1e-10)
    assert m.epsilon == pytest.approx(2 / t, rel=1e-15)
    # tightness: the largest log ratio of p(k) / p(k + 2) over k is exactly 2 / t
    small = m.pmf(np.arange(-60, 61))
    ratio = np.log(small[:-2] / small[2:])
    assert np.max(np.abs(ratio)) == pytest.approx(2 / t, rel=1e-9)


def test_discrete_laplace_from_epsilon_is_exact() -> None:
    m = DiscreteLaplaceMechanism.from_epsilon(0.3, sensitivity=2)
    assert isinstance(m.scale, Fraction)
    assert m.scale == Fraction(2) / Fraction(0.3)
    assert m.epsilon == 0.3
    assert m.guarantee == PureDP(0.3)


@pytest.mark.parametrize(
    ("scale", "n", "seed"),
    [(1, 30_000, 1), (Fraction(7, 3), 30_000, 2), (0.3, 30_000, 3), (Fraction(2) / 0.7, 20_000, 4)],
)
def test_discrete_laplace_sampler_matches_pmf(scale: float, n: int, seed: int) -> None:
    m = DiscreteLaplaceMechanism(scale)
    samples = m.noise(n, rng=seed)
    assert samples.dtype == np.int64
    assert _chi_square_pvalue(samples, m.pmf, 40) > P_MIN


# --- discrete Gaussian ---------------------------------------------------------------------


def _dg_pmf_direct(sigma2: float, k: np.ndarray) -> np.ndarray:
    support = np.arange(-int(40 * math.sqrt(sigma2)) - 60, int(40 * math.sqrt(sigma2)) + 61)
    z = np.sum(np.exp(-(support.astype(float) ** 2) / (2 * sigma2)))
    return np.exp(-(k.astype(float) ** 2) / (2 * sigma2)) / z


@pytest.mark.parametrize("sigma", [0.3, 1.0, 1.9, 2.0, 7.5, 150.0])
def test_discrete_gaussian_pmf_and_error(sigma: float) -> None:
    m = DiscreteGaussianMechanism(sigma)
    k = np.arange(-int(40 * sigma) - 60, int(40 * sigma) + 61)
    direct = _dg_pmf_direct(sigma**2, k)
    np.testing.assert_allclose(m.pmf(k), direct, rtol=1e-12, atol=1e-300)
    assert m.expected_abs_error == pytest.approx(float(np.sum(np.abs(k) * direct)), rel=1e-12)


def test_discrete_gaussian_error_asymptotic_branch() -> None:
    # sigma > 1e5 uses Euler--Maclaurin; compare with a direct sum
    sigma = 1.2e5
    m = DiscreteGaussianMechanism(sigma)
    k = np.arange(1, int(40 * sigma), dtype=float)
    direct = 2 * np.sum(k * np.exp(-(k**2) / (2 * sigma**2))) / (sigma * math.sqrt(2 * math.pi))
    assert m.expected_abs_error == pytest.approx(direct, rel=1e-11)


def test_discrete_gaussian_rho() -> None:
    m = DiscreteGaussianMechanism(2, sensitivity=3)
    assert m.rho == 9 / 8
    assert m.zcdp == ZCDP(9 / 8)
    z = DiscreteGaussianMechanism.from_zcdp(0.1, sensitivity=2)
    assert Fraction(4) / (2 * Fraction(z.sigma) ** 2) <= Fraction(0.1)
    assert z.rho <= 0.1 * (1 + 1e-15)


def _dg_delta_direct(sigma2: float, eps: float, sens: int) -> float:
    """Hockey stick both ways between N_Z(0, s2) and N_Z(sens, s2), by brute force."""
    k = np.arange(-int(45 * math.sqrt(sigma2)) - 60, int(45 * math.sqrt(sigma2)) + 61 + sens)
    p = _dg_pmf_direct(sigma2, k)
    q = _dg_pmf_direct(sigma2, k - sens)
    return max(
        float(np.sum(np.maximum(p - math.exp(eps) * q, 0))),
        float(np.sum(np.maximum(q - math.exp(eps) * p, 0))),
    )


@pytest.mark.parametrize(
    ("sigma", "eps", "sens"), [(1.0, 0.5, 1), (3.0, 1.0, 1), (5.5, 0.2, 2), (20.0, 0.1, 3)]
)
def test_discrete_gaussian_delta_matches_brute_force(sigma: float, eps: float, sens: int) -> None:
    m = DiscreteGaussianMechanism(sigma, sensitivity=sens)
    brute = _dg_delta_direct(sigma**2, eps, sens)
    got = m.delta_for_epsilon(eps)
    assert got >= brute * (1 - 1e-12)
    assert got == pytest.approx(brute, rel=1e-9)


def test_discrete_gaussian_from_epsilon_delta_is_safe_and_tight() -> None:
    m = DiscreteGaussianMechanism.from_epsilon_delta(0.5, 1e-6)
    s = float(m.sigma)
    assert _dg_delta_direct(s * s, 0.5, 1) <= 1e-6
    smaller = (s * (1 - 1e-7)) ** 2
    assert _dg_delta_direct(smaller, 0.5, 1) > 1e-6
    eps = m.epsilon_for_delta(1e-6)
    assert eps <= 0.5 and eps == pytest.approx(0.5, rel=1e-6)
    assert m.approx_dp(1e-6) == ApproxDP(eps, 1e-6)


@pytest.mark.parametrize(
    ("sigma", "n", "seed"),
    [(Fraction(1), 30_000, 7), (0.7, 30_000, 8), (2.5, 20_000, 9), (Fraction(31, 3), 20_000, 10)],
)
def test_discrete_gaussian_sampler_matches_pmf(sigma: float, n: int, seed: int) -> None:
    m = DiscreteGaussianMechanism(sigma)
    samples = m.noise(n, rng=seed)
    assert samples.dtype == np.int64
    assert _chi_square_pvalue(samples, m.pmf, int(6 * float(sigma)) + 3) > P_MIN


# --- exact primitives ----------------------------------------------------------------------


def test_exact_bernoulli_exp_frequencies() -> None:
    rng = np.random.Generator(np.random.PCG64(123))
    n = 40_000
    for num, den in [(0, 1), (1, 3), (1, 1), (5, 2), (7, 1)]:
        nums = np.full(n, num, dtype=np.int64)
        dens = np.full(n, den, dtype=np.int64)
        hits = bernoulli_exp(rng, nums, dens).mean()
        p = math.exp(-num / den)
        # 4.5-sigma band: false alarm ~7e-6 per check
        assert abs(hits - p) <= 4.5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_exact_primitives_with_big_integers() -> None:
    rng = np.random.Generator(np.random.PCG64(321))
    n = 20_000
    big = 3**90  # ~2**143: forces the Python-int path
    bounds = np.full(n, big, dtype=object)
    u = uniform_below(rng, bounds)
    assert all(0 <= x < big for x in u)
    frac = np.array([x / big for x in u], dtype=float)
    assert stats.kstest(frac, "uniform").pvalue > P_MIN
    nums = np.full(n, big // 2, dtype=object)
    hits = bernoulli_exp(rng, nums, bounds).mean()
    p = math.exp(-(big // 2) / big)
    assert abs(hits - p) <= 4.5 * math.sqrt(p * (1 - p) / n)  # false alarm ~7e-6


# --- the contract every mechanism shares ---------------------------------------------------

MECHANISMS = [
    LaplaceMechanism(1.5),
    GaussianMechanism(2.0),
    DiscreteLaplaceMechanism(Fraction(5, 2)),
    DiscreteGaussianMechanism(3),
]


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: type(m).__name__)
def test_noise_does_not_depend_on_values(mech: object) -> None:
    a = np.arange(500)
    b = np.arange(500)[::-1] * 7 - 100
    ga, gb = np.random.default_rng(42), np.random.default_rng(42)
    na = mech.randomize(a, rng=ga) - a  # type: ignore[attr-defined]
    nb = mech.randomize(b, rng=gb) - b  # type: ignore[attr-defined]
    if na.dtype.kind == "f":  # (x + noise) - x rounds differently for different x
        np.testing.assert_allclose(na, nb, rtol=0, atol=1e-9)
    else:
        np.testing.assert_array_equal(na, nb)
    # and the generators were left in the same state
    assert ga.bit_generator.random_raw() == gb.bit_generator.random_raw()
    out = mech.randomize(a, rng=SystemRandom())  # type: ignore[attr-defined]
    assert out.shape == a.shape


def test_discrete_mechanisms_need_integers() -> None:
    for mech in (DiscreteLaplaceMechanism(2), DiscreteGaussianMechanism(2)):
        with pytest.raises(DataError, match="integers"):
            mech.randomize([1.5, 2.0], rng=1)
        with pytest.raises(DataError, match="integers"):
            mech.randomize(["a"], rng=1)
        assert mech.randomize([1.0, 2.0], rng=1).dtype == np.int64
    with pytest.raises(DataError, match="real numbers"):
        LaplaceMechanism(1.0).randomize(["a"], rng=1)


def test_bad_parameters_raise_naming_the_parameter() -> None:
    cases = [
        (lambda: LaplaceMechanism.from_epsilon(-1.0), "`epsilon` must be in"),
        (lambda: LaplaceMechanism(0.0), "`scale` must be in"),
        (lambda: LaplaceMechanism(1.0, sensitivity=0), "`sensitivity` must be in"),
        (lambda: GaussianMechanism.from_epsilon_delta(-0.5, 1e-6), "`epsilon` must be in"),
        (lambda: GaussianMechanism.from_epsilon_delta(0.5, 0.0), r"`delta` must be in \(0, 1\)"),
        (lambda: GaussianMechanism.from_epsilon_delta(0.5, 1.0), r"`delta` must be in \(0, 1\)"),
        (lambda: GaussianMechanism.from_epsilon_delta(0.5, 1e-6, method="x"), "`method`"),
        (lambda: GaussianMechanism.from_zcdp(0.0), "`rho` must be in"),
        (lambda: GaussianMechanism(-1.0), "`sigma` must be in"),
        (lambda: DiscreteLaplaceMechanism(Fraction(-1, 2)), "`scale` must be in"),
        (lambda: DiscreteLaplaceMechanism.from_epsilon(0), "`epsilon` must be in"),
        (lambda: DiscreteLaplaceMechanism(1, sensitivity=0), "`sensitivity` must be an integer"),
        (lambda: DiscreteGaussianMechanism(0), "`sigma` must be in"),
        (lambda: DiscreteGaussianMechanism.from_epsilon_delta(1, 2), r"`delta` must be in"),
        (lambda: noise_error_table([0.5, -1.0]), "`epsilons` must be in"),
    ]
    for call, message in cases:
        with pytest.raises(ParameterError, match=message):
            call()
    with pytest.raises(ParameterTypeError, match="`sensitivity` must be an integer"):
        DiscreteLaplaceMechanism(1, sensitivity=1.5)
    with pytest.raises(ParameterTypeError, match="`epsilon` must be a real number"):
        LaplaceMechanism.from_epsilon("1")


# --- table and plot ------------------------------------------------------------------------


def test_noise_error_table() -> None:
    table = noise_error_table([0.1, 0.5, 2.0], delta=1e-6)
    rows = table.rows()
    assert [r["epsilon"] for r in rows] == [0.1, 0.5, 2.0]
    for r in rows:
        eps = r["epsilon"]
        assert r["laplace"] == pytest.approx(1 / eps, rel=1e-12)
        q = math.exp(-eps)
        assert r["discrete_laplace"] == pytest.approx(2 * q / (1 - q * q), rel=1e-12)
        sigma = GaussianMechanism.from_epsilon_delta(eps, 1e-6).sigma
        assert r["gaussian"] == pytest.approx(sigma * math.sqrt(2 / math.pi), rel=1e-12)
        # discrete noise never does worse than its continuous twin here
        assert r["discrete_laplace"] < r["laplace"]
        assert r["discrete_gaussian"] <= r["gaussian"] * (1 + 1e-6)
    assert rows[0]["gaussian_classic"] is not None
    assert rows[2]["gaussian_classic"] is None
    text = str(table)
    # '-' where the classic Gaussian is not proved
    assert " - " in text and "discrete gaussian" in text and "n/a" not in text


def test_plot_needs_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    table = noise_error_table([0.5, 1.0])
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install deniable\[plot\]"):
        plot_noise_error(table)


def test_plot_draws_when_matplotlib_present() -> None:
    import matplotlib

    matplotlib.use("Agg")
    ax = plot_noise_error(noise_error_table([0.5, 1.0]))
    assert len(ax.get_lines()) == 5


# --- extreme inputs: a correct answer or one ParameterError (issue 14) -----------------------

TINY, HUGE = 5e-324, sys.float_info.max


def _case(id: str, call: object, needle: str | None = None) -> Any:
    return pytest.param(call, needle, id=id)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        # ZeroDivisionError / OverflowError before
        _case(
            "dlap-tiny-eps-error",
            lambda: DiscreteLaplaceMechanism.from_epsilon(1e-20).expected_abs_error,
        ),
        _case(
            "dlap-eps-5e-324", lambda: calibrate("discrete-laplace", epsilon=TINY), "noise scale"
        ),
        _case("dlap-eps-1e300", lambda: calibrate("discrete-laplace", epsilon=1e300)),
        _case("lap-eps-5e-324", lambda: calibrate("laplace", epsilon=TINY), "noise scale"),
        _case(
            "gauss-sens-5e-324",
            lambda: calibrate("gaussian", epsilon=TINY, delta=0.5, sensitivity=TINY),
        ),
        _case(
            "gauss-rho-700-sens-tiny",
            lambda: calibrate("gaussian", rho=700, sensitivity=TINY),
            "below the smallest",
        ),
        _case(
            "gauss-rho-tiny-sens-huge",
            lambda: calibrate("gaussian", rho=1e-300, sensitivity=1e300),
            "above the largest",
        ),
        _case(
            "gauss-sens-max",
            lambda: calibrate("gaussian", epsilon=TINY, delta=1e-10, sensitivity=HUGE),
            "sigma",
        ),
        _case("dgauss-rho-tiny", lambda: calibrate("discrete-gaussian", rho=TINY), "above 1e+100"),
        _case("dgauss-rho-max", lambda: calibrate("discrete-gaussian", rho=HUGE), "below 1e-100"),
        _case(
            "dgauss-eps-max",
            lambda: calibrate("discrete-gaussian", epsilon=HUGE, delta=0.5),
            "below 1e-100",
        ),
        # MemoryError (terabytes) before: the exact curve of a huge sigma
        _case(
            "dgauss-curve-eps-1e-8",
            lambda: calibrate("discrete-gaussian", epsilon=1e-8, delta=1e-10),
            "above 100000",
        ),
        _case(
            "dgauss-curve-sens-1e15",
            lambda: calibrate("discrete-gaussian", epsilon=0.5, delta=0.5, sensitivity=10**15),
            "above 100000",
        ),
        _case(
            "dgauss-curve-rho-delta",
            lambda: calibrate("discrete-gaussian", rho=1e-12, delta=1e-10),
            "above 100000",
        ),
        # an endless loop before: delta a hair below 1
        _case(
            "loop-gauss-delta-near-1",
            lambda: calibrate("gaussian", epsilon=0.5, delta=1 - 2**-53, sensitivity=1e-300),
        ),
        _case(
            "loop-dgauss-delta-near-1",
            lambda: calibrate("discrete-gaussian", epsilon=0.5, delta=1 - 2**-53),
        ),
    ],
)
def test_extreme_noise_inputs_give_an_answer_or_one_parameter_error(
    call: object, needle: str | None
) -> None:
    if needle is None:
        out = call()  # type: ignore[operator]
        values = out.to_dict() if hasattr(out, "to_dict") else {"value": out}
        assert all(x == x for x in values.values() if isinstance(x, float))  # no NaN
        return
    with pytest.raises(ParameterError, match=re.escape(needle)):
        call()  # type: ignore[operator]


def calibrate(mechanism: str, **kwargs: object) -> object:
    from deniable.mechanisms import calibrate_noise

    return calibrate_noise(mechanism, **kwargs)  # type: ignore[arg-type]


def test_discrete_laplace_error_at_extreme_scales_is_its_limit() -> None:
    # E|X| = 1 / sinh(1/t): about t for a large t, about 2 e^(-1/t) for a small one
    big = DiscreteLaplaceMechanism(Fraction(10**200))
    assert big.expected_abs_error == pytest.approx(1e200, rel=1e-12)
    assert DiscreteLaplaceMechanism(Fraction(1, 1000)).expected_abs_error == 0.0
    small = DiscreteLaplaceMechanism(Fraction(1, 100))
    assert small.expected_abs_error == pytest.approx(2 * math.exp(-100), rel=1e-12)
    assert DiscreteLaplaceMechanism(Fraction(10**400)).expected_abs_error == math.inf
    pmf = big.pmf([0, 1, 10**6])
    assert pmf[0] == pytest.approx(0.5e-200, rel=1e-12) and pmf[2] == pytest.approx(
        pmf[0], rel=1e-12
    )


def test_the_gaussian_scales_with_the_sensitivity_across_the_doubles() -> None:
    unit = GaussianMechanism.from_epsilon_delta(0.5, 1e-6).sigma
    for sens in (1e-300, 1e-20, 7.0, 1e300):
        g = GaussianMechanism.from_epsilon_delta(0.5, 1e-6, sensitivity=sens)
        assert g.sigma / sens == pytest.approx(unit, rel=1e-12)
        assert g.delta_for_epsilon(0.5) <= 1e-6


def test_near_one_delta_is_met_and_the_curve_is_below_it() -> None:
    delta = 1 - 2**-52
    g = GaussianMechanism.from_epsilon_delta(0.5, delta)
    assert g.delta_for_epsilon(0.5) <= delta
    d = DiscreteGaussianMechanism.from_epsilon_delta(0.5, delta)
    assert d.delta_for_epsilon(0.5) <= delta


@pytest.mark.parametrize(("sigma", "eps"), [(150.0, 0.02), (1500.0, 0.004), (900.0, 1e-6)])
def test_the_truncated_curve_equals_brute_force_at_large_sigma(sigma: float, eps: float) -> None:
    m = DiscreteGaussianMechanism(sigma)
    brute = _dg_delta_direct(sigma**2, eps, 1)
    got = m.delta_for_epsilon(eps)
    assert got >= brute * (1 - 1e-12) and got == pytest.approx(brute, rel=1e-9)
