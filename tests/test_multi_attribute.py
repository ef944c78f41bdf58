"""Several attributes per device (SPL, SMP, RS+FD): epsilon by enumeration of the channel,
unbiasedness and variances by seeded simulation, the adaptive choice, bad input."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterError
from deniable.oracles import (
    MultiAttribute,
    MultiTally,
    choose_multi,
    rsfd_attribute_epsilon,
)

# ---- the channel of a tuple of GRR reports, written from the protocols' definitions


def _grr(eps: float, k: int) -> np.ndarray:
    """P[y | x] of k-ary randomized response at eps (rows y, columns x)."""
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    q = 1 / (math.exp(eps) + k - 1)
    return np.where(np.eye(k, dtype=bool), p, q)


def _channel(protocol: str, ks: tuple[int, ...], eps: float) -> dict[tuple, np.ndarray]:
    """P[output | x] for every output, as an array over the value tuples x."""
    d = len(ks)
    xs = list(itertools.product(*(range(k) for k in ks)))
    per = eps / d if protocol == "spl" else eps
    mats = [_grr(per, k) for k in ks]
    fake = [m.mean(axis=1) for m in mats]  # a uniform value randomized
    out: dict[tuple, np.ndarray] = {}
    if protocol == "smp":
        for j, k in enumerate(ks):
            for y in range(k):
                out[(j, y)] = np.array([mats[j][y, x[j]] / d for x in xs])
        return out
    for ys in itertools.product(*(range(k) for k in ks)):
        if protocol == "spl":
            out[ys] = np.array([math.prod(mats[i][ys[i], x[i]] for i in range(d)) for x in xs])
        else:
            out[ys] = np.array(
                [
                    sum(
                        mats[j][ys[j], x[j]]
                        / d
                        * math.prod(fake[i][ys[i]] for i in range(d) if i != j)
                        for j in range(d)
                    )
                    for x in xs
                ]
            )
    return out


def _enumerated_epsilon(channel: dict[tuple, np.ndarray], ks, *, one_attribute=False) -> float:
    xs = list(itertools.product(*(range(k) for k in ks)))
    worst = 0.0
    for a, b in itertools.permutations(range(len(xs)), 2):
        if one_attribute and sum(u != w for u, w in zip(xs[a], xs[b], strict=True)) != 1:
            continue
        for probs in channel.values():
            worst = max(worst, math.log(probs[a] / probs[b]))
    return worst


@pytest.mark.parametrize("protocol", ["spl", "smp", "rs+fd"])
@pytest.mark.parametrize("ks", [(2, 2), (2, 3), (3, 2, 2)])
def test_epsilon_is_the_enumerated_worst_case_over_every_change_of_the_values(protocol, ks):
    eps = 1.3
    multi = MultiAttribute(ks, eps, protocol=protocol, oracle="grr")
    channel = _channel(protocol, ks, eps)
    for probs in channel.values():  # sanity: a channel
        assert probs.min() > 0
    total = sum(channel.values())
    assert np.allclose(total, 1.0)
    assert multi.epsilon == pytest.approx(_enumerated_epsilon(channel, ks), abs=1e-12)
    assert multi.epsilon == pytest.approx(eps, abs=1e-12)  # tight: the whole budget


@pytest.mark.parametrize("ks", [(2, 2), (3, 3), (2, 2, 2), (3, 3, 3)])
def test_rsfd_amplification_holds_for_a_change_of_one_attribute_only_and_is_tight(ks):
    d, eps = len(ks), 1.0
    amplified = math.log(d * math.expm1(eps) + 1)  # the paper's epsilon'
    channel = _channel("rs+fd", ks, amplified)
    one = _enumerated_epsilon(channel, ks, one_attribute=True)
    assert one == pytest.approx(eps, abs=1e-12)  # the paper's bound, tight
    assert rsfd_attribute_epsilon(amplified, ks) == pytest.approx(one, abs=1e-12)
    # a device whose every value changes is protected only at epsilon' (no amplification)
    assert _enumerated_epsilon(channel, ks) == pytest.approx(amplified, abs=1e-12)
    assert MultiAttribute(ks, amplified, protocol="rs+fd").epsilon == pytest.approx(amplified)


@pytest.mark.parametrize("ks", [(2, 3), (3, 2, 2), (2, 5, 3)])
def test_rsfd_one_attribute_epsilon_with_unequal_domains_exceeds_the_papers(ks):
    d, eps = len(ks), 1.0
    amplified = math.log(d * math.expm1(eps) + 1)
    one = _enumerated_epsilon(_channel("rs+fd", ks, amplified), ks, one_attribute=True)
    assert one > eps + 1e-3
    assert rsfd_attribute_epsilon(amplified, ks) == pytest.approx(one, abs=1e-12)


def test_rsfd_reports_follow_the_enumerated_channel():
    # Chi-square of 60,000 report tuples of one device value against the channel, with df =
    # 5: the 99.99% quantile (false alarm 1e-4 per x, fixed seed).
    ks, eps = (2, 3), 1.0
    multi = MultiAttribute(ks, eps, protocol="rs+fd", oracle="grr")
    channel = _channel("rs+fd", ks, eps)
    xs = list(itertools.product(*(range(k) for k in ks)))
    n = 60_000
    for col, x in enumerate([(0, 0), (1, 2)]):
        reps = multi.randomize(np.tile(x, (n, 1)), rng=100 + col).reports
        seen = {ys: 0 for ys in channel}
        rows, counts = np.unique(np.stack(reps, axis=1), axis=0, return_counts=True)
        for ys, c in zip(rows, counts, strict=True):
            seen[tuple(int(t) for t in ys)] = int(c)
        i = xs.index(x)
        chi2 = sum((seen[ys] - n * pr[i]) ** 2 / (n * pr[i]) for ys, pr in channel.items())
        assert chi2 < 25.74


# ---- unbiasedness and variances by simulation

_KS = (3, 5)
_TRUE = (np.array([0.5, 0.3, 0.2]), np.array([0.4, 0.1, 0.1, 0.2, 0.2]))


def _population(n: int) -> np.ndarray:
    cols = [np.repeat(np.arange(len(f)), np.round(f * n).astype(int)) for f in _TRUE]
    return np.stack(cols, axis=1)


CASES = [
    ("spl", "grr"), ("spl", "oue"), ("smp", "grr"), ("smp", "oue"),
    ("rs+fd", "grr"), ("rs+fd", "oue"), ("rs+fd", "oue-z"), ("rs+fd", ["grr", "olh"]),
]  # fmt: skip


@pytest.mark.parametrize(("protocol", "oracle"), CASES)
def test_estimates_are_unbiased_with_the_stated_fixed_population_variance(protocol, oracle):
    # 400 seeded replications of a fixed population of 2,000 devices.  Each mean is within
    # 4.5 standard errors of the truth (false alarm ~7e-6 per value, ~6e-5 per case); each
    # sample variance within 30% of the formula (relative SD of a variance from 400 draws
    # ~ sqrt(2/400) = 7%, so ~4 SD: false alarm ~1e-4 per value).
    n, reps = 2000, 400
    multi = MultiAttribute(_KS, 1.5, protocol=protocol, oracle=oracle)
    x = _population(n)
    draws = [[], []]
    for r in range(reps):
        for j, e in enumerate(multi.estimate(multi.randomize(x, rng=r))):
            draws[j].append(e.values)
    stated = multi.variance(n, _TRUE)
    for j in range(2):
        arr = np.array(draws[j])
        assert np.all(np.abs(arr.mean(axis=0) - _TRUE[j]) < 4.5 * np.sqrt(stated[j] / reps))
        assert np.all(np.abs(arr.var(axis=0, ddof=1) / stated[j] - 1) < 0.3)


def test_the_stated_variances_are_the_protocols_closed_forms():
    # Written from the definitions: SMP scales counts by d (Horvitz-Thompson), RS+FD[GRR]
    # adds (d - 1)/d of 1/k from the fake values; here d = 2, GRR at epsilon.
    n, eps, d = 1000, 1.5, 2
    for j, k in enumerate(_KS):
        p = math.exp(eps) / (math.exp(eps) + k - 1)
        q = (1 - p) / (k - 1)
        pi = _TRUE[j]
        smp = (pi * p * (d - p) + (1 - pi) * q * (d - q)) / (n * (p - q) ** 2)
        got = MultiAttribute(_KS, eps, protocol="smp").variance(n, _TRUE)[j]
        assert np.allclose(got, smp, rtol=1e-12)
        a, b = p / d + (d - 1) / (d * k), q / d + (d - 1) / (d * k)
        rsfd = (pi * a * (1 - a) + (1 - pi) * b * (1 - b)) / (n * (a - b) ** 2)
        lam = b + (a - b) * pi
        multi = MultiAttribute(_KS, eps, protocol="rs+fd")
        assert np.allclose(multi.variance(n, _TRUE)[j], rsfd, rtol=1e-12)
        iid = lam * (1 - lam) / (n * (a - b) ** 2)
        assert np.allclose(multi.variance(n, _TRUE, population="iid")[j], iid, rtol=1e-12)


def test_the_protocols_agree_in_expectation_and_tallies_add():
    # One population, 200,000 devices: every protocol's estimate within 5 of its own SEs of
    # the truth, hence of each other's (false alarm ~6e-7 per value, fixed seeds).
    x = _population(200_000)
    for protocol in ("spl", "smp", "rs+fd"):
        multi = MultiAttribute(_KS, 2.0, protocol=protocol, oracle="oue")
        a, b = multi.randomize(x[:70_000], rng=1), multi.randomize(x[70_000:], rng=2)
        whole = multi.estimate(multi.tally(a) + multi.tally(b))
        for e, truth in zip(whole, _TRUE, strict=True):
            assert e.n == 200_000
            assert np.all(np.abs(e.values - truth) < 5 * e.se_fixed)


# ---- the adaptive choice


def _hand(protocol: str, eps: float, n: int) -> float:
    """Mean exact variance per value of two yes/no attributes with GRR at uniform."""
    d = 2
    e = eps / d if protocol == "spl" else eps
    p = math.exp(e) / (math.exp(e) + 1)
    q = 1 - p
    if protocol == "smp":
        p, q = p / d, q / d
    elif protocol == "rs+fd":
        p, q = p / d + 0.5 / d, q / d + 0.5 / d
    return (0.5 * p * (1 - p) + 0.5 * q * (1 - q)) / (n * (p - q) ** 2)


@pytest.mark.parametrize("eps", [0.5, 4.0])
def test_choose_multi_picks_the_smallest_variance_of_the_hand_computed_ones(eps):
    n = 10_000
    hand = {p: _hand(p, eps, n) for p in ("spl", "smp", "rs+fd")}
    best = min(hand, key=hand.__getitem__)
    choice = choose_multi([2, 2], eps, n)
    assert choice.multi.protocol == best
    assert choice.variance == pytest.approx(hand[best], rel=1e-9)
    assert choice.multi.epsilon <= eps
    assert best in str(choice).lower()
    assert choice.to_dict()["protocol"] == best
    # the two regimes differ: splitting wins with a large budget, sampling with a small one
    assert best == ("spl" if eps > 2 else "smp")


# ---- bad input


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"ks": [3]}, ParameterError, "`ks`"),
        ({"ks": [3, 1]}, ParameterError, "`ks[1]`"),
        ({"epsilon": 0.0}, ParameterError, "`epsilon`"),
        ({"epsilon": -1.0}, ParameterError, "`epsilon`"),
        ({"protocol": "bogus"}, ParameterError, "`protocol`"),
        ({"oracle": "rappor"}, ParameterError, "`oracle`"),
        ({"oracle": "oue-z", "protocol": "smp"}, ParameterError, "`oracle`"),
        ({"oracle": ["grr"]}, ParameterError, "`oracle`"),
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs, error, names):
    args = {"ks": [3, 4], "epsilon": 1.0, "protocol": "rs+fd", "oracle": "grr"} | kwargs
    with pytest.raises(error, match=re.escape(names)):
        MultiAttribute(args.pop("ks"), args.pop("epsilon"), **args)
    if "oracle" not in kwargs and "protocol" not in kwargs:
        with pytest.raises(error, match=re.escape(names)):
            choose_multi(kwargs.get("ks", [3, 4]), kwargs.get("epsilon", 1.0), 100)


@pytest.mark.parametrize("protocol", ["spl", "smp", "rs+fd"])
def test_bad_values_are_refused_by_name(protocol):
    multi = MultiAttribute([3, 4], 1.0, protocol=protocol)
    with pytest.raises(DataError, match=r"`values\[:, 1\]` must hold integers in 0..3, got"):
        multi.randomize([[0, 4]], rng=1)
    with pytest.raises(DataError, match=r"`values` must be an \(n, d\) array with d = 2"):
        multi.randomize([[0, 1, 2]], rng=1)
    with pytest.raises(DataError, match=r"`values` must be an \(n, d\) array"):
        multi.randomize([0, 1], rng=1)
    other = "smp" if protocol != "smp" else "spl"
    reports = MultiAttribute([3, 4], 1.0, protocol=other).randomize([[0, 1]], rng=1)
    with pytest.raises(DataError, match="`reports` must be the MultiReports"):
        multi.tally(reports)


def test_bad_tallies_and_empty_data_are_refused_by_name():
    multi = MultiAttribute([3, 4], 1.0, protocol="smp")
    with pytest.raises(DataError, match="`data` must hold at least one device"):
        multi.estimate(multi.randomize(np.zeros((0, 2), dtype=int), rng=1))
    bad = MultiTally(multi.key, (np.array([1, 2, 3]), np.array([1, 2])), 5)
    with pytest.raises(DataError, match="`data` attribute 1 must have 4 support counts"):
        multi.estimate(bad)
    over = MultiTally(multi.key, (np.array([1, 2, 9]), np.array([1, 2, 0, 0])), 5)
    with pytest.raises(DataError, match=r"`data` attribute 0 must have 3 support counts in 0..n"):
        multi.estimate(over)
    other = MultiAttribute([3, 4], 1.0, protocol="spl").tally(
        MultiAttribute([3, 4], 1.0, protocol="spl").randomize([[0, 1]], rng=1)
    )
    with pytest.raises(DataError, match="only tallies of"):
        multi.tally(multi.randomize([[0, 1]], rng=1)) + other
