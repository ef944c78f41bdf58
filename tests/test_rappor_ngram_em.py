"""RAPPOR n-grams, step 2 (``deniable.oracles._rappor_ngram_decode``): the vectorized
likelihoods and EM against plain references written out here with loops.

* ``_loglik`` (popcounts of packed reports against packed Bloom filters, in row blocks)
  against ``ln P(r | a)`` multiplied out bit by bit for every report and label: equal up to
  the term the docstring drops (the likelihood of an empty Bloom filter), to rounding.
* ``joint_em`` (``deniable.oracles._rappor_ngram_em``) against plain EM written cell by
  cell, on a pair whose joint distribution has every cell positive (the maximum is inside
  the simplex, where EM has one fixed point); the tolerance is derived in the test from the
  certified gap and the likelihood's curvature;
* against the closed form of a categorical channel (the maximum is the channel's inverse
  applied to the empirical joint of the reports), and on the same data summed in other
  orders (devices permuted), including pairs whose maximum has cells at 0: equal to 1e-9.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable.oracles import Rappor, RapporReports
from deniable.oracles import _rappor_ngram_decode as dec
from deniable.oracles import _rappor_ngram_em as em

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


def _curvature(l1: np.ndarray, l2: np.ndarray, pi: np.ndarray) -> float:
    """The smallest eigenvalue of ``mean_d P_d P_d' / den_d^2`` (minus the Hessian of the
    per-device log-likelihood) on the directions that keep ``sum pi = 1``."""
    p1, p2 = np.exp(l1), np.exp(l2)
    q = np.einsum("da,db->dab", p1, p2).reshape(p1.shape[0], -1)
    q = q / (q @ pi.reshape(-1))[:, None]
    h = q.T @ q / p1.shape[0]
    k = h.shape[0]
    basis = np.linalg.qr(np.eye(k) - 1 / k)[0][:, : k - 1]  # orthonormal, sum-zero
    return float(np.linalg.eigvalsh(basis.T @ h @ basis).min())


def test_em_reaches_the_plain_em_fixed_point() -> None:
    # Every cell of JOINT is >= 0.04, so the likelihood's maximum is inside the simplex and
    # plain EM converges to it.  The reference runs to 1e-13 a step at its linear rate rho
    # (measured from its last steps): it is within 1e-13 rho / (1 - rho) of the maximum.
    # joint_em is certified: (L* - L) / D <= 1e-12, and with curvature lam of the
    # per-device log-likelihood on the simplex, |pi - pi*|_2 <= sqrt(2e-12 / lam).
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
    lam = _curvature(l1, l2, ref)
    assert lam > 0
    tol = 1e-13 * rho / (1 - rho) + math.sqrt(2 * em.CERTIFIED / lam)
    got = em.joint_em(l1, l2)
    assert em.gap(l1, l2, got) <= em.CERTIFIED
    assert got.shape == (4, 3) and got.sum() == pytest.approx(1.0, abs=1e-12)
    assert (ref > 0.01).all()  # an interior maximum, as stated
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)
    # and the estimate is the truth to sampling error: 2000 devices, a cell's SE is about
    # sqrt(0.2 / 2000) = 0.01 inflated by the channel; 0.1 is > 5 such SEs
    np.testing.assert_allclose(got, JOINT, rtol=0, atol=0.1)


def _channel_pair(truth: np.ndarray, d: int, keep: float, seed: int) -> tuple:
    """Reports of a categorical channel: each of the two labels is reported as itself with
    probability ``keep``, else as one of the others uniformly; ``l = ln C[report, :]``.
    Returns ``(l1, l2, counts of the report pairs, C)``."""
    gen = np.random.default_rng(seed)
    k1, k2 = truth.shape
    cells = gen.choice(truth.size, size=d, p=truth.reshape(-1))
    a, b = np.divmod(cells, k2)

    def noisy(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        c = np.full((k, k), (1 - keep) / (k - 1))
        np.fill_diagonal(c, keep)
        shift = gen.integers(1, k, x.size)
        r = np.where(gen.random(x.size) < keep, x, (x + shift) % k)
        return r, c

    r1, c1 = noisy(a, k1)
    r2, c2 = noisy(b, k2)
    counts = np.zeros((k1, k2))
    np.add.at(counts, (r1, r2), 1)
    return np.log(c1[r1]), np.log(c2[r2]), counts, (c1, c2)


def test_em_is_the_closed_form_of_a_categorical_channel() -> None:
    # reports r = C x (C known, invertible): the report pairs are categorical with law
    # C1 pi C2'; over all laws the empirical one maximizes the likelihood, so when
    # pi^ = C1^-1 (counts / D) C2^-T lies in the simplex it is the maximum.  The tolerance
    # is the certified gap through the curvature (test above).
    truth = np.array([[0.25, 0.10, 0.05], [0.05, 0.20, 0.05], [0.05, 0.05, 0.20]])
    l1, l2, counts, (c1, c2) = _channel_pair(truth, 20_000, 0.7, seed=8)
    closed = np.linalg.solve(c1, np.linalg.solve(c2, (counts / counts.sum()).T).T)
    assert (closed > 0).all()  # inside the simplex for this seed: the closed form holds
    got = em.joint_em(l1, l2)
    tol = math.sqrt(2 * em.CERTIFIED / _curvature(l1, l2, closed))
    np.testing.assert_allclose(got, closed, rtol=0, atol=tol)


@pytest.mark.parametrize("zeros", [False, True])
@pytest.mark.parametrize("labels", [SECOND, [f"1:{c}{e}" for c in "cd" for e in "abcd"]])
def test_em_does_not_depend_on_the_summation_order(labels: list[str], zeros: bool) -> None:
    # The same devices in three orders sum every step in another order.  Before the
    # certified stop and positive SQUAREM, cells set to exactly 0 by a projection depended
    # on rounding (up to 3e-3 apart on such data).  With ``zeros`` the first label is never
    # sent: its row of the maximum lies on the boundary.  Stated tolerance 1e-9.
    first, _ = _pair(1500, seed=4)
    gen = np.random.default_rng(5)
    truth = gen.integers(1 if zeros else 0, len(FIRST) + 1, 1500)
    first = _reports(FIRST, truth, first.cohorts, seed=7) if zeros else first
    second = _reports(labels, gen.integers(0, len(labels) + 1, 1500), first.cohorts, seed=6)
    l1 = dec._loglik(R, first, dec._masks(R, FIRST))
    l2 = dec._loglik(R, second, dec._masks(R, labels))
    base = em.joint_em(l1, l2)
    assert em.gap(l1, l2, base) <= em.CERTIFIED
    for seed in (1, 2):
        perm = np.random.default_rng(seed).permutation(l1.shape[0])
        np.testing.assert_allclose(em.joint_em(l1[perm], l2[perm]), base, rtol=0, atol=1e-9)


def _em_loops_steps(l1: np.ndarray, l2: np.ndarray, pi: np.ndarray, steps: int) -> np.ndarray:
    """``steps`` plain EM steps from ``pi`` (the reference's update, written out)."""
    p1, p2 = np.exp(l1), np.exp(l2)
    for _ in range(steps):
        den = np.einsum("da,ab,db->d", p1, pi, p2)
        pi = pi * np.einsum("da,db->ab", p1 / den[:, None], p2) / p1.shape[0]
    return pi


@pytest.mark.slow
def test_discovery_pairs_do_not_depend_on_the_summation_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The pairs of test_rappor_ngram's planted case (50,000 six-letter strings, 60% of them
    # three planted ones, the paper's channel): there the old EM, devices permuted, moved
    # a cell by up to 3e-3 (its projection zeroed other cells).  Each pair's joint, devices
    # in two other orders: equal to 1e-9 (stated), every one certified.
    from deniable.oracles import RapporNgram

    ngram = Rappor(m=64, h=2, cohorts=32, f=0.5, p=0.5, q=0.75)
    full = Rappor(m=128, h=2, cohorts=32, f=0.5, p=0.5, q=0.75)
    model = RapporNgram(ngram, full, alphabet="abcdefghijklmnop", gram=2, length=6)
    gen = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnop"))
    values = np.array(["".join(r) for r in letters[gen.integers(0, 16, (50_000, 6))]])
    u, low = gen.random(50_000), 0.0
    for planted, share in (("banana", 0.25), ("peg", 0.2), ("deaf", 0.15)):
        values[(u >= low) & (u < low + share)] = planted
        low += share
    seen: list[tuple[np.ndarray, np.ndarray]] = []

    def keep(l1: np.ndarray, l2: np.ndarray) -> np.ndarray:
        seen.append((l1, l2))
        return em.joint_em(l1, l2)

    monkeypatch.setattr(dec, "joint_em", keep)
    model.discover(model.randomize(values, rng=11))
    assert len(seen) >= 2
    for l1, l2 in seen:
        base = em.joint_em(l1, l2)
        assert em.gap(l1, l2, base) <= em.CERTIFIED
        for seed in (1, 2):
            perm = np.random.default_rng(seed).permutation(l1.shape[0])
            np.testing.assert_allclose(em.joint_em(l1[perm], l2[perm]), base, rtol=0, atol=1e-9)
