"""Counting report values fast: :class:`ValueCounter`, behind ``Tally.from_reports`` and
the one-pass ``randomize_and_tally``.

``np.bincount`` costs about 1 ns an element however few its cells (it copies its input to
``intp``, finds its range, then adds one a step), which is as much as a report's share of
the keystream.  Values below 16 held as ``uint16`` (the k-ary design's reports for
``k <= 16``) are therefore counted four at a time: the four 16-bit lanes of a 64-bit word
``w = r0 + r1 2**16 + r2 2**32 + r3 2**48`` become one 16-bit index
``r0 + r1 2**4 + r2 2**8 + r3 2**12`` (``t = w | w >> 12`` puts ``r1`` next to ``r0`` and
``r3`` next to ``r2``, ``t | t >> 24`` brings ``r2 r3`` down beside them, and the bits above
16 are masked off), one ``bincount`` of the indices over 65,536 cells counts four reports
an element, and at the end the count of value ``j`` is the sum of the cells with ``j`` in
any of the four fields.  Every lane is summed, so which report sits in which lane (the
byte order) does not matter.  The counts are exact; the work is about 0.6 of a plain
``bincount``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.randomness import CHUNK

__all__ = ["PACKED_VALUES", "ValueCounter"]

#: Counters of at most this many values count ``uint16`` values four at a time.
PACKED_VALUES = 16
#: Packed indices gathered before one ``bincount`` over the 65,536 cells (512 kB).
_PENDING = 1 << 16
_CELLS = 1 << 16
_LANE_SHIFT = np.uint64(12)  # r1 beside r0, r3 beside r2
_PAIR_SHIFT = np.uint64(24)  # r2 r3 beside r0 r1
_INDEX_MASK = np.uint64(_CELLS - 1)


class ValueCounter:
    """Counts of the values ``0..size-1`` of validated report arrays, added block by block
    (:meth:`add`); :meth:`counts` gives them as a new ``int64`` array.  Entries must be in
    ``0..size-1`` (the caller validated them, or made them)."""

    __slots__ = ("_cells", "_counts", "_filled", "_pending", "_size", "_spread")

    def __init__(self, size: int) -> None:
        self._size = size
        self._counts = np.zeros(size, dtype=np.int64)
        self._cells: npt.NDArray[np.int64] | None = None  # the packed counts, when used
        self._pending: npt.NDArray[np.uint64] | None = None
        self._spread: npt.NDArray[np.uint64] | None = None
        self._filled = 0

    def add(self, values: npt.NDArray[np.integer[Any]]) -> None:
        """Count ``values`` (a 1-D array of validated values)."""
        start = 0
        if (
            values.dtype == np.uint16
            and self._size <= PACKED_VALUES
            and values.size >= 4 * 1024  # below, the 65,536 cells cost more than they save
            and values.flags.c_contiguous
            and values.ctypes.data % 8 == 0
        ):
            start = values.size // 4 * 4
            self._add_packed(values[:start].view(np.uint64))
        for lo in range(start, values.size, CHUNK):  # blockwise: bincount copies to intp
            self._counts += np.bincount(values[lo : lo + CHUNK], minlength=self._size)

    def add_counts(self, counts: npt.NDArray[np.int64]) -> None:
        """Add counts already made (``size`` entries, the count of each value)."""
        self._counts += counts

    def _add_packed(self, words: npt.NDArray[np.uint64]) -> None:
        if self._pending is None or self._spread is None:
            self._pending = np.empty(_PENDING, dtype=np.uint64)
            self._spread = np.empty(_PENDING, dtype=np.uint64)
            self._cells = np.zeros(_CELLS, dtype=np.int64)
        pending, t = self._pending, self._spread
        done = 0
        while done < words.size:
            m = min(words.size - done, _PENDING - self._filled)
            w, u, tm = words[done : done + m], pending[self._filled : self._filled + m], t[:m]
            np.right_shift(w, _LANE_SHIFT, out=tm)
            np.bitwise_or(tm, w, out=tm)
            np.right_shift(tm, _PAIR_SHIFT, out=u)
            np.bitwise_or(u, tm, out=u)
            np.bitwise_and(u, _INDEX_MASK, out=u)
            self._filled += m
            done += m
            if self._filled == _PENDING:
                self._flush()

    def _flush(self) -> None:
        if self._filled and self._pending is not None and self._cells is not None:
            # indices below 2**16, read as int64 (the same bits): bincount takes them as is
            indices = self._pending[: self._filled].view(np.int64)
            self._cells += np.bincount(indices, minlength=_CELLS)
        self._filled = 0

    def counts(self) -> npt.NDArray[np.int64]:
        """The counts so far, a new ``int64`` array of ``size`` entries."""
        self._flush()
        out = self._counts.copy()
        if self._cells is not None:
            fields = self._cells.reshape(16, 16, 16, 16)  # index r3 r2 r1 r0
            for axis in range(4):
                out += fields.sum(axis=tuple(a for a in range(4) if a != axis))[: self._size]
        return out
