"""The randomizers' array paths: binary and k-ary randomized response block by block, and
the tally of each block counted while it is still in cache (``randomize_and_tally``).

Both loops draw the words of a block into one reused buffer (:func:`fill_words`: the
default keystream writes straight into it; a numpy ``Generator``'s own new array is used
as it comes), work in place on block-sized buffers (``out=`` arguments, no temporary per
ufunc), and, when asked, count the reports of the block before moving on, so that the
tally costs no second pass over the reports in memory.  The words each report consumes,
and so the reports of a seeded run, are those documented in
``docs/specs.md``: the block layout is ``CHUNK`` reports, as it always was.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.designs._compiled import (
    binary_kernel,
    kary_arguments,
    kary_cells,
    kary_counts,
    kary_kernel,
    use_kernel,
)
from deniable.designs._counting import PACKED_VALUES, ValueCounter
from deniable.designs._mechanism import blocks
from deniable.randomness import (
    CHUNK,
    RandomSource,
    fill_words,
    random_words,
    uniform_below_into,
    words_below,
)

__all__ = ["BINARY_BLOCK", "GROUP", "KERNEL_BLOCK", "binary_reports", "keep_or_forced_reports"]

_TOP53 = np.uint64(11)
#: Whole ``CHUNK`` blocks of the k-ary loop drawn and worked on together: a quarter of
#: the numpy calls (each costs about a microsecond whatever its size), the same words.
GROUP = 4
#: Reports a block of the binary loop (one word each, so the block size does not change
#: which word goes to which report).
BINARY_BLOCK = GROUP * CHUNK
#: Reports a block of the compiled binary kernel: its words (512 KiB) are read from the
#: core's L2 cache right after the keystream wrote them.  The compiled k-ary kernel draws
#: one block of ``CHUNK`` reports at a time (two words each, 1 MiB) for the same reason:
#: four blocks (4 MiB) outgrew a 2 MiB L2 and cost about 0.3 ns a report; on a 1 MiB L2
#: (an AMD EPYC) k-ary blocks of half or a quarter of ``CHUNK`` were no faster, each paying its
#: own ``fill`` and kernel call (``docs/performance.md``).  The same words in the same order
#: as the numpy path's draws.
KERNEL_BLOCK = CHUNK


class _Words:
    """The words of each block in an array the loop may overwrite: a numpy ``Generator``'s
    own new array (its bit generator makes one anyway: no copy), else written into one
    buffer made on first use and reused (the default keystream writes straight into it)."""

    __slots__ = ("_buffer", "_gen", "_size")

    def __init__(self, gen: RandomSource, size: int) -> None:
        self._gen, self._size = gen, size
        self._buffer: npt.NDArray[np.uint64] | None = None

    def next(self, m: int) -> npt.NDArray[np.uint64]:
        if isinstance(self._gen, np.random.Generator):
            return random_words(self._gen, m)
        if self._buffer is None:
            self._buffer = np.empty(self._size, dtype=np.uint64)
        return fill_words(self._gen, self._buffer[:m])


def binary_reports(
    x: npt.NDArray[np.integer[Any]], gen: RandomSource, t0: int, t1: int, *, count: bool
) -> tuple[npt.NDArray[np.uint8], int]:
    """Reports of validated 0/1 answers ``x``, one word each: report ``i`` is
    ``(w_i >> 11) < t[x_i]`` (``t0``, ``t1`` the thresholds of the channel's columns), and
    the number of 1 reports when ``count`` (else 0).

    No lookup by the answer: with ``t_lo <= t_hi`` the two thresholds, a report is 1 when
    ``w_i`` is below ``t_lo``, or below ``t_hi`` and ``x_i`` is the answer whose threshold
    is ``t_hi`` (two comparisons and two passes over 1-byte flags, whatever the answers).
    """
    out = np.empty(x.size, dtype=np.uint8)
    yes = 0
    if use_kernel(x.size):  # the same words, one compiled pass a (smaller) block
        words = _Words(gen, min(KERNEL_BLOCK, x.size))
        for start, stop in blocks(x.size, KERNEL_BLOCK):
            yes += binary_kernel(words.next(stop - start), x[start:stop], t0, t1, out[start:stop])
        return out, yes if count else 0
    size = min(BINARY_BLOCK, x.size)
    words = _Words(gen, size)
    t_lo, t_hi = min(t0, t1), max(t0, t1)
    lo = np.empty(size, dtype=np.bool_)
    # reports_array returns 0/1 uint8 as given (or a view of bools): readable as bools
    as_bool = x.dtype == np.uint8
    xb = np.empty(0 if as_bool else size, dtype=np.bool_)
    for start, stop in blocks(x.size, BINARY_BLOCK):
        m = stop - start
        w = words.next(m)
        rep = out[start:stop].view(np.bool_)
        if as_bool:
            xs = x[start:stop].view(np.bool_)
        else:
            xs = xb[:m]
            np.not_equal(x[start:stop], 0, out=xs)
        words_below(w, t_hi, out=rep)
        if t1 >= t0:
            np.logical_and(rep, xs, out=rep)  # below t_hi and the answer is 1
        else:
            np.greater(rep, xs, out=rep)  # below t_hi and the answer is 0
        np.logical_or(rep, words_below(w, t_lo, out=lo[:m]), out=rep)
        if count:
            yes += int(np.count_nonzero(rep))
        del w  # a Generator's words: freed before the next block's are made
    return out, yes


def keep_or_forced_reports(
    x: npt.NDArray[np.integer[Any]],
    gen: RandomSource,
    plan: Any,
    k: int,
    counter: ValueCounter | None = None,
) -> npt.NDArray[np.unsignedinteger[Any]]:
    """Reports of validated categories ``x`` in ``0..k-1``, two words each (the
    categorical design's ``keep-or-forced/1``): in each block of ``m`` reports (``CHUNK``,
    the last one shorter) the first ``m`` words decide "keep the answer"
    (``(w >> 11) < plan.keep``) and the next ``m`` draw the forced category (multiply-shift,
    or the cumulative thresholds ``plan.cum_array``).  The report is selected
    arithmetically, ``other + keep * (x - other)`` in wrapping unsigned arithmetic, so no
    step depends on the answer.  When ``counter`` is given, the reports are counted into it:
    as they are made (the compiled kernel, or numpy's ``bincount`` of each group of blocks
    while it is in cache), or, for ``k <= 16`` on the numpy path, four at a time over the
    whole output (:class:`ValueCounter`).

    Up to ``GROUP`` whole blocks are drawn with one call and worked on together, as a
    ``(g, 2, CHUNK)`` array of words (keep words ``[:, 0]``, category words ``[:, 1]``):
    the same words for the same reports as block by block, with a quarter of the calls.
    """
    dtype, keep_t, cum = plan.dtype, plan.keep, plan.cum_array
    n = x.size
    out: npt.NDArray[np.unsignedinteger[Any]] = np.empty(n, dtype=dtype)
    if use_kernel(n):  # the same words, one compiled pass a block of CHUNK reports
        cells = None if counter is None else kary_cells(k)
        arguments = kary_arguments(plan)
        words = _Words(gen, 2 * min(CHUNK, n))
        for start, stop in blocks(n, CHUNK):
            w = words.next(2 * (stop - start))
            kary_kernel(w, x[start:stop], out[start:stop], cells, arguments, stop - start, k)
            del w  # a Generator's words: freed before the next are made
        if counter is not None and cells is not None:
            counter.add_counts(kary_counts(cells, k))
        return out
    group = min(GROUP, n // CHUNK)
    size = max(group * CHUNK, n % CHUNK if group == 0 else 0)
    words = _Words(gen, 2 * size)
    # counted four at a time over the whole output for k <= 16, else block by block
    whole = counter if counter is not None and k <= PACKED_VALUES else None
    block_counter = None if whole is not None else counter
    keep_buf = np.empty(size, dtype=np.bool_)
    other_buf = np.empty(size, dtype=dtype)
    start = 0
    while start < n:
        g = min(group, (n - start) // CHUNK)
        if g:  # g whole blocks: words (g, 2, CHUNK)
            m = g * CHUNK
            w = words.next(2 * m).reshape(g, 2, CHUNK)
            keep_words, category = w[:, 0], w[:, 1]
            shape: tuple[int, ...] = (g, CHUNK)
        else:  # the last, shorter block: m keep words, then m category words
            m = n - start
            w = words.next(2 * m)
            keep_words, category = w[:m], w[m:]
            shape = (m,)
        keep = keep_buf[:m].reshape(shape)
        other = other_buf[:m].reshape(shape)
        rep = out[start : start + m].reshape(shape)
        words_below(keep_words, keep_t, out=keep)
        if cum is None:  # the buffer is ours: the forced category is made in place
            uniform_below_into(category, k, category)
            np.copyto(other, category, casting="unsafe")
        else:
            np.right_shift(category, _TOP53, out=category)
            np.copyto(other, np.searchsorted(cum, category, side="right"), casting="unsafe")
        # rep = other + keep * (x - other), modulo 2**16 (or 2**32): x where keep, else other
        xs = x[start : start + m].reshape(shape)
        np.subtract(xs, other, out=rep, dtype=dtype, casting="unsafe")
        np.multiply(rep, keep, out=rep)
        np.add(rep, other, out=rep)
        if block_counter is not None:
            block_counter.add(out[start : start + m])
        del w, keep_words, category  # a Generator's words: freed before the next are made
        start += m
    if whole is not None:
        whole.add(out)
    return out
