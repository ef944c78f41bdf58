"""dBitFlipPM (Ding, Kulkarni & Yekhanin, "Collecting Telemetry Data Privately", NeurIPS
2017, sec. 4): histograms of values collected every day, with memoization.

The ``k`` values are split into ``b`` buckets of consecutive values (value ``x`` is in
bucket ``floor(x b / k)``).  Each device samples ``d`` distinct buckets ``j_1..j_d``
uniformly once and, for each, reports a bit that is 1 with probability ``p = e^(eps/2) /
(e^(eps/2) + 1)`` if its value's bucket is ``j``, else with probability ``q = 1 /
(e^(eps/2) + 1)``.  A report is the ``d`` bucket ids and their ``d`` bits.

**One report's epsilon.**  The sampled buckets do not depend on the value; two values in
different sampled buckets change two bits' probabilities (ratio ``(p / q)^2 = e^eps``), a
value in a sampled bucket against one outside changes one (``e^(eps/2)``).  So one report
is exactly ``eps``-LDP for ``d >= 2`` and ``eps/2``-LDP for ``d = 1``
(:attr:`DBitFlipPM.report_epsilon`).

**The estimator** of the share ``pi_j`` of devices in bucket ``j`` (Ding et al., Thm. 4):
with ``S_j`` the reports that sampled ``j`` and ``C_j`` those of them whose bit is 1,

    pi_hat_j = (b / (n d)) (C_j - q S_j) / (p - q),

unbiased since each device samples ``j`` with probability ``d / b``.  For the fixed
population of the ``n`` devices its exact variance is

    Var(pi_hat_j) = (b / (n^2 d (p - q)^2)) (pi_j p (1 - p) + pi_j (p - q)^2 + (1 - pi_j)
                    q (1 - q)) - pi_j / n

(:meth:`DBitFlipPM.variance`).  ``se`` of an estimate is the empirical one: the per-device
terms ``(b / d) [j sampled] (bit - q) / (p - q)`` are independent with mean ``pi_j``, and
their sample variance over ``n`` estimates the variance for devices sampled from a
population (the fixed population's plus the spread of the buckets, ``pi_j (1 - pi_j) /
n``).

**Memoization** (:class:`~deniable.oracles.DBitFlipMemo`): each device keeps its sampled
buckets forever and, for each bucket value it has been in, the ``d`` bits it reported the
first time; a day with a bucket value seen before replays them. The view of a device that
has been in ``m`` distinct buckets is ``m`` independent reports, ``m * report_epsilon``-LDP
about which buckets they were by basic composition (Dwork & Roth 2014, Thm. 3.14), whatever
the number of days; at most ``b * report_epsilon`` over a device's life. As Ding et al.
note, the days on which the report changes show when the bucket changed: memoization
protects the values, not the pattern of changes.

Thresholds round toward privacy: ``q`` is drawn as ``q_int / 2**53`` with ``q_int =
ceil(2**53 / (L + 1))``, ``L`` a proven lower bound of ``e^(eps/2)``, and ``p = 1 - q``, so
``p / q <= e^(eps/2)`` exactly; the estimator uses the implemented ``p`` and ``q``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._base import check_epsilon, check_k
from deniable.randomness import CHUNK, exp_lower_bound, random_words, resolve_rng

__all__ = ["DBitFlipEstimate", "DBitFlipPM", "DBitFlipReports", "repeats"]

_TWO53 = 1 << 53
_SHIFT = np.uint64(11)
_HALF = np.uint64(32)
_LOW = np.uint64(0xFFFFFFFF)


def _pick(words: npt.NDArray[np.uint64], b: int, j: int) -> npt.NDArray[np.int64]:
    """An index in ``j..b-1`` per word: ``floor(word (b - j) / 2**64)``, the high word of the
    product from its 32-bit halves (``b <= 2**16``), off uniform by < ``2**-48``."""
    c = np.uint64(b - j)
    high, low = words >> _HALF, words & _LOW
    return j + ((high * c + ((low * c) >> _HALF)) >> _HALF).astype(np.int64)


def _swap(
    perm: npt.NDArray[np.int64], rows: npt.NDArray[Any], j: int, pick: npt.NDArray[Any]
) -> None:
    chosen = perm[rows, pick]
    perm[rows, pick] = perm[rows, j]
    perm[rows, j] = chosen


@dataclass(frozen=True)
class DBitFlipReports:
    """A batch of dBitFlipPM reports: ``buckets[i]`` the ``d`` distinct bucket ids device
    ``i`` sampled, ``bits[i]`` its bit for each (``n x d`` arrays)."""

    buckets: npt.NDArray[np.int64]
    bits: npt.NDArray[np.uint8]

    def __len__(self) -> int:
        return int(self.bits.shape[0])


@dataclass(frozen=True)
class DBitFlipEstimate:
    """The estimated share of devices in each bucket, its empirical standard error, and the
    number of reports."""

    shares: npt.NDArray[np.float64]
    se: npt.NDArray[np.float64]
    n: int


def repeats(buckets: npt.NDArray[np.int64]) -> bool:
    """Whether a row of ``buckets`` (``n x d``) holds an id twice: a comparison of each
    pair of columns for a small ``d`` (no sort of every row), else the sorted rows."""
    d = buckets.shape[1]
    if d > 8:
        return bool(np.any(np.diff(np.sort(buckets, axis=1), axis=1) == 0))
    cols = [np.ascontiguousarray(buckets[:, j]) for j in range(d)]
    return any(bool((cols[i] == cols[j]).any()) for i in range(d) for j in range(i + 1, d))


def _zeros_and_ones(bits: npt.NDArray[Any]) -> bool:
    """Whether every entry of ``bits`` is 0 or 1 (an integer array by its range, without
    ``np.isin``)."""
    if bits.dtype.kind == "b":
        return True
    if bits.dtype.kind in "iu":
        return bool(bits.min() >= 0 and bits.max() <= 1)
    return bool(np.isin(bits, (0, 1)).all())


@dataclass(frozen=True)
class DBitFlipPM:
    """dBitFlipPM for ``k`` values in ``b`` buckets, ``d`` buckets sampled per device
    (module docstring; Ding, Kulkarni & Yekhanin 2017).

    >>> m = DBitFlipPM(2.0, k=8, b=4, d=2)
    >>> m.report_epsilon, m.bucket_of([0, 1, 2, 7]).tolist()
    (2.0, [0, 0, 1, 3])
    >>> values = np.repeat([0, 2, 4, 6], [5000, 3000, 1500, 500])
    >>> est = m.estimate(m.randomize(values, rng=1))
    >>> bool(np.all(np.abs(est.shares - [0.5, 0.3, 0.15, 0.05]) < 4 * est.se))
    True
    """

    name: ClassVar[str] = "dbitflip"

    epsilon: float
    k: int
    b: int | None = None
    d: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        k = check_k(self.k, 1 << 24)
        object.__setattr__(self, "k", k)
        b = k if self.b is None else self.b
        object.__setattr__(self, "b", v.integer("b", b, minimum=2, maximum=min(k, 1 << 16)))
        object.__setattr__(self, "d", v.integer("d", self.d, minimum=1, maximum=self.buckets))
        if self._q_int * 2 >= _TWO53:
            raise ParameterError(
                f"`epsilon` is too small for {self.name!r} (its bits' probabilities cannot "
                f"differ on the 2**-53 grid), got {self.epsilon!r}."
            )

    # ---- parameters

    @property
    def buckets(self) -> int:
        """``b``, the number of buckets."""
        assert self.b is not None  # set in __post_init__
        return self.b

    @property
    def key(self) -> str:
        """The mechanism's identity: its name and parameters (tallies are bound to it)."""
        return f"{self.name}{{b={self.buckets},d={self.d},epsilon={self.epsilon!r},k={self.k}}}"

    @property
    def _q_int(self) -> int:
        low = exp_lower_bound(min(self.epsilon / 2, 700.0))
        return math.ceil(_TWO53 / (low + 1))

    @property
    def probabilities(self) -> tuple[float, float]:
        """``(p, q)`` as implemented: P(bit 1) for the device's own bucket and for another."""
        q = self._q_int
        return (_TWO53 - q) / _TWO53, q / _TWO53

    @property
    def report_epsilon(self) -> float:
        """The exact epsilon of one report: ``eps`` for ``d >= 2``, ``eps / 2`` for ``d = 1``
        (never above the requested ``epsilon``; the implemented thresholds realise at most
        it)."""
        return self.epsilon if self.d >= 2 else self.epsilon / 2

    @property
    def implemented_epsilon(self) -> float:
        """The epsilon of one report as the integer thresholds realise it (at most
        :attr:`report_epsilon`)."""
        q = self._q_int
        half = math.log((_TWO53 - q) / q)
        return min(half * (2 if self.d >= 2 else 1), self.report_epsilon)

    def longitudinal_epsilon(self, distinct: int) -> float:
        """The privacy loss of a memoized device that has been in ``distinct`` distinct
        buckets, over any number of days: ``distinct * report_epsilon``."""
        m = v.integer("distinct", distinct, minimum=0, maximum=self.buckets)
        return m * self.report_epsilon

    @property
    def longitudinal_bound(self) -> float:
        """The largest privacy loss of a memoized device over its life:
        ``b * report_epsilon`` (it can be in at most ``b`` buckets)."""
        return self.buckets * self.report_epsilon

    # ---- randomizer

    def bucket_of(self, values: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The bucket of each value in ``0..k-1``: ``floor(x b / k)``."""
        x = v.reports_array("values", values, categories=self.k).astype(np.int64).reshape(-1)
        return (x * self.buckets) // self.k

    def sample_buckets(self, n: int, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """``n`` draws of ``d`` distinct buckets (partial Fisher-Yates, ``d`` words each; a
        device draws once and keeps them)."""
        count = v.integer("n", n, minimum=0)
        gen = resolve_rng(rng)
        b, d = self.buckets, self.d
        out = np.empty((count, d), dtype=np.int64)
        step = max(1, min(CHUNK, (1 << 22) // b))
        rows_all = np.arange(step)
        for start in range(0, count, step):
            stop = min(start + step, count)
            rows = rows_all[: stop - start]
            perm = np.tile(np.arange(b, dtype=np.int64), (stop - start, 1))
            words = random_words(gen, (stop - start) * d).reshape(-1, d)
            for j in range(d):
                _swap(perm, rows, j, _pick(words[:, j], b, j))
            out[start:stop] = perm[:, :d]
        return out

    def _extend_buckets(self, prefix: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """Rows of ``d`` distinct buckets that begin with ``prefix`` (``n x m`` distinct
        buckets, ``m <= d``): the partial Fisher-Yates of :meth:`sample_buckets` continued
        from its first ``m`` picks, ``d - m`` words a row (a memoized device whose first
        buckets were stored by a concurrent call draws the rest given them)."""
        arr = np.asarray(prefix, dtype=np.int64)
        n, m = arr.shape
        b, d = self.buckets, self.d
        perm = np.tile(np.arange(b, dtype=np.int64), (n, 1))
        rows = np.arange(n)
        for j in range(m):  # replay the picks that put prefix[:, j] at position j
            _swap(perm, rows, j, np.argmax(perm == arr[:, j : j + 1], axis=1))
        words = random_words(resolve_rng(rng), n * (d - m)).reshape(n, d - m)
        for j in range(m, d):
            _swap(perm, rows, j, _pick(words[:, j - m], b, j))
        return perm[:, :d]

    def report_bits(
        self, values: npt.ArrayLike, buckets: npt.ArrayLike, *, rng: Any = None
    ) -> npt.NDArray[np.uint8]:
        """The ``d`` bits of each value for its sampled ``buckets`` (``n x d``), one word a
        bit."""
        own = self.bucket_of(values)
        sampled = self._check_buckets("buckets", buckets, own.size)
        return self._draw_bits(own, sampled, resolve_rng(rng))

    def _draw_bits(
        self, own: npt.NDArray[np.int64], sampled: npt.NDArray[np.int64], gen: Any
    ) -> npt.NDArray[np.uint8]:
        q = self._q_int
        hi, lo = np.uint64(_TWO53 - q), np.uint64(q)
        words = random_words(gen, sampled.size).reshape(sampled.shape) >> _SHIFT
        thresholds = np.where(sampled == own[:, None], hi, lo)
        return (words < thresholds).astype(np.uint8)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> DBitFlipReports:
        """One report per value (fresh buckets and bits: a device's first day)."""
        own = self.bucket_of(values)
        gen = resolve_rng(rng)
        buckets = self.sample_buckets(own.size, rng=gen)
        bits = self._draw_bits(own, buckets, gen)
        return DBitFlipReports(buckets, bits)

    def _check_buckets(self, name: str, buckets: Any, n: int) -> npt.NDArray[np.int64]:
        arr = np.asarray(buckets)
        if arr.shape != (n, self.d) or (arr.size and arr.dtype.kind not in "iu"):
            raise DataError(
                f"`{name}` must be an {n} x {self.d} integer array of bucket ids, got "
                f"shape {arr.shape} of {arr.dtype}."
            )
        arr = arr.astype(np.int64)
        if arr.size and (arr.min() < 0 or arr.max() >= self.buckets):
            raise DataError(
                f"`{name}` must hold bucket ids in 0..{self.buckets - 1}, got "
                f"{int(arr.min())}..{int(arr.max())}."
            )
        return arr

    # ---- tally and estimate

    def tally(self, reports: DBitFlipReports) -> Tally:
        """``(S_0..S_{b-1}, C_0..C_{b-1}, n)``: per bucket, the reports that sampled it and
        those whose bit for it is 1; then the number of reports."""
        if not isinstance(reports, DBitFlipReports):
            raise ParameterTypeError(
                f"`reports` must be DBitFlipReports, got {type(reports).__name__}."
            )
        n = len(reports)
        buckets = self._check_buckets("reports.buckets", reports.buckets, n)
        bits = np.asarray(reports.bits)
        if bits.shape != buckets.shape or (bits.size and not _zeros_and_ones(bits)):
            raise DataError(
                f"`reports.bits` must be an {n} x {self.d} array of 0/1, got shape {bits.shape}."
            )
        if repeats(buckets):
            raise DataError("`reports.buckets` must hold d distinct buckets a report.")
        b = self.buckets
        sampled = np.bincount(buckets.reshape(-1), minlength=b)
        ones = np.bincount(buckets.reshape(-1), weights=bits.reshape(-1), minlength=b)
        counts = np.concatenate([sampled, ones.astype(np.int64), [n]])
        return Tally(counts, mechanism=self.key)

    def _as_tally(self, data: Any) -> Tally:
        tally = self.tally(data) if isinstance(data, DBitFlipReports) else data
        if not isinstance(tally, Tally):
            raise ParameterTypeError(
                f"`data` must be DBitFlipReports or a Tally, got {type(data).__name__}."
            )
        if tally.mechanism not in (None, self.key):
            raise DataError(f"the tally is of {tally.mechanism!r}, not of {self.key!r}.")
        if len(tally.counts) != 2 * self.buckets + 1:
            raise DataError(
                f"a {self.name!r} tally has {2 * self.buckets + 1} cells, got {len(tally.counts)}."
            )
        if int(tally.counts[-1]) < 1:
            raise DataError("the tally must hold at least one report.")
        return tally

    def estimate(self, data: Any) -> DBitFlipEstimate:
        """The unbiased share of devices in each bucket (module docstring) with its
        empirical standard error (Ding et al. 2017, Thm. 4)."""
        tally = self._as_tally(data)
        b = self.buckets
        counts = np.asarray(tally.counts, dtype=np.float64)
        sampled, ones, n = counts[:b], counts[b : 2 * b], int(tally.counts[-1])
        p, q = self.probabilities
        scale = b / (self.d * (p - q))
        shares = scale * (ones - q * sampled) / n
        # sum over devices of Z^2, Z = scale [j sampled] (bit - q)
        squares = scale**2 * (ones * (1 - q) ** 2 + (sampled - ones) * q * q)
        var = (squares / n - shares**2) * (n / (n - 1)) if n > 1 else np.full(b, np.nan)
        se = np.sqrt(np.maximum(var, 0.0) / n)
        return DBitFlipEstimate(shares, se, n)

    def variance(self, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """The exact variance of each bucket's estimated share for these values (module
        docstring), over the sampling of buckets and the bits."""
        own = self.bucket_of(values)
        n = own.size
        if n == 0:
            raise DataError("`values` must hold at least one value.")
        b, d = self.buckets, self.d
        pi = np.bincount(own, minlength=b) / n
        p, q = self.probabilities
        second = pi * (p * (1 - p) + (p - q) ** 2) + (1 - pi) * q * (1 - q)
        return np.asarray(b * second / (n * d * (p - q) ** 2) - pi / n, dtype=np.float64)
