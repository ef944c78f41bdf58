"""The tally: counts of each report value, the sufficient statistic that adds across shards."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from deniable.common import _validation as v
from deniable.exceptions import DataError
from deniable.randomness import CHUNK

__all__ = ["Tally"]


#: Largest number of reports in a tally (estimates, SEs and intervals use doubles; squares
#: of larger counts would overflow them).
MAX_COUNT = 10**18
_WHY = "estimates and intervals are computed with doubles"


@dataclass(frozen=True)
class Tally:
    """Counts of each report value: the sufficient statistic; tallies add across shards.

    ``counts[r]`` is the number of reports equal to ``r``.
    """

    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        counts = tuple(
            v.integer(f"counts[{i}]", c, minimum=0, maximum=MAX_COUNT, why=_WHY)
            for i, c in enumerate(self.counts)
        )
        if sum(counts) > MAX_COUNT:
            raise DataError(
                f"`counts` must add up to at most {v.fmt_limit(MAX_COUNT)} ({_WHY}), got "
                f"{sum(counts)}."
            )
        if len(counts) < 2:
            raise DataError(f"`counts` needs at least 2 report values, got {len(counts)}.")
        object.__setattr__(self, "counts", counts)

    @classmethod
    def binary(cls, yes: int, n: int) -> Tally:
        """The tally of ``yes`` "yes" reports among ``n``."""
        n = v.integer("n", n, minimum=1, maximum=MAX_COUNT, why=_WHY)
        yes = v.integer("yes", yes, minimum=0)
        if yes > n:
            raise DataError(f"`yes` must be in [0, n] = [0, {n}], got {yes}.")
        return cls((n - yes, yes))

    @classmethod
    def from_reports(cls, reports: npt.ArrayLike, size: int = 2) -> Tally:
        """Count ``reports`` (integers in ``0..size-1``)."""
        arr = v.reports_array("reports", reports, categories=size)
        if arr.dtype == np.uint8 and size == 2:
            yes = int(np.count_nonzero(arr))
            return cls((arr.size - yes, yes))
        counts = np.zeros(size, dtype=np.int64)
        for start in range(0, arr.size, CHUNK):  # blockwise: bincount copies to intp
            counts += np.bincount(arr[start : start + CHUNK], minlength=size)
        return cls(tuple(int(c) for c in counts))

    @property
    def n(self) -> int:
        """Number of reports."""
        return sum(self.counts)

    @property
    def yes(self) -> int:
        """Number of reports equal to 1 (binary tallies only)."""
        if len(self.counts) != 2:
            raise DataError(
                f"`yes` is defined for binary tallies, this one has {len(self.counts)} values."
            )
        return self.counts[1]

    def __add__(self, other: object) -> Tally:
        if not isinstance(other, Tally):
            return NotImplemented
        if len(other.counts) != len(self.counts):
            raise DataError(
                f"cannot add tallies of {len(self.counts)} and {len(other.counts)} report values."
            )
        return Tally(tuple(a + b for a, b in zip(self.counts, other.counts, strict=True)))
