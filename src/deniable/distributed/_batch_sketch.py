"""The count mean sketches' reports in a report batch (``deniable.batch/1``, :mod:`._batch`).

**CMS**, binary: a report is ``2 + ceil(m / 8)`` bytes, the record of its report file
(``deniable.oracles._sketch_files``): the report's row ``j`` as a little-endian ``uint16``
(at most 65,536 rows), then its ``m`` randomized bits packed into ``ceil(m / 8)`` bytes
(bit ``i`` at bit ``i % 8`` of byte ``2 + i // 8``, the padding bits past ``m`` 0).  JSON:
the list ``[row, byte_0, ..., byte_{ceil(m/8)-1}]`` (the columns of a report table:
:func:`~deniable.distributed.report_columns`).

**HCMS**: a report is one integer, ``2 (j m + l) + b`` (the row ``j``, the Hadamard
coefficient ``l`` and the sign bit ``b``), a little-endian ``int64`` in the binary batch and
a number in the JSON one: the generic path of :mod:`._batch` (the sketch's ``tally``
checks the range ``0 .. 2 k m - 1``), nothing here.

Decoding a CMS batch checks the shape and every row (``0 .. k - 1``), byte (``0 .. 255``)
and padding bit, and returns :class:`~deniable.oracles.SketchReports` (what ``CMS.tally``
reads); bad input is one :class:`~deniable.exceptions.DataError` naming the report.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.distributed._batch_rappor import (
    index_in_range,
    index_json,
    packed_bytes,
    packed_json,
    packed_rows,
    split_rows,
)
from deniable.exceptions import DataError

__all__ = ["cms_from_json", "cms_from_rows", "cms_json", "cms_rows"]


def cms_rows(cms: Any, reports: Any, what: str) -> npt.NDArray[np.uint8]:
    """``(n, 2 + ceil(m / 8))`` bytes of :class:`~deniable.oracles.SketchReports` (each
    checked by the sketch: shape, type, row range, padding bits): the row ``<u2``, then the
    bits."""
    return packed_rows(cms, reports, what)


def _checked(cms: Any, rows: npt.NDArray[Any], bits: npt.NDArray[Any], what: str) -> Any:
    """:class:`~deniable.oracles.SketchReports` of rows and bytes, every row in ``0 .. k -
    1`` and every padding bit past ``m`` 0, else a :class:`DataError` naming the report."""
    from deniable.oracles import SketchReports

    index_in_range(rows, cms.k, what, "row", f"k = {cms.k} rows")
    packed = np.ascontiguousarray(bits, dtype=np.uint8)
    if cms.m % 8 and packed.size:
        bad = np.flatnonzero(packed[:, -1] >> (cms.m % 8))
        if bad.size:
            raise DataError(
                f"{what}: report {int(bad[0])} sets a padding bit past m = {cms.m} bits (its "
                f"last byte is {int(packed[bad[0], -1])}); padding bits must be 0."
            )
    return SketchReports(np.asarray(rows, dtype=np.int64), packed)


def cms_from_rows(cms: Any, rows: npt.NDArray[np.uint8], what: str) -> Any:
    """The :class:`~deniable.oracles.SketchReports` of ``(n, 2 + ceil(m / 8))`` record
    bytes, every row and padding bit checked (``what`` names the input in the error)."""
    return _checked(cms, *split_rows(rows), what)


def cms_json(cms: Any, reports: Any) -> list[list[int]]:
    """The JSON reports ``[row, byte_0, ...]`` of checked CMS reports."""
    return index_json(cms, reports)


def cms_from_json(cms: Any, items: list[Any]) -> Any:
    """The :class:`~deniable.oracles.SketchReports` of the JSON reports ``items`` (lists
    ``[row, byte_0, ..., byte_{ceil(m/8)-1}]`` of whole numbers), every one checked."""
    arr = packed_json(items, "CMS", "row", int(cms.width), int(cms.m))
    data = packed_bytes(arr, "CMS")
    return _checked(cms, arr[:, 0].astype(np.int64), data, "`body`")
