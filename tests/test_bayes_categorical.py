"""The posterior of a categorical design's prevalences (deniable.estimation.posterior with a
k-ary, forced-response or multi-draw Kuk design): the conjugate Dirichlet without
randomization, the binary exact posterior for k = 2, independent numerical integration,
exact against NUTS, calibration by seeded simulation, intervals inside [0, 1], and bad
input.  NUTS runs are small (a few hundred draws, 2 chains run sequentially)."""

from __future__ import annotations

import copy
import json
import math
import pickle
import sys

import numpy as np
import pytest
from scipy import integrate, stats

from deniable.designs import Categorical, Custom, Kuk, Tally, Warner
from deniable.estimation import (
    CATEGORICAL_EXACT_MAX_WORK,
    Beta,
    CategoricalPosterior,
    posterior,
)
from deniable.exceptions import ParameterError, ParameterTypeError, SamplerWarning

# ------------------------------------------------------------------ closed forms


@pytest.mark.parametrize(
    ("counts", "prior", "alpha"),
    [
        ([3, 5, 2], "uniform", [1, 1, 1]),
        ([0, 7, 1, 4], "jeffreys", [0.5, 0.5, 0.5, 0.5]),
        ([2, 0, 9], (2.0, 0.3, 1.5), [2.0, 0.3, 1.5]),
    ],
)
def test_without_randomization_the_posterior_is_the_conjugate_dirichlet(
    counts, prior, alpha
) -> None:
    """``p_truthful = 1``: the channel is the identity, the reports are the true answers,
    and the posterior is exactly Dirichlet(alpha + counts); its marginals are
    Beta(alpha_j + c_j, A + n - alpha_j - c_j) (scipy's quantiles)."""
    k = len(counts)
    post = posterior(Categorical(k=k, p_truthful=1.0), counts=counts, prior=prior)
    assert isinstance(post, CategoricalPosterior)
    assert post.method == "exact Dirichlet mixture" and post.components == 1
    a = np.asarray(alpha, dtype=float) + np.asarray(counts)
    total = a.sum()
    np.testing.assert_allclose(post.mean, a / total, rtol=1e-12)
    np.testing.assert_allclose(
        post.sd, np.sqrt(a * (total - a) / (total**2 * (total + 1))), rtol=1e-10
    )
    marg = stats.beta(a, total - a)
    for q in (0.025, 0.5, 0.9):
        np.testing.assert_allclose(post.quantile(q), marg.ppf(q), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(post.interval(0.9)[:, 1], marg.ppf(0.95), rtol=1e-9)


@pytest.mark.parametrize(
    ("counts", "a", "b"), [([7, 5], 1.0, 1.0), ([0, 12], 0.5, 0.5), ([30, 3], 2.0, 5.0)]
)
def test_two_categories_match_the_binary_exact_posterior(counts, a, b) -> None:
    """A k = 2 categorical design is a binary design with P1 = P[1, 1], P0 = P[1, 0]; a
    Beta(a, b) prior of pi_1 is Dirichlet(b, a).  The categorical posterior of pi_1 must be
    the binary exact Beta mixture (a separate code path), and pi_0 its mirror image."""
    design = Categorical(k=2, p_truthful=0.6, forced=(0.7, 0.3))
    p = np.asarray(design.channel)
    binary = posterior(Custom(p[1, 1], p[1, 0]), yes=counts[1], n=sum(counts), prior=(a, b))
    for prior in ((b, a), Beta(a, b)):
        post = posterior(design, counts=counts, prior=prior)
        assert post.mean[1] == pytest.approx(binary.mean, rel=1e-10)
        assert post.mean[0] == pytest.approx(1 - binary.mean, rel=1e-10)
        assert post.sd[1] == pytest.approx(binary.sd, rel=1e-8)
        for q in (0.05, 0.5, 0.95):
            assert post.quantile(q)[1] == pytest.approx(binary.quantile(q), rel=1e-8, abs=1e-13)
            assert post.quantile(q)[0] == pytest.approx(1 - binary.quantile(1 - q), rel=1e-8)


def _simplex_moments(channel: np.ndarray, counts, alpha) -> tuple[np.ndarray, np.ndarray]:
    """Mean and SD of (pi_0, pi_1) under the unnormalised 3-category posterior, by scipy's
    2-D adaptive quadrature over the simplex (pi_2 = 1 - pi_0 - pi_1)."""

    def f(p1: float, p0: float) -> float:
        pi = np.array([p0, p1, max(1.0 - p0 - p1, 0.0)])
        lam = channel @ pi
        return float(np.prod(pi ** (np.asarray(alpha) - 1)) * np.prod(lam ** np.asarray(counts)))

    opts = {"epsabs": 0, "epsrel": 1e-9}

    def moment(g) -> float:
        return integrate.dblquad(lambda p1, p0: g(p0, p1) * f(p1, p0), 0, 1, 0,
                                 lambda p0: 1 - p0, **opts)[0]  # fmt: skip

    z = moment(lambda p0, p1: 1.0)
    m = np.array([moment(lambda p0, p1: p0), moment(lambda p0, p1: p1)]) / z
    m2 = np.array([moment(lambda p0, p1: p0 * p0), moment(lambda p0, p1: p1 * p1)]) / z
    return m, np.sqrt(m2 - m * m)


@pytest.mark.parametrize(
    ("design", "counts"),
    [
        (Categorical(k=3, p_truthful=0.5), [4, 1, 6]),
        (Categorical(k=3, p_truthful=0.4, forced=(0.5, 0.5, 0.0)), [3, 5, 2]),  # zeros
    ],
)
def test_three_categories_match_a_2d_integration(design, counts) -> None:
    alpha = (1.0, 2.0, 1.5)
    post = posterior(design, counts=counts, prior=alpha)
    mean, sd = _simplex_moments(np.asarray(design.channel), counts, alpha)
    np.testing.assert_allclose(post.mean[:2], mean, rtol=1e-7)
    np.testing.assert_allclose(post.sd[:2], sd, rtol=1e-6)
    assert post.mean.sum() == pytest.approx(1.0, abs=1e-12)


def test_kuk_with_several_draws_matches_a_1d_integration() -> None:
    """Kuk's design with three draws: two true values, four report values.  The marginal of
    pi_1 against scipy's quad of prior x prod_r (P[r, 0] (1 - pi) + P[r, 1] pi)^c_r."""
    design, counts = Kuk(0.8, 0.3, draws=3), [5, 9, 2, 4]
    p = np.asarray(design.channel)
    post = posterior(design, counts=counts, prior="jeffreys")

    def f(pi: float) -> float:
        lam = p[:, 0] * (1 - pi) + p[:, 1] * pi
        return float(pi**-0.5 * (1 - pi) ** -0.5 * np.prod(lam ** np.asarray(counts)))

    opts = {"epsabs": 0, "epsrel": 1e-10, "limit": 200}
    z = integrate.quad(f, 0, 1, **opts)[0]
    m1 = integrate.quad(lambda x: x * f(x), 0, 1, **opts)[0] / z
    below = integrate.quad(f, 0, float(post.quantile(0.3)[1]), **opts)[0] / z
    assert post.mean[1] == pytest.approx(m1, rel=1e-8)
    assert below == pytest.approx(0.3, rel=1e-7)


def test_reports_a_tally_and_counts_give_the_same_posterior() -> None:
    design = Categorical(k=3, p_truthful=0.6)
    reports = np.array([0, 1, 1, 2, 1, 0, 2, 1, 1])
    by_counts = posterior(design, counts=[2, 5, 2])
    for data in (reports, design.tally(reports), Tally([2, 5, 2])):
        np.testing.assert_array_equal(posterior(design, data).mean, by_counts.mean)


# ------------------------------------------------------------------ intervals and calibration


@pytest.mark.parametrize("counts", [[0, 0, 9], [9, 0, 0], [0, 1, 0]])
@pytest.mark.parametrize("prior", ["uniform", "jeffreys", (0.1, 0.1, 0.1)])
def test_intervals_stay_in_the_unit_interval(counts, prior) -> None:
    post = posterior(Categorical(k=3, p_truthful=0.7), counts=counts, prior=prior)
    for level in (0.5, 0.95, 0.999):
        ci = post.interval(level)
        assert np.all(ci >= 0.0) and np.all(ci <= 1.0) and np.all(ci[:, 0] <= ci[:, 1])
    assert np.all((post.mean > 0) & (post.mean < 1))


def test_credible_intervals_are_calibrated_under_the_prior() -> None:
    """Draw pi from the Dirichlet(1, 1, 1) prior, then 15 reports of a k-ary design; the
    90% intervals of every category must contain the drawn pi_j in 90% of 300 seeded
    replicates.  Each count is Binomial(300, 0.9) when the posterior is right; accepting
    256..283 gives a false-alarm rate below 0.4% per category (binom.cdf(255, 300, .9) +
    binom.sf(283, 300, .9)), about 1% in all."""
    rng = np.random.default_rng(20261128)
    design, hits = Categorical(k=3, p_truthful=0.6), np.zeros(3, dtype=int)
    for _ in range(300):
        pi = rng.dirichlet(np.ones(3))
        truth = rng.choice(3, size=15, p=pi)
        post = posterior(design, design.randomize(truth, rng=rng))
        ci = post.interval(0.9)
        hits += (ci[:, 0] <= pi) & (pi <= ci[:, 1])
    assert np.all((hits >= 256) & (hits <= 283)), hits


# ------------------------------------------------------------------ NUTS


@pytest.mark.jax  # NumPyro: its own pytest process (pyproject, scripts/test)
def test_exact_and_nuts_agree_within_monte_carlo_error() -> None:
    """n = 60 reports, k = 3: the exact mixture against 2 chains x 500 NUTS draws (seed 1,
    which converges).  Each mean must be within 4 Monte Carlo SEs (sd / sqrt(ESS)) of the
    exact one and each median within 5 (a median's MC SE is about 1.25 sd / sqrt(ESS) for a
    near-normal marginal): a false-alarm rate below 1e-4 per comparison."""
    design, counts = Categorical(k=3, p_truthful=0.6), [12, 30, 18]
    exact = posterior(design, counts=counts, method="exact")
    nuts = posterior(design, counts=counts, method="nuts", draws=500, warmup=500, seed=1)
    assert nuts.method == "NUTS (NumPyro)" and nuts.converged and nuts.divergences == 0
    assert nuts.draws is not None and nuts.draws.shape == (2, 500, 3)
    mc_se = exact.sd / np.sqrt(np.asarray(nuts.ess))
    assert np.all(np.abs(nuts.mean - exact.mean) < 4 * mc_se), (nuts.mean, exact.mean)
    assert np.all(np.abs(nuts.quantile(0.5) - exact.quantile(0.5)) < 5 * mc_se)
    assert np.all(np.abs(nuts.sd / exact.sd - 1) < 0.15)
    ci = nuts.interval(0.95)
    assert np.all((ci >= 0) & (ci <= 1))
    data = nuts.to_dict()
    assert data["method"] == "NUTS (NumPyro)" and data["converged"] is True
    assert len(data["r_hat"]) == 3 and "R-hat" in str(nuts)
    json.dumps(data)


@pytest.mark.jax  # NumPyro: its own pytest process (pyproject, scripts/test)
def test_many_reports_go_to_nuts_and_a_short_run_warns() -> None:
    """Past CATEGORICAL_EXACT_MAX_WORK, method='auto' samples; ten draws cannot mix (R-hat
    above 1.01 with this seed): a SamplerWarning, and the table says so."""
    design, counts = Categorical(k=3, p_truthful=0.6), [120, 300, 180]
    assert CATEGORICAL_EXACT_MAX_WORK < 600 * 3 * 601**2
    with pytest.warns(SamplerWarning, match="did not clearly converge") as record:
        post = posterior(design, counts=counts, draws=10, warmup=10, seed=3)
    assert record[0].filename == __file__  # the warning points at the caller
    assert post.method == "NUTS (NumPyro)" and not post.converged
    assert "WARNING" in str(post)
    with pytest.raises(ParameterError, match="`method` 'exact' is offered for a categorical"):
        posterior(design, counts=counts, method="exact")


def test_without_numpyro_the_exact_route_works_and_nuts_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "numpyro", None)
    design = Categorical(k=3, p_truthful=0.6)
    assert posterior(design, counts=[3, 4, 5]).method == "exact Dirichlet mixture"
    with pytest.raises(ImportError, match=r"pip install 'deniable\[bayes\]'"):
        posterior(design, counts=[3, 4, 5], method="nuts")


# ------------------------------------------------------------------ results


def test_result_prints_converts_and_pickles() -> None:
    post = posterior(Categorical(k=3, p_truthful=0.6), counts=[5, 9, 2], prior=(1, 2, 3))
    text = str(post)
    assert "Posterior of the prevalences" in text and "Dirichlet(1, 2, 3)" in text
    assert "exact Dirichlet mixture" in text
    d = post.to_dict(0.9)
    json.dumps(d)
    assert d["prior"] == {"dirichlet": [1.0, 2.0, 3.0]} and d["counts"] == [5, 9, 2]
    assert d["n"] == 16 and d["level"] == 0.9
    assert d["interval"] == post.interval(0.9).tolist()
    assert len(post.table().rows) == 3
    for clone in (pickle.loads(pickle.dumps(post)), copy.deepcopy(post)):
        assert type(clone) is CategoricalPosterior and clone.to_dict() == post.to_dict()


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("prior", "error", "match"),
    [
        ((1, 1), ParameterError, r"`prior` must have k = 3 Dirichlet parameters .* got 2"),
        ((1, 0, 1), ParameterError, r"`prior` entry 1 must be in \(0, inf\), got 0"),
        ((1, 1, -2), ParameterError, r"`prior` entry 2 must be in \(0, inf\), got -2"),
        ((1, math.nan, 1), ParameterError, r"`prior` entry 1 must be in"),
        ((1, "2", 1), ParameterTypeError, r"`prior` entry 1 must be a real number"),
        ("haldane", ParameterError, r"'uniform', 'jeffreys' or a sequence of k = 3 .*'haldane'"),
        (Beta(1, 2), ParameterTypeError, r"`prior` of a categorical design must be"),
        (3.0, ParameterTypeError, r"`prior` of a categorical design must be"),
    ],
)
def test_bad_priors_are_refused(prior, error, match) -> None:
    with pytest.raises(error, match=match):
        posterior(Categorical(k=3, p_truthful=0.6), counts=[1, 2, 3], prior=prior)


def test_bad_counts_and_options_are_refused() -> None:
    design = Categorical(k=3, p_truthful=0.6)
    with pytest.raises(ParameterError, match=r"`counts` must have one count per report value "
                                             r"of the design \(3\), got 2"):  # fmt: skip
        posterior(design, counts=[1, 2])
    with pytest.raises(ParameterError, match=r"`counts\[1\]` must be an integer in \[0,"):
        posterior(design, counts=[1, -2, 3])
    with pytest.raises(ParameterError, match="`data` holds no reports"):
        posterior(design, counts=[0, 0, 0])
    with pytest.raises(ParameterError, match="not both"):
        posterior(design, [0, 1], counts=[1, 1, 0])
    with pytest.raises(ParameterError, match="`yes` and `n` are for binary designs"):
        posterior(design, yes=1, n=3)
    with pytest.raises(ParameterError, match="`method` must be 'auto', 'exact' or 'nuts'"):
        posterior(design, counts=[1, 2, 3], method="numerical")
    with pytest.raises(ParameterError, match="`chains` must be"):
        posterior(design, counts=[1, 2, 3], chains=0)
    with pytest.raises(ParameterError, match="`method` 'nuts' is for categorical designs"):
        posterior(Warner(0.75), yes=1, n=3, method="nuts")
    with pytest.raises(ParameterError, match="`counts` is for categorical designs"):
        posterior(Warner(0.75), counts=[1, 2])
    with pytest.raises(ParameterError, match="`design` must have at most 100 categories"):
        posterior(Categorical(k=101, p_truthful=0.6), counts=[1] * 101)
    post = posterior(design, counts=[1, 2, 3])
    with pytest.raises(ParameterError, match="`level` must be in"):
        post.interval(1.0)
    with pytest.raises(ParameterError, match="`q` must be in"):
        post.quantile(1.5)
