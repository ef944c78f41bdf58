"""What the tests of the memoized longitudinal oracles share (tests/test_longitudinal.py:
L-GRR, L-SUE, L-OUE, L-OSUE; tests/test_loloha.py: LOLOHA): the GRR matrix and the worst
log-ratio of a channel enumerated independently of the closed forms, and the seeded check
of replayed rounds against the stated fixed-population variance."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from deniable.mechanisms import InMemoryMemoStore


def grr_matrix(k: int, p: float) -> np.ndarray:
    """k-ary randomized response: ``p`` on the diagonal, ``(1 - p) / (k - 1)`` elsewhere
    (symmetric, so ``[report, input]`` and ``[input, report]`` alike)."""
    q = (1 - p) / (k - 1)
    return np.full((k, k), q) + np.eye(k) * (p - q)


def log_worst_ratio(ch: np.ndarray) -> float:
    """``ln max_{r, x, x'} P[r | x] / P[r | x']`` by brute force, for ``ch[report, input]``."""
    return max(math.log(row.max() / row.min()) for row in ch)


def check_replayed_rounds(o: Any, values: np.ndarray, reps: int, seed: int) -> np.ndarray:
    """``reps`` fixed populations (the devices ``range(len(values))`` with ``values``), each
    a fresh store, seeded by ``seed``: the second round's estimate (replayed PRRs) has its
    mean within 6 SE of the truth (false alarm ~2e-9 per value) and the variance of value 0
    within the chi-square(reps - 1) band at 1e-6 on each side of ``o.variance(n, truth)``,
    the fixed-population variance.  Returns that variance."""
    n, k = values.size, o.k
    truth = np.bincount(values, minlength=k) / n
    gen = np.random.default_rng(seed)
    est = np.empty((reps, k))
    for r in range(reps):
        store = InMemoryMemoStore()
        o.randomize(values, rng=gen, memo=store, devices=range(n))
        est[r] = o.estimate(o.randomize(values, rng=gen, memo=store, devices=range(n))).values
    var: np.ndarray = o.variance(n, truth)
    z = (est.mean(axis=0) - truth) / np.sqrt(var / reps)
    assert np.max(np.abs(z)) <= 6, z
    lo, hi = stats.chi2.ppf([1e-6, 1 - 1e-6], reps - 1) / (reps - 1)
    assert lo <= est[:, 0].var(ddof=1) / var[0] <= hi
    return var
