"""Square Wave (Li et al. 2020) and its EM / EMS server: the exact epsilon of the continuous
densities and of the realised grid, the sampler against its density, the transition matrix
against a brute-force average, recovery of known distributions, the means beside Duchi's and
the piecewise mechanism's, the bootstrap, and bad input."""

from __future__ import annotations

import itertools
import math
import pickle
import threading
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import (
    DuchiMechanism,
    PiecewiseMechanism,
    SquareWave,
    SquareWaveEstimate,
    square_wave_b,
)
from deniable.randomness import ArrayWords

G = 4096  # the grid: cells of width 1 / G, window starts 0..G
TWO64 = 1 << 64


def _exp(eps: float) -> Fraction:
    """e^eps to 60 digits (Decimal's exp is correctly rounded), as a Fraction."""
    getcontext().prec = 60
    return Fraction(Decimal(eps).exp())


# --- b(eps) ---------------------------------------------------------------------------------


def test_b_is_li_et_al_closed_form() -> None:
    # eps = 1: (e - e + 1) / (2 e (e - 2)) = 1 / (2 e (e - 2))
    assert square_wave_b(1.0) == pytest.approx(1 / (2 * math.e * (math.e - 2)), rel=1e-14)
    e3 = math.exp(3.0)
    assert square_wave_b(3.0) == pytest.approx((3 * e3 - e3 + 1) / (2 * e3 * (e3 - 4)), rel=1e-14)
    # the series below eps = 1 and the closed form above meet
    assert square_wave_b(1 - 1e-12) == pytest.approx(square_wave_b(1.0), rel=1e-9)
    # the limit 1/2 as eps -> 0 (numerator eps^2/2 + eps^3/3, bracket eps^2/2 + eps^3/6)
    assert square_wave_b(1e-6) == pytest.approx(
        0.5 * (1 + 2e-6 / 3) / (1 + 1e-6 / 3) / math.exp(1e-6), rel=1e-10
    )
    bs = [square_wave_b(e) for e in (0.01, 0.1, 0.5, 1, 2, 4, 8, 16)]
    assert all(a > b for a, b in itertools.pairwise(bs))  # decreasing in eps


# --- epsilon ---------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 2.0, 5.0, 10.0])
def test_continuous_densities_are_exactly_eps(eps: float) -> None:
    """p = e^eps / (2 b e^eps + 1), q = 1 / (2 b e^eps + 1): 2 b p + q = 1 and p / q = e^eps."""
    sw = SquareWave(eps)
    p, q = sw.densities
    b = sw.half_width
    assert 2 * b * p + q == pytest.approx(1.0, rel=1e-14)
    assert math.log(p / q) == pytest.approx(eps, rel=1e-14)


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0])
def test_realised_grid_epsilon_is_exact_and_tight(eps: float) -> None:
    """In integers: w alpha + G beta = 2**64, alpha / beta <= e^eps (60 digits), and the ratio
    is as close to e^eps as integer weights allow (beta moves in steps of w / gcd(w, G): the
    gap is at most two steps relative to beta, and below 1e-12 besides rounding); every
    cell is in one start's window and out of another's, so the worst ratio over all starts
    is alpha / beta exactly."""
    sw = SquareWave(eps)
    alpha, beta = sw.weights
    w = sw.window
    assert w * alpha + G * beta == TWO64
    assert Fraction(alpha, beta) <= _exp(eps)
    step = w // math.gcd(w, G)
    slack = Fraction(2 * step, beta) + Fraction(1, 10**12)
    assert Fraction(alpha, beta) >= _exp(eps) * (1 - slack)
    assert sw.implemented_epsilon <= eps
    # enumerate every start: P[u | s] in {alpha, beta} / 2**64, each cell sees both
    cells = np.arange(sw.n_reports)
    inside = (cells[None, :] >= np.arange(G + 1)[:, None]) & (
        cells[None, :] < np.arange(G + 1)[:, None] + w
    )
    assert inside.any(axis=0).all() and (~inside).any(axis=0).all()
    # a slightly smaller epsilon is violated: alpha / beta > e^(eps (1 - 1e-5))
    assert Fraction(alpha, beta) > _exp(eps * (1 - 1e-5))


def test_realised_distributions_stay_within_the_implemented_epsilon() -> None:
    """Over values between grid points too (two windows mixed) the worst log-ratio of one
    cell's probability is the implemented epsilon and never above it."""
    sw = SquareWave(1.5, b=0.2)
    values = np.concatenate([[0.0, 1.0], np.random.default_rng(3).uniform(0, 1, 60)])
    dists = np.array([sw.report_distribution(x) for x in values])
    np.testing.assert_allclose(dists.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    worst = float(np.max(np.log(dists.max(axis=0) / dists.min(axis=0))))
    assert worst <= sw.implemented_epsilon * (1 + 1e-12)
    assert worst >= sw.implemented_epsilon * (1 - 1e-12)  # v = 0 against v = 1


def test_empirical_likelihood_ratio_of_the_histogram() -> None:
    """Reports of v = 0 and v = 1 in 16 output bins: every bin's log-ratio is within 5 SE
    of the exact one (log of the transition probabilities) and none is above eps + 5 SE;
    the bins under one window and not the other reach eps.  False alarm about 1e-5 (32
    two-sided 5-sigma checks)."""
    eps = 1.0
    sw = SquareWave(eps, bins=16, output_bins=16)
    gen = np.random.default_rng(11)
    n = 400_000
    c0 = sw.tally(sw.randomize(np.zeros(n), rng=gen)).counts[:16].astype(float)
    c1 = sw.tally(sw.randomize(np.ones(n), rng=gen)).counts[:16].astype(float)
    exact0 = sw.report_distribution(0.0)
    exact1 = sw.report_distribution(1.0)
    edges = sw.output_edges
    p0 = np.add.reduceat(exact0, edges[:-1])
    p1 = np.add.reduceat(exact1, edges[:-1])
    log_ratio = np.log(c0 / c1)
    se = np.sqrt(1 / c0 + 1 / c1)
    assert np.all(np.abs(log_ratio - np.log(p0 / p1)) <= 5 * se)
    assert np.all(np.abs(log_ratio) <= eps + 5 * se)
    assert np.max(np.abs(np.log(p0 / p1))) == pytest.approx(sw.implemented_epsilon, rel=1e-9)


# --- the sampler ------------------------------------------------------------------------------


def test_words_pick_cells_by_inverse_cdf() -> None:
    """Hand-made words: v = 0 starts the window at cell 0 (no rounding), v = 1 at cell G;
    the second word's rank among the cumulative integer weights picks the cell."""
    sw = SquareWave(1.0)
    alpha, beta = sw.weights
    w, m = sw.window, sw.n_reports
    points = [0, w * alpha - 1, w * alpha, TWO64 - 1]
    words = [x for p in points for x in (0, p)]
    cells = sw.randomize(np.zeros(4), rng=ArrayWords(words))
    assert cells.tolist() == [0, w - 1, w, m - 1]
    # v = 1: the window is the last w cells; the first G cells take beta each
    words = [x for p in (0, G * beta - 1, G * beta, TWO64 - 1) for x in (0, p)]
    cells = sw.randomize(np.ones(4), rng=ArrayWords(words))
    assert cells.tolist() == [0, G - 1, G, m - 1]
    # v = 0.5 + 1/(2G): v G = 2048.5, the first word rounds up iff its top 53 bits < 2**52
    words = [(1 << 63) - (1 << 11), 0, 1 << 63, 0]
    cells = sw.randomize(np.full(2, 0.5 + 0.5 / G), rng=ArrayWords(words))
    assert cells.tolist() == [0, 0]  # below the window either way: beta words each
    words = [(1 << 63) - (1 << 11), 2049 * beta, 1 << 63, 2049 * beta]
    cells = sw.randomize(np.full(2, 0.5 + 0.5 / G), rng=ArrayWords(words))
    assert cells.tolist() == [2049, 2048]  # start 2049's first cell; start 2048's first


@pytest.mark.parametrize("value", [0.0, 0.3, 1 / math.pi, 1.0])
def test_sampler_matches_the_implemented_distribution(value: float) -> None:
    """The empirical CDF of 200 000 cells against the exact implemented CDF: by the DKW
    inequality P(sup |F_n - F| > t) <= 2 exp(-2 n t^2), so t below is a false-alarm rate of
    1e-4 per value (valid for a discrete distribution too)."""
    sw = SquareWave(1.0)
    n = 200_000
    cells = sw.randomize(np.full(n, value), rng=np.random.default_rng(17))
    emp = np.cumsum(np.bincount(cells, minlength=sw.n_reports)) / n
    exact = np.cumsum(sw.report_distribution(value))
    t = math.sqrt(math.log(2 / 1e-4) / (2 * n))
    assert np.max(np.abs(emp - exact)) <= t


@pytest.mark.parametrize("value", [0.0, 0.3, 0.77])
def test_sampler_matches_the_continuous_density(value: float) -> None:
    """Cells jittered uniformly within their width 1 / G against the continuous Square Wave
    density at the realised b (p within |y - v| <= b, q elsewhere): a KS test at a false
    alarm rate of 1e-4 (the grid's departure from the density, at most about p / G in CDF,
    is far below the test's resolution at n = 200 000)."""
    sw = SquareWave(2.0)
    b = sw.half_width
    p, q = sw.densities
    gen = np.random.default_rng(23)
    n = 200_000
    cells = sw.randomize(np.full(n, value), rng=gen)
    y = -b + (cells + gen.uniform(0, 1, n)) / G

    def cdf(t: np.ndarray) -> np.ndarray:
        lo, hi = value - b, value + b
        below = q * (np.clip(t, -b, lo) + b)
        inside = p * (np.clip(t, lo, hi) - lo)
        above = q * (np.clip(t, hi, 1 + b) - hi)
        return np.asarray(below + inside + above)

    assert cdf(np.array([1 + b]))[0] == pytest.approx(1.0, rel=1e-12)
    assert stats.kstest(y, cdf).pvalue > 1e-4


def test_two_words_a_report_whatever_the_value() -> None:
    sw = SquareWave(1.0)
    for values in (np.zeros(5), np.linspace(0, 1, 5)):
        src = ArrayWords(np.arange(10, dtype=np.uint64))
        sw.randomize(values, rng=src)
        assert src.remaining == 0


# --- the server -------------------------------------------------------------------------------


def test_transition_matrix_is_the_average_of_the_implemented_distributions() -> None:
    """T[j, i] against a brute-force average of report_distribution over 4096 values spread
    evenly in input bin i (midpoints of 8 sub-steps per grid step), summed into output
    bins: the start's distribution is linear in v within a grid step, so the midpoint rule
    is the uniform average exactly (up to rounding)."""
    sw = SquareWave(1.0, bins=8, output_bins=12)
    t = sw.transition
    assert t.shape == (12, 8)
    np.testing.assert_allclose(t.sum(axis=0), 1.0, rtol=0, atol=1e-12)
    edges = sw.output_edges
    assert edges[0] == 0 and edges[-1] == sw.n_reports and np.all(np.diff(edges) > 0)
    for i in (0, 3, 7):
        k = 4096  # 8 points per grid step of 1 / G
        vs = (i + (np.arange(k) + 0.5) / k) / 8
        avg = np.mean([sw.report_distribution(x) for x in vs], axis=0)
        np.testing.assert_allclose(t[:, i], np.add.reduceat(avg, edges[:-1]), rtol=0, atol=1e-12)


def test_tally_adds_and_bins_by_cell_centre() -> None:
    sw = SquareWave(1.0, bins=32)
    gen = np.random.default_rng(4)
    reports = sw.randomize(gen.uniform(0, 1, 9_000), rng=gen)
    whole = sw.tally(reports)
    assert sum(sw.tally(s) for s in np.array_split(reports, 3)) == whole
    d, m = 32, sw.n_reports
    expected = np.bincount((2 * reports.astype(np.int64) + 1) * d // (2 * m), minlength=d)
    assert whole.counts[:d].tolist() == expected.tolist()
    r = reports.astype(np.int64)
    assert whole.counts[d:].tolist() == [int(r.sum()), int((r * r).sum())]


def _w1(est: SquareWaveEstimate, cdf: object) -> float:
    grid = np.linspace(est.mechanism.lower, est.mechanism.upper, 4001)
    true = cdf(grid)  # type: ignore[operator]
    return float(np.trapezoid(np.abs(est.cdf(grid) - true), grid))


@pytest.mark.parametrize("method", ["ems", "em"])
def test_em_recovers_a_known_distribution(method: str) -> None:
    """n = 10**5 values from Beta(2, 5) at eps = 1, 256 bins: the Wasserstein-1 distance
    between the estimated and the true CDF is below 0.02 (5 bins' width; seen: 0.005 EMS,
    0.009 EM).  Fixed seed."""
    sw = SquareWave(1.0)
    x = np.random.default_rng(0).beta(2, 5, 100_000)
    est = sw.estimate(sw.randomize(x, rng=1), method=method)
    assert est.method == method
    assert est.distribution.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(est.distribution >= 0)
    assert _w1(est, stats.beta(2, 5).cdf) < 0.02
    if method == "ems":
        assert est.converged
        np.testing.assert_allclose(
            est.quantile_value([0.25, 0.5, 0.75]),
            stats.beta(2, 5).ppf([0.25, 0.5, 0.75]),
            atol=0.015,
        )


def test_ems_recovers_a_bimodal_distribution_on_a_range() -> None:
    """A two-component mixture on [10, 50] at eps = 2: W1 below 1% of the range (0.4)."""
    sw = SquareWave(2.0, lower=10.0, upper=50.0, bins=128)
    gen = np.random.default_rng(5)
    a = stats.truncnorm(-2, 2, loc=20, scale=3)
    c = stats.truncnorm(-2, 2, loc=40, scale=2)
    x = np.where(
        gen.uniform(size=100_000) < 0.4,
        a.rvs(100_000, random_state=gen),
        c.rvs(100_000, random_state=gen),
    )
    est = sw.estimate(sw.randomize(x, rng=gen))
    assert _w1(est, lambda t: 0.4 * a.cdf(t) + 0.6 * c.cdf(t)) < 0.4


def test_means_beside_duchi_and_piecewise() -> None:
    """One population (Beta(2, 5) on [0, 10], n = 10**5, eps = 1): Duchi's, the piecewise
    mechanism's and Square Wave's moment means are unbiased, each within 5 of its SEs of the
    sample mean (false alarm ~6e-7 each); EMS's mean is biased by its smoothing and binning
    but by less than 0.05 (0.5% of the range)."""
    gen = np.random.default_rng(8)
    x = 10 * gen.beta(2, 5, 100_000)
    truth = float(x.mean())
    for mech in (
        DuchiMechanism(1.0, lower=0, upper=10),
        PiecewiseMechanism(1.0, lower=0, upper=10),
    ):
        est = mech.estimate(mech.randomize(x, rng=gen))
        assert abs(est.value - truth) <= 5 * est.se
    sw = SquareWave(1.0, lower=0, upper=10)
    est = sw.estimate(sw.randomize(x, rng=gen))
    moment = est.moment_mean
    assert est.value == moment.value and est.se == moment.se and moment.method == "moment"
    assert abs(moment.value - truth) <= 5 * moment.se
    assert abs(est.mean_value - truth) < 0.05


def test_a_cached_bootstrap_is_one_read_only_array_across_threads() -> None:
    """Eight threads ask one estimate for the same seeded bootstrap at once: every thread
    gets the very array the cache keeps (a race may fit twice, never answer twice), and no
    caller can write into what the others are given."""
    sw = SquareWave(1.0, bins=16)
    est = sw.estimate(sw.randomize(np.random.default_rng(4).beta(2, 5, 5_000), rng=4))
    barrier = threading.Barrier(8)
    got: list[np.ndarray] = []

    def ask() -> None:
        barrier.wait()
        got.append(est.bootstrap(20, seed=7))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(g is got[0] for g in got)
    assert got[0] is est.bootstrap(20, seed=7)
    with pytest.raises(ValueError, match="read-only"):
        got[0][0, 0] = 1.0


def test_moment_mean_is_exactly_unbiased() -> None:
    """E[(u - c0) / c1 | v] = v for the implemented grid, at every value (exact sums)."""
    sw = SquareWave(0.7, b=0.3, lower=-1, upper=3)
    values = np.linspace(-1, 3, 23)
    means = np.array([sw.report_distribution(x) @ sw.report_values() for x in values])
    np.testing.assert_allclose(means, values, rtol=0, atol=1e-9)


def test_bootstrap_intervals_are_seeded_and_nested() -> None:
    sw = SquareWave(1.0, bins=64)
    x = np.random.default_rng(9).beta(2, 2, 20_000)
    est = sw.estimate(sw.randomize(x, rng=9))
    mean = est.mean(replicates=100, seed=3)
    assert mean.value == est.mean_value and mean.se_convention.startswith("parametric bootstrap")
    lo90, hi90 = est.mean(replicates=100, seed=3).ci(0.9, method="bootstrap")
    lo99, hi99 = mean.ci(0.99, method="bootstrap")
    assert lo99 <= lo90 < hi90 <= hi99
    assert lo99 < 0.5 < hi99  # Beta(2, 2): mean 1/2
    again = SquareWaveEstimate.fit(sw, est.tally).mean(replicates=100, seed=3)
    assert again.ci(0.99, method="bootstrap") == (lo99, hi99)
    med = est.quantile(0.5, replicates=100, seed=3)
    lo, hi = med.ci(0.95, method="bootstrap")
    assert lo <= med.value <= hi and lo < 0.5 < hi
    other = est.mean(replicates=100, seed=np.random.default_rng(1))
    assert other.se > 0
    copy = pickle.loads(pickle.dumps(est))
    assert copy.to_dict() == est.to_dict()
    text = str(est)
    assert "EMS" in text and "quantile 0.5" in text and "epsilon = 1" in text


def test_plain_em_stops_at_max_iter_and_says_so() -> None:
    sw = SquareWave(1.0, bins=64)
    reports = sw.randomize(np.random.default_rng(2).beta(2, 5, 20_000), rng=2)
    est = sw.estimate(reports, method="em", max_iter=5)
    assert est.iterations == 5 and not est.converged
    assert "stopped at max_iter=5" in str(est)


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"epsilon": 1e-17}, "epsilon"),
        ({"epsilon": 1.0, "b": 0.0}, "b"),
        ({"epsilon": 1.0, "b": 2.5}, "b"),
        ({"epsilon": 1.0, "lower": 1.0, "upper": 1.0}, "lower"),
        ({"epsilon": 1.0, "upper": math.inf}, "lower"),
        ({"epsilon": 1.0, "bins": 1}, "bins"),
        ({"epsilon": 1.0, "bins": G + 1}, "bins"),
        ({"epsilon": 1.0, "output_bins": 10**6}, "output_bins"),
    ],
)
def test_bad_parameters_raise_naming_them(kwargs: dict[str, float], name: str) -> None:
    with pytest.raises(ParameterError, match=f"`{name}`"):
        SquareWave(**kwargs)  # type: ignore[arg-type]


def test_bad_values_and_clipping() -> None:
    sw = SquareWave(1.0, lower=0, upper=10)
    with pytest.raises(DataError, match=r"\[0, 10\].*clip=True.*index 1"):
        sw.randomize([5.0, 11.0])
    with pytest.raises(DataError, match="values"):
        sw.randomize([math.nan])
    with pytest.raises(DataError, match="1-D"):
        sw.randomize([[1.0]])
    with pytest.raises(ParameterTypeError, match="clip"):
        SquareWave(1.0, clip="yes")  # type: ignore[arg-type]
    clipped = SquareWave(1.0, lower=0, upper=10, clip=True)
    assert clipped.key != sw.key  # clipping is part of the identity
    a = clipped.randomize([-3.0, 14.0], rng=5)
    assert a.tolist() == sw.randomize([0.0, 10.0], rng=5).tolist()
    with pytest.raises(DataError, match="values"):
        clipped.randomize([math.nan])  # NaN is never clipped


def test_bad_reports_tallies_and_options() -> None:
    sw = SquareWave(1.0, bins=16)
    with pytest.raises(DataError):
        sw.tally(np.array([sw.n_reports], dtype=np.int64))
    bad = Tally([1] * 16 + [10**6, 10**6], mechanism=sw.key)  # sum u above 16 (M - 1)
    with pytest.raises(DataError, match="sum u"):
        sw.estimate(bad)
    other = SquareWave(2.0, bins=16)
    with pytest.raises(DataError, match="belongs to mechanism"):
        sw.estimate(other.tally(other.randomize([0.5], rng=1)))
    reports = sw.randomize(np.full(100, 0.5), rng=1)
    with pytest.raises(ParameterError, match="`method`"):
        sw.estimate(reports, method="emx")
    with pytest.raises(ParameterError, match="`tol`"):
        sw.estimate(reports, tol=0.0)
    est = sw.estimate(reports)
    with pytest.raises(ParameterError, match="`q`"):
        est.quantile_value([1.5])
    with pytest.raises(ParameterError, match="`replicates`"):
        est.mean(replicates=1)
    with pytest.raises(ParameterError, match="`seed`"):
        est.mean(seed=-1)


@pytest.mark.slow
def test_bootstrap_intervals_cover() -> None:
    """100 data sets of 20 000 values from Beta(2, 2) (symmetric, so EMS's smoothing does not
    move the mean or the median 1/2): the 90% bootstrap intervals of the mean and the median
    cover 1/2 at least 80 times each (false alarm 8e-4 each at the nominal 90%; seen: 90 and
    91).  The fast sibling: test_bootstrap_intervals_are_seeded_and_nested."""
    sw = SquareWave(1.0, bins=32)
    gen = np.random.default_rng(31)
    mean_hits = median_hits = 0
    for r in range(100):
        est = sw.estimate(sw.randomize(gen.beta(2, 2, 20_000), rng=gen))
        lo, hi = est.mean(replicates=100, seed=r).ci(0.9, method="bootstrap")
        mean_hits += lo <= 0.5 <= hi
        lo, hi = est.quantile(0.5, replicates=100, seed=r).ci(0.9, method="bootstrap")
        median_hits += lo <= 0.5 <= hi
    assert mean_hits >= 80 and median_hits >= 80, (mean_hits, median_hits)


def test_estimate_refuses_non_numeric_q_and_x_by_name() -> None:
    # numpy's bare ValueError before: one ParameterTypeError naming the argument
    sw = SquareWave(1.0, bins=16)
    est = sw.estimate(sw.randomize(np.full(200, 0.5), rng=1))
    with pytest.raises(ParameterTypeError, match="`q` must be probabilities in"):
        est.quantile("median")
    with pytest.raises(ParameterTypeError, match="`q` must be probabilities in"):
        est.quantile_value(["x"])
    with pytest.raises(ParameterTypeError, match="`x` must be numbers"):
        est.cdf("half")
    assert est.cdf([0.0, 1.0]).tolist() == [0.0, 1.0]
