"""Count Mean Sketch (Apple Differential Privacy Team 2017): a uniform row and the one-hot
vector of the string's column in it, every bit flipped with probability ``1 / (1 +
e^(eps/2))``; its report, tally and the estimate's pieces (the estimate, epsilon and variance:
``deniable.oracles._cms_base``).

Two spec versions draw the flips: **spec 1** one 64-bit word a bit (``word >> 11 < t`` on
the ``2**53`` grid), **spec 2** (the default) one 16-bit field a bit, four a word, against
``t_b`` on the ``2**16`` grid (``deniable.oracles._cms_fields``), with ``epsilon`` the
realized epsilon of ``t_b`` (at most the one asked for).  The tally and the estimate are
the same with the implemented flip probability ``f = t / 2**53`` or ``t_b / 2**16``:
``E[bit] = f + (1 - 2 f) 1[column]`` whatever the grid, so ``(bit - f) / (1 - 2 f)`` stays
unbiased.  A spec-1 sketch's key is what it always was; a spec-2 key names
``spec_version``, so tallies of the two never add.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._base import check_indices
from deniable.oracles._cms_base import CountMeanSketch, FloatArray
from deniable.oracles._cms_fields import (
    FIELD_BITS,
    field_flips,
    field_threshold,
    fields_per_word,
    realized_epsilon,
)
from deniable.oracles._sketch import SketchReports
from deniable.randomness import fill_words, resolve_rng, words_below

__all__ = ["CMS"]

#: Words a block of :meth:`CMS.randomize` draws into one buffer (1 MiB: it stays in cache).
_BLOCK_WORDS = 1 << 17
#: Reports :meth:`CMS.tally` unpacks at a time, and the longest run summed in bytes.
_TALLY_BLOCK = 2048
_RUN = 255


@dataclass(frozen=True)
class CMS(CountMeanSketch):
    """Count Mean Sketch (Apple 2017): a report is a uniform row ``j`` and the one-hot vector
    of ``h_j(d)`` in ``m`` bits with each bit flipped with probability ``1 / (1 + e^(eps/2))``
    (module docstring).  ``epsilon`` is exact: two bits move between two strings.

    ``spec_version=2`` (the default, ``deniable.cms-spec/2``): ``1 + ceil(m / 4)`` words per
    report, the row (``uniform_below(word, k)``) then the flip words, bit ``i`` flipped iff
    16-bit field ``i`` is below ``flip_threshold``; ``epsilon`` is the realized epsilon
    (at most the one given).  ``spec_version=1`` (``deniable.cms-spec/1``, every stored
    spec-1 report, tally and spec): ``1 + m`` words, one flip word per bit (flip iff ``word
    >> 11 < flip_threshold``), ``epsilon`` as given.

    >>> cms = CMS(k=16, m=64, epsilon=4.0)
    >>> cms.epsilon <= 4.0, cms.flip_threshold, cms.words_per_report
    (True, 7813, 17)
    >>> CMS(k=16, m=64, epsilon=4.0, spec_version=1).words_per_report
    65
    >>> r = cms.randomize(["apple", "pear", "apple"], rng=1)
    >>> r.rows.shape, r.bits.shape
    ((3,), (3, 8))
    """

    spec_version: int = 2

    name: ClassVar[str] = "cms"
    _bits_moved: ClassVar[int] = 2
    #: The field width of spec 2 (a private hook: the tests set 4 or 8 on a subclass to
    #: enumerate every field; ``deniable.cms-spec/2`` is 16).
    _field_bits: ClassVar[int] = FIELD_BITS

    def __post_init__(self) -> None:
        version = self.spec_version
        if not isinstance(version, int) or isinstance(version, bool) or version not in (1, 2):
            raise ParameterError(f"`spec_version` must be 1 or 2, got {version!r}.")
        object.__setattr__(self, "spec_version", int(version))
        super().__post_init__()
        if self.spec_version == 2:  # state the realized epsilon (never above the one given)
            eps = realized_epsilon(self.flip_threshold, self._field_bits, self._bits_moved)
            object.__setattr__(self, "epsilon", min(eps, self.epsilon))

    def parameters(self) -> dict[str, Any]:
        """The parameters by name; a spec-1 sketch leaves ``spec_version`` out (its key and
        spec are what they were before spec 2)."""
        out = super().parameters()
        if self.spec_version == 1:
            del out["spec_version"]
        return out

    def __setstate__(self, state: dict[str, Any]) -> None:
        # a sketch pickled before spec 2 existed was spec 1 (the field's default is 2)
        super().__setstate__({"spec_version": 1, **state})

    @property
    def field_bits(self) -> int | None:
        """The width of a flip field: 16 for spec 2, ``None`` for spec 1 (a word a bit)."""
        return None if self.spec_version == 1 else self._field_bits

    @property
    def _grid_bits(self) -> int:
        return 53 if self.spec_version == 1 else self._field_bits

    @property
    def _what(self) -> str:
        return f"'cms' (spec_version={self.spec_version})"

    @cached_property
    def flip_threshold(self) -> int:
        """Spec 1: flip a bit iff ``word >> 11 < flip_threshold`` (``CountMeanSketch``);
        spec 2: iff its 16-bit field ``< flip_threshold``, ``t_b`` of
        ``deniable.oracles._cms_fields`` (at least 1: a larger ``epsilon`` is refused)."""
        if self.spec_version == 1:
            return CountMeanSketch.flip_threshold.func(self)  # type: ignore[attr-defined, no-any-return]
        bits = self._field_bits
        t = field_threshold(self.epsilon, bits, self._bits_moved)
        if t is None:
            top = math.floor(self._bits_moved * math.log((1 << bits) - 1) * 1e4) / 1e4
            raise ParameterError(
                f"`epsilon` must be at most {top:g} for 'cms' with spec_version=2 (its "
                f"{bits}-bit fields resolve no flip probability below 2**-{bits}; "
                f"spec_version=1 takes up to 30), got {self.epsilon!r}."
            )
        return t

    @property
    def words_per_report(self) -> int:
        """64-bit words one report consumes: ``1 + m`` (spec 1), ``1 + ceil(m / 4)`` (spec
        2: four 16-bit fields a word)."""
        if self.spec_version == 1:
            return 1 + self.m
        return 1 + -(-self.m // fields_per_word(self._field_bits))

    @property
    def width(self) -> int:
        """Bytes of a report's packed bits: ``ceil(m / 8)``."""
        return (self.m + 7) // 8

    def randomize(self, values: Any, *, rng: Any = None) -> SketchReports:
        """Reports ``(row, packed bits)`` for the strings ``values`` (CSPRNG unless ``rng``
        is given); report ``i`` takes words ``w i .. w i + w - 1`` (``w =
        words_per_report``): its row, then its flip words.

        Each block of reports draws its words into one buffer that stays in cache, compares
        them with the flip threshold in one pass and packs the flips as bits; the rows and
        columns are computed for all reports at once and each string's column toggled in
        its packed bytes (no one-hot array): the one-hot vector XOR the flips, bit for bit
        (``tests/test_cms_passes.py``)."""
        x = self._digests(values)
        gen = resolve_rng(rng)
        w, n = self.words_per_report, x.size
        first = np.empty(n, dtype=np.uint64)  # each report's row word
        bits = np.empty((n, self.width), dtype=np.uint8)
        step = max(1, min(n, _BLOCK_WORDS // w))
        buf = np.empty(step * w, dtype=np.uint64)
        below = np.empty(step * w, dtype=np.bool_)
        for start in range(0, n, step):
            size = min(step, n - start)
            words = fill_words(gen, buf[: size * w])
            first[start : start + size] = words[::w]
            if self.spec_version == 1:
                flips = words_below(words, self.flip_threshold, out=below[: size * w])
                flips = flips.reshape(size, w)[:, 1:]
            else:
                block = words.reshape(size, w)
                flips = field_flips(block, self.flip_threshold, self._field_bits, self.m)
            bits[start : start + size] = np.packbits(flips, axis=1, bitorder="little")
        rows, col = self._rows_and_columns(first, x)
        bits[np.arange(n), col >> 3] ^= np.left_shift(1, col & 7).astype(np.uint8)
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
        check_indices("reports.rows", rows, self.k)
        if self.m % 8 and bits.size and (bits[:, -1] >> (self.m % 8)).any():
            raise DataError(f"`reports.bits` must leave the padding bits past m = {self.m} at 0.")
        return SketchReports(rows.astype(np.int64), bits)

    def tally(self, reports: Any) -> Tally:
        """Per row, the number of reports with each bit set, then the row's reports: a
        :class:`~deniable.designs.Tally` of ``k (m + 1)`` cells bound to ``key``.

        The reports are put in row order (a stable radix sort of the rows) and unpacked a
        block at a time, one byte a bit; a run of at most 255 reports of one row is summed
        as 64-bit words, eight byte lanes at once (a lane cannot carry into the next), and
        each run added to its row's counts: no index per set bit."""
        rep = self._reports(reports)
        k, m, n = self.k, self.m, len(rep)
        out = np.zeros((k, m + 1), dtype=np.int64)
        per_row = np.bincount(rep.rows, minlength=k)
        out[:, m] = per_row
        order = np.argsort(rep.rows.astype(np.uint16), kind="stable")  # k <= 2**16: radix
        srows = rep.rows[order]
        first = np.concatenate(([0], np.cumsum(per_row)[:-1]))  # each row's first place
        runs = (np.arange(n) - first[srows]) % _RUN == 0  # a run starts: a new row, or 255
        lanes = -(-m // 64) * 64  # bits unpacked a report: whole 64-bit words
        for start in range(0, n, _TALLY_BLOCK):
            stop = min(start + _TALLY_BLOCK, n)
            block = np.unpackbits(
                rep.bits[order[start:stop]], axis=1, count=lanes, bitorder="little"
            ).view(np.uint64)
            starts = np.flatnonzero(runs[start:stop])
            if not starts.size or starts[0]:
                starts = np.concatenate(([0], starts))
            if 8 * starts.size <= stop - start:  # long runs: one reduction each
                ends = np.append(starts[1:], stop - start)
                pairs = zip(starts.tolist(), ends.tolist(), strict=True)
                sums = np.stack([np.add.reduce(block[i:j], axis=0) for i, j in pairs])
            else:
                sums = np.add.reduceat(block, starts, axis=0)
            counts = sums.view(np.uint8)[:, :m]  # byte lane j of word q: bit 8 q + j
            seg_rows = srows[start + starts]
            new = np.concatenate(([True], seg_rows[1:] != seg_rows[:-1]))
            out[seg_rows[new], :m] += counts[new]  # distinct rows
            for i in np.flatnonzero(~new):  # a row's further runs (one per 255 reports)
                out[seg_rows[i], :m] += counts[i]
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
