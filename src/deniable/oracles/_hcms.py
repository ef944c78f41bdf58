"""Hadamard Count Mean Sketch (Apple Differential Privacy Team 2017): a uniform row, a
uniform coefficient of the Hadamard transform of the one-hot vector and its sign bit, flipped
with probability ``1 / (1 + e^eps)``; its report, tally and the estimate's pieces (the
estimate, epsilon and variance: ``deniable.oracles._cms_base``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Tally
from deniable.exceptions import ParameterError
from deniable.oracles._bits import parity
from deniable.oracles._cms_base import CountMeanSketch, FloatArray
from deniable.randomness import CHUNK, random_words, resolve_rng, uniform_below, words_below

__all__ = ["HCMS"]


@dataclass(frozen=True)
class HCMS(CountMeanSketch):
    """Hadamard Count Mean Sketch (Apple 2017): a report is a uniform row ``j``, a uniform
    coefficient ``l`` of the ``m``-point Hadamard transform of the one-hot vector of
    ``h_j(d)`` (``m`` a power of two) and its sign bit ``parity(l & h_j(d))`` flipped with
    probability ``1 / (1 + e^eps)``, sent as the integer ``2 (j m + l) + b`` (module
    docstring).  ``epsilon`` is exact.

    3 words per report: the row (``uniform_below(word, k)``), the coefficient (the top
    ``log2 m`` bits) and the flip (``word >> 11 < flip_threshold``).

    >>> hcms = HCMS(k=16, m=64, epsilon=2.0)
    >>> hcms.words_per_report, hcms.n_reports
    (3, 2048)
    """

    name: ClassVar[str] = "hcms"
    _bits_moved: ClassVar[int] = 1

    def _check_shape(self) -> None:
        if self.m & (self.m - 1):
            raise ParameterError(
                f"`m` must be a power of two for 'hcms' (the Hadamard transform's size), "
                f"got {self.m}."
            )

    @property
    def words_per_report(self) -> int:
        """64-bit words one report consumes: 3."""
        return 3

    @property
    def n_reports(self) -> int:
        """Report values: ``2 k m``."""
        return 2 * self.k * self.m

    def randomize(self, values: Any, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """Reports ``2 (j m + l) + b`` for the strings ``values``; report ``i`` takes words
        ``3 i`` (row), ``3 i + 1`` (coefficient) and ``3 i + 2`` (flip)."""
        x = self._digests(values)
        gen = resolve_rng(rng)
        out = np.empty(x.size, dtype=np.int64)
        for start in range(0, x.size, CHUNK):
            stop = min(start + CHUNK, x.size)
            words = random_words(gen, 3 * (stop - start)).reshape(-1, 3)
            row, col = self._rows_and_columns(words[:, 0], x[start:stop])
            coef = uniform_below(words[:, 1], self.m)
            flip = words_below(words[:, 2], self.flip_threshold).view(np.uint8)
            bit = parity(coef & col.astype(np.uint64)).astype(np.int64) ^ flip
            out[start:stop] = 2 * (row * self.m + coef.astype(np.int64)) + bit
        return out

    def tally(self, reports: Any) -> Tally:
        """The count of each report value ``2 (j m + l) + b``: a
        :class:`~deniable.designs.Tally` of ``2 k m`` cells bound to ``key``."""
        arr = v.reports_array("reports", reports, categories=self.n_reports)
        counts = np.zeros(self.n_reports, dtype=np.int64)
        for start in range(0, arr.size, CHUNK):
            counts += np.bincount(arr[start : start + CHUNK], minlength=self.n_reports)
        return Tally(counts, mechanism=self.key)

    @property
    def _tally_cells(self) -> int:
        return 2 * self.k * self.m

    def _tally_layout(self) -> str:
        return f"2 k m: per row and coefficient (m = {self.m}), the reports of bit 0, of bit 1"

    def _moments(self) -> tuple[float, float]:
        return 1.0 / (1 - 2 * self.implemented_flip) ** 2, 0.0

    def _square_mean(self, tally: Tally) -> float | None:
        grid = tally.counts.reshape(-1, 2)
        size = grid.sum(axis=1)
        used = size >= 2
        if not used.any():
            return None
        nn = size[used].astype(np.float64)
        u = (grid[used, 0] - grid[used, 1]) / nn
        square = (u**2 - (1 - u**2) / (nn - 1)) / (1 - 2 * self.implemented_flip) ** 2
        # every cell weighs the same: E over a uniform (j, l) of W^2 is the rows' mean
        return float(square.mean())

    def _column_sums(self, tally: Tally) -> FloatArray:
        grid = tally.counts.reshape(self.k, self.m, 2)
        signed = grid[:, :, 0] - grid[:, :, 1]  # (k, m): sum of (-1)^b per row, coefficient
        # sum_l signed[j, l] H[l, i] for every column i: a Walsh-Hadamard transform per row
        a = signed.astype(np.int64)
        h = 1
        while h < self.m:
            pairs = a.reshape(self.k, -1, 2, h)
            first = pairs[:, :, 0, :].copy()
            pairs[:, :, 0, :] += pairs[:, :, 1, :]
            pairs[:, :, 1, :] = first - pairs[:, :, 1, :]
            h *= 2
        return np.asarray(a / (1 - 2 * self.implemented_flip), dtype=np.float64)
