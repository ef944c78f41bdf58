"""Exact samplers on the integers from fair bits (Canonne, Kamath & Steinke 2020,
Algorithms 1-3): uniform integers, rational Bernoulli trials, Bernoulli(exp(-gamma)), the
discrete Laplace and the discrete Gaussian.

Only fair 64-bit words (:func:`deniable.randomness.random_words`), rational comparisons and
integer arithmetic are used: no float is ever sampled, so the floating-point attacks of
Mironov (2012) do not apply.  Integers live in int64 arrays while every intermediate stays
below 2**62, and in object arrays of Python ints otherwise; every loop below is a rejection
loop over a whole batch.  The mechanisms that use these samplers are in
``_noise_discrete`` (re-exported by ``_noise``).

Reference: Canonne, Kamath & Steinke (2020), "The discrete Gaussian for differential
privacy", NeurIPS 2020, Algorithms 1-3.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError
from deniable.randomness import random_words

__all__ = [
    "bernoulli_exp",
    "bernoulli_exp_unit",
    "bernoulli_ratio",
    "discrete_gaussian",
    "discrete_laplace",
    "geometric_e",
    "to_int64",
    "uniform_below",
]

_SMALL = 1 << 62


def _compact(a: Any) -> Any:
    """An object array of Python ints as int64 when all entries fit, else unchanged."""
    if a.dtype == object and (a.size == 0 or max(abs(int(x)) for x in a.flat) < _SMALL):
        return a.astype(np.int64)
    return a


def _big(a: Any) -> Any:
    return a if a.dtype == object else a.astype(object)


def _mul(a: Any, b: Any) -> Any:
    """Elementwise product without overflow (object arrays when int64 could overflow)."""
    if a.dtype != object and b.dtype != object and a.size:
        bound = int(np.max(np.abs(a))) * int(np.max(np.abs(b)))
        if bound < _SMALL:
            return a * b
    return _compact(_big(a) * _big(b))


def _bit_length64(b: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    e = np.frexp(b.astype(np.float64))[1].astype(np.int64)
    # a float rounding b up to a power of two overstates the length by one
    return e - (np.left_shift(np.int64(1), e - 1) > b).astype(np.int64)


def uniform_below(rng: Any, bound: Any) -> Any:
    """Exact uniform integers in ``[0, bound_i)`` (``bound_i >= 1``), by rejection: draw
    ``bit_length(bound_i)`` fair bits and retry the draws that land at or above the bound."""
    bound = _compact(bound)
    out = np.zeros(bound.shape, dtype=bound.dtype)
    pending = np.arange(bound.size)
    while pending.size:
        b = bound[pending]
        if b.dtype != object:
            bits = _bit_length64(b)
            draw = (random_words(rng, b.size) >> (64 - bits).astype(np.uint64)).astype(np.int64)
        else:
            bits = np.array([int(x).bit_length() for x in b], dtype=np.int64)
            n_words = -(-int(bits.max()) // 64)
            words = random_words(rng, b.size * n_words).reshape(n_words, b.size).astype(object)
            acc = np.zeros(b.size, dtype=object)
            for j in range(n_words):
                acc = acc + (words[j] << (64 * j))
            draw = acc >> (64 * n_words - bits).astype(object)
        ok = draw < b
        out[pending[ok]] = draw[ok]
        pending = pending[~ok]
    return out


def bernoulli_ratio(rng: Any, num: Any, den: Any) -> npt.NDArray[np.bool_]:
    """Exact Bernoulli(num_i / den_i) trials (0 <= num_i <= den_i)."""
    return np.asarray(uniform_below(rng, den) < num, dtype=np.bool_)


def bernoulli_exp_unit(rng: Any, num: Any, den: Any) -> npt.NDArray[np.bool_]:
    """Exact Bernoulli(exp(-num_i / den_i)) for ``0 <= num_i / den_i <= 1`` (CKS Alg. 1):
    count trials ``A_k ~ Bernoulli(gamma / k)``, k = 1, 2, ..., up to the first failure;
    return 1 when that failure comes at an odd k."""
    out = np.zeros(num.shape, dtype=np.bool_)
    k = np.ones(num.shape, dtype=np.int64)
    pending = np.arange(num.size)
    while pending.size:
        hit = bernoulli_ratio(rng, num[pending], _mul(den[pending], k[pending]))
        stop = pending[~hit]
        out[stop] = k[stop] % 2 == 1
        k[pending[hit]] += 1
        pending = pending[hit]
    return out


def geometric_e(rng: Any, size: int) -> npt.NDArray[np.int64]:
    """Number of Bernoulli(exp(-1)) successes before the first failure."""
    count = np.zeros(size, dtype=np.int64)
    pending = np.arange(size)
    one = np.ones(size, dtype=np.int64)
    while pending.size:
        hit = bernoulli_exp_unit(rng, one[: pending.size], one[: pending.size])
        count[pending[hit]] += 1
        pending = pending[hit]
    return count


def bernoulli_exp(rng: Any, num: Any, den: Any) -> npt.NDArray[np.bool_]:
    """Exact Bernoulli(exp(-num_i / den_i)) for any ``num_i / den_i >= 0`` (CKS Alg. 1):
    ``floor(gamma)`` Bernoulli(exp(-1)) successes, then Bernoulli(exp(-frac(gamma)))."""
    whole = num // den
    frac = _compact(_big(num) - _big(whole) * _big(den)) if num.dtype == object else None
    if frac is None:
        frac = num - _mul(whole, den)
    ok = np.ones(num.shape, dtype=np.bool_)
    done = np.zeros(num.shape, dtype=np.int64)
    pending = np.flatnonzero(whole > 0)
    one = np.ones(num.shape, dtype=np.int64)
    while pending.size:
        hit = bernoulli_exp_unit(rng, one[: pending.size], one[: pending.size])
        ok[pending[~hit]] = False
        done[pending[hit]] += 1
        pending = pending[hit]
        pending = pending[done[pending] < whole[pending]]
    alive = np.flatnonzero(ok)
    if alive.size:
        ok[alive] = bernoulli_exp_unit(rng, _compact(frac[alive]), _compact(den[alive]))
    return ok


def discrete_laplace(rng: Any, num: int, den: int, size: int) -> Any:
    """``size`` draws with ``P(x) ∝ exp(-|x| den / num)`` (scale ``num / den``; CKS Alg. 2)."""
    out = np.zeros(size, dtype=object if max(num, den) >= _SMALL >> 8 else np.int64)
    pending = np.arange(size)
    while pending.size:
        m = pending.size
        numv = _compact(np.full(m, num, dtype=object))
        u = uniform_below(rng, numv)
        keep = bernoulli_exp_unit(rng, u, numv)  # accept U w.p. exp(-U / num)
        u = u[keep]
        idx = pending[keep]
        g = geometric_e(rng, idx.size)
        wide = out.dtype == object or (g.size and (int(g.max()) + 1) * num >= _SMALL)
        x = _compact(_big(u) + _big(g) * num) if wide else u + g * num
        y = x // den
        sign = (random_words(rng, idx.size) >> np.uint64(63)).astype(np.bool_)
        accept = ~(sign & (y == 0))  # reject "-0" so that 0 is not counted twice
        y = y[accept]
        out[idx[accept]] = np.where(sign[accept], -y, y)
        done = np.zeros(m, dtype=np.bool_)
        done[np.flatnonzero(keep)[accept]] = True
        pending = pending[~done]
    return out


def discrete_gaussian(rng: Any, a: int, b: int, size: int) -> Any:
    """``size`` draws with ``P(x) ∝ exp(-x^2 / (2 sigma^2))``, ``sigma^2 = a / b`` (CKS Alg. 3):
    propose Y ~ discrete Laplace(t), t = floor(sigma) + 1, and accept with probability
    ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|Y| b t - a)^2 / (2 a b t^2))``."""
    t = math.isqrt(a // b) + 1
    out = np.zeros(size, dtype=object)
    pending = np.arange(size)
    den_scalar = 2 * a * b * t * t
    while pending.size:
        y = _big(np.asarray(discrete_laplace(rng, t, 1, pending.size)))
        gap = np.abs(y) * (b * t) - a
        num = _compact(gap * gap)
        den = _compact(np.full(pending.size, den_scalar, dtype=object))
        accept = bernoulli_exp(rng, num, den)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


def to_int64(a: Any) -> npt.NDArray[np.int64]:
    a = _compact(np.asarray(a))
    if a.dtype == object:  # pragma: no cover - needs noise beyond 2**62
        raise DataError("sampled noise does not fit in int64.")
    return np.asarray(a, dtype=np.int64)
