"""Measures and conversions: closed forms, independent numeric routes, safety, bad input."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from deniable.accounting import (
    GDP,
    RDP,
    ZCDP,
    ApproxDP,
    PureDP,
    compose_gdp,
    gdp_delta,
    gdp_epsilon,
    gdp_to_approx,
    laplace_rdp,
    pure_to_rdp,
    pure_to_zcdp,
    rdp_curve_delta,
    rdp_curve_epsilon,
    rdp_delta,
    rdp_epsilon,
    rdp_to_approx,
    rr_rdp,
    zcdp_delta,
    zcdp_epsilon,
    zcdp_to_approx,
)
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError

EPS = [1e-6, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0]


# ------------------------------------------------------------------ measures
def test_measures_hold_values_and_compose():
    assert PureDP(0.5) + PureDP(1.0) == PureDP(1.5)
    assert ZCDP(0.25) + ZCDP(0.25) == ZCDP(0.5)
    assert ApproxDP(1.0, 1e-6).delta == 1e-6
    assert PureDP(math.inf).epsilon == math.inf
    assert GDP(0.0).mu == 0.0
    r = RDP((2.0, math.inf), (0.5, 1.0)) + RDP((2.0, math.inf), (0.25, 1.0))
    assert r.epsilons == (0.75, 2.0)
    curve = RDP.from_curve(lambda a: 0.1 * a, [2, 3])
    assert curve.epsilons == pytest.approx((0.2, 0.3), rel=1e-12)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: PureDP(-0.1), "epsilon"),
        (lambda: ApproxDP(1.0, 1.0), "delta"),
        (lambda: ApproxDP(1.0, -1e-9), "delta"),
        (lambda: ApproxDP(-1.0, 0.1), "epsilon"),
        (lambda: ZCDP(-1.0), "rho"),
        (lambda: GDP(-1.0), "mu"),
        (lambda: GDP(float("nan")), "mu"),
        (lambda: RDP((1.0,), (0.1,)), "alphas"),
        (lambda: RDP((0.5, 2.0), (0.1, 0.2)), "alphas"),
        (lambda: RDP((3.0, 2.0), (0.1, 0.2)), "alphas"),
        (lambda: RDP((2.0,), (0.1, 0.2)), "epsilons"),
        (lambda: RDP((2.0,), (-0.1,)), "epsilons"),
        (lambda: RDP((), ()), "alphas"),
    ],
)
def test_bad_measures_raise_naming_the_parameter(make, name):
    with pytest.raises(ParameterError, match=f"`{name}`"):
        make()


def test_wrong_type_raises_type_error():
    with pytest.raises(ParameterTypeError, match="`epsilon`"):
        PureDP("1")  # type: ignore[arg-type]


def test_rdp_add_needs_same_orders():
    with pytest.raises(ParameterError, match="`alphas`"):
        RDP((2.0,), (0.1,)) + RDP((3.0,), (0.1,))


# ------------------------------------------------------------------ pure -> zCDP / RDP
def _rr_renyi_direct(eps: float, alpha: float) -> float:
    """The brief's formula, evaluated naively: (1/(a-1)) ln(p^a q^(1-a) + q^a p^(1-a))."""
    p = math.exp(eps) / (1 + math.exp(eps))
    q = 1 - p
    return math.log(p**alpha * q ** (1 - alpha) + q**alpha * p ** (1 - alpha)) / (alpha - 1)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0, 20.0])
def test_pure_to_rdp_is_rr_renyi_divergence(eps, alpha):
    assert pure_to_rdp(eps, alpha) == pytest.approx(_rr_renyi_direct(eps, alpha), rel=1e-9)
    # and the issue's closed form (1/(a-1)) ln((e^{a eps} + e^eps e^{-a eps}) / (e^eps + 1))
    issue = math.log(
        (math.exp(alpha * eps) + math.exp(eps) * math.exp(-alpha * eps)) / (math.exp(eps) + 1)
    ) / (alpha - 1)
    assert pure_to_rdp(eps, alpha) == pytest.approx(issue, rel=1e-9)


@pytest.mark.parametrize("k", [3, 4, 10])
def test_kary_rr_renyi_matches_direct_sum(k):
    eps, alpha = 0.8, 3.0
    z = math.exp(eps) + k - 1
    p = np.array([math.exp(eps), 1.0] + [1.0] * (k - 2)) / z  # input x: output x first
    q = np.array([1.0, math.exp(eps)] + [1.0] * (k - 2)) / z  # input x': output x' second
    direct = math.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1)
    assert rr_rdp(eps, alpha, k=k) == pytest.approx(direct, rel=1e-9)
    assert rr_rdp(eps, alpha, k=k) < rr_rdp(eps, alpha, k=2)  # binary RR is the worst case


@pytest.mark.parametrize("eps", EPS)
def test_rr_renyi_limits_and_monotone(eps):
    kl = eps * math.tanh(eps / 2)  # KL(P||Q) = (p - q) eps
    # D_alpha - KL = O(alpha - 1) = 1e-12 relative; the float evaluation is good to ~1e-11
    assert pure_to_rdp(eps, 1 + 1e-12) == pytest.approx(kl, rel=1e-9)
    assert pure_to_rdp(eps, math.inf) == eps
    alphas = 1 + np.logspace(-10, 8, 200)
    vals = pure_to_rdp(eps, alphas)
    assert np.all(np.isfinite(vals)) and np.all(vals >= 0) and np.all(vals <= eps)
    assert np.all(np.diff(vals) >= -1e-12 * eps)


@pytest.mark.parametrize("eps", [0.01, 0.5, 1.0, 3.0, 10.0])
def test_pure_to_zcdp_sharp_and_classic(eps):
    assert pure_to_zcdp(eps, method="classic").rho == pytest.approx(eps**2 / 2, rel=1e-10)
    sharp = pure_to_zcdp(eps).rho
    assert sharp == pytest.approx(eps * math.tanh(eps / 2), rel=1e-10)
    assert sharp <= pure_to_zcdp(eps, method="classic").rho
    # valid: D_alpha <= rho * alpha at every order of the worst case (RR)
    alphas = 1 + np.logspace(-9, 6, 500)
    assert np.all(pure_to_rdp(eps, alphas) <= sharp * alphas)
    # tight: a rho 1e-6 smaller fails near alpha = 1
    a = 1 + 1e-9
    assert pure_to_rdp(eps, a) > sharp * (1 - 1e-6) * a


def test_pure_edge_cases():
    assert pure_to_zcdp(0.0).rho == 0.0
    assert pure_to_zcdp(math.inf).rho == math.inf
    assert pure_to_rdp(0.0, 2.0) == 0.0
    assert pure_to_rdp(math.inf, 2.0) == math.inf
    with pytest.raises(ParameterError, match="`alpha`"):
        pure_to_rdp(1.0, 1.0)
    with pytest.raises(ParameterError, match="`alpha`"):
        pure_to_rdp(1.0, 0.5)
    with pytest.raises(ParameterError, match="`epsilon`"):
        pure_to_zcdp(-1.0)
    with pytest.raises(ParameterError, match="`method`"):
        pure_to_zcdp(1.0, method="loose")


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("alpha", [1.01, 2.0, 8.0])
def test_laplace_rdp_matches_numerical_integral(eps, alpha):
    b = 1.0 / eps  # sensitivity 1

    def integrand(x: float) -> float:
        lp = stats.laplace.logpdf(x, 0, b)
        lq = stats.laplace.logpdf(x, 1, b)
        return math.exp(alpha * lp + (1 - alpha) * lq)

    total = sum(
        integrate.quad(integrand, lo, hi, epsabs=0, epsrel=1e-12, limit=200)[0]
        for lo, hi in [(-80 * b - 1, 0.0), (0.0, 1.0), (1.0, 80 * b + 2)]
    )
    assert laplace_rdp(eps, alpha) == pytest.approx(math.log(total) / (alpha - 1), rel=1e-7)
    assert laplace_rdp(eps, alpha) <= pure_to_rdp(eps, alpha)


# ------------------------------------------------------------------ RDP / zCDP -> (eps, delta)
def test_rdp_grid_classic_closed_form():
    r = RDP((2.0, 10.0), (0.3, 1.0))
    d = 1e-5
    expected = min(0.3 + math.log(1 / d) / 1, 1.0 + math.log(1 / d) / 9)
    assert rdp_epsilon(r, d, method="classic") == pytest.approx(expected, rel=1e-9)
    assert rdp_epsilon(r, d, method="classic") >= expected
    improved = min(
        e + math.log(1 / d) / (a - 1) + math.log1p(-1 / a) - math.log(a) / (a - 1)
        for a, e in zip(r.alphas, r.epsilons, strict=True)
    )
    assert rdp_epsilon(r, d) == pytest.approx(improved, rel=1e-9)
    assert rdp_epsilon(r, d) >= improved
    # delta(eps) classic: exp((a-1)(eps(a) - eps))
    assert rdp_delta(r, 5.0, method="classic") == pytest.approx(
        min(math.exp(1 * (0.3 - 5)), math.exp(9 * (1.0 - 5))), rel=1e-10
    )
    assert rdp_to_approx(r, delta=d).epsilon == rdp_epsilon(r, d)


def test_rdp_conversion_never_negative_and_alpha_inf():
    r = RDP((2.0,), (1e-8,))
    assert rdp_epsilon(r, 0.99) == 0.0  # formula would be negative: (0, delta) holds
    r_inf = RDP((math.inf,), (1.5,))
    assert rdp_epsilon(r_inf, 1e-9) == 1.5
    assert rdp_delta(r_inf, 1.5) == 0.0
    assert rdp_delta(r_inf, 1.0) == 1.0
    assert rdp_epsilon(RDP((2.0,), (math.inf,)), 0.1) == math.inf


@pytest.mark.parametrize("rho", [1e-6, 0.01, 0.5, 3.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.01])
def test_zcdp_classic_and_improved(rho, delta):
    classic = zcdp_epsilon(rho, delta, method="classic")
    assert classic == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-9)
    assert classic >= rho + 2 * math.sqrt(rho * math.log(1 / delta))
    improved = zcdp_epsilon(rho, delta)
    assert 0 <= improved <= classic
    # an independent dense grid over alpha of the CKS bound: ours is at most a hair above it
    alphas = 1 + np.logspace(-8, 8, 200_001)
    grid = np.min(
        rho * alphas
        + np.log(1 / delta) / (alphas - 1)
        + np.log1p(-1 / alphas)
        - np.log(alphas) / (alphas - 1)
    )
    # the grid's spacing (1e-4 in log alpha) puts its minimum within ~4e-9 of the true one
    assert improved == pytest.approx(max(grid, 0.0), rel=1e-7, abs=1e-12)
    # round trip: delta at that epsilon is within the rounding margin of delta
    assert zcdp_delta(rho, improved) <= delta * (1 + 1e-6)
    assert zcdp_delta(rho, classic, method="classic") <= delta * (1 + 1e-9)


def test_zcdp_delta_classic_closed_form():
    assert zcdp_delta(0.5, 3.0, method="classic") == pytest.approx(
        math.exp(-(2.5**2) / 2), rel=1e-9
    )
    assert zcdp_delta(0.5, 0.4, method="classic") == 1.0


def test_zcdp_edges():
    assert zcdp_epsilon(0.0, 1e-9) == 0.0
    assert zcdp_epsilon(ZCDP(math.inf), 0.5) == math.inf
    assert zcdp_delta(0.0, 0.0) == 0.0
    assert zcdp_delta(math.inf, 10.0) == 1.0
    assert zcdp_delta(1.0, math.inf) == 0.0
    # tiny delta, tiny rho, huge rho: finite, positive, not NaN
    for rho, d in [(0.5, 1e-300), (1e-300, 1e-300), (1e-12, 1e-6), (1e6, 1e-6), (0.1, 1 - 1e-12)]:
        e = zcdp_epsilon(rho, d)
        assert math.isfinite(e) and e >= 0
    assert zcdp_delta(0.5, 1e4) > 0  # true delta is positive: never rounded to 0
    assert zcdp_to_approx(0.5, epsilon=5.0).delta == zcdp_delta(0.5, 5.0)
    with pytest.raises(PrivacyError, match="vacuous"):
        zcdp_to_approx(5.0, epsilon=0.0, method="classic")
    with pytest.raises(ParameterError, match="exactly one"):
        zcdp_to_approx(0.5)
    with pytest.raises(ParameterError, match="exactly one"):
        zcdp_to_approx(0.5, delta=0.1, epsilon=1.0)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_target_delta_must_be_in_open_unit_interval(bad):
    with pytest.raises(ParameterError, match="`delta`"):
        zcdp_epsilon(0.5, bad)
    with pytest.raises(ParameterError, match="`delta`"):
        gdp_epsilon(1.0, bad)
    with pytest.raises(ParameterError, match="`delta`"):
        rdp_epsilon(RDP((2.0,), (0.1,)), bad)


def test_curve_conversions_respect_grid_results():
    curve = lambda a: 0.2 * a  # noqa: E731
    e = rdp_curve_epsilon(curve, 1e-6)
    assert e == pytest.approx(zcdp_epsilon(0.2, 1e-6), rel=1e-9)
    assert rdp_curve_delta(curve, e) <= 1e-6 * (1 + 1e-6)
    with pytest.raises(ParameterError, match="`method`"):
        rdp_curve_epsilon(curve, 1e-6, method="best")


# ------------------------------------------------------------------ GDP
def _gdp_delta_by_integration(mu: float, eps: float) -> float:
    """Hockey stick of N(mu, 1) vs N(0, 1) by quadrature: int (p - e^eps q)_+ dx."""
    # p/q = exp(mu x - mu^2/2) > e^eps  <=>  x > eps/mu + mu/2
    x0 = eps / mu + mu / 2

    def f(x: float) -> float:
        return float(stats.norm.pdf(x, mu) - math.exp(eps) * stats.norm.pdf(x))

    return integrate.quad(f, x0, np.inf, epsabs=0, epsrel=1e-12)[0]


@pytest.mark.parametrize(("mu", "eps"), [(0.5, 0.0), (0.5, 1.0), (1.0, 0.5), (2.0, 3.0)])
def test_gdp_delta_matches_quadrature(mu, eps):
    exact = _gdp_delta_by_integration(mu, eps)
    assert gdp_delta(mu, eps) == pytest.approx(exact, rel=1e-9)
    assert gdp_delta(mu, eps) >= exact * (1 - 1e-12)


@pytest.mark.parametrize("mu", [0.01, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-300, 1e-10, 1e-5, 0.1])
def test_gdp_epsilon_is_the_safe_root(mu, delta):
    e = gdp_epsilon(mu, delta)
    assert math.isfinite(e) and e >= 0
    assert gdp_delta(mu, e) <= delta
    if e > 0:
        assert gdp_delta(mu, e * (1 - 1e-9)) > delta  # and it is tight
    assert gdp_to_approx(GDP(mu), delta=delta).epsilon == e


def test_gdp_edges_and_composition():
    assert gdp_delta(0.0, 0.0) == 0.0
    assert gdp_delta(math.inf, 5.0) == 1.0
    assert gdp_epsilon(math.inf, 0.1) == math.inf
    assert gdp_epsilon(1.0, 0.9) == 0.0  # delta(0) = 2 Phi(1/2) - 1 < 0.9
    d = gdp_delta(1.0, 1e4)  # far tail: underflows, reported as the smallest positive double
    assert 0 < d < 1e-300
    assert gdp_delta(1.0, 1.0) >= 0 and not math.isnan(gdp_delta(1e-8, 700.0))
    assert compose_gdp([0.3, 0.4]).mu == pytest.approx(0.5, rel=1e-10)
    assert compose_gdp([0.3, 0.4]).mu >= 0.5
    assert compose_gdp([GDP(1.0), math.inf]).mu == math.inf
    assert gdp_to_approx(1.0, epsilon=1.0).delta == gdp_delta(1.0, 1.0)


# ------------------------------------------------------------------ huge finite values
# Every conversion at epsilon (or rho, mu) in {700, 710, 1e6, 1e300}: e^eps overflows a double
# from 709.78 on, eps^2 from 1.3e154.  Each must return a correct safe value: no exception or
# warning (warnings are errors here), never NaN, never below the true value, finite where the
# true value is finite and inf where it overflows.
HUGE = [700.0, 710.0, 1e6, 1e300]
DELTAS = [1e-300, 0.5]
TINY = 5e-324  # the smallest positive double
MAX = 1.7976931348623157e308


def _fraction_half_square(x: float) -> Fraction:
    return Fraction(x) ** 2 / 2


@pytest.mark.parametrize("x", HUGE)
def test_huge_pure_to_zcdp(x):
    sharp = pure_to_zcdp(x).rho
    # rho = x tanh(x/2) is x to within e^-x relative: never below it, not far above
    assert x * (1 - 1e-15) <= sharp <= x * (1 + 1e-9)
    classic = pure_to_zcdp(x, method="classic").rho
    exact = _fraction_half_square(x)
    if exact > Fraction(MAX):
        assert classic == math.inf  # the true value overflows
    else:
        assert math.isfinite(classic) and Fraction(classic) >= exact


@pytest.mark.parametrize("x", HUGE)
def test_huge_renyi_curves(x):
    alphas = np.array([1 + 1e-9, 2.0, 1e6])
    # RR: D_alpha = x - O(e^-x / (alpha - 1)), at most x
    rr = pure_to_rdp(x, alphas)
    assert np.all(rr <= x) and np.all(rr >= x * (1 - 1e-12))
    assert pure_to_rdp(x, math.inf) == x
    k3 = rr_rdp(x, alphas, k=3)
    assert np.all(k3 <= x) and np.all(k3 >= x * (1 - 1e-12))
    # Laplace: D_alpha = x + ln(alpha / (2 alpha - 1)) / (alpha - 1) + O(e^-x) (Mironov 2017,
    # Table II, the second term dropped), at most x
    lap = laplace_rdp(x, alphas)
    t = alphas - 1
    expected = x + np.log(alphas / (2 * alphas - 1)) / t
    assert np.all(lap <= x)
    assert np.all(lap >= expected - 1e-12 * x)


@pytest.mark.parametrize("x", HUGE)
@pytest.mark.parametrize("d", DELTAS)
def test_huge_zcdp_conversions(x, d):
    # rho = x: epsilon(delta) is at most the classic rho + 2 sqrt(rho ln(1/delta)) and at
    # least the true epsilon of the Gaussian mechanism with mu = sqrt(2 rho) (exactly rho-zCDP):
    # with z = eps/mu - mu/2, delta_G = Phi(-z) - e^eps Phi(-z - mu); at z = -1 it is about
    # Phi(1) = 0.84 > 0.5, and at z = 30 it is about Phi(-30) ~ 5e-198 > 1e-300, so the true
    # epsilon exceeds rho - mu (delta 0.5) and rho + 30 mu (delta 1e-300).
    mu = math.sqrt(2 * x)
    lower = x - mu if d == 0.5 else x + 30 * mu
    classic_closed = x + 2 * math.sqrt(x * -math.log(d))
    for method in ("improved", "classic"):
        e = zcdp_epsilon(x, d, method)
        assert math.isfinite(e) and lower <= e <= classic_closed * (1 + 1e-9), (method, e)
        assert zcdp_to_approx(x, delta=d, method=method).epsilon == e
    # delta at a huge epsilon for rho = 0.5: exp(-(eps - rho)^2 / 2) underflows; the true
    # delta is positive, so the result is the smallest positive double
    assert zcdp_delta(0.5, x) == TINY
    assert zcdp_delta(0.5, x, method="classic") == TINY
    assert zcdp_to_approx(0.5, epsilon=x).delta == TINY
    # and at rho = x the guarantee at epsilon = 1 is vacuous: delta = 1 (not NaN, not an error)
    assert zcdp_delta(x, 1.0) == 1.0


@pytest.mark.parametrize("x", HUGE)
@pytest.mark.parametrize("d", DELTAS)
def test_huge_gdp_conversions(x, d):
    assert gdp_delta(1.0, x) == TINY  # Phi(-x + 1/2) - e^x Phi(-x - 1/2): underflows
    assert gdp_delta(x, 1.0) == 1.0 or gdp_delta(x, 1.0) >= 1 - 1e-12
    e = gdp_epsilon(x, d)
    if x * x / 2 > MAX:
        assert e == math.inf  # about mu^2 / 2, which overflows
    else:
        # mu-GDP: z = eps/mu - mu/2 as above: -1 <= z (delta 0.5), z <= 40 (delta 1e-300)
        assert x * x / 2 - x <= e <= x * x / 2 + 40 * x
        assert gdp_delta(x, e) <= d
    assert gdp_to_approx(x, delta=d).epsilon == e
    # composition: sqrt(2) x, finite whenever it is (the squares overflow from 1.3e154 on)
    two = compose_gdp([x, x]).mu
    assert math.isfinite(two)
    assert Fraction(two) ** 2 >= 2 * Fraction(x) ** 2
    assert two <= math.sqrt(2) * x * (1 + 1e-9)


@pytest.mark.parametrize("x", HUGE)
@pytest.mark.parametrize("d", DELTAS)
def test_huge_rdp_conversions(x, d):
    grid = RDP((2.0, math.inf), (x, x))
    # alpha = inf gives x; alpha = 2 gives x + ln(1/d) + ln(1/2) - ln 2 (CKS) or x + ln(1/d)
    expected = min(x, x + math.log(1 / d) - 2 * math.log(2))
    assert expected <= rdp_epsilon(grid, d) <= expected * (1 + 1e-10)
    assert rdp_epsilon(grid, d, method="classic") == x
    assert rdp_to_approx(grid, delta=d).epsilon == rdp_epsilon(grid, d)
    assert 0.0 <= rdp_delta(grid, 1.0) <= 1.0
    # a pure 2-DP guarantee at a huge target epsilon: delta exactly 0 (alpha = inf)
    assert rdp_delta(RDP((2.0, math.inf), (1.0, 2.0)), x) == 0.0
    # the RR curve of x-DP, minimised over a continuous order: at least the exact epsilon of
    # one randomized response, x + ln(1 - d (1 + e^-x)) = x + ln(1 - d) to double precision
    curve_eps = rdp_curve_epsilon(lambda a: pure_to_rdp(x, a), d)
    assert x + math.log1p(-d) - 1e-12 * x <= curve_eps <= x * (1 + 1e-9)
    # the 1-DP curve at a huge target epsilon: delta at most the smallest positive double
    assert 0.0 <= rdp_curve_delta(lambda a: pure_to_rdp(1.0, a), x) <= TINY


# ------------------------------------------------------------------ underflow: tiny epsilon


@pytest.mark.parametrize("eps", [1e-300, 1e-200, 1e-160, 1e-155, 3e-151])
def test_tiny_epsilon_is_never_rounded_to_zero(eps):
    """rho = eps tanh(eps/2) and the RR Renyi curve are positive for eps > 0 and never below
    the true value: ``eps^2 / 2 (1 - eps^2 / 6) <= eps tanh(eps / 2)`` and
    ``D_2 = ln(1 + 4 sinh^2(eps/2)) >= eps^2 (1 - eps^2)`` (binary RR: the sum over the two
    outputs of p^2 / q is 1 / (p q) - 3 with p q = 1 / (4 cosh^2(eps/2)))."""
    e = Fraction(eps)
    rho = pure_to_zcdp(eps).rho
    assert rho > 0 and Fraction(rho) >= e * e / 2 * (1 - e * e / 6)
    classic = pure_to_zcdp(eps, method="classic").rho
    assert classic > 0 and Fraction(classic) >= e * e / 2
    d2 = pure_to_rdp(eps, 2.0)
    assert d2 > 0 and Fraction(d2) >= e * e * (1 - e * e)
    assert rr_rdp(eps, 2.0, k=4) > 0
    assert laplace_rdp(eps, 2.0) > 0
    # the tight bound is kept where it is representable: within a few ulps of eps^2 (D_2)
    if eps * eps > 1e-300:
        assert d2 <= eps * eps * (1 + 1e-9)


def test_tiny_epsilon_under_zcdp_keeps_a_positive_delta():
    """The reviewer's repro: 3 uses of RR(eps = 1e-200) have delta(0) = 7.5e-201, the total
    variation of the 3-fold product: with p = 1/2 + eps/4 + O(eps^3) and j of the 3 losses
    +eps, j = 2 gives 3 p^2 q (1 - e^-eps) ~ 3 eps / 8 and j = 3 gives p^3 (1 - e^(-3 eps))
    ~ 3 eps / 8, so 3 eps / 4.  Under zCDP and RDP (and every other method) delta(0) must be
    at least that, never 0."""
    from deniable.accounting import PrivacyAccountant, RandomizedResponse

    acct = PrivacyAccountant([RandomizedResponse(1e-200, count=3)])
    true = 7.5e-201
    assert acct.zcdp().rho > 0
    for method in ("zcdp", "rdp", "optimal", "advanced", "kov", "best"):
        assert acct.delta(0.0, method) >= true * (1 - 1e-9), method
    # 3 eps / 4 is exact to O(eps^2); the rest is the upward rounding (~7e-9 relative)
    assert acct.delta(0.0, "optimal") == pytest.approx(true, rel=1e-7)
    assert zcdp_delta(3 * pure_to_zcdp(1e-200).rho, 0.0) >= true
    assert compose_gdp([1e-200, 1e-200]).mu >= math.sqrt(2) * 1e-200


# ------------------------------------------------------------------ published values


def _phi(x: float) -> float:
    """Standard normal cdf from the error function (independent of scipy)."""
    return 0.5 * math.erfc(-x / math.sqrt(2))


def test_gdp_delta_published_closed_form():
    """Dong, Roth & Su (2019), Cor. 2.13: delta(eps) = Phi(-eps/mu + mu/2) - e^eps
    Phi(-eps/mu - mu/2).  At mu = 1, eps = 1: Phi(-0.5) - e Phi(-1.5) = 0.12693673..."""
    by_hand = _phi(-0.5) - math.e * _phi(-1.5)
    assert by_hand == pytest.approx(0.1269367375, abs=1e-10)
    assert gdp_delta(1.0, 1.0) == pytest.approx(by_hand, rel=1e-9)
    assert gdp_delta(1.0, 1.0) >= by_hand * (1 - 1e-14)
    # and at eps = 0 the total variation 2 Phi(mu / 2) - 1
    assert gdp_delta(2.0, 0.0) == pytest.approx(2 * _phi(1.0) - 1, rel=1e-9)
