"""RAPPOR's reports in a report batch (``deniable.batch/1``, :mod:`._batch`).

**Binary**: a report is ``2 + m / 8`` bytes, the record of RAPPOR's report file: its cohort
as a little-endian ``uint16`` (cohorts are at most 65,536), then its ``m`` bits packed
into ``m / 8`` bytes (bit ``i`` at bit ``i % 8`` of byte ``2 + i // 8``).

**JSON**: a report is the list ``[cohort, byte_0, ..., byte_{m/8-1}]`` (the columns of a
report table: :func:`~deniable.distributed.report_columns`).

Decoding checks the shape and every cohort (``0 .. cohorts - 1``) and byte (``0 .. 255``)
and returns :class:`~deniable.oracles.RapporReports` (what ``Rappor.tally`` reads); bad
input is one :class:`~deniable.exceptions.DataError` naming the report.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.distributed._tables import to_columns
from deniable.exceptions import DataError, DeniableError

__all__ = [
    "packed_bytes",
    "packed_json",
    "rappor_from_json",
    "rappor_from_rows",
    "rappor_json",
    "rappor_rows",
]

_COHORT = np.dtype("<u2")
COHORT_BYTES = _COHORT.itemsize


def rappor_rows(rappor: Any, reports: Any, what: str) -> npt.NDArray[np.uint8]:
    """``(n, 2 + m / 8)`` bytes of :class:`~deniable.oracles.RapporReports` (each checked
    by the mechanism: shape, type, cohort range): the cohort ``<u2``, then the bits."""
    try:
        cols = to_columns(rappor, reports)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None
    n = int(cols[0].shape[0])
    out = np.empty((n, COHORT_BYTES + int(rappor.width)), dtype=np.uint8)
    out[:, :COHORT_BYTES] = cols[0].astype(_COHORT).view(np.uint8).reshape(n, COHORT_BYTES)
    for i, col in enumerate(cols[1:]):
        out[:, COHORT_BYTES + i] = col
    return out


def _cohorts_in_range(rappor: Any, cohorts: npt.NDArray[Any], what: str) -> None:
    bad = np.flatnonzero((cohorts < 0) | (cohorts >= rappor.cohorts))
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"{what}: report {i} has cohort {int(cohorts[i])}; a cohort must be in "
            f"0..{rappor.cohorts - 1} (cohorts = {rappor.cohorts})."
        )


def rappor_from_rows(rappor: Any, rows: npt.NDArray[np.uint8], what: str) -> Any:
    """The :class:`~deniable.oracles.RapporReports` of ``(n, 2 + m / 8)`` record bytes,
    every cohort checked (``what`` names the input in the error)."""
    from deniable.oracles import RapporReports

    rec = np.ascontiguousarray(rows, dtype=np.uint8)
    cohorts = rec[:, :COHORT_BYTES].copy().view(_COHORT).reshape(-1).astype(np.int64)
    _cohorts_in_range(rappor, cohorts, what)
    return RapporReports(cohorts, np.ascontiguousarray(rec[:, COHORT_BYTES:]))


def rappor_json(rappor: Any, reports: Any) -> list[list[int]]:
    """The JSON reports ``[cohort, byte_0, ...]`` of checked RAPPOR reports."""
    cols = to_columns(rappor, reports)
    return np.column_stack([c.astype(np.int64) for c in cols]).tolist()  # type: ignore[no-any-return]


def rappor_from_json(rappor: Any, items: list[Any]) -> Any:
    """The :class:`~deniable.oracles.RapporReports` of the JSON reports ``items`` (lists
    ``[cohort, byte_0, ..., byte_{m/8-1}]`` of whole numbers), every one checked."""
    from deniable.oracles import RapporReports

    arr = packed_json(items, "RAPPOR", "cohort", int(rappor.width), int(rappor.m))
    cohorts = arr[:, 0].astype(np.int64)
    _cohorts_in_range(rappor, cohorts, "`body`")
    return RapporReports(cohorts, packed_bytes(arr, "RAPPOR"))


def packed_json(items: list[Any], name: str, index: str, width: int, m: int) -> Any:
    """The JSON reports ``items`` of packed bits behind an index (RAPPOR's cohort, a CMS
    report's row) as one integer array of ``1 + width`` columns, refused whole naming the
    shape when they are not lists of that many whole numbers (``name`` the mechanism)."""
    width += 1
    shape = f"lists of {width} whole numbers [{index}, byte_0, ..., byte_{width - 2}]"
    try:
        arr = np.array(items) if items else np.empty((0, width), dtype=np.int64)
        if arr.dtype.kind in "fO":  # a ragged list, or integers beyond int64
            arr = np.array(items, dtype=np.int64)
    except (ValueError, OverflowError, TypeError) as exc:
        raise DataError(f"`body` reports of {name} must be {shape}: {exc}.") from None
    if arr.dtype.kind not in "iu" or arr.shape != (len(items), width):
        raise DataError(
            f"`body` reports of {name} must be {shape} (m = {m} bits), got an array of "
            f"{arr.dtype} of shape {arr.shape}."
        )
    return arr


def packed_bytes(arr: Any, name: str) -> npt.NDArray[np.uint8]:
    """The bytes after the index column of :func:`packed_json`'s array, the first report
    with a value outside 0..255 refused by its index."""
    data = arr[:, 1:]
    bad = np.flatnonzero(((data < 0) | (data > 255)).any(axis=1))
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"`body`: report {i} holds a byte outside 0..255 ({arr[i, 1:].tolist()}); "
            f"{name}'s bits are packed 8 a byte."
        )
    return np.ascontiguousarray(data, dtype=np.uint8)
