"""Measures and conversions: closed forms, independent numeric routes, safety, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from deniable.accounting._conversions import (
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
from deniable.accounting._measures import GDP, RDP, ZCDP, ApproxDP, PureDP
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
    assert curve.epsilons == pytest.approx((0.2, 0.3))


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
    assert pure_to_rdp(eps, 1 + 1e-12) == pytest.approx(kl, rel=1e-6)
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
        min(math.exp(1 * (0.3 - 5)), math.exp(9 * (1.0 - 5))), rel=1e-8
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
    assert improved == pytest.approx(max(grid, 0.0), rel=1e-6, abs=1e-12)
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
    assert e == pytest.approx(zcdp_epsilon(0.2, 1e-6), rel=1e-6)
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
    assert gdp_delta(mu, eps) == pytest.approx(exact, rel=1e-8)
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
