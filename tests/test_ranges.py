"""Range queries over ordered domains: the hierarchical histogram (constrained inference)
and HaarHRR.  Exact tests against closed forms derived here by hand and by enumerating the
report distributions; seeded statistical tests with their false-alarm rates stated."""

from __future__ import annotations

import itertools
import json
import math
import pickle

import numpy as np
import pytest
from scipy import stats

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError
from deniable.oracles import (
    HaarHRR,
    HierarchicalHistogram,
    LevelReports,
    support_probabilities,
)
from deniable.oracles._hierarchical import averaging_weights

#: A skewed, unimodal-at-both-ends distribution over 0..15 (shares known exactly).
F16 = np.array([8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8], float) / 72


def _concat(a: LevelReports, b: LevelReports) -> LevelReports:
    reps = tuple(np.concatenate([x, y]) for x, y in zip(a.reports, b.reports, strict=True))
    return LevelReports(np.concatenate([a.level, b.level]), reps)


# ---- consistency (the test) ---------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "branching", "oracle"),
    [(16, 2, "oue"), (27, 3, "grr"), (64, 4, "hadamard"), (16, 4, "olh"), (8, 8, "grr")],
)
def test_every_parent_equals_the_sum_of_its_children(domain, branching, oracle) -> None:
    hh = HierarchicalHistogram(domain, branching, 1.0, oracle=oracle)
    x = np.random.default_rng(0).integers(0, domain, size=6000)
    est = hh.estimate(hh.randomize(x, rng=1))
    assert est.nodes[0].tolist() == [1.0]  # every device is in the root
    for upper, lower in itertools.pairwise(est.nodes):
        assert lower.size == upper.size * branching
        np.testing.assert_allclose(lower.reshape(-1, branching).sum(1), upper, rtol=0, atol=1e-9)
    # a range answered from its minimal cover equals the sum of its leaves
    for a, b in [(0, domain - 1), (1, domain - 2), (domain // 3, domain // 2), (5, 5)]:
        assert est.range(a, b).value == pytest.approx(est.leaves[a : b + 1].sum(), abs=1e-9)


def test_haar_shares_are_consistent_and_ranges_are_sums_of_leaves() -> None:
    haar = HaarHRR(32, 1.0)
    x = np.random.default_rng(2).integers(0, 32, size=8000)
    est = haar.estimate(haar.randomize(x, rng=3))
    assert est.nodes[0].tolist() == [1.0]
    for upper, lower in itertools.pairwise(est.nodes):
        np.testing.assert_allclose(lower.reshape(-1, 2).sum(1), upper, rtol=0, atol=1e-9)
    for a, b in [(0, 31), (3, 17), (16, 16), (1, 30)]:
        assert est.range(a, b).value == pytest.approx(est.leaves[a : b + 1].sum(), abs=1e-9)


@pytest.mark.parametrize(("domain", "branching"), [(27, 3), (16, 2), (16, 4)])
def test_minimal_cover_partitions_the_range_with_no_full_family(domain, branching) -> None:
    hh = HierarchicalHistogram(domain, branching, 1.0, oracle="grr")
    h = hh.height
    for a in range(domain):
        for b in range(a, domain):
            cover = hh.cover(a, b)
            covered = []
            for lvl, i in cover:
                width = branching ** (h - lvl)
                covered += range(i * width, (i + 1) * width)
            assert sorted(covered) == list(range(a, b + 1))  # disjoint, exactly [a, b]
            assert len(cover) <= max(1, 2 * (branching - 1) * h)
            # minimal: never all B children of one parent (the parent would do)
            for lvl in range(1, h + 1):
                parents = [i // branching for l2, i in cover if l2 == lvl]
                assert all(parents.count(p) < branching for p in set(parents))


# ---- closed forms, derived by hand ---------------------------------------------------


@pytest.mark.parametrize(("branching", "height"), [(2, 5), (3, 4), (16, 3)])
def test_equal_variances_give_hay_et_al_weights(branching, height) -> None:
    # Hay et al. (2010): z = (B^i - B^(i-1)) / (B^i - 1) h + ... at height i (leaves 1)
    got = averaging_weights([0.37] * height, branching)
    want = [
        (branching**i - branching ** (i - 1)) / (branching**i - 1) for i in range(height, 0, -1)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _per_report_covariance(oracle_name, p, q, k, pi):
    """Covariance of one report's unbiased level estimate, by enumerating every report."""
    d = p - q
    second = np.zeros((k, k))
    if oracle_name == "grr":  # the report r: supports r only
        for x, r in itertools.product(range(k), range(k)):
            y = (np.eye(k)[r] - q) / d
            second += pi[x] * (p if r == x else q) * np.outer(y, y)
    else:  # unary encoding: k independent bits
        for x in range(k):
            probs = np.where(np.arange(k) == x, p, q)
            for bits in itertools.product((0, 1), repeat=k):
                s = np.array(bits, float)
                pr = float(np.prod(np.where(s == 1, probs, 1 - probs)))
                y = (s - q) / d
                second += pi[x] * pr * np.outer(y, y)
    return second - np.outer(pi, pi)  # E[y] = pi


@pytest.mark.parametrize("oracle", ["grr", "oue"])
def test_hierarchical_variance_equals_the_hand_derived_closed_form(oracle) -> None:
    # D = 4, B = 2: levels of 2 and 4 nodes, n / 2 reports each.  By hand, with a the
    # bottom-up weight of level 1, x_1[0] = (1 + z_0 - z_1) / 2 and
    # x_2[0] = 1/4 + (y2_0 - y2_1) / 2 + (a (y1_0 - y1_1) + (1 - a)(y2_0 + y2_1 - y2_2 - y2_3)) / 4
    hh = HierarchicalHistogram(4, 2, 1.3, oracle=oracle)
    f = np.array([0.1, 0.2, 0.3, 0.4])
    n = 10_000
    pis = [np.array([0.3, 0.7]), f]
    s = []
    for o in hh.levels:
        p, q = support_probabilities(o)
        lam = q + (p - q) / o.k
        s.append(lam * (1 - lam) / ((n / 2) * (p - q) ** 2))
    a = 2 * s[1] / (s[0] + 2 * s[1])
    cov = [
        _per_report_covariance(oracle, *support_probabilities(o), o.k, pi) / (n / 2)
        for o, pi in zip(hh.levels, pis, strict=True)
    ]
    w_leaf = (np.array([a, -a]) / 4, np.array([2 + 1 - a, -2 + 1 - a, a - 1, a - 1]) / 4)
    w_half = (np.array([a, -a]) / 2, np.array([1 - a, 1 - a, a - 1, a - 1]) / 2)
    for (lo, hi), w in (((0, 0), w_leaf), ((0, 1), w_half)):
        want = sum(float(wl @ c @ wl) for wl, c in zip(w, cov, strict=True))
        assert hh.variance(lo, hi, n, f) == pytest.approx(want, rel=1e-10)


def test_one_level_grr_variance_is_the_binary_closed_form() -> None:
    # D = B = 2: x_0 = (1 + y_0 - y_1) / 2 = (c_0 / n - (1 + q - p) / 2) / (p - q), the
    # variance lambda_0 (1 - lambda_0) / (n (p - q)^2)
    hh = HierarchicalHistogram(2, 2, 0.8, oracle="grr")
    p, q = support_probabilities(hh.levels[0])
    lam = q + (p - q) * 0.3
    assert hh.variance(0, 0, 500, [0.3, 0.7]) == pytest.approx(
        lam * (1 - lam) / (500 * (p - q) ** 2), rel=1e-12
    )


def _haar_report_covariance(haar, level, f):
    """Covariance of one level-``level`` report's contribution b H[j, v] / (2p - 1) to the
    coefficients, by enumerating the value, the row and the flip."""
    h = haar.height
    p = haar.levels[level].p
    rows = max(2, 1 << level)
    nodes = 1 << level
    g = 2 * p - 1
    mean, second = np.zeros(nodes), np.zeros((nodes, nodes))
    for x in range(haar.domain):
        u = x >> (h - level)
        s = 1 if ((x >> (h - level - 1)) & 1) == 0 else -1
        for j in range(rows):
            had = np.array([(-1) ** bin(j & w).count("1") for w in range(nodes)], float)
            sign_u = (-1) ** bin(j & u).count("1")
            for b, pr in ((s * sign_u, p), (-s * sign_u, 1 - p)):
                z = b * had / g
                mean += f[x] * pr / rows * z
                second += f[x] * pr / rows * np.outer(z, z)
    return mean, second - np.outer(mean, mean)


def test_haar_variance_equals_the_enumerated_closed_form() -> None:
    haar = HaarHRR(4, 0.9)
    f = np.array([0.1, 0.2, 0.3, 0.4])
    n = 8000
    moments = [_haar_report_covariance(haar, lvl, f) for lvl in range(2)]
    # the enumerated means are the Haar coefficients: F(left) - F(right)
    np.testing.assert_allclose(moments[0][0], [0.3 - 0.7], atol=1e-12)
    np.testing.assert_allclose(moments[1][0], [0.1 - 0.2, 0.3 - 0.4], atol=1e-12)
    # range weights by hand: [0, 0] is 1/4 + theta_0 / 4 + theta_(1,0) / 2; [1, 2] is
    # 2/4 + 0 theta_0 - theta_(1,0) / 2 + theta_(1,1) / 2
    for (lo, hi), w in (((0, 0), ([0.25], [0.5, 0.0])), ((1, 2), ([0.0], [-0.5, 0.5]))):
        want = sum(float(np.array(wl) @ c @ np.array(wl)) / (n / 2)
                   for wl, (_, c) in zip(w, moments, strict=True))  # fmt: skip
        assert haar.variance(lo, hi, n, f) == pytest.approx(want, rel=1e-10)


# ---- epsilon, exactly and empirically --------------------------------------------------


def _max_log_ratio(table):
    """ln of the largest ratio P(r | x) / P(r | x') over reports r and values x, x'."""
    t = np.asarray(table)
    return float(np.log((t.max(axis=1) / t.min(axis=1)).max()))


def test_hierarchical_epsilon_is_exact_by_enumeration() -> None:
    hh = HierarchicalHistogram(4, 2, 1.1, oracle="grr")
    rows = []  # P(level, report | x) = P_l(report | node_l(x)) / h
    for o in hh.levels:
        p, q = support_probabilities(o)
        for r in range(o.k):
            rows.append([(p if r == x // (4 // o.k) else q) / 2 for x in range(4)])
    eps = _max_log_ratio(rows)
    assert eps == pytest.approx(hh.epsilon, abs=1e-12)
    assert hh.epsilon <= 1.1
    assert eps > hh.epsilon - 1e-9  # tight: attained, a smaller epsilon fails


def test_haar_epsilon_is_exact_by_enumeration_and_the_randomizer_matches_it() -> None:
    haar = HaarHRR(4, 1.0)
    h = haar.height
    cells, table = [], []
    for lvl, o in enumerate(haar.levels):
        rows = max(2, 1 << lvl)
        for j, bit in itertools.product(range(rows), (0, 1)):
            cells.append((lvl, 2 * j + bit))
            row = []
            for x in range(4):
                u = x >> (h - lvl)
                s = 1 if ((x >> (h - lvl - 1)) & 1) == 0 else -1
                kept = (-1) ** bit == s * (-1) ** bin(j & u).count("1")
                row.append((o.p if kept else 1 - o.p) / (rows * h))
            table.append(row)
    eps = _max_log_ratio(table)
    assert eps == pytest.approx(haar.epsilon, abs=1e-12)
    assert eps == pytest.approx(1.0, abs=1e-12)
    # the randomizer draws reports with these probabilities: chi-square goodness of fit
    # for x = 1 and x = 2 (false-alarm rate 1e-6 each)
    for x in (1, 2):
        reps = haar.randomize(np.full(200_000, x), rng=10 + x)
        observed = np.zeros(len(cells))
        index = {c: i for i, c in enumerate(cells)}
        for lvl in range(h):
            vals, counts = np.unique(reps.reports[lvl], return_counts=True)
            for val, c in zip(vals.tolist(), counts.tolist(), strict=True):
                observed[index[(lvl, val)]] = c
        expected = np.array([row[x] for row in table]) * 200_000
        chi2 = float(((observed - expected) ** 2 / expected).sum())
        assert chi2 < stats.chi2.ppf(1 - 1e-6, len(cells) - 1)


# ---- unbiasedness and variance by simulation -----------------------------------------


def _simulate(mech, reps, n, a, b, seed):
    rng = np.random.default_rng(seed)
    out = np.empty((reps, 2))
    for r in range(reps):
        est = mech.estimate(mech.randomize(rng.choice(mech.domain, size=n, p=F16), rng=rng))
        ans = est.range(a, b)
        out[r] = ans.value, ans.se
    return out


@pytest.mark.parametrize(
    "mech",
    [
        HierarchicalHistogram(16, 2, 1.0, oracle="oue"),
        HierarchicalHistogram(16, 4, 1.0, oracle="grr"),
        HaarHRR(16, 1.0),
    ],
    ids=["hh-oue", "hh-grr", "haar"],
)
def test_range_answers_are_unbiased_with_the_stated_variance(mech) -> None:
    reps, n, a, b = 400, 20_000, 3, 10
    sims = _simulate(mech, reps, n, a, b, seed=7)
    truth = F16[a : b + 1].sum()
    var = mech.variance(a, b, n, F16)
    # mean: |mean - truth| < 4.42 sqrt(var / reps), two-sided false alarm 1e-5
    assert abs(sims[:, 0].mean() - truth) < 4.42 * math.sqrt(var / reps)
    # variance: (reps - 1) s^2 / var within chi2(reps - 1) quantiles 1e-5 and 1 - 1e-5
    # (false alarm 2e-5; the n_l are binomial, E[1/n_l] within 0.1% of h / n)
    stat = (reps - 1) * sims[:, 0].var(ddof=1) / var
    assert stats.chi2.ppf(1e-5, reps - 1) < stat < stats.chi2.ppf(1 - 1e-5, reps - 1)
    # the estimate's own (plug-in) variance is the closed form at the estimated shares
    assert float((sims[:, 1] ** 2).mean()) == pytest.approx(var, rel=0.05)


# ---- quantiles -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "branching", "oracle"),
    [(16, 2, "oue"), (27, 3, "grr"), (64, 4, "hadamard"), (16, 16, "grr"), (81, 3, "olh")],
)
def test_all_prefix_variances_at_once_equal_the_general_computation(
    domain, branching, oracle
) -> None:
    hh = HierarchicalHistogram(domain, branching, 1.0, oracle=oracle)
    x = np.random.default_rng(0).integers(0, domain // 2 + 1, 5000)  # skewed shares
    est = hh.estimate(hh.randomize(x, rng=1))
    pis = [np.clip(n, 0, 1) for n in est.nodes[1:]]
    t = np.arange(domain)
    general = hh.range_variances(np.zeros_like(t), t, pis, est.level_n)
    fast = hh.prefix_variances(pis, est.level_n)
    np.testing.assert_allclose(fast, general, rtol=0, atol=1e-12 * general.max())
    assert general[-1] == pytest.approx(0.0, abs=1e-15)  # the whole domain: exactly 1


def test_quantile_intervals_cover_at_their_level() -> None:
    # 60 seeded replications per mechanism and quantile at level 0.9.  Coverage below 0.7
    # is a false alarm with probability < 3e-5 per check (binomial(60, 0.9); the intervals
    # of a discrete quantile are, if anything, conservative).
    f = np.repeat(np.array([1, 2, 3, 4, 4, 3, 2, 1], float), 4)
    f /= f.sum()
    cdf = np.cumsum(f)
    rng = np.random.default_rng(11)
    for mech in (HierarchicalHistogram(32, 2, 1.0, oracle="oue"), HaarHRR(32, 1.0)):
        for q in (0.25, 0.5, 0.9):
            true_q = int(np.flatnonzero(cdf >= q - 1e-12)[0])
            hits = 0
            for _ in range(60):
                est = mech.estimate(mech.randomize(rng.choice(32, size=20_000, p=f), rng=rng))
                res = est.quantile(q, level=0.9)
                assert res.interval.low <= res.value <= res.interval.high
                hits += res.interval.low <= true_q <= res.interval.high
            assert hits >= 42, (mech.name, q, hits)


def test_quantile_of_a_point_mass_is_that_point() -> None:
    haar = HaarHRR(16, 2.0)
    est = haar.estimate(haar.randomize(np.full(50_000, 9), rng=4))
    res = est.quantile(0.5)
    assert res.value == 9 and res.interval.low <= 9 <= res.interval.high
    assert "CDF band inversion" in res.to_dict()["method"]


# ---- tallies ---------------------------------------------------------------------------


@pytest.mark.parametrize("mech", [HierarchicalHistogram(27, 3, 1.0, oracle="grr"),
                                  HierarchicalHistogram(16, 2, 1.0, oracle="hadamard"),
                                  HaarHRR(16, 1.0)])  # fmt: skip
def test_tallies_add_and_round_trip(mech) -> None:
    rng = np.random.default_rng(5)
    r1 = mech.randomize(rng.integers(0, mech.domain, 3000), rng=rng)
    r2 = mech.randomize(rng.integers(0, mech.domain, 2000), rng=rng)
    t = mech.tally(r1) + mech.tally(r2)
    assert t == mech.tally(_concat(r1, r2))
    assert t.mechanism == mech.key
    assert Tally.from_json(t.to_json()) == t and Tally.from_bytes(t.to_bytes()) == t
    np.testing.assert_array_equal(mech.estimate(t).leaves, mech.estimate(_concat(r1, r2)).leaves)
    assert mech.estimate(t).n == 5000
    assert pickle.loads(pickle.dumps(mech)).key == mech.key
    assert json.loads(json.dumps(mech.estimate(t).to_dict()))["level_n"]


@pytest.mark.parametrize("oracle", ["grr", "oue", "olh", "hadamard"])
def test_every_oracle_takes_batches_that_leave_levels_empty(oracle) -> None:
    hh = HierarchicalHistogram(16, 4, 1.0, oracle=oracle)
    small = hh.randomize([7], rng=0)  # one device: the other level gets no report
    assert small.n == 1 and sum(len(r) for r in small.reports) == 1
    big = hh.randomize(np.arange(16).repeat(30), rng=1)
    est = hh.estimate(hh.tally(small) + hh.tally(big))
    assert est.n == 481
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.leaves, est.leaves)
    assert again.range(2, 9) == est.range(2, 9)


def test_a_tally_of_another_mechanism_is_refused() -> None:
    a, b = HaarHRR(16, 1.0), HaarHRR(16, 2.0)
    t = a.tally(a.randomize(np.arange(16).repeat(50), rng=1))
    with pytest.raises(DataError, match="belongs to mechanism"):
        b.estimate(t)


# ---- bad input -------------------------------------------------------------------------


def test_bad_input_raises_one_clear_error() -> None:
    with pytest.raises(
        ParameterError, match=r"`domain` must be a power of the branching .* 4.*got 32"
    ):
        HierarchicalHistogram(32, 4, 1.0)
    with pytest.raises(ParameterError, match=r"`domain` must be a power .* B = 2.*got 12"):
        HaarHRR(12, 1.0)
    with pytest.raises(ParameterError, match="`branching`"):
        HierarchicalHistogram(16, 1, 1.0)
    with pytest.raises(ParameterError, match="`oracle` must be one of"):
        HierarchicalHistogram(16, 2, 1.0, oracle="rappor")
    with pytest.raises(ParameterError, match="`epsilon`"):
        HaarHRR(16, 0.0)
    hh = HierarchicalHistogram(16, 2, 1.0, oracle="grr")
    with pytest.raises(DataError, match="`values`"):
        hh.randomize([0, 16])
    with pytest.raises(DataError, match="`values`"):
        HaarHRR(16, 1.0).randomize([-1, 3])
    est = hh.estimate(hh.randomize(np.arange(16).repeat(20), rng=0))
    with pytest.raises(ParameterError, match=r"`a` must be at most `b`.*a = 5 > b = 3"):
        est.range(5, 3)
    with pytest.raises(ParameterError, match="`b`"):
        est.range(0, 16)
    with pytest.raises(ParameterError, match="`a`"):
        est.range(-1, 3)
    with pytest.raises(ParameterError, match="`q` must be in"):
        est.quantile(0.0)
    with pytest.raises(ParameterError, match="`a` must be at most `b`"):
        hh.variance(3, 2, 100, np.full(16, 1 / 16))
    with pytest.raises(DataError, match="`frequencies` must have D = 16"):
        hh.variance(0, 2, 100, [0.5, 0.5])
    with pytest.raises(DataError, match="`reports` must be the LevelReports"):
        hh.tally(np.arange(4))
    good = hh.randomize(np.arange(16), rng=1)
    with pytest.raises(DataError, match=r"`reports\.level`"):
        hh.tally(LevelReports(good.level + 4, good.reports))
    with pytest.raises(DataError, match="must have one row per device"):
        hh.tally(LevelReports(good.level[::-1].copy() * 0, good.reports))
    # a level without reports cannot be estimated; the tally itself is kept
    one = hh.randomize([3], rng=0)
    with pytest.raises(DataError, match="at least one report of every level"):
        hh.estimate(hh.tally(one))


@pytest.mark.slow
def test_quantile_interval_coverage_large_study() -> None:
    # 400 seeded replications per mechanism at level 0.9 for the median of F16: coverage
    # below 0.84 is a false alarm with probability < 3e-5 (binomial(400, 0.9), 4 SD).
    # The fast sibling is test_quantile_intervals_cover_at_their_level.
    true_q = int(np.flatnonzero(np.cumsum(F16) >= 0.5 - 1e-12)[0])
    rng = np.random.default_rng(23)
    for mech in (HierarchicalHistogram(16, 4, 1.0, oracle="grr"), HaarHRR(16, 1.0)):
        hits = 0
        for _ in range(400):
            est = mech.estimate(mech.randomize(rng.choice(16, size=20_000, p=F16), rng=rng))
            ci = est.quantile(0.5, level=0.9).interval
            hits += ci.low <= true_q <= ci.high
        assert hits >= 336, (mech.name, hits)


@pytest.mark.parametrize("mech", [HierarchicalHistogram(16, 2, 1.0), HaarHRR(16, 1.0)])
@pytest.mark.parametrize(
    ("frequencies", "match"),
    [
        ("abcd", "`frequencies` must have D = 16 entries, got str"),
        ([object()] * 16, "`frequencies` must have D = 16 entries, got list"),
        ([math.nan] * 16, "`frequencies` must be 16 non-negative numbers that sum to 1"),
        ([-0.5, 1.5] + [0.0] * 14, "`frequencies` must be 16 non-negative numbers"),
        ([0.1] * 16, "`frequencies` must be 16 non-negative numbers that sum to 1"),
    ],
)
def test_variance_refuses_bad_frequencies_by_name(
    mech: object, frequencies: object, match: str
) -> None:
    # NaN or shares that are no distribution gave a number (NaN or a wrong variance); a
    # string gave numpy's bare ValueError: one DataError naming `frequencies` instead
    with pytest.raises(DataError, match=match):
        mech.variance(0, 3, 1000, frequencies)  # type: ignore[attr-defined]
