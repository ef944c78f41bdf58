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
``oracles._prefix_extension`` has that comparison (a byte a candidate, or eight a word) and
two exact shortcuts, a Walsh-Hadamard count (``g`` histogram entries a report and prefix)
and a GF(2) solve (``2**t / g`` of them); ``extension_counts`` picks one by ``g`` and ``t``,
always with the same counts.

When the candidates are every prefix of ``s <= 20`` bits (PEM's and TreeHist's first round),
:meth:`PrefixOLH.domain_counts` counts them all at once as :class:`~deniable.oracles.LinearOLH`
decodes: ``[A v = y] = (1 / g) sum_S (-1)^(<a_S, v> xor y_S)`` over the subsets ``S`` of the
``l`` rows (``a_S`` the xor of the rows in ``S``, ``y_S`` the parity of ``y``'s bits in
``S``), so the support count of ``v`` is ``(n + W(F)(v)) / g`` with ``F(u) = sum over
reports and nonempty S of (-1)^(y_S) [a_S = u]`` and ``W`` the Walsh-Hadamard transform of
its ``2**s`` cells: O(n g + s 2**s) instead of O(n 2**s l W).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._bits import parity
from deniable.oracles._hadamard import walsh_hadamard
from deniable.oracles._linear_hashing import LinearOLH
from deniable.oracles._prefix_extension import (
    METHODS,
    PACKED_BITS,
    choose_method,
    packed_matches,
    packed_width,
    solve_counts,
    walsh_counts,
)
from deniable.oracles._strings import WordArray, prefix_mask
from deniable.randomness import CHUNK, random_words, resolve_rng, words_below

__all__ = ["DOMAIN_BITS", "PrefixOLH"]

#: Candidate x report pairs compared at once when counting supports.
_PAIRS = 1 << 22
#: Entries of an extension count's pattern table or prefix hashes built at once (reports x
#: the larger of the patterns and 8 k): about a megabyte, in cache.
_BLOCK = 1 << 20
#: Subset indices (reports x g) built at once by :meth:`PrefixOLH.domain_counts`.
_SUBSETS = 1 << 21
#: The longest prefix whose every value :meth:`PrefixOLH.domain_counts` counts (2**20 cells).
DOMAIN_BITS = 20


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
        self,
        reports: WordArray,
        prefixes: WordArray,
        step: int,
        *,
        method: str | None = None,
        patterns: npt.NDArray[np.int64] | None = None,
        valid: npt.NDArray[np.bool_] | None = None,
    ) -> npt.NDArray[np.int64]:
        """:meth:`support_counts` of every prefix of ``bits - step`` bits (``(k, W)`` words)
        followed by each ``step``-bit pattern, in the order of ``extend_prefixes`` (prefix
        ``i``, pattern ``e`` at ``i 2**step + e``), by linearity (module docstring); with
        ``patterns`` (increasing, below ``2**step``: an alphabet's) only those, prefix ``i``
        and ``patterns[q]`` at ``i len(patterns) + q``; with ``valid`` (``k 2**step``
        booleans in that order) only the set ones, in order (an alphabet's candidates).
        ``method`` (one of ``oracles._prefix_extension.METHODS``; default the cheapest for
        ``g`` and the patterns) changes the time, never the counts."""
        n, k = reports.shape[0], prefixes.shape[0]
        if valid is not None:  # count the patterns any prefix may take, keep the valid
            ok = np.asarray(valid, dtype=np.bool_).reshape(k, 1 << step)
            some = np.flatnonzero(ok.any(axis=0))
            got = self.extension_counts(reports, prefixes, step, method=method, patterns=some)
            return got.reshape(k, some.size)[ok[:, some]]
        size = 1 << step if patterns is None else int(patterns.size)
        if method is None:
            method = choose_method(self.base.bucket_bits, step, size)
        if method not in METHODS:
            raise ParameterError(f"`method` must be one of {METHODS}, got {method!r}.")
        if method == "packed" and self.base.bucket_bits > PACKED_BITS:
            raise ParameterError(
                f"`method` 'packed' needs g <= {1 << PACKED_BITS}, got g = {self.base.g}."
            )
        if n == 0 or k == 0:
            return np.zeros(k * size, dtype=np.int64)
        if method in ("plain", "packed"):
            packed = method == "packed"
            return self._plain_extension_counts(reports, prefixes, step, packed, patterns)
        y = reports[:, -1]
        targets = (y[None, :] ^ self._hashes(reports, prefixes)).view(np.int64)  # y xor A p
        count = walsh_counts if method == "walsh" else solve_counts
        args = (self.bits - step, step, self.base.bucket_bits, self.words)
        every = count(reports, targets, *args)
        return (every if patterns is None else every[:, patterns]).ravel()

    def _plain_extension_counts(
        self,
        reports: WordArray,
        prefixes: WordArray,
        step: int,
        packed: bool = False,
        patterns: npt.NDArray[np.int64] | None = None,
    ) -> npt.NDArray[np.int64]:
        """:meth:`extension_counts` comparing ``A e`` with ``y xor A p`` for every pattern
        or each of ``patterns`` (``packed``: eight comparisons a word, buckets of at most 7
        bits)."""
        n, k = reports.shape[0], prefixes.shape[0]
        size = 1 << step if patterns is None else int(patterns.size)
        counts = np.zeros((k, size), dtype=np.int64)
        start = self.bits - step
        l_bits, w = self.base.bucket_bits, self.words
        small = np.uint8 if l_bits <= 8 else np.uint16 if l_bits <= 16 else np.uint32
        block = max(1, _BLOCK // max(size, 8 * k))
        if packed:  # whole lanes of reports, no padding but the last block's
            block = packed_width(block)
        for at in range(0, n, block):
            part = reports[at : at + block]
            m = part.shape[0]
            width = packed_width(m) if packed else m  # whole lanes: padded with no match
            # A e of every pattern e (or each of `patterns`), a row each: buckets < g
            table = np.zeros((1 if patterns is None else size, width), dtype=small)
            for j in range(step):  # pattern bit j (from its top) sits at bit start + j
                word, shift = divmod(start + j, 64)
                column = np.zeros(m, dtype=np.uint64)  # A's column at that bit: a_r bit << r
                for r in range(l_bits):
                    bit = (part[:, r * w + word] >> np.uint64(63 - shift)) & np.uint64(1)
                    column |= bit << np.uint64(r)
                col = np.zeros(width, dtype=small)
                col[:m] = column
                if patterns is None:  # doubling: pattern e's rows, e's bits in order
                    table = np.stack([table, table ^ col[None, :]], axis=1).reshape(-1, width)
                else:  # the rows of the patterns with that bit set
                    on = ((patterns >> (step - 1 - j)) & 1).astype(np.bool_)
                    table[on] ^= col[None, :]
            # z = y xor A p of every kept prefix and report of the block at once
            targets = (part[None, :, -1] ^ self._hashes(part, prefixes)).astype(small)
            for i in range(k):  # a few kept prefixes, each against every report at once
                if packed:
                    goal = np.full(width, 0x7F, dtype=np.uint8)
                    goal[:m] = targets[i]
                    counts[i] += packed_matches(table, goal)
                else:
                    counts[i] += np.count_nonzero(table == targets[i][None, :], axis=1)
        return counts.ravel()

    def domain_counts(self, reports: WordArray) -> npt.NDArray[np.int64]:
        """:meth:`support_counts` of every prefix of ``bits <= 20`` bits, prefix ``v`` (its
        bits read as an integer, first bit highest) at index ``v``: by one Walsh-Hadamard
        transform (module docstring), O(n g + bits 2**bits)."""
        if self.bits > DOMAIN_BITS:
            raise ParameterError(
                f"`bits` must be at most {DOMAIN_BITS} to count every prefix, got {self.bits}."
            )
        n, w, size = reports.shape[0], self.words, 1 << self.bits
        l_bits = self.base.bucket_bits
        hist = np.zeros(2 * size, dtype=np.int64)
        drop = np.uint64(64 - self.bits - 1)  # a row's top `bits` bits, times 2
        low = ~np.uint64(1)
        block = max(1, _SUBSETS >> l_bits)
        for start in range(0, n, block):
            part = reports[start : start + block]
            y = part[:, -1]
            # index 2 a_S + y_S of every subset S: the xor of 2 a_r + y_r over r in S
            idx = np.empty((1 << l_bits, part.shape[0]), dtype=np.uint64)
            idx[0] = 0
            for r in range(l_bits):
                gen_r = ((part[:, r * w] >> drop) & low) | ((y >> np.uint64(r)) & np.uint64(1))
                half = 1 << r
                np.bitwise_xor(idx[:half], gen_r, out=idx[half : 2 * half])
            hist += np.bincount(idx[1:].ravel().view(np.int64), minlength=2 * size)
        signed = hist[0::2] - hist[1::2]  # F(u): sum of (-1)^(y_S) over a_S = u, S nonempty
        # S_v = (n + W(F)(v)) / g, an integer in [0, n]
        counts: npt.NDArray[np.int64] = (n + walsh_hadamard(signed)) // self.base.g
        return counts

    def candidate_counts(self, reports: WordArray, candidates: WordArray) -> npt.NDArray[np.int64]:
        """:meth:`support_counts` of ``candidates``, by :meth:`domain_counts` when they are
        every prefix (PEM's and TreeHist's first round) or many short ones (an alphabet's
        first round: every prefix counted, then those picked); the counts are the same."""
        bits, m = self.bits, candidates.shape[0]
        short = bits <= DOMAIN_BITS and not candidates[:, 1:].any()
        if short and m == 1 << bits:
            want = np.arange(1 << bits, dtype=np.uint64) << np.uint64(64 - bits)
            if bool((candidates[:, 0] == want).all()):
                return self.domain_counts(reports)
        # g histogram entries a report against l W words a report and candidate
        if short and 4 * m * self.base.bucket_bits * self.words >= self.base.g:
            index = (candidates[:, 0] >> np.uint64(64 - bits)).astype(np.int64)
            picked: npt.NDArray[np.int64] = self.domain_counts(reports)[index]
            return picked
        return self.support_counts(reports, candidates)

    def support_counts(self, reports: WordArray, candidates: WordArray) -> npt.NDArray[np.int64]:
        """How many of the (checked) reports support each candidate (``(m, W)`` words):
        ``#{i : A_i c = y_i}``, O(n m l W) without enumerating the ``2**bits`` prefixes."""
        n, m = reports.shape[0], candidates.shape[0]
        counts = np.zeros(m, dtype=np.int64)
        if n == 0 or m == 0:
            return counts
        y = reports[:, -1]
        block = max(1, _PAIRS // n)
        for start in range(0, m, block):
            c = candidates[start : start + block]  # (b, W) against every report
            h = self._hashes(reports, c)
            counts[start : start + c.shape[0]] = np.count_nonzero(h == y[None, :], axis=1)
        return counts

    def _hashes(self, reports: WordArray, candidates: WordArray) -> WordArray:
        """``A_i c`` of each candidate ``c`` (``(b, W)`` words) and report ``i``: ``(b, n)``."""
        w = self.words
        h = np.zeros((candidates.shape[0], reports.shape[0]), dtype=np.uint64)
        for r in range(self.base.bucket_bits):
            acc = candidates[:, 0:1] & reports[None, :, r * w]
            for j in range(1, w):
                acc ^= candidates[:, j : j + 1] & reports[None, :, r * w + j]
            h |= parity(acc).astype(np.uint64) << np.uint64(r)
        return h
