"""The optional compiled kernels of ``randomize_and_tally`` (binary and k-ary randomized
response): one pass over the words already drawn, instead of numpy's several.

Numpy evaluates each step of a randomizer (a comparison, a selection, a count) as one pass
over a block of words; at a nanosecond or so a word each, those passes cost as much as the
ChaCha20 keystream itself (``docs/performance.md``, "What limits speed").  The kernels
below, compiled by numba (the ``fast`` extra) on first use, do the same arithmetic on the
same words in one loop: the comparison with the threshold, the arithmetic selection of the
report and its count.  They consume exactly the words of the numpy path in the same order
(the words are drawn by :func:`~deniable.randomness.fill_words` before a kernel sees them:
the keystream stays ChaCha20 in ``cryptography``), so both paths give the same reports and
tallies bit for bit (``tests/test_compiled_kernels.py``).

No step depends on the true answer (house style 3): a report is selected by a mask,
``t0 ^ ((t0 ^ t1) & -x)`` for the threshold of a binary report and
``other ^ ((x ^ other) & -keep)`` for a k-ary one (the values of the scalar paths'
``t0 + x (t1 - t0)`` and ``other + keep (x - other)``, without their multiplications: a
64-bit vector multiply is three micro-operations on Intel cores, and these loops are
vectorized).  The loops branch only on the design's constants and, for a non-uniform
forced distribution, on the random word's place among the cumulative thresholds (a binary
search, as ``np.searchsorted``).

Which path runs is the environment variable ``DENIABLE_KERNEL``, read on every call:
``numpy`` (never compile), ``numba`` (numba required), or ``auto`` (the default: numba when
it can be imported).  ``import deniable`` never imports numba: it is imported the first
time a kernel is asked for (calls of fewer than :data:`MIN_REPORTS` reports never ask).

References
----------
S. L. Warner, "Randomized response: a survey technique for eliminating evasive answer
bias", JASA 60 (1965) 63-69 (binary RR).  P. Kairouz, K. Bonawitz, D. Ramage, "Discrete
distribution estimation under local privacy", ICML 2016 (k-ary RR).  D. Lemire, "Fast
random integer generation in an interval", ACM TOMACS 29 (2019) (the multiply-shift
category).  S. K. Lam, A. Pitrou, S. Seibert, "Numba: a LLVM-based Python JIT compiler",
LLVM-HPC 2015.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import ParameterError

__all__ = [
    "KERNELS",
    "KERNEL_ENV",
    "LANES",
    "MIN_REPORTS",
    "PAIRED_VALUES",
    "binary_kernel",
    "kary_arguments",
    "kary_cells",
    "kary_counts",
    "kary_kernel",
    "kernel_backend",
    "use_kernel",
]

#: The environment variable that chooses the path of ``randomize_and_tally``.
KERNEL_ENV = "DENIABLE_KERNEL"
#: Its allowed values.
KERNELS = ("auto", "numba", "numpy")

#: Fewer reports than this take the numpy path whatever ``DENIABLE_KERNEL`` says (the
#: same reports; numba's import and first compile are not worth a few microseconds).
MIN_REPORTS = 4096
#: Rows of the kernels' counts (consecutive reports are counted in different rows).
LANES = 4
#: Designs of at most this many categories count their reports two at a time: a pair of
#: ``uint16`` reports read as one ``uint32`` is the cell ``r0 + 16 r1`` of 256.
PAIRED_VALUES = 16
_LANES = LANES
_PAIR_CELLS = PAIRED_VALUES * PAIRED_VALUES
_S11 = np.uint64(11)
#: How the k-ary loop counts its reports: not at all, one a cell of ``k``, two a cell.
_NO_COUNT, _SINGLES, _PAIRS = 0, 1, 2


def kernel_backend() -> str:
    """``"numba"`` or ``"numpy"``: the path ``DENIABLE_KERNEL`` asks for (``auto``, the
    default, is numba when it can be imported).  A value outside :data:`KERNELS`, or
    ``numba`` without numba installed, is refused with a :class:`ParameterError`."""
    raw = os.environ.get(KERNEL_ENV, "auto")
    choice = raw.strip().lower()
    if choice not in KERNELS:
        raise ParameterError(
            f"`{KERNEL_ENV}` must be one of {', '.join(map(repr, KERNELS))}, got {raw!r}."
        )
    if choice == "numpy":
        return "numpy"
    if _compiled() is None:
        if choice == "numba":
            raise ParameterError(
                f"`{KERNEL_ENV}`='numba' needs numba (pip install 'deniable[fast]'), which "
                "cannot be imported; set it to 'auto' or 'numpy'."
            )
        return "numpy"
    return "numba"


def use_kernel(n: int) -> bool:
    """Whether ``n`` reports go through the compiled kernel: ``DENIABLE_KERNEL`` is read and
    checked on every call (:func:`kernel_backend`), and fewer than :data:`MIN_REPORTS`
    reports take the numpy path (numba is then not imported)."""
    choice = os.environ.get(KERNEL_ENV, "auto").strip().lower()
    if choice not in KERNELS or n >= MIN_REPORTS:
        return kernel_backend() == "numba"  # refuses a bad value whatever n
    return False


def _binary_loop(
    words: npt.NDArray[np.uint64],
    x: npt.NDArray[np.integer[Any]],
    t0: np.uint64,
    t1: np.uint64,
    out: npt.NDArray[np.uint8],
) -> int:
    # report i = (w_i >> 11) < t_i, t_i = t0 ^ (d & -x_i) with d = t0 ^ t1: the threshold of
    # the answer's column selected by a mask (x is 0 or 1: the mask is 0 or all ones), one
    # comparison, the count added as it is made.  No multiplication: a 64-bit vector
    # multiply is three micro-operations on Intel cores (one on AMD Zen 4), and the
    # select by mask compiles to a blend (docs/performance.md, "The compiled kernel")
    d = t0 ^ t1
    yes = 0
    for i in range(out.size):
        t = t0 ^ (d & (_U0 - np.uint64(x[i])))
        r = np.uint8((words[i] >> _S11) < t)
        out[i] = r
        yes += int(r)
    return yes


def _kary_loop(
    words: npt.NDArray[np.uint64],
    x: npt.NDArray[np.integer[Any]],
    out: npt.NDArray[np.unsignedinteger[Any]],
    counts: npt.NDArray[np.int64],
    keep_t: np.uint64,
    block: int,
    pre: np.uint64,
    mul: np.uint64,
    post: np.uint64,
    cum: npt.NDArray[np.uint64],
    count: int,
) -> None:
    # blocks of `block` reports (the last one shorter): the block's keep words, then its
    # category words; each block's reports made by one of three loops (the forced
    # category's form is a constant of the call, the design's), then counted (one report
    # a cell, or two: `count` is a constant of the call, the design's)
    m = out.size
    b = 0
    while b < m:
        size = min(block, m - b)
        keep_words = words[2 * b : 2 * b + size]
        category = words[2 * b + size : 2 * b + 2 * size]
        xs, reps = x[b : b + size], out[b : b + size]
        if cum.size:
            _cumulative(keep_words, category, xs, reps, keep_t, cum)
        elif mul == 1:
            _shift(keep_words, category, xs, reps, keep_t, post)
        else:
            _multiply(keep_words, category, xs, reps, keep_t, pre, mul, post)
        if count == _PAIRS:
            _count_pairs(reps, counts)
        elif count == _SINGLES:
            _count(reps, counts)
        b += size


def _kary_shift(
    keep_words: npt.NDArray[np.uint64],
    category: npt.NDArray[np.uint64],
    xs: npt.NDArray[np.integer[Any]],
    reps: npt.NDArray[np.unsignedinteger[Any]],
    keep_t: np.uint64,
    post: np.uint64,
) -> None:
    # the forced category the top bits of its word (k a power of two); the report
    # other ^ ((x ^ other) & mask), mask all ones when the keep word is below the keep
    # threshold (the answer is kept), else 0: x or other, by a mask, no multiplication
    for i in range(reps.size):
        other = category[i] >> post
        mask = _U0 - np.uint64((keep_words[i] >> _S11) < keep_t)
        reps[i] = other ^ ((np.uint64(xs[i]) ^ other) & mask)


def _kary_multiply(
    keep_words: npt.NDArray[np.uint64],
    category: npt.NDArray[np.uint64],
    xs: npt.NDArray[np.integer[Any]],
    reps: npt.NDArray[np.unsignedinteger[Any]],
    keep_t: np.uint64,
    pre: np.uint64,
    mul: np.uint64,
    post: np.uint64,
) -> None:
    # the forced category ((w >> pre) * mul) >> post (multiply-shift, k not a power of two)
    for i in range(reps.size):
        other = ((category[i] >> pre) * mul) >> post
        mask = _U0 - np.uint64((keep_words[i] >> _S11) < keep_t)
        reps[i] = other ^ ((np.uint64(xs[i]) ^ other) & mask)


def _kary_cumulative(
    keep_words: npt.NDArray[np.uint64],
    category: npt.NDArray[np.uint64],
    xs: npt.NDArray[np.integer[Any]],
    reps: npt.NDArray[np.unsignedinteger[Any]],
    keep_t: np.uint64,
    cum: npt.NDArray[np.uint64],
) -> None:
    # the forced category bisect_right(cum, w >> 11) for the cumulative thresholds of a
    # given distribution (a binary search on the random word, as np.searchsorted(...,
    # side="right"))
    n_cum = cum.size
    for i in range(reps.size):
        v = category[i] >> _S11
        lo, hi = 0, n_cum
        while lo < hi:
            mid = (lo + hi) >> 1
            if cum[mid] <= v:
                lo = mid + 1
            else:
                hi = mid
        other = np.uint64(lo)
        mask = _U0 - np.uint64((keep_words[i] >> _S11) < keep_t)
        reps[i] = other ^ ((np.uint64(xs[i]) ^ other) & mask)


def _count_loop(reps: npt.NDArray[np.unsignedinteger[Any]], counts: npt.NDArray[np.int64]) -> None:
    # reports i, i+1, i+2, i+3 counted in rows 0..3: the four additions do not wait for each
    # other when reports repeat (a store to one counter, then a load of it, costs cycles)
    size = reps.size
    whole = size - size % _LANES
    for i in range(0, whole, _LANES):
        counts[0, reps[i]] += 1
        counts[1, reps[i + 1]] += 1
        counts[2, reps[i + 2]] += 1
        counts[3, reps[i + 3]] += 1
    for i in range(whole, size):
        counts[0, reps[i]] += 1


def _count_pairs_loop(
    reps: npt.NDArray[np.unsignedinteger[Any]], cells: npt.NDArray[np.int64]
) -> None:
    # reports below 16 (uint16): reports 2j and 2j+1 read as one uint32 a = r0 + r1 2**16
    # (little-endian; r1 + r0 2**16 big-endian: kary_counts adds both places, so either
    # order counts the same), and a | a >> 12 holds r0 + 16 r1 in its low byte: one count
    # of 256 cells for two reports (half the loads and stores of one report a cell: the
    # count's cost; docs/performance.md, "The compiled kernel"); four rows of cells as in
    # _count_loop.  An odd last report goes to cell 256 + r of row 0.
    size = reps.size
    pairs = reps[: size - size % 2].view(np.uint32)
    whole = pairs.size - pairs.size % _LANES
    for i in range(0, whole, _LANES):
        a = pairs[i]
        cells[0, (a | (a >> _S12)) & _BYTE] += 1
        a = pairs[i + 1]
        cells[1, (a | (a >> _S12)) & _BYTE] += 1
        a = pairs[i + 2]
        cells[2, (a | (a >> _S12)) & _BYTE] += 1
        a = pairs[i + 3]
        cells[3, (a | (a >> _S12)) & _BYTE] += 1
    for i in range(whole, pairs.size):
        a = pairs[i]
        cells[0, (a | (a >> _S12)) & _BYTE] += 1
    if size % 2:
        cells[0, _PAIR_CELLS + reps[size - 1]] += 1


@functools.cache
def _compiled() -> tuple[Any, Any] | None:
    """The loops compiled by numba (binary; k-ary), lazily, per argument types; cached on
    disk where numba can write (its user-wide cache when the package directory is
    read-only, no cache when nothing is writable), or None when numba cannot be imported."""
    try:
        import numba
    except ImportError:
        return None
    # the k-ary loop calls these: numba reads them as globals when it compiles it, so each
    # is replaced by its compiled self first
    global _count, _count_pairs, _shift, _multiply, _cumulative
    helpers = (_count_loop, _count_pairs_loop, _kary_shift, _kary_multiply, _kary_cumulative)
    try:  # numba refuses cache=True when no cache directory is writable: compile per process
        jit = numba.njit(cache=True, nogil=True, boundscheck=False)
        compiled = [jit(f) for f in helpers]
    except RuntimeError:
        jit = numba.njit(cache=False, nogil=True, boundscheck=False)
        compiled = [jit(f) for f in helpers]
    _count, _count_pairs, _shift, _multiply, _cumulative = compiled
    return jit(_binary_loop), jit(_kary_loop)


def binary_kernel(
    words: npt.NDArray[np.uint64],
    x: npt.NDArray[np.integer[Any]],
    t0: int,
    t1: int,
    out: npt.NDArray[np.uint8],
) -> int:
    """Binary reports of ``x`` (validated 0/1, the same length as ``out``) into ``out``,
    one word each: report ``i`` is ``(w_i >> 11) < t[x_i]``; returns the number of 1s."""
    compiled = _compiled()
    assert compiled is not None  # kernel_backend() said "numba"
    return int(compiled[0](words, x, np.uint64(t0), np.uint64(t1), out))


def kary_arguments(plan: Any) -> tuple[Any, ...]:
    """The constants of a k-ary design's kernel (its plan's keep threshold and forced
    category), made once a call of :func:`kary_kernel`'s caller, not once a block."""
    keep = np.uint64(plan.keep)  # (w >> 11) < keep: exact for every keep in [0, 2**53]
    if plan.cum_array is not None:  # a given distribution: the thresholds' binary search
        return keep, _U0, _U0, _U0, plan.cum_array
    if plan.mul == 0:  # the top bits: word >> shift
        return keep, _U0, np.uint64(1), np.uint64(plan.shift), _NO_CUM
    # ((word >> (64 - shift)) * mul) >> shift
    return keep, np.uint64(64 - plan.shift), np.uint64(plan.mul), np.uint64(plan.shift), _NO_CUM


def kary_cells(k: int) -> npt.NDArray[np.int64]:
    """Zeroed cells for :func:`kary_kernel` to count the reports of a ``k``-category design
    into: ``(LANES, k)``, one report a cell, or for ``k <= PAIRED_VALUES`` ``(LANES, 272)``,
    two reports a cell (256 pairs, then 16 cells for an odd last report);
    :func:`kary_counts` reads the counts from them."""
    width = _PAIR_CELLS + PAIRED_VALUES if k <= PAIRED_VALUES else k
    return np.zeros((LANES, width), dtype=np.int64)


def kary_counts(cells: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.int64]:
    """The count of each value ``0..k-1`` in cells of :func:`kary_cells` (a new array): the
    sum of its rows, and for pairs the cells with the value in either place."""
    total: npt.NDArray[np.int64] = cells.sum(axis=0)
    if k > PAIRED_VALUES:
        return total
    pairs = total[:_PAIR_CELLS].reshape(PAIRED_VALUES, PAIRED_VALUES)  # [r1, r0]
    counts: npt.NDArray[np.int64] = pairs.sum(axis=0) + pairs.sum(axis=1) + total[_PAIR_CELLS:]
    return counts[:k]


def kary_kernel(
    words: npt.NDArray[np.uint64],
    x: npt.NDArray[np.integer[Any]],
    out: npt.NDArray[np.unsignedinteger[Any]],
    cells: npt.NDArray[np.int64] | None,
    arguments: tuple[Any, ...],
    block: int,
    k: int,
) -> None:
    """K-ary keep-or-forced reports of ``x`` into ``out`` from ``2 * out.size`` words laid
    out in blocks of ``block`` reports (keep words, then category words, the layout of the
    numpy path), counted into ``cells`` when given (:func:`kary_cells` of the design's
    ``k``, read by :func:`kary_counts`); ``arguments`` is :func:`kary_arguments` of the
    design's plan."""
    compiled = _compiled()
    assert compiled is not None  # kernel_backend() said "numba"
    keep, pre, mul, post, cum = arguments
    if cells is None:
        into, count = _NO_COUNTS, _NO_COUNT
    elif k <= PAIRED_VALUES:  # the design's reports are uint16 (a plan's dtype below 2**16)
        assert out.dtype == np.uint16 and cells.shape == (LANES, _PAIR_CELLS + PAIRED_VALUES)
        into, count = cells, _PAIRS
    else:
        into, count = cells, _SINGLES
    compiled[1](words, x, out, into, keep, block, pre, mul, post, cum, count)


# replaced by their compiled selves when numba is loaded (the k-ary loop calls them)
_count: Any = _count_loop
_count_pairs: Any = _count_pairs_loop
_shift: Any = _kary_shift
_multiply: Any = _kary_multiply
_cumulative: Any = _kary_cumulative
_NO_COUNTS = np.zeros((LANES, 1), dtype=np.int64)
_NO_CUM = np.zeros(0, dtype=np.uint64)
_U0 = np.uint64(0)
_S12 = np.uint32(12)  # r1 beside r0 in a pair of uint16 reports
_BYTE = np.uint32(0xFF)
