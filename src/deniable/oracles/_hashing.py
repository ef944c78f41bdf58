"""Local hashing: binary (BLH) and optimized (OLH).

Each report hashes the value into ``g`` buckets with a hash function of its own and
randomizes the bucket by k-ary randomized response over the ``g`` buckets (Bassily & Smith
2015; Wang, Blocki, Li & Jha 2017): BLH has ``g = 2``, OLH ``g`` near ``e^eps + 1``.  The
report is ``(a, b, y)``: the hash function's two 64-bit words and the randomized bucket.

**The hash family** (multiply-add-shift, Dietzfelbinger 1996): for 64-bit ``a`` and ``b``,

    H(x) = ((a x + b) mod 2**64) >> 32,      bucket(x) = (H(x) g) >> 32.

With ``a`` and ``b`` uniform this family is *strongly universal* (2-independent) on 32-bit
outputs for inputs below ``2**33``: for ``x != x'`` the pair ``(H(x), H(x'))`` is exactly
uniform on ``[2**32]^2`` (Dietzfelbinger 1996; Thorup 2015, "High speed hashing for
integers and strings", sec. 3.3; ``tests/test_oracles.py`` enumerates a small version).  So
two values share a bucket with probability exactly

    c = sum_y n_y^2 / 2**64,    n_y = #{h < 2**32 : (h g) >> 32 = y}

(``c = 1 / g`` when ``g`` is a power of two; within ``2**-64`` of it otherwise), the same
for every pair.  This is what the variance formula assumes: with the randomized response's
``p' = P(y = bucket(x))`` and ``q'`` for each other bucket, a report supports the true value
with ``p = p'`` and any other value with ``q = c p' + (1 - c) q'``, independently across
reports.  ``epsilon`` is that of the randomized response over ``g`` buckets,
``ln(p' / q')``: the hash words do not depend on the value.

**Decoding** counts, for every value ``j``, the reports with ``bucket(j) = y``, an O(n k)
loop done in blocks of reports with ``z_j = a j + b - lo_y 2**32`` advanced by ``a`` per
value and compared with the bucket's width: O(k) memory beyond a block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Categorical
from deniable.exceptions import DataError, ParameterError
from deniable.oracles._base import FrequencyOracle, as_uint_array, check_epsilon, check_k
from deniable.oracles._variance import total_variance
from deniable.randomness import CHUNK, random_words, resolve_rng, uniform_below, words_below

__all__ = [
    "BLH",
    "OLH",
    "BucketHashing",
    "LocalHashing",
    "collision_probability",
    "least_variance",
]

_32 = np.uint64(32)
#: Largest number of buckets (bucket bounds are computed in 64-bit arithmetic).
MAX_BUCKETS = 1 << 31
#: Reports decoded at once (their words stay in cache while every value is tried).
_DECODE_BLOCK = 1 << 14
#: Below this many reports a block is decoded report by report (:func:`_decode_few`), each
#: against ``_VALUE_RUN`` values at a time; from it on value by value (:func:`_decode_block`).
_FEW_REPORTS = 512
_VALUE_RUN = 1 << 16


def collision_probability(g: int) -> Fraction:
    """``P(bucket(x) = bucket(x'))`` for ``x != x'`` under the multiply-add-shift family
    with ``g`` buckets, exactly: ``sum_y n_y^2 / 2**64``.

    >>> from fractions import Fraction
    >>> collision_probability(4), float(collision_probability(3) - Fraction(1, 3))
    (Fraction(1, 4), 3.614007241618348e-20)
    """
    base, extra = divmod(1 << 32, g)
    return Fraction(extra * (base + 1) ** 2 + (g - extra) * base**2, 1 << 64)


def bucket_bounds(y: npt.NDArray[np.uint64], g: int) -> tuple[npt.NDArray[np.uint64], ...]:
    """``(lo, hi)``: bucket ``y`` holds the hashes ``H`` in ``[lo, hi)``, ``lo = ceil(y
    2**32 / g)``."""
    gg = np.uint64(g)
    lo = ((y << _32) + (gg - np.uint64(1))) // gg
    hi = (((y + np.uint64(1)) << _32) + (gg - np.uint64(1))) // gg
    return lo, hi


class BucketHashing(FrequencyOracle):
    """What every local-hashing oracle shares: each report hashes the value into ``g``
    buckets with a hash of its own, independent of the value, and randomizes the bucket by
    k-ary randomized response over the buckets.  A report then supports the true value with
    ``p = p'`` and any other with ``q = c p' + (1 - c) q'``, ``c`` the hash family's pairwise
    collision probability, and epsilon is the randomized response's.  Subclasses give ``g``
    (:meth:`_buckets`) and ``c`` (:meth:`_collision`)."""

    k: int
    p_truthful: float

    def _buckets(self) -> int:
        """Number of buckets ``g``."""
        raise NotImplementedError  # pragma: no cover - subclasses

    def _collision(self) -> float:
        """``P(h(x) = h(x'))`` for ``x != x'`` over the hash family."""
        raise NotImplementedError  # pragma: no cover - subclasses

    @cached_property
    def randomized_response(self) -> Categorical:
        """The k-ary randomized response over the ``g`` buckets: keep the bucket with
        probability ``p_truthful``, else report a uniform bucket."""
        return Categorical(k=self._buckets(), p_truthful=self.p_truthful)

    def _check(self) -> None:
        object.__setattr__(self, "k", check_k(self.k, self.max_k))
        self.randomized_response  # noqa: B018 - validates `p_truthful` (the error names it)

    def _support(self) -> tuple[float, float]:
        channel = self.randomized_response.channel
        p1, q1 = channel.p, channel.q  # type: ignore[attr-defined]
        c = self._collision()
        return p1, c * p1 + (1 - c) * q1

    @property
    def p(self) -> float:
        """P(the report supports the true value): the randomized response's ``p'``."""
        return self._support()[0]

    @property
    def q(self) -> float:
        """P(the report supports another value): ``c p' + (1 - c) q'``."""
        return self._support()[1]

    @property
    def epsilon(self) -> float:
        # eps = ln(p' / q') of the randomized response over the buckets (ln(1 + g t / (1 - t))):
        # the hash is independent of the value
        return self.randomized_response.epsilon


def least_variance(
    make: Any, epsilon: float, k: int, buckets: Any
) -> tuple[BucketHashing | None, ParameterError | None]:
    """The oracle ``make(k, g, p_truthful)`` at ``epsilon`` with the smallest exact variance
    over the bucket counts ``buckets`` (``p_truthful`` from the categorical design over the
    ``g`` buckets), and the last refusal (``None, error`` when every ``g`` was refused)."""
    best: BucketHashing | None = None
    best_variance = math.inf
    failure: ParameterError | None = None
    for g in buckets:
        try:
            oracle = make(k, g, Categorical.from_epsilon(epsilon, g).p_truthful)
        except ParameterError as exc:  # epsilon out of the buckets' representable range
            failure = exc
            continue
        p, q = oracle._support()
        var = total_variance(p, q, k, 1)
        if var < best_variance:
            best, best_variance = oracle, var
    return best, failure


class LocalHashing(BucketHashing):
    """Local hashing into ``g`` buckets by the multiply-add-shift family, with randomized
    response over the buckets (module docstring).  :class:`BLH` and :class:`OLH` are its
    two settings of ``g``."""

    def _collision(self) -> float:
        return float(collision_probability(self._buckets()))

    @property
    def implemented_epsilon(self) -> float:
        # the keep threshold is rounded down in exact rational arithmetic until the realised
        # ratio max P / min P is at most the stated one (Categorical.thresholds), so the
        # implemented epsilon is at most `epsilon` exactly; computed in O(1) from the
        # thresholds (no g x g matrix: g may exceed the dense limit at large epsilon) and
        # capped at the proven bound (tests/test_oracles.py checks the exact inequality)
        return min(self.randomized_response.implemented_epsilon, self.epsilon)

    @property
    def words_per_report(self) -> int:
        return 4

    @property
    def n_reports(self) -> int:
        """Values of the randomized bucket: ``g``."""
        return self._buckets()

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint64]:
        """Reports ``(a, b, y)`` (an ``(n, 3)`` uint64 array) for the values ``0..k-1``.

        Report ``i`` takes words ``4 i .. 4 i + 3``: ``a``, ``b``, the keep word (keep the
        bucket iff ``word >> 11 < keep``) and the bucket word (``uniform(word, g)``).
        """
        x = self._values(values).astype(np.uint64)
        gen = resolve_rng(rng)
        keep_t, _ = self.randomized_response.thresholds()
        buckets = self._buckets()
        g = np.uint64(buckets)
        out = np.empty((x.size, 3), dtype=np.uint64)
        for start in range(0, x.size, CHUNK):
            stop = min(start + CHUNK, x.size)
            words = random_words(gen, 4 * (stop - start)).reshape(-1, 4)
            a, b = words[:, 0], words[:, 1]
            hashed = ((a * x[start:stop] + b) >> _32) * g >> _32
            keep = words_below(words[:, 2], keep_t)
            other = uniform_below(words[:, 3], buckets)
            block = out[start:stop]
            block[:, 0] = a
            block[:, 1] = b
            block[:, 2] = np.where(keep, hashed, other)
        return out

    def _reports(self, reports: Any) -> npt.NDArray[np.uint64]:
        arr = as_uint_array("reports", reports, ndim=2)
        if arr.shape[1] != 3 or (arr.size and arr.dtype != np.uint64):
            raise DataError(
                "`reports` must be an (n, 3) uint64 array of (a, b, bucket), got an array of "
                f"dtype {arr.dtype} and shape {arr.shape}."
            )
        g = self._buckets()
        if arr.size and int(arr[:, 2].max()) >= g:
            raise DataError(f"`reports` buckets must be in 0..{g - 1}, got {int(arr[:, 2].max())}.")
        return arr

    def _check_reports(self, reports: Any) -> None:
        self._reports(reports)

    def _supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        arr = self._reports(reports)
        x = np.full(arr.shape[0], value, dtype=np.uint64)
        hashed = ((arr[:, 0] * x + arr[:, 1]) >> _32) * np.uint64(self._buckets()) >> _32
        return np.asarray(hashed == arr[:, 2], dtype=np.bool_)

    def _support_counts(self, reports: Any) -> tuple[npt.NDArray[np.int64], int]:
        arr = self._reports(reports)
        g = self._buckets()
        counts = np.zeros(self.k, dtype=np.int64)
        for start in range(0, arr.shape[0], _DECODE_BLOCK):
            block = arr[start : start + _DECODE_BLOCK]
            if block.shape[0] < min(_FEW_REPORTS, self.k):  # a Python step per report
                _decode_few(block, g, counts)
            else:
                _decode_block(block, g, counts)
        return counts, int(arr.shape[0])

    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        keep, _ = self.randomized_response.thresholds()
        return "local-hashing/1", 4, {"keep": keep, "buckets": self._buckets()}


def _decode_few(block: npt.NDArray[np.uint64], g: int, counts: npt.NDArray[np.int64]) -> None:
    """:func:`_decode_block` for a few reports: each report against a run of values at once
    (the same test, ``a j + b - lo 2**32 < (hi - lo) 2**32``), so the Python loop runs per
    report and per ``_VALUE_RUN`` values, not per value: 3 reports at k = 2**24 take a
    fraction of a second instead of half a minute."""
    lo, hi = bucket_bounds(block[:, 2], g)
    offset = block[:, 1] - (lo << _32)
    width = (hi - lo) << _32
    for start in range(0, counts.size, _VALUE_RUN):
        j = np.arange(start, min(start + _VALUE_RUN, counts.size), dtype=np.uint64)
        for a, b, w in zip(block[:, 0], offset, width, strict=True):
            counts[start : start + j.size] += (j * a + b) < w


def _decode_block(block: npt.NDArray[np.uint64], g: int, counts: npt.NDArray[np.int64]) -> None:
    """Add to ``counts[j]`` the reports of ``block`` whose bucket of ``j`` is their ``y``.

    ``bucket(j) = y`` iff ``a j + b`` (mod 2**64) lies in ``[lo 2**32, hi 2**32)``, i.e.
    ``z_j = a j + b - lo 2**32 < (hi - lo) 2**32`` (unsigned, wrapping); ``z`` advances by
    ``a`` from one value to the next."""
    a = np.ascontiguousarray(block[:, 0])
    lo, hi = bucket_bounds(block[:, 2], g)
    z = block[:, 1] - (lo << _32)
    width = (hi - lo) << _32
    mask = np.empty(a.size, dtype=np.bool_)
    for j in range(counts.size):
        np.less(z, width, out=mask)
        counts[j] += np.count_nonzero(mask)
        np.add(z, a, out=z)


@dataclass(frozen=True)
class BLH(LocalHashing):
    """Binary local hashing: one bit of a hash of the value, kept with probability
    ``(1 + p_truthful) / 2`` (``g = 2``; Bassily & Smith 2015, Wang et al. 2017).

    ``epsilon = ln((1 + p_truthful) / (1 - p_truthful))``; support probabilities
    ``p = (1 + p_truthful) / 2`` and ``q = 1/2``.

    >>> blh = BLH.from_epsilon(1.0, k=100)
    >>> round(blh.epsilon, 12), blh.g, round(blh.p, 6), blh.q
    (1.0, 2, 0.731059, 0.5)
    """

    k: int
    p_truthful: float
    name: ClassVar[str] = "blh"

    def __post_init__(self) -> None:
        self._check()

    @property
    def g(self) -> int:
        """Number of buckets: 2."""
        return 2

    def _buckets(self) -> int:
        return 2

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int) -> BLH:
        """``p_truthful`` from :meth:`~deniable.designs.Categorical.from_epsilon` over 2 buckets
        (the largest epsilon at most the request)."""
        eps = check_epsilon(epsilon)
        kk = check_k(k, cls.max_k)
        return cls(kk, Categorical.from_epsilon(eps, 2).p_truthful)


@dataclass(frozen=True)
class OLH(LocalHashing):
    """Optimized local hashing: ``g`` buckets, randomized response over them (keep the
    bucket with probability ``p_truthful``, else a uniform bucket).

    ``epsilon = ln(1 + g p_truthful / (1 - p_truthful))``.  :meth:`from_epsilon` takes ``g``
    near ``e^eps + 1`` (Wang et al. 2017 round it; here the neighbour with the smaller
    exact variance).

    >>> olh = OLH.from_epsilon(1.0, k=1024)
    >>> olh.g, round(olh.epsilon, 12), round(olh.q, 6)
    (4, 1.0, 0.25)
    """

    k: int
    g: int
    p_truthful: float
    name: ClassVar[str] = "olh"

    def __post_init__(self) -> None:
        object.__setattr__(self, "g", v.integer("g", self.g, minimum=2, maximum=MAX_BUCKETS))
        self._check()

    def _buckets(self) -> int:
        return self.g

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int, g: int | None = None) -> OLH:
        """OLH at ``epsilon`` with ``g`` buckets (default: ``floor`` or ``ceil`` of ``e^eps +
        1``, whichever has the smaller exact variance)."""
        eps = check_epsilon(epsilon)
        kk = check_k(k, cls.max_k)
        if g is not None:
            return cls(kk, g, Categorical.from_epsilon(eps, g).p_truthful)
        ideal = math.exp(min(eps, 30.0)) + 1
        candidates = sorted(
            {min(max(2, int(f(ideal))), MAX_BUCKETS) for f in (math.floor, math.ceil)}
        )
        best, failure = least_variance(cls, eps, kk, candidates)
        if best is None:
            if eps > 1:  # the buckets, e^eps + 1, outgrow what a report holds
                raise ParameterError(
                    f"`epsilon` must be at most 30 for {cls.name!r} (its buckets grow as "
                    f"e^eps), got {epsilon!r}."
                )
            assert failure is not None
            raise ParameterError(f"{cls.name!r} at k = {kk}: {failure}") from None
        return cast(OLH, best)
