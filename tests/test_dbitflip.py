"""dBitFlipPM (Ding, Kulkarni & Yekhanin 2017): the exact epsilon of one report by
enumeration, the randomizer against the enumerated channel, the estimator's unbiasedness
and variance by seeded simulation, memoization per device, and bad input."""

from __future__ import annotations

import itertools
import math
import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import DBitFlipMemo, DBitFlipPM, DBitFlipReports


def enumerated_channel(
    mech: DBitFlipPM,
) -> dict[tuple[tuple[int, ...], tuple[int, ...]], list[float]]:
    """``P[report | x]`` for every ordered tuple of ``d`` distinct buckets and bit pattern,
    from the definition (uniform ordered sample, independent bits), for every value."""
    b, d, k = mech.buckets, mech.d, mech.k
    p, q = mech.probabilities
    orders = list(itertools.permutations(range(b), d))
    out = {}
    for order in orders:
        for bits in itertools.product((0, 1), repeat=d):
            row = []
            for x in range(k):
                own = x * b // k
                prob = 1 / len(orders)
                for j, bit in zip(order, bits, strict=True):
                    one = p if j == own else q
                    prob *= one if bit else 1 - one
                row.append(prob)
            out[(order, bits)] = row
    return out


def worst_log_ratio(channel: Mapping[Any, list[float]]) -> float:
    return max(math.log(max(row) / min(row)) for row in channel.values())


@pytest.mark.parametrize(
    ("epsilon", "k", "b", "d"),
    [(1.0, 4, 4, 1), (2.0, 4, 4, 2), (0.7, 6, 3, 3), (3.0, 8, 4, 2), (1.5, 5, 5, 1)],
)
def test_one_report_epsilon_is_exact_by_enumeration(epsilon: float, k: int, b: int, d: int) -> None:
    mech = DBitFlipPM(epsilon, k=k, b=b, d=d)
    p, q = mech.probabilities
    assert p / q <= math.exp(epsilon / 2) * (1 + 1e-15)
    realised = worst_log_ratio(enumerated_channel(mech))
    # tight: eps for d >= 2 (two sampled buckets differ), eps / 2 for d = 1
    expected = epsilon if d >= 2 else epsilon / 2
    assert realised == pytest.approx(expected, abs=1e-12)
    assert mech.report_epsilon == pytest.approx(realised, abs=1e-12)
    assert mech.implemented_epsilon <= mech.report_epsilon
    assert mech.implemented_epsilon == pytest.approx(realised, abs=1e-12)


def test_randomizer_realises_the_enumerated_channel() -> None:
    mech = DBitFlipPM(2.0, k=6, b=3, d=2)
    channel = enumerated_channel(mech)
    cells = list(channel)
    index = {cell: i for i, cell in enumerate(cells)}
    n = 60_000
    for x in (0, 2, 5):
        reports = mech.randomize(np.full(n, x), rng=20260101 + x)
        counts = np.zeros(len(cells))
        for row, bits in zip(reports.buckets, reports.bits, strict=True):
            counts[index[(tuple(int(j) for j in row), tuple(int(b) for b in bits))]] += 1
        expected = n * np.array([channel[cell][x] for cell in cells])
        # false-alarm rate 1e-4 per value
        assert stats.chisquare(counts, expected).pvalue > 1e-4


def test_sampled_buckets_are_distinct_and_uniform() -> None:
    mech = DBitFlipPM(1.0, k=10, b=10, d=4)
    sampled = mech.sample_buckets(20_000, rng=7)
    assert all(len(set(row.tolist())) == 4 for row in sampled)
    counts = np.bincount(sampled.reshape(-1), minlength=10)
    # each bucket is sampled with probability d / b = 0.4; false-alarm rate 1e-4
    assert stats.chisquare(counts).pvalue > 1e-4


def test_estimator_is_unbiased_and_its_variance_exact() -> None:
    mech = DBitFlipPM(1.0, k=12, b=6, d=2)
    gen = np.random.default_rng(20260102)
    values = gen.integers(0, 12, size=1_500)
    values[:600] = 0  # bucket 0 holds a large share
    truth = np.bincount(values * 6 // 12, minlength=6) / values.size
    var = mech.variance(values)
    reps = 300
    shares = np.empty((reps, 6))
    ses = np.empty((reps, 6))
    for r in range(reps):
        est = mech.estimate(mech.randomize(values, rng=1000 + r))
        shares[r], ses[r] = est.shares, est.se
    # mean of 300 estimates within 4.4 of its own SEs of the truth: false-alarm rate
    # about 6 * 1e-5 over the six buckets
    z = (shares.mean(axis=0) - truth) / np.sqrt(var / reps)
    assert np.all(np.abs(z) < 4.4), z
    # the sample variance against the exact one: chi-square bounds at 1e-4 per bucket
    ratio = shares.var(axis=0, ddof=1) / var
    lo, hi = stats.chi2.ppf([5e-5, 1 - 5e-5], reps - 1) / (reps - 1)
    assert np.all((lo < ratio) & (ratio < hi)), ratio
    # `se` is for devices sampled from a population: the variance adds the spread of the
    # devices' buckets, pi (1 - pi) / n, to the fixed population's
    assert np.allclose(np.mean(ses**2, axis=0), var + truth * (1 - truth) / 1_500, rtol=0.02)


def test_tallies_add_and_reports_tally_agree() -> None:
    mech = DBitFlipPM(2.0, k=8, b=4, d=2)
    one = mech.randomize([0, 1, 2, 3, 4], rng=1)
    two = mech.randomize([7, 7, 6], rng=2)
    both = DBitFlipReports(
        np.concatenate([one.buckets, two.buckets]), np.concatenate([one.bits, two.bits])
    )
    total = mech.tally(one) + mech.tally(two)
    assert total == mech.tally(both)
    assert np.array_equal(mech.estimate(total).shares, mech.estimate(both).shares)
    # the tally counts: per bucket the reports that sampled it, then those with bit 1
    counts = np.asarray(total.counts)
    assert counts[-1] == 8 and counts[:4].sum() == 8 * 2


def test_memo_replays_a_bucket_forever_and_draws_fresh_for_a_new_one() -> None:
    mech = DBitFlipPM(1.0, k=16, b=4, d=2)
    memo = DBitFlipMemo(mech)
    devices = list(range(2_000))
    first = memo.report(devices, np.zeros(2_000, dtype=int), rng=1)
    for day in range(2, 12):  # values 0..3 are all bucket 0: the same report every day
        again = memo.report(devices, np.full(2_000, day % 4), rng=day)
        assert np.array_equal(again.buckets, first.buckets)
        assert np.array_equal(again.bits, first.bits)
    assert {memo.distinct_buckets(d) for d in devices} == {1}
    moved = memo.report(devices, np.full(2_000, 15), rng=99)  # bucket 3: fresh bits
    assert np.array_equal(moved.buckets, first.buckets)  # buckets are sampled once
    # the fresh bit for a sampled bucket 3 is 1 with probability p (own bucket now) and
    # for bucket 0 with probability q; false-alarm rate about 1e-4 each (binomial test)
    p, q = mech.probabilities
    own = moved.buckets == 3
    assert stats.binomtest(int(moved.bits[own].sum()), int(own.sum()), p).pvalue > 1e-4
    was = moved.buckets == 0
    assert stats.binomtest(int(moved.bits[was].sum()), int(was.sum()), q).pvalue > 1e-4
    back = memo.report(devices, np.full(2_000, 2), rng=100)  # back to bucket 0: replayed
    assert np.array_equal(back.bits, first.bits)
    assert memo.distinct_buckets(0) == 2
    assert memo.realized_epsilon(0) == 2 * mech.report_epsilon == 2.0
    assert memo.realized_epsilon("never seen") == 0.0


def test_realized_epsilon_counts_distinct_buckets_not_days() -> None:
    mech = DBitFlipPM(2.0, k=8, b=8, d=3)
    memo = DBitFlipMemo(mech)
    for day, value in enumerate([0, 0, 1, 0, 1, 5, 5, 5, 1]):
        memo.report(["phone"], [value], rng=day)
    assert memo.distinct_buckets("phone") == 3
    assert memo.realized_epsilon("phone") == pytest.approx(3 * 2.0)
    assert mech.longitudinal_bound == pytest.approx(8 * 2.0)
    assert DBitFlipPM(2.0, k=8, b=8, d=1).longitudinal_epsilon(3) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"epsilon": 1.0, "k": 8, "b": 4, "d": 5}, ParameterError, r"`d` must be .*4\], got 5"),
        ({"epsilon": 0.0, "k": 8}, ParameterError, "`epsilon`"),
        ({"epsilon": -1.0, "k": 8}, ParameterError, "`epsilon`"),
        ({"epsilon": 1.0, "k": 8, "b": 9}, ParameterError, r"`b` must be .*8\], got 9"),
        ({"epsilon": 1.0, "k": 1}, ParameterError, "`k`"),
        ({"epsilon": 1.0, "k": 8, "d": 0}, ParameterError, "`d`"),
    ],
)
def test_bad_parameters_are_refused_by_name(
    kwargs: dict[str, Any], exc: type[Exception], match: str
) -> None:
    with pytest.raises(exc, match=match):
        DBitFlipPM(**kwargs)


def test_values_outside_the_domain_are_refused() -> None:
    mech = DBitFlipPM(1.0, k=8, b=4, d=2)
    for bad in ([0, 8], [-1], [0.5]):
        with pytest.raises(DataError, match="`values`"):
            mech.randomize(bad, rng=1)
    memo = DBitFlipMemo(mech)
    with pytest.raises(DataError, match="`values`"):
        memo.report(["a"], [8], rng=1)
    assert memo.distinct_buckets("a") == 0  # nothing stored on a refusal
    with pytest.raises(DataError, match="`devices`"):
        memo.report(["a", "a"], [1, 2], rng=1)


def test_foreign_tallies_and_malformed_reports_are_refused() -> None:
    mech = DBitFlipPM(1.0, k=8, b=4, d=2)
    other = DBitFlipPM(1.0, k=8, b=4, d=3)
    with pytest.raises(DataError, match="not of"):
        mech.estimate(other.tally(other.randomize([1, 2], rng=1)))
    with pytest.raises(DataError, match="cells"):
        mech.estimate(Tally([1, 2, 3]))
    good = mech.randomize([1, 2], rng=1)
    with pytest.raises(DataError, match="distinct"):
        mech.tally(DBitFlipReports(np.array([[1, 1], [0, 2]]), good.bits))
    with pytest.raises(DataError, match=r"bucket ids in 0\.\.3"):
        mech.tally(DBitFlipReports(np.array([[1, 4], [0, 2]]), good.bits))


def test_a_memo_survives_pickling_and_refuses_unhashable_devices() -> None:
    memo = DBitFlipMemo(DBitFlipPM(1.0, k=8, b=4, d=2))
    first = memo.report(["a", "b"], [0, 7], rng=1)
    restored = pickle.loads(pickle.dumps(memo))  # a restart with the state kept
    again = restored.report(["a", "b"], [1, 6], rng=2)
    assert np.array_equal(again.bits, first.bits)
    assert np.array_equal(again.buckets, first.buckets)
    with pytest.raises(ParameterTypeError, match="`devices`"):
        memo.report([["a"]], [0], rng=1)
    with pytest.raises(ParameterTypeError, match="`devices`"):
        memo.report("a", [0], rng=1)
