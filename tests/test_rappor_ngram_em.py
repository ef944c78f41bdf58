"""RAPPOR n-grams, step 2 (``deniable.oracles._rappor_ngram_decode``): the vectorized
likelihoods and EM against plain references written out here with loops.

* ``_loglik`` (popcounts of packed reports against packed Bloom filters, in row blocks)
  against ``ln P(r | a)`` multiplied out bit by bit for every report and label: equal up to
  the term the docstring drops (the likelihood of an empty Bloom filter), to rounding.
* ``_em`` against the same SQUAREM in plain numpy (bit for bit), and against plain EM written
  cell by cell, on a pair whose joint distribution has every cell positive (the maximum is
  inside the simplex, where EM has one fixed point); the tolerance is derived in the test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable.oracles import Rappor, RapporReports
from deniable.oracles import _rappor_ngram_decode as dec

# a strong channel (f = 0: no PRR noise) so that a few thousand devices pin the joint down
R = Rappor(m=32, h=2, cohorts=4, f=0.0, p=0.2, q=0.8)
FIRST = ["0:aa", "0:ab", "0:ba"]
SECOND = ["1:cc", "1:cd"]
# the true joint of (first, second) n-gram, "other" included (rows: FIRST + other)
JOINT = np.array([[0.20, 0.08, 0.04], [0.06, 0.18, 0.05], [0.07, 0.05, 0.12], [0.05, 0.04, 0.06]])


def _reports(labels: list[str], truth: np.ndarray, cohorts: np.ndarray, seed: int) -> RapporReports:
    """One report each: ``labels[truth[d]]`` (or a fresh string for "other") in its cohort,
    through the PRR and IRR."""
    names = [labels[t] if t < len(labels) else f"other{d}" for d, t in enumerate(truth.tolist())]
    gen = np.random.default_rng(seed)
    bloom = R.bloom(names, cohorts)
    return RapporReports(cohorts, R.instantaneous(R.permanent(bloom, rng=gen), rng=gen))


def _pair(d: int, seed: int) -> tuple[RapporReports, RapporReports]:
    gen = np.random.default_rng(seed)
    cells = gen.choice(JOINT.size, size=d, p=JOINT.reshape(-1))
    a, b = np.divmod(cells, JOINT.shape[1])
    cohorts = gen.integers(0, R.cohorts, d)
    return _reports(FIRST, a, cohorts, seed + 1), _reports(SECOND, b, cohorts, seed + 2)


def _loglik_loops(reports: RapporReports, labels: list[str]) -> np.ndarray:
    """``ln P(r_d | a)`` multiplied out bit by bit, then "other" (each bit set with ``b q*
    + (1 - b) p*``), minus the likelihood of an empty Bloom filter (the dropped term)."""
    ps, qs = R.p_star, R.q_star
    b = 1 - (1 - 1 / R.m) ** R.h
    po = b * qs + (1 - b) * ps
    bits = np.unpackbits(reports.bits, axis=1, bitorder="little")[:, : R.m]
    out = np.empty((len(reports), len(labels) + 1))
    for d in range(len(reports)):
        c = int(reports.cohorts[d])
        empty = sum(math.log(ps if bits[d, i] else 1 - ps) for i in range(R.m))
        for k, label in enumerate(labels):
            bloom = R.bloom([label], [c])[0]
            total = 0.0
            for i in range(R.m):
                rate = qs if bloom[i] else ps
                total += math.log(rate if bits[d, i] else 1 - rate)
            out[d, k] = total - empty
        other = sum(math.log(po if bits[d, i] else 1 - po) for i in range(R.m))
        out[d, -1] = other - empty
    return out


def _em_loops(l1: np.ndarray, l2: np.ndarray, tol: float, iterations: int) -> np.ndarray:
    """Plain EM (no acceleration), cell by cell: ``pi_ab <- mean_d pi_ab P(r1_d | a) P(r2_d
    | b) / sum_a'b' pi_a'b' P(r1_d | a') P(r2_d | b')``, until no cell moves by ``tol``."""
    p1, p2 = np.exp(l1), np.exp(l2)
    k1, k2 = p1.shape[1], p2.shape[1]
    pi = np.full((k1, k2), 1 / (k1 * k2))
    for _ in range(iterations):
        den = np.zeros(p1.shape[0])
        for a in range(k1):
            for b in range(k2):
                den += pi[a, b] * p1[:, a] * p2[:, b]
        new = np.empty_like(pi)
        for a in range(k1):
            for b in range(k2):
                new[a, b] = pi[a, b] * float(np.mean(p1[:, a] * p2[:, b] / den))
        moved = float(np.abs(new - pi).max())
        pi = new
        if moved < tol:
            return pi
    raise AssertionError("the reference EM did not converge")


def test_loglik_is_the_likelihood_multiplied_out() -> None:
    first, _ = _pair(300, seed=1)
    want = _loglik_loops(first, FIRST)
    got = dec._loglik(R, first, dec._masks(R, FIRST))
    # the same sums in another order: rounding only (|ln P| < 40 here, 1e-12 relative)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
    # and bit for bit the 0/1 products it replaces (the bits unpacked, one product a cohort)
    bits = np.unpackbits(first.bits, axis=1, bitorder="little")[:, : R.m].astype(np.float64)
    x = R.design_matrix(FIRST).astype(np.float64)
    on = math.log(R.q_star / R.p_star)
    off = math.log((1 - R.q_star) / (1 - R.p_star))
    for c in range(R.cohorts):
        at = first.cohorts == c
        plain = (bits[at] @ x[c]) * (on - off) + x[c].sum(axis=0) * off
        assert np.array_equal(got[at, :-1], plain)


def test_loglik_row_blocks_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = _pair(500, seed=2)
    whole = dec._loglik(R, first, dec._masks(R, FIRST))
    monkeypatch.setattr(dec, "_ROWS", 7)  # blocks of 2 reports
    assert np.array_equal(dec._loglik(R, first, dec._masks(R, FIRST)), whole)


@pytest.mark.parametrize("factored", [False, True])
def test_em_reaches_the_plain_em_fixed_point(
    factored: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every cell of JOINT is >= 0.04, so the likelihood's maximum is inside the simplex and
    # plain EM and SQUAREM converge to the same point.  The reference runs to 1e-13 a
    # step; _em stops when a SQUAREM cycle moves no cell by more than 1e-6.  A cycle does
    # at least the work of two plain EM steps (it keeps the second one unless the
    # extrapolation does better), so at EM's linear rate rho the distance left is at most
    # about 1e-6 rho^2 / (1 - rho^2); rho is measured from the reference's last steps, and
    # the bound is doubled for the extrapolation's own error.
    first, second = _pair(2000, seed=3)
    l1 = dec._loglik(R, first, dec._masks(R, FIRST))
    l2 = dec._loglik(R, second, dec._masks(R, SECOND))
    l1, l2 = l1 - l1.max(axis=1, keepdims=True), l2 - l2.max(axis=1, keepdims=True)
    ref = _em_loops(l1, l2, tol=1e-13, iterations=20_000)
    near = _em_loops(l1, l2, tol=1e-7, iterations=20_000)
    one = _em_loops_steps(l1, l2, near, 1)
    two = _em_loops_steps(l1, l2, near, 2)
    rho = float(np.abs(two - one).max() / np.abs(one - near).max())
    assert 0 < rho < 0.99
    tol = 2 * 1e-6 * rho**2 / (1 - rho**2)
    got = dec._em(l1, l2)
    assert got.shape == (4, 3) and got.sum() == pytest.approx(1.0, abs=1e-12)
    assert (ref > 0.01).all()  # an interior maximum, as stated
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)
    # and the estimate is the truth to sampling error: 2000 devices, a cell's SE is about
    # sqrt(0.2 / 2000) = 0.01 inflated by the channel; 0.1 is > 5 such SEs
    np.testing.assert_allclose(got, JOINT, rtol=0, atol=0.1)


def _em_loops_steps(l1: np.ndarray, l2: np.ndarray, pi: np.ndarray, steps: int) -> np.ndarray:
    """``steps`` plain EM steps from ``pi`` (the reference's update, written out)."""
    p1, p2 = np.exp(l1), np.exp(l2)
    for _ in range(steps):
        den = np.einsum("da,ab,db->d", p1, pi, p2)
        pi = pi * np.einsum("da,db->ab", p1 / den[:, None], p2) / p1.shape[0]
    return pi


def _squarem_plain(l1: np.ndarray, l2: np.ndarray) -> np.ndarray:
    """The SQUAREM cycle of ``_em``'s docstring in its plainest numpy: every step's
    log-likelihood, numpy's own row sums."""
    p1 = np.exp(l1 - l1.max(axis=1, keepdims=True))
    p2 = np.exp(l2 - l2.max(axis=1, keepdims=True))
    d = p1.shape[0]

    def step(pi: np.ndarray) -> tuple[np.ndarray, float]:
        den = ((p1 @ pi) * p2).sum(axis=1)
        return pi * ((p1 / den[:, None]).T @ p2) / d, float(np.log(den).sum())

    pi = np.full((p1.shape[1], p2.shape[1]), 1 / (p1.shape[1] * p2.shape[1]))
    for _ in range(2000):
        one, _ = step(pi)
        two, ll_two = step(one)
        r, w = one - pi, two - 2 * one + pi
        new = two
        if float(np.abs(w).max()) > 0:
            a = min(-1.0, -math.sqrt(float((r * r).sum()) / float((w * w).sum())))
            jump = np.maximum(pi - 2 * a * r + a * a * w, 0.0)
            cand, ll_cand = step(jump / jump.sum())
            if ll_cand >= ll_two:
                new = cand
        done = float(np.abs(new - pi).max()) < 1e-6
        pi = new
        if done:
            break
    return pi


@pytest.mark.parametrize("labels", [SECOND, [f"1:{c}{e}" for c in "cd" for e in "abcd"]])
def test_em_is_the_plain_squarem_bit_for_bit(labels: list[str]) -> None:
    # the same arithmetic in the same order: equal to the last bit, with fewer than 8
    # columns (row sums added column by column) and with 8 or more (numpy's row sum).
    # Bit for bit matters: SQUAREM zeroes cells by its projection and which ones depends on
    # rounding, so a different summation order may stop elsewhere.
    first, _ = _pair(1500, seed=4)
    gen = np.random.default_rng(5)
    second = _reports(labels, gen.integers(0, len(labels) + 1, 1500), first.cohorts, seed=6)
    l1 = dec._loglik(R, first, dec._masks(R, FIRST))
    l2 = dec._loglik(R, second, dec._masks(R, labels))
    assert l2.shape[1] in (3, 9)
    assert np.array_equal(dec._em(l1, l2), _squarem_plain(l1, l2))
