"""Optimized local hashing of a long prefix: :class:`~deniable.oracles.LinearOLH`'s GF(2)
linear hash on bit strings of any length, with support counts of given candidates only.

A device holding the prefix ``x`` of ``s`` bits (``W`` uint64 words, ``oracles._strings``)
draws ``l = log2 g`` rows ``a_0 .. a_(l-1)`` of ``s`` uniform bits and reports ``(A, y)``:
``y`` is its bucket ``A x`` (bit ``r`` is the parity of ``a_r & x``, summed over the words)
kept with probability ``p_truthful``, else a uniform bucket.  For prefixes ``x != x'`` of
``s`` bits

    P_A[A x = A x'] = 2**-l = 1 / g        exactly

(``A (x xor x')`` is uniform for a fixed nonzero ``x xor x'``), so a report supports its
own prefix with ``p = p'`` and any other with ``q = p' / g + (1 - 1/g) q'``, independently
across reports: the support probabilities of OLH (Wang, Blocki, Li & Jha 2017, USENIX
Security) and of :class:`~deniable.oracles.LinearOLH`, whose ``g``, ``p_truthful``, keep
threshold and epsilon this oracle takes over unchanged (``LinearOLH.from_epsilon``).  The
report's rows do not depend on ``x``, so ``epsilon = ln(p' / q')`` of the randomized response
over the ``g`` buckets, whatever ``s``.

The domain ``2**s`` is never enumerated: :meth:`PrefixOLH.support_counts` counts the reports
that support each of ``m`` given candidates, in O(n m l W) word operations.  When the
candidates are ``k`` prefixes each followed by every pattern ``e`` of the last ``t`` bits,
the hash is linear, ``A (p, e) = A p xor A e``, so :meth:`PrefixOLH.extension_counts` builds
each report's table of ``A e`` over the ``2**t`` patterns once (``t`` doublings) and compares
it with ``y xor A p`` for each prefix: O(n (k l W + k 2**t)) small-integer operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._bits import parity
from deniable.oracles._linear_hashing import LinearOLH
from deniable.oracles._strings import WordArray, prefix_mask
from deniable.randomness import CHUNK, random_words, resolve_rng, words_below

__all__ = ["PrefixOLH"]

#: Candidate x report pairs compared at once when counting supports.
_PAIRS = 1 << 22


@dataclass(frozen=True)
class PrefixOLH:
    """Linear-hash OLH on prefixes of ``bits`` bits held in ``words`` uint64 words (module
    docstring); ``base`` gives ``g``, ``p_truthful``, the keep threshold and epsilon."""

    base: LinearOLH
    bits: int
    words: int

    @property
    def epsilon(self) -> float:
        # eps = ln(p' / q') of the randomized response over the g buckets (the rows of A
        # are drawn whatever the prefix): LinearOLH's
        return self.base.epsilon

    @property
    def report_width(self) -> int:
        """uint64 words of a report: ``l W`` row words, then the bucket."""
        return self.base.bucket_bits * self.words + 1

    def randomize(self, prefixes: WordArray, *, rng: Any = None) -> WordArray:
        """Reports ``(A, y)`` of the prefixes (``(n, W)`` words, bits past ``bits`` zero):
        an ``(n, l W + 1)`` uint64 array, row ``r`` of ``A`` in words ``r W .. r W + W - 1``
        (masked to the prefix), ``y`` last.  Report ``i`` takes ``l W + 2`` words of the
        generator: the rows, the keep word (keep iff ``word >> 11 < keep``) and the bucket
        word (its top ``l`` bits)."""
        gen = resolve_rng(rng)
        l_bits, w = self.base.bucket_bits, self.words
        keep_t, _ = self.base.randomized_response.thresholds()
        mask = prefix_mask(self.bits, w)
        per = l_bits * w + 2
        n = prefixes.shape[0]
        out = np.empty((n, self.report_width), dtype=np.uint64)
        for start in range(0, n, CHUNK):
            stop = min(start + CHUNK, n)
            draw = random_words(gen, per * (stop - start)).reshape(-1, per)
            rows = draw[:, : l_bits * w] & np.tile(mask, l_bits)
            hashed = self._hash(rows, prefixes[start:stop])
            keep = words_below(draw[:, per - 2], keep_t)
            other = draw[:, per - 1] >> np.uint64(64 - l_bits)
            out[start:stop, :-1] = rows
            out[start:stop, -1] = np.where(keep, hashed, other)
        return out

    def _hash(self, rows: WordArray, x: WordArray) -> WordArray:
        """``A x`` of each report's rows (``(n, l W)``) and prefix (``(n, W)``)."""
        w = self.words
        h = np.zeros(x.shape[0], dtype=np.uint64)
        for r in range(self.base.bucket_bits):
            acc = rows[:, r * w] & x[:, 0]
            for j in range(1, w):
                acc ^= rows[:, r * w + j] & x[:, j]
            h |= parity(acc).astype(np.uint64) << np.uint64(r)
        return h

    def check_reports(self, reports: Any) -> WordArray:
        """``reports`` as checked ``(n, l W + 1)`` uint64 reports of this oracle."""
        if isinstance(reports, str | bytes):
            raise ParameterTypeError(
                f"`reports` must be an array of reports, got {type(reports).__name__}."
            )
        arr = np.asarray(reports)
        width = self.report_width
        if arr.ndim != 2 or arr.shape[1] != width or arr.dtype != np.uint64:
            raise DataError(
                f"`reports` of the prefix oracle at {self.bits} bits must be an (n, {width}) "
                f"uint64 array (the rows of A, then the bucket), got dtype {arr.dtype} and "
                f"shape {arr.shape}."
            )
        mask = np.tile(prefix_mask(self.bits, self.words), self.base.bucket_bits)
        stray = np.flatnonzero(
            (arr[:, :-1] & ~mask).any(axis=1) | (arr[:, -1] >= np.uint64(self.base.g))
        )
        if stray.size:
            raise DataError(
                f"`reports` must have rows of at most {self.bits} bits and a bucket below "
                f"g = {self.base.g}, got report {int(stray[0])} beyond them."
            )
        return arr

    def extension_counts(
        self, reports: WordArray, prefixes: WordArray, step: int
    ) -> npt.NDArray[np.int64]:
        """:meth:`support_counts` of every prefix of ``bits - step`` bits (``(k, W)`` words)
        followed by each ``step``-bit pattern, in the order of ``extend_prefixes`` (prefix
        ``i``, pattern ``e`` at ``i 2**step + e``), by linearity (module docstring)."""
        n, k, w = reports.shape[0], prefixes.shape[0], self.words
        if n == 0 or k == 0:
            return np.zeros(k << step, dtype=np.int64)
        start = self.bits - step
        table = np.zeros((n, 1), dtype=np.uint64)  # A e over the patterns e so far
        for j in range(step):  # pattern bit j (from its top) sits at bit start + j
            word, shift = divmod(start + j, 64)
            column = np.zeros(n, dtype=np.uint64)  # A's column at that bit: (a_r bit) << r
            for r in range(self.base.bucket_bits):
                bit = (reports[:, r * w + word] >> np.uint64(63 - shift)) & np.uint64(1)
                column |= bit << np.uint64(r)
            table = np.stack([table, table ^ column[:, None]], axis=2).reshape(n, -1)
        y = reports[:, -1]
        counts = np.empty((k, 1 << step), dtype=np.int64)
        for i in range(k):  # a few kept prefixes, each against every report at once
            target = y ^ self._hash(reports[:, :-1], np.broadcast_to(prefixes[i], (n, w)))
            counts[i] = np.count_nonzero(table == target[:, None], axis=0)
        return counts.ravel()

    def support_counts(self, reports: WordArray, candidates: WordArray) -> npt.NDArray[np.int64]:
        """How many of the (checked) reports support each candidate (``(m, W)`` words):
        ``#{i : A_i c = y_i}``, O(n m l W) without enumerating the ``2**bits`` prefixes."""
        n, m, w = reports.shape[0], candidates.shape[0], self.words
        counts = np.zeros(m, dtype=np.int64)
        if n == 0 or m == 0:
            return counts
        y = reports[:, -1]
        block = max(1, _PAIRS // n)
        for start in range(0, m, block):
            c = candidates[start : start + block]  # (b, W) against every report
            h = np.zeros((c.shape[0], n), dtype=np.uint64)
            for r in range(self.base.bucket_bits):
                acc = c[:, 0:1] & reports[None, :, r * w]
                for j in range(1, w):
                    acc ^= c[:, j : j + 1] & reports[None, :, r * w + j]
                h |= parity(acc).astype(np.uint64) << np.uint64(r)
            counts[start : start + c.shape[0]] = np.count_nonzero(h == y[None, :], axis=1)
        return counts
