"""Count Mean Sketch (Apple Differential Privacy Team 2017): a uniform row and the one-hot
vector of the string's column in it, every bit flipped with probability ``1 / (1 +
e^(eps/2))``; its report, tally and the estimate's pieces (the estimate, epsilon and variance:
``deniable.oracles._cms_base``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._cms_base import CountMeanSketch, FloatArray
from deniable.oracles._sketch import SketchReports, string_digests
from deniable.randomness import CHUNK, random_words, resolve_rng, words_below

__all__ = ["CMS"]


@dataclass(frozen=True)
class CMS(CountMeanSketch):
    """Count Mean Sketch (Apple 2017): a report is a uniform row ``j`` and the one-hot vector
    of ``h_j(d)`` in ``m`` bits with each bit flipped with probability ``1 / (1 + e^(eps/2))``
    (module docstring).  ``epsilon`` is exact: two bits move between two strings.

    ``1 + m`` words per report: the row (``uniform_below(word, k)``), then one flip word per
    bit (flip iff ``word >> 11 < flip_threshold``).

    >>> cms = CMS(k=16, m=64, epsilon=4.0)
    >>> round(cms.implemented_epsilon, 9) <= 4.0, cms.words_per_report
    (True, 65)
    >>> r = cms.randomize(["apple", "pear", "apple"], rng=1)
    >>> r.rows.shape, r.bits.shape
    ((3,), (3, 8))
    """

    name: ClassVar[str] = "cms"
    _bits_moved: ClassVar[int] = 2

    @property
    def words_per_report(self) -> int:
        """64-bit words one report consumes: ``1 + m``."""
        return 1 + self.m

    @property
    def width(self) -> int:
        """Bytes of a report's packed bits: ``ceil(m / 8)``."""
        return (self.m + 7) // 8

    def randomize(self, values: Any, *, rng: Any = None) -> SketchReports:
        """Reports ``(row, packed bits)`` for the strings ``values`` (CSPRNG unless ``rng``
        is given); report ``i`` takes words ``(1 + m) i .. (1 + m) i + m``."""
        x = string_digests(self.strings(values))
        gen = resolve_rng(rng)
        w = self.words_per_report
        rows = np.empty(x.size, dtype=np.int64)
        bits = np.empty((x.size, self.width), dtype=np.uint8)
        step = max(1, (16 * CHUNK) // w)  # about 8 MiB of words a block
        for start in range(0, x.size, step):
            stop = min(start + step, x.size)
            words = random_words(gen, w * (stop - start)).reshape(-1, w)
            row, col = self._rows_and_columns(words[:, 0], x[start:stop])
            onehot = np.zeros((stop - start, self.m), dtype=np.bool_)
            onehot[np.arange(stop - start), col] = True
            flipped = onehot ^ words_below(words[:, 1:], self.flip_threshold)
            rows[start:stop] = row
            bits[start:stop] = np.packbits(flipped, axis=1, bitorder="little")
        return SketchReports(rows, bits)

    def _reports(self, reports: Any) -> SketchReports:
        if not isinstance(reports, SketchReports):
            raise ParameterTypeError(
                f"`reports` must be SketchReports (rows and packed bits), got "
                f"{type(reports).__name__}."
            )
        rows, bits = np.asarray(reports.rows), np.asarray(reports.bits)
        if bits.ndim != 2 or bits.shape[1] != self.width or bits.dtype != np.uint8:
            raise DataError(
                f"`reports.bits` must be a 2-D uint8 array of {self.width} bytes a row (m = "
                f"{self.m} bits), got an array of dtype {bits.dtype} and shape {bits.shape}."
            )
        if rows.shape != (bits.shape[0],) or (rows.size and rows.dtype.kind not in "iu"):
            raise DataError(
                f"`reports.rows` must hold one integer row per report ({bits.shape[0]}), got "
                f"dtype {rows.dtype} and shape {rows.shape}."
            )
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= self.k):
            bad = int(rows.min()) if int(rows.min()) < 0 else int(rows.max())
            raise DataError(f"`reports.rows` must be in 0..{self.k - 1}, got {bad}.")
        if self.m % 8 and bits.size and (bits[:, -1] >> (self.m % 8)).any():
            raise DataError(f"`reports.bits` must leave the padding bits past m = {self.m} at 0.")
        return SketchReports(rows.astype(np.int64), bits)

    def tally(self, reports: Any) -> Tally:
        """Per row, the number of reports with each bit set, then the row's reports: a
        :class:`~deniable.designs.Tally` of ``k (m + 1)`` cells bound to ``key``."""
        rep = self._reports(reports)
        out = np.zeros((self.k, self.m + 1), dtype=np.int64)
        out[:, self.m] = np.bincount(rep.rows, minlength=self.k)
        cells = np.zeros(self.k * self.m, dtype=np.int64)
        offsets = np.arange(self.m, dtype=np.int64)
        for start in range(0, len(rep), 4096):  # the set bits' cells j m + i, counted
            block = np.unpackbits(rep.bits[start : start + 4096], axis=1, bitorder="little")
            cell = rep.rows[start : start + 4096, None] * self.m + offsets
            cells += np.bincount(cell[block[:, : self.m].astype(np.bool_)], minlength=cells.size)
        out[:, : self.m] = cells.reshape(self.k, self.m)
        return Tally(out.reshape(-1), mechanism=self.key)

    @property
    def _tally_cells(self) -> int:
        return self.k * (self.m + 1)

    def _tally_layout(self) -> str:
        return f"k (m + 1): per row, the count of each of m = {self.m} bits, then its reports"

    def _check_counts(self, counts: npt.NDArray[np.int64]) -> None:
        grid = counts.reshape(self.k, self.m + 1)
        if (grid[:, : self.m] > grid[:, self.m : self.m + 1]).any():
            raise DataError("a bit count must be at most its row's number of reports.")

    def _reports_in(self, tally: Tally) -> int:
        return int(tally.counts.reshape(self.k, self.m + 1)[:, self.m].sum())

    def _moments(self) -> tuple[float, float]:
        f = self.implemented_flip
        return f * (1 - f) / (1 - 2 * f) ** 2, 1.0

    def _square_mean(self, tally: Tally) -> float | None:
        grid = tally.counts.reshape(self.k, self.m + 1)
        rows = grid[grid[:, self.m] >= 2]
        if 2 * rows.shape[0] < self.k:
            return None
        size = rows[:, self.m : self.m + 1].astype(np.float64)
        share = rows[:, : self.m] / size
        f = self.implemented_flip
        square = ((share - f) ** 2 - share * (1 - share) / (size - 1)) / (1 - 2 * f) ** 2
        return float(square.sum(axis=1).mean())

    def _column_sums(self, tally: Tally) -> FloatArray:
        grid = tally.counts.reshape(self.k, self.m + 1)
        f = self.implemented_flip
        sums = (grid[:, : self.m] - f * grid[:, self.m : self.m + 1]) / (1 - 2 * f)
        return np.asarray(sums, dtype=np.float64)
