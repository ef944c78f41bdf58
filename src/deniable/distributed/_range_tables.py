"""The report-table columns of the mechanisms of ordered values (``distributed._tables``
lays out every oracle's): a range mechanism's report is a ``level`` column (``uint16``) then
its level oracle's report padded to the widest level, the records of
``deniable.oracles._range_files`` split into columns; Square Wave's is one ``uint16``
column."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "LEVEL_COLUMN",
    "range_from_columns",
    "range_layout",
    "range_mechanism",
    "range_to_columns",
    "square_wave",
]

_COHORT = np.dtype(np.uint16)


#: The column of a range mechanism's level (its type: that of RAPPOR's cohort).
LEVEL_COLUMN = "level"


def range_mechanism(oracle: Any) -> Any:
    """``oracle`` if it is a range mechanism (reports of a level, then its report)."""
    from deniable.oracles import HaarHRR, HierarchicalHistogram

    return oracle if isinstance(oracle, HierarchicalHistogram | HaarHRR) else None


def square_wave(oracle: Any) -> Any:
    """``oracle`` if it is Square Wave (reports of a cell; numbers in: no report of 0)."""
    from deniable.oracles import SquareWave

    return oracle if isinstance(oracle, SquareWave) else None


@lru_cache(maxsize=64)
def range_layout(oracle: Any) -> tuple[np.dtype[Any], int, int]:
    """``(item type, items of the level in a record, W)`` of a range mechanism."""
    from deniable.oracles import range_records

    one = oracle.randomize(np.zeros(1, dtype=np.int64), rng=0)
    rec = range_records(oracle, one)
    head = max(1, 2 // rec.dtype.itemsize)
    return rec.dtype.newbyteorder("="), head, int(rec.shape[1]) - head


def range_to_columns(oracle: Any, reports: Any) -> list[npt.NDArray[Any]]:
    """The columns of a range mechanism's reports (checked by each level's oracle): the
    level (``uint16``), then each item of the padded level report."""
    from deniable.oracles import range_records

    _, head, _ = range_layout(oracle)
    rec = range_records(oracle, reports)
    level = rec[:, 0] if head == 1 else np.ascontiguousarray(rec[:, :2]).view("<u2")[:, 0]
    return [level.astype(_COHORT), *(rec[:, i] for i in range(head, rec.shape[1]))]


def range_from_columns(oracle: Any, columns: Sequence[npt.NDArray[Any]]) -> Any:
    """The :class:`~deniable.oracles.LevelReports` the columns hold (a level past the last
    or a padding item set refused; each level's reports are checked by its tally)."""
    from deniable.oracles import range_from_records

    dtype, head, items = range_layout(oracle)
    level = np.asarray(columns[0]).astype(np.int64)
    rec = np.zeros((level.size, head + items), dtype=dtype.newbyteorder("<"))
    if head == 1:
        rec[:, 0] = level
    else:  # the level as a little-endian uint16 in two bytes
        rec[:, :2] = level.astype("<u2").view(np.uint8).reshape(-1, 2)
    for i, col in enumerate(columns[1:]):
        rec[:, head + i] = col
    return range_from_records(oracle, rec)
