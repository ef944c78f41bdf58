"""Fast support counts of ``k`` prefixes times every ``t``-bit pattern for
:meth:`~deniable.oracles._prefix_oracle.PrefixOLH.extension_counts`.

A report with rows ``a_0 .. a_(l-1)`` and bucket ``y`` supports the candidate ``(p, e)``
(prefix ``p``, pattern ``e`` of the last ``t`` bits) iff ``B e = z``, ``B`` the ``l x t``
block of the rows at the pattern's bits and ``z = y xor A p`` (``l`` bits, one per prefix
and report).  The plain count compares ``B e`` with ``z`` for all ``2**t`` patterns
(``2**t`` comparisons a report and prefix).  Two exact ways do less work:

**Walsh-Hadamard** (small ``g = 2**l``).  ``[B e = z] = (1/g) sum_S (-1)^(<b_S, e> xor
<z, S>)`` over the subsets ``S`` of the rows (``b_S`` the xor of the rows of ``B`` in
``S``, ``<z, S>`` the parity of ``z``'s bits in ``S``), so the count of ``(p, e)`` is
``W(F_p)(e) / g``, ``W`` the Walsh-Hadamard transform over the ``2**t`` patterns and
``F_p(u) = sum over reports and S of (-1)^(<z, S>) [b_S = u]``: ``g`` signed histogram
entries a report and prefix, then ``k t 2**t`` additions.

**Solving** (large ``g``).  Gaussian elimination over GF(2) of each report's ``t``
columns (vectorized across reports: ``t l`` array operations) gives an echelon basis of
``B``'s image, each vector with the pattern that maps to it, and a basis of its kernel.
Reducing ``z`` through the basis finds one pattern ``e_0`` with ``B e_0 = z`` or shows
there is none; the supported patterns are then exactly ``e_0`` xor the kernel, ``2**(t -
rank B)`` of them (``2**t / g`` when ``B`` has full rank ``l <= t``): one histogram entry
each.

Both count every ``(report, candidate)`` pair once, so they equal the plain count exactly
(``tests/test_prefix_extension.py`` compares them on random reports for several ``g``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.oracles._bits import parity
from deniable.oracles._hadamard import walsh_hadamard
from deniable.oracles._strings import WordArray

__all__ = [
    "METHODS",
    "PACKED_BITS",
    "choose_method",
    "packed_matches",
    "packed_width",
    "solve_counts",
    "walsh_counts",
]

IntArray = npt.NDArray[np.int64]
#: The ways to count: compare every pattern (a byte, or eight a word), Walsh-Hadamard, solve.
METHODS = ("plain", "packed", "walsh", "solve")
#: The widest bucket :func:`packed_matches` compares (values below 128).
PACKED_BITS = 7
#: Bytes (reports) counted in one lane before it could overflow: 255 words of 8.
_LANE = 255 * 8
#: Histogram entries built at once (reports x prefixes x entries a pair).
_ENTRIES = 1 << 22


def choose_method(l_bits: int, step: int, size: int | None = None) -> str:
    """The fastest of :data:`METHODS` measured for buckets of ``l_bits`` bits and ``size``
    of the ``step``-bit patterns (default all ``2**step``; fewer with an alphabet):
    Walsh-Hadamard's ``g`` histogram entries a report and prefix beat ``size`` byte
    comparisons when ``16 g <= size``; otherwise the packed comparison (buckets of at most 7
    bits) or the plain one."""
    if 16 << l_bits <= (1 << step if size is None else size):
        return "walsh"
    return "packed" if l_bits <= PACKED_BITS else "plain"


def packed_matches(table: npt.NDArray[np.uint8], target: npt.NDArray[np.uint8]) -> IntArray:
    """``#{i : table[e, i] = target[i]}`` for each row ``e`` of ``table`` (``(size, m)``
    values below 128), eight bytes a uint64 word: ``x = table xor target`` has a zero byte
    exactly at a match, and ``((x + 0x7f) >> 7) & 1`` is 1 in a byte exactly when it is
    nonzero (no carry leaves a byte below 128); the lanes are summed 255 words at a time."""
    size, m = table.shape
    width = packed_width(m)
    if width != m:  # extra reports: 0 against 0x7f, never a match
        table = np.concatenate([table, np.zeros((size, width - m), dtype=np.uint8)], axis=1)
        target = np.concatenate([target, np.full(width - m, 0x7F, dtype=np.uint8)])
    x = table.view(np.uint64) ^ target.view(np.uint64)[None, :]
    x += np.uint64(0x7F7F7F7F7F7F7F7F)
    x >>= np.uint64(7)
    x &= np.uint64(0x0101010101010101)
    lanes = np.add.reduce(x.reshape(size, -1, 255), axis=2)  # each byte lane at most 255
    misses: IntArray = lanes.view(np.uint8).reshape(size, -1).sum(axis=1, dtype=np.int64)
    return width - misses


def packed_width(m: int) -> int:
    """``m`` reports padded to whole lanes for :func:`packed_matches`."""
    return -(-m // _LANE) * _LANE


def _bit_columns(part: WordArray, start: int, step: int, l_bits: int, w: int) -> list[IntArray]:
    """The rows of each report's ``B``: ``l`` arrays of ``t``-bit integers, pattern bit
    ``j`` (from its top, bit ``start + j`` of the prefix) at bit ``t - 1 - j``."""
    rows = [np.zeros(part.shape[0], dtype=np.int64) for _ in range(l_bits)]
    for j in range(step):
        word, shift = divmod(start + j, 64)
        for r in range(l_bits):
            bit = (part[:, r * w + word] >> np.uint64(63 - shift)) & np.uint64(1)
            rows[r] |= bit.astype(np.int64) << (step - 1 - j)
    return rows


def _small(bits: int) -> type[np.unsignedinteger[Any]]:
    """The narrowest unsigned type holding ``bits`` bits (fewer bytes a pass)."""
    return np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32


def walsh_counts(
    part: WordArray, targets: IntArray, start: int, step: int, l_bits: int, w: int
) -> IntArray:
    """``(k, 2**step)`` support counts by the Walsh-Hadamard transform (module docstring);
    ``targets`` the ``(k, m)`` values ``z`` of each prefix and report of ``part``."""
    k, m = targets.shape
    g, size = 1 << l_bits, 1 << step
    signed = np.zeros(k * size, dtype=np.int64)
    subsets = np.arange(g, dtype=np.int64)
    # <z, S> at [z, S - 1]: the empty S (b = 0, sign +1) adds m to every F_p(0), not counted
    chi = parity(subsets[:, None] & subsets[None, 1:]).astype(np.int32)
    base = (np.arange(k, dtype=np.int32) * (2 * size))[:, None, None]
    block = max(1, _ENTRIES // (k * g))
    for at in range(0, m, block):
        rows = _bit_columns(part[at : at + block], start, step, l_bits, w)
        b = np.zeros((rows[0].size, g), dtype=np.int32)  # 2 b_S of each report and S
        for r in range(l_bits):
            half = 1 << r
            np.bitwise_xor(
                b[:, :half], 2 * rows[r][:, None].astype(np.int32), out=b[:, half : 2 * half]
            )
        idx = chi[targets[:, at : at + block]]  # (k, m, g - 1): 2 (p 2**t + b_S) + <z, S>
        idx += b[None, :, 1:]
        idx += base
        hist = np.bincount(idx.ravel(), minlength=2 * k * size)
        signed += hist[0::2] - hist[1::2]
    signed[::size] += m
    out = np.empty((k, size), dtype=np.int64)
    for i in range(k):
        out[i] = walsh_hadamard(signed[i * size : (i + 1) * size])
    # every count is W(F_p)(e) / g exactly (module docstring)
    return out // g


def _echelon(
    cols: list[IntArray], l_bits: int, step: int
) -> tuple[IntArray, IntArray, npt.NDArray[np.bool_], IntArray, npt.NDArray[np.bool_]]:
    """Each report's echelon basis of ``B``'s image (``val[b]`` with leading bit ``b`` where
    ``has[b]``, ``val[b] = B comb[b]``) and its kernel vectors (``kern[j]`` where
    ``in_kern[j]``), by eliminating the columns in order."""
    m = cols[0].size
    vt, ct = _small(l_bits), _small(step)
    val = np.zeros((l_bits, m), dtype=vt)
    comb = np.zeros((l_bits, m), dtype=ct)
    has = np.zeros((l_bits, m), dtype=np.bool_)
    kern = np.zeros((step, m), dtype=ct)
    in_kern = np.zeros((step, m), dtype=np.bool_)
    for j in range(step):
        cur = cols[j].astype(vt)
        pat = np.full(m, 1 << (step - 1 - j), dtype=ct)
        top = np.full(m, -1, dtype=np.int8)
        for b in range(l_bits - 1, -1, -1):
            bit = ((cur >> vt(b)) & vt(1)).astype(np.bool_)
            hit = has[b] & bit
            cur ^= np.where(hit, val[b], vt(0))
            pat ^= np.where(hit, comb[b], ct(0))
            top = np.where(bit & ~has[b] & (top < 0), np.int8(b), top)  # highest unreduced
        zero = cur == 0
        kern[j] = np.where(zero, pat, ct(0))
        in_kern[j] = zero
        for b in range(l_bits):
            ins = top == b
            val[b] = np.where(ins, cur, val[b])
            comb[b] = np.where(ins, pat, comb[b])
            has[b] |= ins
    return val, comb, has, kern, in_kern


def _columns(part: WordArray, start: int, step: int, l_bits: int, w: int) -> list[IntArray]:
    """The columns of each report's ``B``: column ``j`` (pattern bit ``j`` from its top, bit
    ``start + j`` of the prefix) as an ``l``-bit integer, row ``r`` at bit ``r``."""
    cols = []
    for j in range(step):
        word, shift = divmod(start + j, 64)
        col = np.zeros(part.shape[0], dtype=np.uint64)
        for r in range(l_bits):
            bit = (part[:, r * w + word] >> np.uint64(63 - shift)) & np.uint64(1)
            col |= bit << np.uint64(r)
        cols.append(col.view(np.int64))
    return cols


def _kernel_slots(
    kern: npt.NDArray[Any], in_kern: npt.NDArray[np.bool_], slots: int
) -> npt.NDArray[Any]:
    """Each report's kernel vectors packed into ``slots`` rows, in column order (a report
    with fewer leaves the rest zero)."""
    out = np.zeros((slots, kern.shape[1]), dtype=kern.dtype)
    seen = np.zeros(kern.shape[1], dtype=np.int64)
    for j in range(kern.shape[0]):
        for slot in range(slots):
            out[slot] = np.where(in_kern[j] & (seen == slot), kern[j], out[slot])
        seen += in_kern[j]
    return out


def _span(basis: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``(m, 2**d)``: every xor of the ``d`` rows of ``basis`` (``(d, m)``), per report."""
    span = np.zeros((basis.shape[1], 1), dtype=basis.dtype)
    for c in range(basis.shape[0]):
        span = np.concatenate([span, span ^ basis[c][:, None]], axis=1)
    return span


def solve_counts(
    part: WordArray, targets: IntArray, start: int, step: int, l_bits: int, w: int
) -> IntArray:
    """``(k, 2**step)`` support counts by solving ``B e = z`` (module docstring)."""
    k, m = targets.shape
    size = 1 << step
    vt, ct = _small(l_bits), _small(step)
    least = max(step - l_bits, 0)  # every report's kernel has at least this dimension
    hist = np.zeros((k + 1) * size, dtype=np.int64)  # the last row: targets with no solution
    rows_at = (np.arange(k, dtype=np.int64) * size)[:, None]
    block = max(1, _ENTRIES // (k << least))
    for at in range(0, m, block):
        cols = _columns(part[at : at + block], start, step, l_bits, w)
        val, comb, has, kern, in_kern = _echelon(cols, l_bits, step)
        z = targets[:, at : at + block].astype(vt)
        e0 = np.zeros(z.shape, dtype=ct)
        for b in range(l_bits - 1, -1, -1):
            hit = has[b][None, :] & ((z >> vt(b)) & vt(1)).astype(np.bool_)
            z ^= np.where(hit, val[b][None, :], vt(0))
            e0 ^= np.where(hit, comb[b][None, :], ct(0))
        # prefix p's row (p 2**t, the kernel's xor never reaches it) or the no-solution row
        e0x = np.where(z == 0, rows_at, k * size) | e0
        dims = in_kern.sum(axis=0)
        most = int(dims.max())
        basis = _kernel_slots(kern, in_kern, most)
        # e0 xor the span of the first `least` kernel vectors, every report ...
        sols = e0x[:, :, None] ^ _span(basis[:least])[None, :, :]
        hist += np.bincount(sols.ravel(), minlength=(k + 1) * size)
        for d in range(least + 1, most + 1):  # ... then the few reports with a larger kernel
            sel = np.flatnonzero(dims == d)
            if sel.size == 0:
                continue
            span = _span(basis[:d, sel])[:, 1 << least :]  # the combinations not yet counted
            hist += np.bincount((e0x[:, sel][:, :, None] ^ span[None]).ravel(),
                                minlength=(k + 1) * size)  # fmt: skip
    return hist[: k * size].reshape(k, size)
