"""Amplification by subsampling, checked against closed forms, brute force, numerical
integration and Google's dp_accounting (a dev dependency).

Which side ours must be on: every number here is an upper bound on the true privacy loss,
so it must be at least a *lower* bound of the true value (dp_accounting's optimistic PLD, or
an exact enumeration), and close to dp_accounting's own upper bound (tolerances stated at
each check).  Deterministic: no randomness anywhere.
"""

from __future__ import annotations

import itertools
import math

import dp_accounting as dpa  # the dev extra installs it: a missing one fails loudly
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from scipy import integrate, stats

from deniable.accounting import (
    BasicAccountant,
    Gaussian,
    Laplace,
    PLDAccountant,
    PoissonSampled,
    PureEpsilon,
    RDPAccountant,
    SampledWithoutReplacement,
    SelfComposed,
    ZCDPAccountant,
    make_accountant,
    poisson_amplification,
    pure_to_zcdp,
    without_replacement_amplification,
)
from deniable.accounting._sampling import MAX_SAMPLED_ORDER, poisson_gaussian_rdp, wor_rdp
from deniable.exceptions import ParameterError, PrivacyError

ORDERS = np.array([2.0, 3.0, 4.0, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0])


def _amplified(eps: float, q: float) -> float:
    """``ln(1 + q (e^eps - 1))`` (to a few ulps: the checks allow 1e-12 relative)."""
    return math.log1p(q * math.expm1(eps))


# ------------------------------------------------------------------ closed forms
@pytest.mark.parametrize("eps", [0.01, 0.5, 1.0, 5.0, 30.0])
@pytest.mark.parametrize("q", [1e-4, 0.01, 0.3, 1.0])
def test_pure_and_approximate_closed_forms(eps: float, q: float) -> None:
    """Balle, Barthe & Gaboardi 2018, Thm 8 (Poisson) and Thm 9 (without replacement)."""
    g = poisson_amplification(eps, 1e-6, probability=q)
    want = _amplified(eps, q)
    assert want * (1 - 1e-12) <= g.epsilon <= want * (1 + 1e-9)
    assert q * 1e-6 <= g.delta <= q * 1e-6 * (1 + 1e-9)
    n = 10_000
    w = without_replacement_amplification(eps, population=n, sample_size=round(q * n))
    want_wor = _amplified(eps, round(q * n) / n)
    assert want_wor * (1 - 1e-12) <= w.epsilon <= want_wor * (1 + 1e-9)
    # the accountants read sampled events through the same closed form
    basic = BasicAccountant(relation="add_remove").compose(PoissonSampled(q, PureEpsilon(eps)), 3)
    assert 3 * want * (1 - 1e-12) <= basic.epsilon(1e-9) <= 3 * want * (1 + 1e-9)


def test_amplification_edges() -> None:
    assert poisson_amplification(math.inf, probability=0.5).epsilon == math.inf
    assert poisson_amplification(2.0, probability=0.0).epsilon == 0.0
    assert poisson_amplification(2.0, probability=1.0).epsilon >= 2.0
    with pytest.raises(ParameterError, match="probability"):
        poisson_amplification(1.0, probability=1.5)
    with pytest.raises(ParameterError, match="sample_size"):
        without_replacement_amplification(1.0, population=10, sample_size=11)
    # a sample that never holds the record costs nothing; one that may, with a
    # non-private mechanism in it, is non-private
    add = make_accountant("optimal", relation="add_remove")
    assert add.compose(PoissonSampled(0.0, Gaussian(0.0))).epsilon(1e-6) == 0.0
    assert add.compose(PoissonSampled(1e-9, Gaussian(0.0))).epsilon(1e-6) == math.inf


def test_relations_are_enforced() -> None:
    with pytest.raises(PrivacyError, match="add_remove"):
        make_accountant("rdp").compose(PoissonSampled(0.1, Gaussian(1.0)))
    with pytest.raises(PrivacyError, match="'replace'"):
        make_accountant("rdp", relation="add_remove").compose(
            SampledWithoutReplacement(100, 1, Gaussian(1.0))
        )
    with pytest.raises(PrivacyError, match="no loss distribution"):
        make_accountant("pld").compose(SampledWithoutReplacement(100, 1, Gaussian(1.0)))


# ------------------------------------------------------------------ Renyi DP
@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.1, 2.0), (0.001, 0.7), (0.5, 5.0)])
def test_sampled_gaussian_rdp_is_dp_accountings_at_integer_orders(q: float, sigma: float) -> None:
    """Mironov, Talwar & Zhang 2019: the same closed form, ours rounded up by at most 1e-9."""
    ours = poisson_gaussian_rdp(1 / sigma, q, ORDERS)
    theirs = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, ORDERS)
    assert np.all(ours >= theirs)
    assert np.all(ours <= theirs * (1 + 1e-9))


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.1, 2.0), (0.5, 5.0)])
def test_without_replacement_rdp_against_dp_accounting(q: float, sigma: float) -> None:
    """Wang, Balle & Kasiviswanathan 2019, Thm 9 (ours) never below dp_accounting's (their
    Thm 27 up to order 256, Thm 9 beyond, where the two agree to 1e-9)."""
    base = np.zeros(MAX_SAMPLED_ORDER + 1)
    base[2:] = np.arange(2, MAX_SAMPLED_ORDER + 1) / (2 * sigma**2)
    ours = wor_rdp(base, q, ORDERS)
    theirs = dpa_rdp._compute_rdp_sample_wor_gaussian(q, sigma, ORDERS)
    assert np.all(ours >= theirs * (1 - 1e-12))
    beyond = ORDERS > 256
    assert np.all(ours[beyond] <= theirs[beyond] * (1 + 1e-9))


def test_the_removal_direction_bounds_the_addition_direction() -> None:
    """The claim behind using one direction for the sampled Gaussian (Mironov, Talwar &
    Zhang 2019): D_a(N(0,1) || (1-q) N(0,1) + q N(mu,1)) at most our curve, by quadrature."""
    q, mu = 0.2, 1.5
    for a in (2, 3, 6):

        def integrand(x: float, a: int = a) -> float:
            ratio = 1 / ((1 - q) + q * math.exp(mu * x - mu * mu / 2))  # N(0,1) / mixture
            return float(stats.norm.pdf(x) * ratio ** (a - 1))

        val, _ = integrate.quad(integrand, -30, 30, limit=200)
        added = math.log(val) / (a - 1)
        assert added <= poisson_gaussian_rdp(mu, q, np.array([float(a)]))[0]


def test_rdp_epsilon_against_dp_accounting() -> None:
    """Ours within 1% of dp_accounting's RDP epsilon, and at least the exact value's lower
    bound (dp_accounting's optimistic PLD)."""
    q, sigma, n, delta = 0.01, 1.0, 1000, 1e-5
    ours = RDPAccountant(relation="add_remove").compose(PoissonSampled(q, Gaussian(sigma)), n)
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), n)
    theirs = dpa_rdp.RdpAccountant().compose(event).get_epsilon(delta)
    assert abs(ours.epsilon(delta) - theirs) <= 0.01 * theirs
    lower = _dpa_lower(q, sigma, n, delta)
    assert ours.epsilon(delta) >= lower


def _dpa_lower(q: float, sigma: float, n: int, delta: float) -> float:
    pld = dpa_pld.from_gaussian_mechanism(
        sigma,
        sampling_prob=q,
        pessimistic_estimate=False,
        value_discretization_interval=1e-4,
        use_connect_dots=False,
    )
    return float(pld.self_compose(n).get_epsilon_for_delta(delta))


# ------------------------------------------------------------------ loss distributions
def test_sampled_gaussian_pld_against_dp_accounting() -> None:
    """Zhu, Dong & Wang 2022 pairs, both directions: ours at least dp_accounting's
    optimistic (lower) value, within 2% of its pessimistic one; our own bracket holds it."""
    q, sigma, n, delta = 0.1, 2.0, 100, 1e-5
    ours = PLDAccountant(relation="add_remove").compose(PoissonSampled(q, Gaussian(sigma)), n)
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), n)
    theirs = pld_privacy_accountant.PLDAccountant().compose(event).get_epsilon(delta)
    lower = _dpa_lower(q, sigma, n, delta)
    eps = ours.epsilon(delta)
    assert lower <= eps <= theirs * 1.02
    lo, hi = ours.epsilon_bounds(delta)
    assert lo <= lower * (1 + 1e-3) and hi == eps
    assert len(ours.plds()) == 2
    with pytest.raises(ParameterError, match="plds"):
        ours.pld()


def test_sampled_laplace_pld_is_at_least_dp_accountings_lower_bound() -> None:
    """A sampled Laplace is accounted through binary RR at its epsilon (it dominates every
    eps-DP pair): never below dp_accounting's optimistic value, below the closed form."""
    q, scale, n, delta = 0.05, 1.0, 50, 1e-6
    ours = PLDAccountant(relation="add_remove").compose(PoissonSampled(q, Laplace(scale)), n)
    lower = dpa_pld.from_laplace_mechanism(
        scale, sampling_prob=q, pessimistic_estimate=False, value_discretization_interval=1e-4
    )
    floor = float(lower.self_compose(n).get_epsilon_for_delta(delta))
    eps = ours.epsilon(delta)
    assert floor <= eps <= n * _amplified(1 / scale, q)


def test_sampled_laplace_single_use_hockey_stick_by_quadrature() -> None:
    """The dominating-pair claim for one use: the true hockey stick of the Poisson-sampled
    Laplace, both directions, integrated numerically, is at most our delta."""
    q, b = 0.3, 1.0
    acct = PLDAccountant(relation="add_remove").compose(PoissonSampled(q, Laplace(b)))
    for t in (0.0, 0.1, 0.2):
        worst = 0.0
        for upper_is_mixture in (True, False):

            def f(x: float, m: bool = upper_is_mixture, t: float = t) -> float:
                base = stats.laplace.pdf(x, scale=b)
                mix = (1 - q) * base + q * stats.laplace.pdf(x - 1.0, scale=b)
                up_, low = (mix, base) if m else (base, mix)
                return max(0.0, up_ - math.exp(t) * low)

            val, _ = integrate.quad(f, -40, 40, points=[0.0, 1.0], limit=200)
            worst = max(worst, val)
        assert worst <= acct.delta(t)


def test_sampled_pure_event_against_enumeration() -> None:
    """Three Poisson-sampled eps-DP uses: the exact delta of the binary-RR dominating pairs
    (each direction, every outcome sequence enumerated) lies in our bracket."""
    q, eps, n = 0.2, 1.0, 3
    p = math.exp(eps) / (1 + math.exp(eps))
    rr_p, rr_q = np.array([p, 1 - p]), np.array([1 - p, p])
    mix = q * rr_p + (1 - q) * rr_q
    directions = [(mix, rr_q), (rr_q, mix)]
    acct = PLDAccountant(relation="add_remove").compose(PoissonSampled(q, PureEpsilon(eps)), n)
    down = make_accountant("pld", relation="add_remove").compose(
        PoissonSampled(q, PureEpsilon(eps)), n
    )
    for t in (0.0, 0.2, 0.5):
        exact = 0.0
        for upper, lower in directions:
            total = 0.0
            for seq in itertools.product((0, 1), repeat=n):
                pu = math.prod(upper[i] for i in seq)
                pl = math.prod(lower[i] for i in seq)
                total += max(0.0, pu - math.exp(t) * pl)
            exact = max(exact, total)
        assert exact <= acct.delta(t) <= exact + 2e-3
        assert max(x.delta(t) for x in down.plds("down")) <= exact


def test_zcdp_charges_the_base_rho_or_the_amplified_epsilons() -> None:
    z = ZCDPAccountant(relation="add_remove")
    assert z.compose(PoissonSampled(0.1, Gaussian(2.0))).rho() >= 0.125
    pure = ZCDPAccountant(relation="add_remove").compose(PoissonSampled(0.1, PureEpsilon(1.0)))
    assert pure.rho() >= pure_to_zcdp(_amplified(1.0, 0.1)).rho
    wor = ZCDPAccountant().compose(SampledWithoutReplacement(10, 1, SelfComposed(Gaussian(1), 4)))
    assert wor.rho() >= 4 * 0.5
