"""What bench_peers.py and its peers share: the seed, epsilon, the populations and the
closed forms of the mechanisms (their support probabilities, Wang et al.'s variance, the
expected error)."""

from __future__ import annotations

import math

import numpy as np

#: The seed of the populations and of our seeded runs (apart: see ``population``).
SEED = 20261201
EPSILON = 1.0
#: The largest list of report vectors a peer's API makes us hold (multi-freq-ldpy UE).
MEMORY_CAP = 1 << 30
#: The peer libraries, in table order.
LIBRARIES = ("pure-LDP", "multi-freq-ldpy", "OpenDP", "diffprivlib")


def population(k: int, n: int) -> np.ndarray:
    """``n`` values with frequencies proportional to ``1 / (j + 1)`` (seeded per k)."""
    gen = np.random.default_rng((SEED, 1, k))  # apart from the randomizers' seeds
    weights = 1 / np.arange(1, k + 1)
    return gen.choice(k, size=n, p=weights / weights.sum()).astype(np.int64)


def textbook_pq(key: str, k: int, epsilon: float, g: int = 0) -> tuple[float, float]:
    """Support probabilities ``(p, q)`` of each mechanism at ``epsilon`` (Wang et al. 2017;
    Hadamard response: Acharya, Sun & Zhang 2019; the one-bit Hadamard mechanism of Cormode,
    Kulkarni & Srivastava 2018 has the same)."""
    e = math.exp(epsilon)
    if key in ("binary", "grr"):
        return e / (e + k - 1), 1 / (e + k - 1)
    if key == "sue":
        half = math.exp(epsilon / 2)
        return half / (half + 1), 1 / (half + 1)
    if key == "oue":
        return 0.5, 1 / (e + 1)
    if key == "olh":
        return e / (e + g - 1), 1 / g
    if key == "hr":
        return e / (e + 1), 0.5
    raise ValueError(key)


def wang_variance(p: float, q: float, n: int, freqs: np.ndarray) -> np.ndarray:
    """Var of ``(c / n - q) / (p - q)`` for a fixed population with frequencies ``freqs``,
    in the form of Wang et al. (2017, eq. 2 over n**2): ``q (1 - q) / (n (p - q)^2) + f (1 -
    p - q) / (n (p - q))``."""
    return q * (1 - q) / (n * (p - q) ** 2) + freqs * (1 - p - q) / (n * (p - q))


def expected_mae(variances: np.ndarray) -> float:
    """``mean_j E|X_j|`` for ``X_j`` normal with mean 0: ``sqrt(2 / pi) sd_j``."""
    return float(np.mean(math.sqrt(2 / math.pi) * np.sqrt(variances)))


def unbiased(counts: np.ndarray, n: int, p: float, q: float) -> np.ndarray:
    """``(c / n - q) / (p - q)``: the estimate a peer without an estimator gets."""
    return (np.asarray(counts, dtype=float) / n - q) / (p - q)
