"""LOLOHA (Arcolezi, Pinzón, Palamidessi & Gambs 2023): a hash kept per device, L-GRR over
its buckets; exact epsilons by enumeration, the longitudinal bound on the exact joint law of
every value sequence, memoization of the hash and of one PRR per hashed value, seeded
unbiasedness and variance, and bad input."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from _longitudinal import check_replayed_rounds, grr_matrix, log_worst_ratio
from deniable.exceptions import DataError, ParameterError, PrivacyError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import LGRR, LOLOHA, make_oracle, oracle_from_key, oracle_spec

SEEDS = np.array(
    [[0x9E3779B97F4A7C15, 0x632BE59BD9B4E019], [0xD1B54A32D192ED03, 0x8CB92BA72F3D8DD7],
     [0xBF58476D1CE4E5B9, 0x94D049BB133111EB], [3, 5]],
    dtype=np.uint64,
)  # fmt: skip


def _matrices(o: LOLOHA) -> tuple[np.ndarray, np.ndarray]:
    p1, _, p2, _ = o.probabilities
    return grr_matrix(o.g, p1), grr_matrix(o.g, p2)


def _worst(ch: np.ndarray) -> float:
    """The largest log-ratio between two rows of a channel (rows: inputs)."""
    return log_worst_ratio(ch.T)


def _joint(buckets: tuple[int, ...], prr: np.ndarray, irr: np.ndarray) -> np.ndarray:
    """The exact law of the reports of one device whose hashed values are ``buckets``, one
    PRR drawn per distinct bucket and a fresh IRR per report."""
    g, rounds = len(prr), len(buckets)
    out = np.ones([g] * rounds)
    for b in set(buckets):
        times = [t for t, x in enumerate(buckets) if x == b]
        factor = np.zeros([g] * rounds)
        for ys in itertools.product(range(g), repeat=rounds):
            factor[ys] = sum(prr[b, m] * math.prod(irr[m, ys[t]] for t in times) for m in range(g))
        out *= factor
    return out


EXAMPLES = [
    lambda: LOLOHA.from_epsilon(2.0, 5, eps_1=1.0, g=3),
    lambda: LOLOHA.from_epsilon(3.0, 4, eps_1=2.0, g=2),
    lambda: LOLOHA(k=6, g=3, p1=0.9, p2=0.8),
]


@pytest.mark.parametrize("make", EXAMPLES)
def test_epsilons_are_exact_and_tight_by_enumeration(make: Any) -> None:
    """Per hash (a device's seeds), the channel from a value to one report and to its PRR,
    enumerated: each never exceeds the stated epsilon and reaches it when the hash splits
    two values (the hash is independent of the value, so a device is given it)."""
    o = make()
    prr, irr = _matrices(o)
    assert _worst(prr) == pytest.approx(o.epsilon, abs=1e-12)
    assert _worst(irr) == pytest.approx(o.epsilon_irr, abs=1e-12)
    assert _worst(prr @ irr) == pytest.approx(o.epsilon_1, abs=1e-12)
    reached = []
    for seeds in SEEDS:
        h = o.hashed(np.arange(o.k), np.tile(seeds, (o.k, 1)))
        one = (prr @ irr)[h]  # value -> report, under this hash
        kept = prr[h]  # value -> PRR
        assert _worst(one) <= o.epsilon_1 + 1e-12 and _worst(kept) <= o.epsilon + 1e-12
        reached.append(len(set(h.tolist())) > 1)
    assert any(reached)
    split = SEEDS[reached.index(True)]
    h = o.hashed(np.arange(o.k), np.tile(split, (o.k, 1)))
    assert _worst((prr @ irr)[h]) == pytest.approx(o.epsilon_1, abs=1e-12)


def _pattern(seq: tuple[int, ...]) -> tuple[int, ...]:
    """Which rounds share a hashed value (what memoization discloses): first-seen labels."""
    first: dict[int, int] = {}
    return tuple(first.setdefault(x, len(first)) for x in seq)


LONGITUDINAL = [
    *EXAMPLES[:2],
    lambda: LOLOHA.from_epsilon(0.3, 8, eps_1=0.29, g=4),  # an IRR close to the identity
]


@pytest.mark.parametrize("make", LONGITUDINAL)
@pytest.mark.parametrize("rounds", [2, 3])
def test_the_longitudinal_bound_holds_on_every_sequence_of_hashed_values(
    make: Any, rounds: int
) -> None:
    """The exact joint law of ``rounds`` reports for every pair of bucket sequences.

    Two sequences in the same pattern (the same rounds share a bucket), with ``tau``
    distinct buckets: the loss is at most ``longitudinal_epsilon(rounds, values=tau)`` =
    min(tau eps_inf, rounds eps_1) <= g eps_inf, and reaches rounds eps_1 (distinct buckets:
    independent first reports).  Any two sequences: at most rounds eps_irr (the IRRs are
    applied report by report to some PRRs) -- and more than g eps_inf for an IRR close to
    the identity: memoization discloses when the hashed value changes."""
    o = make()
    prr, irr = _matrices(o)
    seqs = list(itertools.product(range(o.g), repeat=rounds))
    law = {s: _joint(s, prr, irr) for s in seqs}
    worst_any = 0.0
    for a in seqs:
        for b in seqs:
            loss = float(np.log(law[a] / law[b]).max())
            worst_any = max(worst_any, loss)
            assert loss <= rounds * o.epsilon_irr + 1e-9
            if _pattern(a) == _pattern(b):
                tau = len(set(a))
                assert loss <= o.longitudinal_epsilon(rounds, values=tau) + 1e-9
                assert loss <= o.g * o.epsilon + 1e-9
    if o.g > rounds:
        apart = tuple(range(rounds))
        shifted = tuple(x + 1 for x in apart)
        reached = float(np.log(law[apart] / law[shifted]).max())
        assert reached == pytest.approx(rounds * o.epsilon_1, abs=1e-9)
    same = float(np.log(law[(0,) * rounds] / law[(1,) * rounds]).max())
    assert same <= o.epsilon + 1e-12
    if o.epsilon < 1:  # the IRR is close to the identity: a change of value shows
        assert worst_any > o.g * o.epsilon


def test_longitudinal_epsilon_counts_hashed_values_up_to_g() -> None:
    o = LOLOHA.from_epsilon(2.0, 50, eps_1=0.5, g=3)
    assert o.longitudinal_epsilon(values=2) == pytest.approx(2 * o.epsilon)
    assert o.longitudinal_epsilon(values=40) == pytest.approx(3 * o.epsilon)  # at most g
    assert o.longitudinal_epsilon(2, values=40) == pytest.approx(2 * o.epsilon_1)
    assert o.epsilon_inf == o.epsilon


def test_the_composed_channel_and_parameters_are_l_grr_over_the_buckets() -> None:
    o = LOLOHA.from_epsilon(2.0, 30, eps_1=1.0, g=5)
    grr = LGRR.from_epsilon(2.0, 5, eps_1=1.0)
    assert (o.p1, o.p2) == (grr.p1, grr.p2)
    assert o.epsilon <= 2.0 and o.epsilon_1 <= 1.0
    # the default g: the least variance near e^eps_1 + 1 (here e + 1 = 3.7: 3 or 4)
    best = LOLOHA.from_epsilon(2.0, 30, eps_1=1.0)
    assert best.g in (3, 4)
    for g in range(2, 12):
        other = LOLOHA.from_epsilon(2.0, 30, eps_1=1.0, g=g)
        assert best.variance_at_zero <= other.variance_at_zero + 1e-12


# --- memoization -----------------------------------------------------------------------------


def test_a_hashed_value_keeps_one_prr_and_the_hash_survives_a_restart() -> None:
    """With an IRR that keeps its input (p2 = 1 - 2**-40), a report is its PRR: two values
    of one bucket give the same report, and the store holds one PRR per distinct bucket."""
    o = LOLOHA(k=40, g=2, p1=0.75, p2=1 - 2.0**-40)
    store = InMemoryMemoStore()
    gen = np.random.default_rng(5)
    devices = np.arange(300)
    first = o.randomize(np.zeros(300, dtype=int), rng=gen, memo=store, devices=devices)
    seeds = first[:, :2]
    assert len({tuple(s) for s in seeds.tolist()}) == 300  # a hash per device
    reports = [first]
    for value in range(1, 40):
        reports.append(o.randomize(np.full(300, value), rng=gen, memo=store, devices=devices))
    restarted = LOLOHA(k=40, g=2, p1=0.75, p2=0.9)  # another IRR, the same PRRs
    reports.append(restarted.randomize(np.full(300, 7), rng=gen, memo=store, devices=devices))
    for r in reports:
        np.testing.assert_array_equal(r[:, :2], seeds)  # the hash is kept
    h = np.stack([o.hashed(np.full(300, x), seeds) for x in range(40)], axis=1)
    y = np.stack([r[:, 2] for r in reports[:40]], axis=1).astype(np.int64)
    for d in range(300):
        for b in range(2):
            got = set(y[d, h[d] == b].tolist())
            assert len(got) <= 1, (d, b, got)  # one bucket, one PRR, one report
    kept = [store.lookup(f"loloha/prr/{b}", devices, mechanism=o.permanent_key) for b in range(2)]
    for d in range(300):
        assert sum(int(k[d] >= 0) for k in kept) == len(set(h[d].tolist()))


def test_another_permanent_stage_is_refused() -> None:
    store = InMemoryMemoStore()
    LOLOHA.from_epsilon(2.0, 10, g=4).randomize([1], rng=1, memo=store, devices=[5])
    LOLOHA.from_epsilon(2.0, 10, eps_1=0.5, g=4).randomize([3], rng=2, memo=store, devices=[5])
    for other in (LOLOHA.from_epsilon(2.0, 10, g=5), LOLOHA.from_epsilon(3.0, 10, g=4)):
        with pytest.raises(PrivacyError, match="second PRR"):
            other.randomize([1], rng=3, memo=store, devices=[5])
    LOLOHA.from_epsilon(2.0, 10, g=5).randomize([1], rng=3, memo=store, devices=[6])


def test_replayed_rounds_are_unbiased_with_the_stated_variance() -> None:
    """200 fixed populations of 1 000 devices (seeded), each a fresh store: the second
    round's estimate (replayed PRRs) has mean within 6 SE of the truth (false alarm ~2e-9
    per value) and the variance of the commonest value within the chi-square(199) band at
    1e-6 on each side of the stated fixed-population variance."""
    o = LOLOHA.from_epsilon(2.0, 6, eps_1=1.2, g=3)
    values = np.repeat(np.arange(6), [400, 250, 150, 100, 100, 0])
    check_replayed_rounds(o, values, reps=200, seed=13)


def test_first_reports_are_unbiased() -> None:
    """One round of 200 000 first reports: each estimate within 6 SE (false alarm ~2e-9 per
    value)."""
    o = LOLOHA.from_epsilon(1.0, 8)
    values = np.random.default_rng(2).choice(8, size=200_000, p=[0.3, 0.2, 0.2, 0.1] + [0.05] * 4)
    truth = np.bincount(values, minlength=8) / values.size
    est = o.estimate(o.randomize(values, rng=7))
    assert np.max(np.abs(est.values - truth) / np.sqrt(o.variance(values.size, truth))) <= 6


def test_registered_with_a_spec_and_a_key() -> None:
    o = make_oracle("loloha", 2.0, 20)
    assert isinstance(o, LOLOHA) and oracle_from_key(o.key) == o
    spec = oracle_spec(o)
    assert spec["algorithm"] == "loloha/1" and spec["hash"]["family"] == "multiply-add-shift/1"
    assert spec["constants"]["buckets"] == o.g


# --- bad input -------------------------------------------------------------------------------


def test_bad_input_is_refused_naming_the_parameter() -> None:
    with pytest.raises(ParameterError, match=r"`g`.*got 1"):
        LOLOHA.from_epsilon(2.0, 8, g=1)
    with pytest.raises(ParameterError, match=r"`g`.*between 2 and k = 8.*got 9"):
        LOLOHA.from_epsilon(2.0, 8, g=9)
    with pytest.raises(ParameterError, match=r"`g`.*between 2 and k = 4.*got 5"):
        LOLOHA(k=4, g=5, p1=0.5, p2=0.5)
    with pytest.raises(ParameterError, match=r"`g`.*got 1"):
        LOLOHA(k=4, g=1, p1=0.9, p2=0.9)
    for eps_1 in (2.0, 3.0):
        with pytest.raises(ParameterError, match=r"`eps_1`.*less than `eps_inf` = 2\.0.*got"):
            LOLOHA.from_epsilon(2.0, 8, eps_1=eps_1)
    with pytest.raises(ParameterError, match="`p1`"):
        LOLOHA(k=8, g=4, p1=0.2, p2=0.9)  # not above 1/g
    o = LOLOHA.from_epsilon(2.0, 4)
    with pytest.raises(DataError, match="`values`"):
        o.randomize([4], rng=1)
    with pytest.raises(DataError, match="`reports`"):
        o.tally(np.zeros((2, 2), dtype=np.uint64))
    store = InMemoryMemoStore()
    with pytest.raises(DataError, match="`devices`"):
        o.randomize([1, 2], rng=1, memo=store, devices=[1, 1])
    assert (store.lookup("loloha/seed/0", np.array([1]), mechanism="x") < 0).all()
