"""Optimized local hashing with a linear hash over GF(2): exact OLH decoded by one
Walsh-Hadamard transform.

**The mechanism.**  A value ``v`` in ``0..k-1`` is read as a vector of ``L = max(1,
ceil(log2 k))`` bits; there are ``g = 2**l`` buckets.  Each report draws its own hash, an
``l x L`` binary matrix ``A`` (``l L`` uniform bits; its rows are ``a_0 .. a_(l-1)``), and
the bucket is ``h(v) = A v`` over GF(2): bit ``r`` of ``h(v)`` is ``parity(a_r & v)``.  For
``v != v'``

    P_A[A v = A v'] = P_A[A (v xor v') = 0] = 2**-l = 1 / g        exactly,

because ``A u`` is uniform on ``GF(2)^l`` for any fixed ``u != 0`` (each row's parity with
``u`` is an independent fair bit).  That is the pairwise collision probability the OLH
variance assumes (Wang, Blocki, Li & Jha 2017, "Locally differentially private protocols
for frequency estimation", USENIX Security).  No offset ``b`` (``h(v) = A v xor b``) is
needed: it would shift both buckets alike and change no collision probability.  (The value
0 always hashes to bucket 0; only collisions and the randomized response matter.)

The bucket is then randomized by k-ary randomized response over the ``g`` buckets, exactly
as :class:`~deniable.oracles.OLH` does (keep it with probability ``p_truthful``, else a
uniform bucket): the report is ``(A, y)``, and ``epsilon = ln(p' / q')`` of that randomized
response, since ``A`` does not depend on the value.  A report *supports* ``v`` iff ``A v =
y``: with probability ``p = p'`` for the true value and ``q = p' / g + (1 - 1/g) q'`` for
any other, the support probabilities of OLH with a universal family, so the estimate and
its exact variance are Wang et al.'s (:mod:`deniable.oracles._base`).

**Decoding in O(n g + 2**L L).**  The indicator of ``A v = y`` expands over the subsets
``S`` of the ``l`` rows (the Fourier expansion of the indicator of an affine subspace; e.g.
O'Donnell 2014, *Analysis of Boolean Functions*, ch. 1):

    [A v = y] = prod_r (1 + (-1)^(<a_r, v> xor y_r)) / 2
              = (1 / g) sum_S (-1)^(<a_S, v> xor y_S),

with ``a_S`` the xor of the rows in ``S`` and ``y_S`` the parity of ``y``'s bits in ``S``.
Summed over the reports, the support count of ``v`` is

    S_v = (n + W(F)(v)) / g,     F(u) = sum over reports, nonempty S of (-1)^(y_S) [a_S = u],

with ``W`` the unnormalized Walsh-Hadamard transform of the ``2**L`` cells of ``F``
(``W(F)(v) = sum_u (-1)^popcount(u & v) F(u)``).  ``F`` is a histogram of the ``g - 1``
indices ``2 a_S + y_S = xor over r in S of (2 a_r + y_r)`` of every report, and ``W`` the
exact int64 fast transform (:func:`~deniable.oracles.walsh_hadamard`): O(n g) for the
histogram, O(2**L L) for the transform, whatever ``k`` up to ``2**20``.

**Words and reports** (the spec's ``linear-local-hashing/1``, ``docs/specs.md``).  With ``R
= floor(64 / L)`` rows per word, a report consumes ``ceil(l / R) + 2`` words: the row words
(row ``r`` is bits ``(r mod R) L .. (r mod R) L + L - 1`` of row word ``floor(r / R)``), a
keep word ``u`` (keep the bucket iff ``below(u, keep)``) and a bucket word ``w`` (the
uniform bucket is ``w >> (64 - l)``).  The report is the row words with the unused bits
cleared, and ``y`` in the bits ``s .. s + l - 1`` of the last row word right after its last
row (``s = ((l - 1) mod R + 1) L``) when ``s + l <= 64``, else alone in one more word:
``m`` report words, one (an ``(n,)`` uint64 array) exactly when ``l L + l <= 64``, else an
``(n, m)`` uint64 array.  Every other bit of a report is 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Categorical
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._base import check_epsilon, check_k
from deniable.oracles._bits import parity
from deniable.oracles._hadamard import walsh_hadamard
from deniable.oracles._hashing import BucketHashing, least_variance
from deniable.randomness import CHUNK, random_words, resolve_rng, words_below

__all__ = ["MAX_BUCKET_BITS", "LinearOLH", "ReportLayout"]

#: Largest ``l = log2 g`` (decoding costs O(g) a report).
MAX_BUCKET_BITS = 16
#: Subset indices histogrammed at once when decoding (``g - 1`` a report).
_DECODE_ITEMS = 1 << 20


@dataclass(frozen=True)
class ReportLayout:
    """Where the rows and the bucket of a report sit (module docstring): ``L`` value
    bits, ``l`` bucket bits, ``R = floor(64 / L)`` rows a word."""

    value_bits: int
    bucket_bits: int

    @property
    def rows_per_word(self) -> int:
        """``R = floor(64 / L)``."""
        return 64 // self.value_bits

    @property
    def row_words(self) -> int:
        """Words holding the rows: ``ceil(l / R)`` (random words and report words alike)."""
        return -(-self.bucket_bits // self.rows_per_word)

    def row_slot(self, r: int) -> tuple[int, int]:
        """``(word, shift)`` of row ``r``."""
        word, i = divmod(r, self.rows_per_word)
        return word, i * self.value_bits

    @property
    def bucket_slot(self) -> tuple[int, int]:
        """``(word, shift)`` of ``y``: after the last row if it fits, else a word of its own."""
        word, shift = self.row_slot(self.bucket_bits - 1)
        shift += self.value_bits
        if shift + self.bucket_bits <= 64:
            return word, shift
        return word + 1, 0

    @property
    def report_words(self) -> int:
        """Words per report: 1 when ``l L + l <= 64``."""
        return self.bucket_slot[0] + 1

    def row_masks(self) -> list[int]:
        """The bits of the rows in each report word (``report_words`` of them)."""
        out = [0] * self.report_words
        row_mask = (1 << self.value_bits) - 1
        for r in range(self.bucket_bits):
            word, shift = self.row_slot(r)
            out[word] |= row_mask << shift
        return out

    def masks(self) -> list[int]:
        """The bits each report word may have set (rows and ``y``)."""
        out = self.row_masks()
        word, shift = self.bucket_slot
        out[word] |= ((1 << self.bucket_bits) - 1) << shift
        return out


def _bucket_bits(g: Any) -> int:
    """``l = log2 g`` of a power of two ``g`` in ``[2, 2**MAX_BUCKET_BITS]``."""
    gg = v.integer("g", g)
    if gg < 2 or gg & (gg - 1) or gg > 1 << MAX_BUCKET_BITS:
        raise ParameterError(
            f"`g` must be a power of two in [2, 2**{MAX_BUCKET_BITS}] (2, 4, 8, ..., "
            f"{1 << MAX_BUCKET_BITS}: the bucket is l = log2 g parities), got {g!r}."
        )
    return gg.bit_length() - 1


@dataclass(frozen=True)
class LinearOLH(BucketHashing):
    """Optimized local hashing with a linear hash over GF(2) (module docstring): bucket
    ``A v`` for a uniform ``log2 g x L`` bit matrix ``A`` of each report, randomized by
    k-ary randomized response over the ``g`` buckets (keep it with probability
    ``p_truthful``, else a uniform bucket).

    ``epsilon = ln(1 + g p_truthful / (1 - p_truthful))``, support probabilities ``p = p'``
    and ``q = p' / g + (1 - 1/g) q'`` exactly as :class:`~deniable.oracles.OLH` at the same
    ``g`` (pairwise collisions have probability exactly ``1 / g``), so the same estimate and
    exact variance; the tally decodes in O(n g + 2**L L) instead of O(n k).  ``g`` is a
    power of two; :meth:`from_epsilon` takes the one next to ``e^eps + 1`` with the smaller
    exact variance.

    >>> olh = LinearOLH.from_epsilon(1.0, k=1024)
    >>> olh.g, round(olh.epsilon, 12), olh.layout.report_words
    (4, 1.0, 1)
    >>> from deniable.oracles import OLH
    >>> (olh.p, olh.q) == (OLH(1024, 4, olh.p_truthful).p, OLH(1024, 4, olh.p_truthful).q)
    True
    >>> reports = olh.randomize([3, 3, 1000], rng=7)
    >>> reports.shape, olh.tally(reports).counts[[3, 1000, -1]].tolist()
    ((3,), [1, 1, 3])
    """

    k: int
    g: int
    p_truthful: float
    name: ClassVar[str] = "olh-linear"
    max_k: ClassVar[int] = 1 << 20

    def __post_init__(self) -> None:
        object.__setattr__(self, "g", 1 << _bucket_bits(self.g))
        self._check()

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int, g: int | None = None) -> LinearOLH:
        """At ``epsilon`` with ``g`` buckets (default: the power of two just below or just
        above ``e^eps + 1``, whichever has the smaller exact variance); ``p_truthful`` from
        :meth:`~deniable.designs.Categorical.from_epsilon` over the ``g`` buckets."""
        eps = check_epsilon(epsilon)
        kk = check_k(k, cls.max_k)
        if g is not None:
            gg = 1 << _bucket_bits(g)
            return cls(kk, gg, Categorical.from_epsilon(eps, gg).p_truthful)
        ideal = math.log2(math.exp(min(eps, 30.0)) + 1)
        bits = sorted({max(1, math.floor(ideal)), max(1, math.ceil(ideal))})
        bits = [b for b in bits if b <= MAX_BUCKET_BITS]
        if not bits:
            raise ParameterError(
                f"`epsilon` must be below ln(2**{MAX_BUCKET_BITS + 1} - 1) = "
                f"{math.log((2 << MAX_BUCKET_BITS) - 1):.4f} for {cls.name!r} (its buckets g, "
                f"a power of two next to e^eps + 1, are at most 2**{MAX_BUCKET_BITS}), got "
                f"{epsilon!r}."
            )
        best, failure = least_variance(cls, eps, kk, [1 << b for b in bits])
        if best is None:
            assert failure is not None
            raise ParameterError(f"{cls.name!r} at k = {kk}: {failure}") from None
        return cast(LinearOLH, best)

    # ---- parameters derived

    @property
    def bucket_bits(self) -> int:
        """``l = log2 g``: the parities of a bucket."""
        return self.g.bit_length() - 1

    @property
    def value_bits(self) -> int:
        """``L = max(1, ceil(log2 k))``: the bits of a value."""
        return max(1, (self.k - 1).bit_length())

    @property
    def layout(self) -> ReportLayout:
        """Where a report's rows and bucket sit (module docstring)."""
        return ReportLayout(self.value_bits, self.bucket_bits)

    def _buckets(self) -> int:
        return self.g

    def _collision(self) -> float:
        return 1 / self.g  # the exact pairwise collision probability of A v (module docstring)

    @property
    def implemented_epsilon(self) -> float:
        # eps' = ln(p'/q') of the channel the keep threshold t realises (uniform buckets are
        # exact for g a power of two): ln(1 + t g / (2**53 - t)), the expression the
        # threshold was rounded down against, so never above `epsilon` even by a float ulp
        keep, _ = self.randomized_response.thresholds()
        return math.log1p(keep / ((2.0**53 - keep) * (1 / self.g)))

    @property
    def words_per_report(self) -> int:
        return self.layout.row_words + 2

    @property
    def n_reports(self) -> int:
        """Values of the randomized bucket: ``g``."""
        return self.g

    # ---- randomize

    def _rows(self, words: npt.NDArray[np.uint64]) -> list[npt.NDArray[np.uint64]]:
        """The rows ``a_r`` of each report from its row words (``(m, >= row_words)``)."""
        lay = self.layout
        mask = np.uint64((1 << lay.value_bits) - 1)
        out = []
        for r in range(lay.bucket_bits):
            word, shift = lay.row_slot(r)
            out.append((words[:, word] >> np.uint64(shift)) & mask)
        return out

    def _hash(
        self, rows: list[npt.NDArray[np.uint64]], x: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.uint64]:
        """``A x``: bit ``r`` is ``parity(a_r & x)``."""
        h = np.zeros(x.shape, dtype=np.uint64)
        for r, a in enumerate(rows):
            h |= parity(a & x).astype(np.uint64) << np.uint64(r)
        return h

    def _hash_in_place(
        self, words: npt.NDArray[np.uint64], x: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.unsignedinteger[Any]]:
        """``A x`` from the row words, the rows left in place: ``a_r & x`` has the parity of
        ``word & (x << shift_r)`` (``x < 2**L`` stays inside row ``r``); small integers."""
        lay = self.layout
        dtype = np.uint8 if lay.bucket_bits <= 8 else np.uint16
        h = np.zeros(x.shape, dtype=dtype)
        tmp = np.empty(x.shape, dtype=np.uint64)
        for r in range(lay.bucket_bits):
            word, shift = lay.row_slot(r)
            np.left_shift(x, np.uint64(shift), out=tmp)
            np.bitwise_and(tmp, words[:, word], out=tmp)
            bit: npt.NDArray[Any] = parity(tmp).astype(dtype, copy=False)
            h |= np.left_shift(bit, r, dtype=dtype)
        return h

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint64]:
        """Reports ``(A, y)`` packed in uint64 words (module docstring): ``(n,)`` when one
        word holds a report, else ``(n, report_words)``.

        Report ``i`` takes words ``w i .. w i + w - 1`` (``w = words_per_report``): the row
        words, the keep word (keep the bucket iff ``word >> 11 < keep``), the bucket word
        (``word >> (64 - log2 g)``).
        """
        x = self._values(values).astype(np.uint64)
        gen = resolve_rng(rng)
        lay = self.layout
        keep_t, _ = self.randomized_response.thresholds()
        w = self.words_per_report
        rw = lay.row_words
        masks = [np.uint64(m) for m in lay.row_masks()]
        y_word, y_shift = lay.bucket_slot
        out = np.empty((x.size, lay.report_words), dtype=np.uint64)
        for start in range(0, x.size, CHUNK):
            stop = min(start + CHUNK, x.size)
            words = random_words(gen, w * (stop - start)).reshape(-1, w)
            hashed = self._hash_in_place(words, x[start:stop])
            keep = words_below(words[:, rw], keep_t)
            other = (words[:, rw + 1] >> np.uint64(64 - lay.bucket_bits)).astype(hashed.dtype)
            y = np.where(keep, hashed, other).astype(np.uint64)
            block = out[start:stop]
            for j in range(rw):
                np.bitwise_and(words[:, j], masks[j], out=block[:, j])
            if y_word == rw:
                block[:, y_word] = y
            else:
                block[:, y_word] |= y << np.uint64(y_shift)
        return out[:, 0] if lay.report_words == 1 else out

    # ---- reports

    def _reports(self, reports: Any) -> npt.NDArray[np.uint64]:
        """``reports`` checked, as an ``(n, report_words)`` uint64 array."""
        if isinstance(reports, str | bytes):
            raise ParameterTypeError(
                f"`reports` must be an array of reports, got {type(reports).__name__}."
            )
        arr = np.asarray(reports)
        lay = self.layout
        w = lay.report_words
        shape = "(n,)" if w == 1 else f"(n, {w})"
        ok_shape = arr.ndim == 1 if w == 1 else (arr.ndim == 2 and arr.shape[1] == w)
        ok_dtype = arr.dtype == np.uint64 or (arr.size == 0 and arr.dtype.kind in "iuf")
        if not (ok_shape and ok_dtype):
            raise DataError(
                f"`reports` of {self.name!r} (k = {self.k}, g = {self.g}) must be a {shape} "
                f"uint64 array ({w} word{'s' if w > 1 else ''} a report: the rows of A and "
                f"the bucket), got an array of dtype {arr.dtype} and shape {arr.shape}."
            )
        arr = arr.reshape(-1, w).astype(np.uint64, copy=False)
        for j, mask in enumerate(lay.masks()):
            stray = arr[:, j] & np.uint64(~mask & ((1 << 64) - 1))
            bad = np.flatnonzero(stray)
            if bad.size:
                i = int(bad[0])
                raise DataError(
                    f"`reports` must have only the bits of the layout set (word {j}: mask "
                    f"{mask:#x}), got report {i} with bits {int(stray[i]):#x} beyond it."
                )
        return arr

    def _check_reports(self, reports: Any) -> None:
        self._reports(reports)

    def _split(
        self, arr: npt.NDArray[np.uint64]
    ) -> tuple[list[npt.NDArray[np.uint64]], npt.NDArray[np.uint64]]:
        """The rows and the buckets of checked reports."""
        y_word, y_shift = self.layout.bucket_slot
        y = (arr[:, y_word] >> np.uint64(y_shift)) & np.uint64(self.g - 1)
        return self._rows(arr), y

    def _supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        arr = self._reports(reports)
        rows, y = self._split(arr)
        hashed = self._hash(rows, np.full(arr.shape[0], value, dtype=np.uint64))
        return np.asarray(hashed == y, dtype=np.bool_)

    def _support_counts(self, reports: Any) -> tuple[npt.NDArray[np.int64], int]:
        arr = self._reports(reports)
        n = int(arr.shape[0])
        size = 1 << (self.value_bits + 1)
        hist = np.zeros(size, dtype=np.int64)
        g = self.g
        block = max(1, _DECODE_ITEMS // g)
        for start in range(0, n, block):
            rows, y = self._split(arr[start : start + block])
            # index 2 a_S + y_S of every subset S: the xor of 2 a_r + y_r over r in S
            # (int64 throughout: below 2**21, and bincount takes them without a copy)
            idx = np.empty((g, y.size), dtype=np.int64)
            idx[0] = 0
            for r, a in enumerate(rows):
                gen_r = (a << np.uint64(1)) | ((y >> np.uint64(r)) & np.uint64(1))
                half = 1 << r
                np.bitwise_xor(idx[:half], gen_r.view(np.int64), out=idx[half : 2 * half])
            hist += np.bincount(idx[1:].ravel(), minlength=size)
        signed = hist[0::2] - hist[1::2]  # F(u): sum of (-1)^(y_S) over a_S = u, S nonempty
        transform = walsh_hadamard(signed)[: self.k]
        # S_v = (n + W(F)(v)) / g, an integer in [0, n] (module docstring)
        return (n + transform) // g, n

    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        keep, _ = self.randomized_response.thresholds()
        lay = self.layout
        return "linear-local-hashing/1", self.words_per_report, {
            "buckets": self.g, "keep": keep, "value_bits": lay.value_bits,
            "rows_per_word": lay.rows_per_word, "report_words": lay.report_words,
        }  # fmt: skip
