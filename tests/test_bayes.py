"""The posterior of a prevalence (deniable.estimation.posterior): closed forms derived by
hand, agreement with an independent numerical integration of the unnormalised density, the
exact and numerical routes against each other, credible intervals inside [0, 1] for tiny
groups and all-"no" samples, calibration by seeded simulation, two-group marginals against a
2-D integration, and bad input."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from deniable.designs import (
    CheaterDetection,
    Crosswise,
    Custom,
    ForcedResponse,
    StochasticLieDetector,
    Tally,
    UnrelatedUnknown,
    Warner,
)
from deniable.estimation import Beta, Posterior, posterior
from deniable.exceptions import DataError, ParameterError, ParameterTypeError


def _unnormalised(design, y: int, n: int, a: float, b: float):
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0

    def f(pi: float) -> float:
        lam = p0 + (p1 - p0) * pi
        return pi ** (a - 1) * (1 - pi) ** (b - 1) * lam**y * (1 - lam) ** (n - y)

    return f


def _quad_moments(f) -> tuple[float, float, float]:
    """Normaliser, mean and SD of an unnormalised density on [0, 1] by scipy's quad."""
    opts = {"epsabs": 0, "epsrel": 1e-10, "limit": 200}
    z = integrate.quad(f, 0, 1, **opts)[0]
    m1 = integrate.quad(lambda x: x * f(x), 0, 1, **opts)[0] / z
    m2 = integrate.quad(lambda x: x * x * f(x), 0, 1, **opts)[0] / z
    return z, m1, math.sqrt(m2 - m1 * m1)


# ------------------------------------------------------------------ closed forms


@pytest.mark.parametrize(("y", "n", "a", "b"), [(0, 1, 1, 1), (3, 7, 2, 5), (40, 50, 0.5, 0.5)])
def test_a_direct_question_gives_the_conjugate_beta(y: int, n: int, a: float, b: float) -> None:
    """P1 = 1, P0 = 0: the reports are the answers, the posterior is Beta(a + y, b + n - y)."""
    post = posterior(Custom(1.0, 0.0), yes=y, n=n, prior=(a, b))
    exact = stats.beta(a + y, b + n - y)
    assert post.mean == pytest.approx(exact.mean(), rel=1e-12)
    assert post.sd == pytest.approx(exact.std(), rel=1e-10)
    for q in (0.025, 0.5, 0.975):
        assert post.quantile(q) == pytest.approx(exact.ppf(q), rel=1e-9)
    xs = np.array([0.01, 0.3, 0.77])
    np.testing.assert_allclose(post.pdf(xs), exact.pdf(xs), rtol=1e-10)
    np.testing.assert_allclose(post.cdf(xs), exact.cdf(xs), rtol=1e-10)


@pytest.mark.parametrize("p", [0.7, 0.2])
@pytest.mark.parametrize(("a", "b"), [(1, 1), (0.5, 0.5), (3, 2)])
def test_warner_with_one_yes_is_a_two_term_mixture(p: float, a: float, b: float) -> None:
    """Warner, n = 1, y = 1: lambda = p pi + (1 - p)(1 - pi), so the posterior is
    [p a Beta(a + 1, b) + (1 - p) b Beta(a, b + 1)] / (p a + (1 - p) b), since
    B(a + 1, b) = B(a, b) a / (a + b) and B(a, b + 1) = B(a, b) b / (a + b)."""
    w1, w2 = p * a, (1 - p) * b
    w1, w2 = w1 / (w1 + w2), w2 / (w1 + w2)
    c1, c2 = stats.beta(a + 1, b), stats.beta(a, b + 1)
    post = posterior(Warner(p), yes=1, n=1, prior=Beta(a, b))
    xs = np.array([0.05, 0.5, 0.93])
    np.testing.assert_allclose(post.pdf(xs), w1 * c1.pdf(xs) + w2 * c2.pdf(xs), rtol=1e-10)
    np.testing.assert_allclose(post.cdf(xs), w1 * c1.cdf(xs) + w2 * c2.cdf(xs), rtol=1e-10)
    mean = w1 * c1.mean() + w2 * c2.mean()
    second = w1 * (c1.var() + c1.mean() ** 2) + w2 * (c2.var() + c2.mean() ** 2)
    assert post.mean == pytest.approx(mean, rel=1e-12)
    assert post.sd == pytest.approx(math.sqrt(second - mean**2), rel=1e-10)


DESIGNS = [Warner(0.75), ForcedResponse(1 / 6, 1 / 6), Crosswise(0.2), Custom(0.3, 0.0)]


@pytest.mark.parametrize("design", DESIGNS, ids=repr)
@pytest.mark.parametrize("n", range(1, 11))
@pytest.mark.parametrize("prior", [(1, 1), (0.5, 0.5)])
def test_tiny_groups_match_numerical_integration(design, n: int, prior) -> None:
    """Every count of n = 1..10: mean, SD and quantiles against scipy's quad of the
    unnormalised density; both intervals inside [0, 1] and holding their level."""
    a, b = prior
    for y in range(n + 1):
        post = posterior(design, yes=y, n=n, prior=prior)
        f = _unnormalised(design, y, n, a, b)
        z, mean, sd = _quad_moments(f)
        assert post.mean == pytest.approx(mean, rel=1e-8, abs=1e-12)
        assert post.sd == pytest.approx(sd, rel=1e-6)
        q = post.quantile(0.9)
        mass = integrate.quad(f, 0, q, epsabs=0, epsrel=1e-10, limit=200)[0] / z
        assert mass == pytest.approx(0.9, abs=1e-8)
        for kind in ("equal-tailed", "hpd"):
            lo, hi = post.interval(0.9, kind=kind)
            assert 0.0 <= lo < hi <= 1.0
            assert post.cdf(hi) - post.cdf(lo) == pytest.approx(0.9, abs=1e-8)
        lo, hi = post.interval(0.9, kind="hpd")
        elo, ehi = post.interval(0.9)
        assert hi - lo <= ehi - elo + 1e-12
        if lo > 0.0 and hi < 1.0:  # an interior HPD interval: equal density at both ends
            assert post.pdf(lo) == pytest.approx(post.pdf(hi), rel=1e-4)


@pytest.mark.parametrize("n", [1, 5, 10, 200, 5000])
def test_all_no_answers_put_the_mass_near_zero(n: int) -> None:
    """Only "no" reports under forced response: the density decreases from 0, so the
    HPD interval starts at 0 and is shorter than the equal-tailed one."""
    post = posterior(ForcedResponse(0.1, 0.1), yes=0, n=n)
    lo, hi = post.interval(0.95, kind="hpd")
    elo, ehi = post.interval(0.95)
    assert lo == 0.0
    assert 0.0 < elo < ehi <= 1.0
    assert hi - lo < ehi - elo
    assert post.pdf(1e-9) > post.pdf(hi)
    assert post.cdf(hi) == pytest.approx(0.95, abs=1e-8)


# ------------------------------------------------------------------ the two routes


@pytest.mark.parametrize(("y", "n"), [(600, 2000), (0, 2000), (1000, 1000), (3, 40), (1, 1)])
@pytest.mark.parametrize("prior", [(1, 1), (0.5, 0.5), (4, 1.5)])
def test_exact_and_numerical_routes_agree(y: int, n: int, prior) -> None:
    exact = posterior(Warner(0.75), yes=y, n=n, prior=prior, method="exact")
    grid = posterior(Warner(0.75), yes=y, n=n, prior=prior, method="numerical")
    assert exact.method == "exact Beta mixture"
    assert grid.method == "numerical integration"
    assert grid.error < 1e-8
    assert grid.mean == pytest.approx(exact.mean, rel=1e-8, abs=1e-12)
    assert grid.sd == pytest.approx(exact.sd, rel=1e-6)
    for q in (0.01, 0.5, 0.99):
        assert grid.quantile(q) == pytest.approx(exact.quantile(q), rel=1e-7, abs=1e-12)
    xs = np.array([exact.quantile(0.2), exact.quantile(0.7)])
    np.testing.assert_allclose(grid.pdf(xs), exact.pdf(xs), rtol=1e-7)
    # The stated error bound holds for the CDF (exact mixture as the reference), up to the
    # rounding of both sums (hundreds of terms: about 1e-13).
    xs = np.array([exact.quantile(q) for q in (0.05, 0.3, 0.6, 0.95)])
    assert np.max(np.abs(grid.cdf(xs) - exact.cdf(xs))) <= grid.error + 1e-12


def test_many_reports_use_numerical_integration_against_quad() -> None:
    """n = 100 000 (past the exact mixture): mean and SD against scipy's quad of the
    unnormalised density (scaled by its value at the mode so that it does not underflow)."""
    design, y, n = ForcedResponse(1 / 6, 1 / 6), 31_234, 100_000
    post = posterior(design, yes=y, n=n, prior="jeffreys")
    assert post.method == "numerical integration"
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    mode = ((y / n) - p0) / (p1 - p0)

    def log_f(pi: float) -> float:
        lam = p0 + (p1 - p0) * pi
        return -0.5 * math.log(pi * (1 - pi)) + y * math.log(lam) + (n - y) * math.log(1 - lam)

    top = log_f(mode)
    opts = {"epsabs": 0, "epsrel": 1e-12, "limit": 400, "points": [mode]}
    z = integrate.quad(lambda x: math.exp(log_f(x) - top), 0, 1, **opts)[0]
    m1 = integrate.quad(lambda x: x * math.exp(log_f(x) - top), 0, 1, **opts)[0] / z
    m2 = integrate.quad(lambda x: x * x * math.exp(log_f(x) - top), 0, 1, **opts)[0] / z
    assert post.mean == pytest.approx(m1, rel=1e-9)
    assert post.sd == pytest.approx(math.sqrt(m2 - m1 * m1), rel=1e-6)


def test_reports_a_tally_and_counts_give_the_same_posterior() -> None:
    design = Warner(0.8)
    reports = np.array([1, 0, 0, 1, 0, 0, 0])
    by_reports = posterior(design, reports)
    by_tally = posterior(design, design.tally(reports))
    by_counts = posterior(design, yes=2, n=7)
    assert by_reports.mean == by_tally.mean == by_counts.mean
    assert by_reports.n == (7,) and by_reports.yes == (2,)


@settings(max_examples=40, deadline=None)
@given(
    p1=st.one_of(st.just(0.0), st.just(1.0), st.floats(1e-6, 1 - 1e-6)),
    p0=st.one_of(st.just(0.0), st.just(1.0), st.floats(1e-6, 1 - 1e-6)),
    n=st.integers(1, 60),
    share=st.floats(0.0, 1.0),
    a=st.floats(0.2, 5.0),
    b=st.floats(0.2, 5.0),
)
def test_any_channel_gives_a_proper_posterior_by_both_routes(p1, p0, n, share, a, b) -> None:
    """Any binary channel, count and prior: the exact and numerical routes agree, and the
    posterior's summaries and intervals stay in [0, 1]."""
    if abs(p1 - p0) < 0.05:
        return  # nearly uninformative channels are valid but make the two routes slow
    y = round(share * n)
    design = Custom(p1, p0)
    exact = posterior(design, yes=y, n=n, prior=(a, b), method="exact")
    grid = posterior(design, yes=y, n=n, prior=(a, b), method="numerical")
    assert 0.0 <= exact.mean <= 1.0 and exact.sd >= 0.0
    assert grid.mean == pytest.approx(exact.mean, rel=1e-7, abs=1e-10)
    for kind in ("equal-tailed", "hpd"):
        lo, hi = exact.interval(0.9, kind=kind)
        assert 0.0 <= lo < hi <= 1.0
        assert exact.cdf(hi) - exact.cdf(lo) == pytest.approx(0.9, abs=1e-8)


# ------------------------------------------------------------------ calibration


def test_credible_intervals_are_calibrated_under_the_prior() -> None:
    """Draw pi from the Beta(2, 3) prior, then 20 Warner(0.75) reports; the 90% intervals
    (both kinds) must contain the drawn pi in 90% of 400 seeded replicates.  The count is
    Binomial(400, 0.9) when the posterior is right; accepting 344..376 gives a false-alarm
    rate of 0.6% per kind (scipy: binom.cdf(343, 400, .9) + binom.sf(376, 400, .9))."""
    rng = np.random.default_rng(20261127)
    design, prior, hits = Warner(0.75), Beta(2, 3), {"equal-tailed": 0, "hpd": 0}
    for _ in range(400):
        pi = rng.beta(2, 3)
        reports = design.randomize((rng.random(20) < pi).astype(np.int8), rng=rng)
        post = posterior(design, reports, prior=prior)
        for kind in hits:
            lo, hi = post.interval(0.9, kind=kind)
            hits[kind] += lo <= pi <= hi
    for kind, count in hits.items():
        assert 344 <= count <= 376, (kind, count)


# ------------------------------------------------------------------ two groups

TWO_GROUP = [
    (UnrelatedUnknown(0.7, 0.3), (6, 3), (9, 8), lambda pi: (0.0, 1.0)),
    (CheaterDetection(0.2, 0.6), (3, 6), (8, 9), lambda pi: (0.0, 1.0 - pi)),
    (StochasticLieDetector(2 / 12, 10 / 12), (5, 4), (7, 6), lambda pi: (0.0, pi)),
]


@pytest.mark.parametrize(("design", "yes", "n", "slice_"), TWO_GROUP, ids=["uq", "cdm", "sld"])
def test_two_group_marginal_matches_a_2d_integration(design, yes, n, slice_) -> None:
    """The marginal mean and SD of the prevalence against scipy's dblquad of
    Beta(pi; 2, 2) x uniform(nuisance | pi) x the two binomial likelihoods, with the
    polygon's slice written out by hand for each design."""
    c, m = design.linear_system()

    def joint(phi2: float, pi: float) -> float:
        lo, hi = slice_(pi)
        out = pi * (1 - pi) / (hi - lo)  # Beta(2, 2) up to a constant, uniform nuisance
        for g in range(2):
            lam = c[g] + m[g, 0] * pi + m[g, 1] * phi2
            out *= lam ** yes[g] * (1 - lam) ** (n[g] - yes[g])
        return out

    def moment(k: int) -> float:
        return integrate.dblquad(
            lambda phi2, pi: pi**k * joint(phi2, pi), 0, 1,
            lambda pi: slice_(pi)[0], lambda pi: slice_(pi)[1], epsabs=0, epsrel=1e-10,
        )[0]  # fmt: skip

    z = moment(0)
    mean, second = moment(1) / z, moment(2) / z
    post = posterior(design, yes=yes, n=n, prior=(2, 2))
    assert post.mean == pytest.approx(mean, rel=1e-7)
    assert post.sd == pytest.approx(math.sqrt(second - mean**2), rel=1e-6)
    for kind in ("equal-tailed", "hpd"):
        lo, hi = post.interval(0.95, kind=kind)
        assert 0.0 <= lo < hi <= 1.0
        assert post.cdf(hi) - post.cdf(lo) == pytest.approx(0.95, abs=1e-8)


def test_two_group_posterior_concentrates_at_the_estimate() -> None:
    """Many reports: the posterior mean and SD approach the moment estimate and its SE."""
    design = CheaterDetection(0.2, 0.6)
    est = design.estimate(yes=(34_000, 47_000), n=(100_000, 100_000)).prevalence
    post = posterior(design, design.tally_counts([66_000, 34_000, 53_000, 47_000]))
    assert post.mean == pytest.approx(est.value, abs=0.02 * est.se)
    assert post.sd == pytest.approx(est.se, rel=0.01)
    assert post.error < 1e-8
    lo, hi = post.interval(0.95, kind="hpd")  # near-normal: equal density at both ends,
    assert post.pdf(lo) == pytest.approx(post.pdf(hi), rel=1e-4)  # about mean +- 1.96 SD
    assert (lo + hi) / 2 == pytest.approx(post.mean, abs=0.05 * post.sd)
    assert hi - lo == pytest.approx(2 * 1.959964 * post.sd, rel=0.01)


# ------------------------------------------------------------------ results


def test_result_prints_and_converts() -> None:
    post = posterior(Warner(0.75), yes=2, n=10, prior="jeffreys")
    assert isinstance(post, Posterior)
    text = str(post)
    assert "Posterior of the prevalence" in text and "HPD" in text and "Beta(0.5, 0.5)" in text
    d = post.to_dict(0.9)
    assert d["prior"] == {"a": 0.5, "b": 0.5} and d["n"] == [10] and d["level"] == 0.9
    assert d["interval"] == list(post.interval(0.9))
    assert post.pdf(-0.1) == 0.0 and post.pdf(1.5) == 0.0
    assert post.cdf(0.0) == 0.0 and post.cdf(1.0) == 1.0


@pytest.mark.parametrize(
    "make",
    [
        lambda: posterior(Warner(0.75), yes=2, n=10),
        lambda: posterior(Warner(0.75), yes=2000, n=5000),
        lambda: posterior(CheaterDetection(0.2, 0.6), yes=(3, 6), n=(8, 9)),
    ],
    ids=["exact", "numerical", "two-group"],
)
def test_posteriors_pickle_and_copy(make) -> None:
    """A posterior crosses a process boundary (no closure inside): the copy gives the same
    numbers, intervals included."""
    post = make()
    for clone in (pickle.loads(pickle.dumps(post)), copy.deepcopy(post)):
        assert type(clone) is Posterior
        assert clone.to_dict() == post.to_dict()


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("prior", "error", "match"),
    [
        ((0, 1), ParameterError, r"`prior` parameter `a` must be in \(0, inf\), got 0"),
        ((1, -2), ParameterError, r"`prior` parameter `b` must be in \(0, inf\), got -2"),
        ((1, math.inf), ParameterError, r"`prior` parameter `b`"),
        ("haldane", ParameterError, r"`prior` must be .*'uniform', 'jeffreys', got 'haldane'"),
        (("1", 1), ParameterTypeError, r"`prior` parameter `a` must be a real number"),
        (3, ParameterTypeError, r"`prior` must be a Beta"),
    ],
)
def test_bad_priors_are_refused(prior, error, match) -> None:
    with pytest.raises(error, match=match):
        posterior(Warner(0.75), yes=1, n=3, prior=prior)


def test_bad_counts_and_designs_are_refused() -> None:
    with pytest.raises(DataError, match=r"`yes` must be in \[0, n\] = \[0, 3\], got 4"):
        posterior(Warner(0.75), yes=4, n=3)
    with pytest.raises(ParameterError, match="`yes` must be"):
        posterior(Warner(0.75), yes=-1, n=3)
    with pytest.raises(ParameterError, match="`n` must be"):
        posterior(Warner(0.75), yes=0, n=0)
    with pytest.raises(DataError):
        posterior(Warner(0.75), [0, 1, 2])
    with pytest.raises(ParameterTypeError, match="`design` must be a one-group binary design"):
        posterior("warner", yes=1, n=3)
    with pytest.raises(ParameterError, match="`data` is missing"):
        posterior(Warner(0.75))
    with pytest.raises(ParameterError, match="`yes` and `n` of a two-group design must be pairs"):
        posterior(CheaterDetection(0.2, 0.6), yes=3, n=5)
    with pytest.raises(ParameterError, match="`method` 'exact' is offered for at most 2000"):
        posterior(Warner(0.75), yes=3, n=5000, method="exact")
    with pytest.raises(ParameterError, match="`method` must be one of"):
        posterior(Warner(0.75), yes=3, n=5, method="mcmc")
    with pytest.raises(DataError):
        posterior(Warner(0.75), Tally([1, 2, 3]))


def test_bad_levels_and_kinds_are_refused() -> None:
    post = posterior(Warner(0.75), yes=1, n=3)
    with pytest.raises(ParameterError, match="`level` must be in"):
        post.interval(1.0)
    with pytest.raises(ParameterError, match="`kind` must be one of 'equal-tailed', 'hpd'"):
        post.interval(0.9, kind="central")
    with pytest.raises(ParameterError, match="`q` must be in"):
        post.quantile(1.5)
