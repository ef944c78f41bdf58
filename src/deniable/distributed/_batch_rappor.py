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
    "index_in_range",
    "index_json",
    "packed_bytes",
    "packed_json",
    "packed_rows",
    "rappor_from_json",
    "rappor_from_rows",
    "rappor_json",
    "rappor_rows",
    "split_rows",
]

_COHORT = np.dtype("<u2")
COHORT_BYTES = _COHORT.itemsize


def rappor_rows(rappor: Any, reports: Any, what: str) -> npt.NDArray[np.uint8]:
    """``(n, 2 + m / 8)`` bytes of :class:`~deniable.oracles.RapporReports` (each checked
    by the mechanism: shape, type, cohort range): the cohort ``<u2``, then the bits."""
    return packed_rows(rappor, reports, what)


def packed_rows(mechanism: Any, reports: Any, what: str) -> npt.NDArray[np.uint8]:
    """``(n, 2 + width)`` bytes of a mechanism's reports of an index and packed bits
    (RAPPOR's cohort, a CMS report's row), each checked by the mechanism (``what`` naming
    them in errors): the index ``<u2``, then the ``width`` bytes."""
    try:
        cols = to_columns(mechanism, reports)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None
    n = int(cols[0].shape[0])
    out = np.empty((n, COHORT_BYTES + int(mechanism.width)), dtype=np.uint8)
    out[:, :COHORT_BYTES] = cols[0].astype(_COHORT).view(np.uint8).reshape(n, COHORT_BYTES)
    for i, col in enumerate(cols[1:]):
        out[:, COHORT_BYTES + i] = col
    return out


def index_in_range(index: npt.NDArray[Any], stop: int, what: str, name: str, of: str) -> None:
    """Every report's ``index`` (a ``name``: cohort, row) in ``0 .. stop - 1``, else a
    :class:`DataError` naming the first report out of it (``of``: how many there are)."""
    bad = np.flatnonzero((index < 0) | (index >= stop))
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"{what}: report {i} has {name} {int(index[i])}; a {name} must be in "
            f"0..{stop - 1} ({of})."
        )


def split_rows(rows: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.int64], Any]:
    """The index (the first two bytes, ``<u2``) and the bytes after it of record rows."""
    rec = np.ascontiguousarray(rows, dtype=np.uint8)
    index = rec[:, :COHORT_BYTES].copy().view(_COHORT).reshape(-1).astype(np.int64)
    return index, rec[:, COHORT_BYTES:]


def rappor_from_rows(rappor: Any, rows: npt.NDArray[np.uint8], what: str) -> Any:
    """The :class:`~deniable.oracles.RapporReports` of ``(n, 2 + m / 8)`` record bytes,
    every cohort checked (``what`` names the input in the error)."""
    from deniable.oracles import RapporReports

    cohorts, bits = split_rows(rows)
    index_in_range(cohorts, rappor.cohorts, what, "cohort", f"cohorts = {rappor.cohorts}")
    return RapporReports(cohorts, np.ascontiguousarray(bits))


def rappor_json(rappor: Any, reports: Any) -> list[list[int]]:
    """The JSON reports ``[cohort, byte_0, ...]`` of checked RAPPOR reports."""
    return index_json(rappor, reports)


def index_json(mechanism: Any, reports: Any) -> list[list[int]]:
    """The JSON reports ``[index, byte_0, ...]`` of a mechanism's checked reports of an
    index and packed bits (RAPPOR's, a CMS's)."""
    cols = to_columns(mechanism, reports)
    return np.column_stack([c.astype(np.int64) for c in cols]).tolist()  # type: ignore[no-any-return]


def rappor_from_json(rappor: Any, items: list[Any]) -> Any:
    """The :class:`~deniable.oracles.RapporReports` of the JSON reports ``items`` (lists
    ``[cohort, byte_0, ..., byte_{m/8-1}]`` of whole numbers), every one checked."""
    from deniable.oracles import RapporReports

    arr = packed_json(items, "RAPPOR", "cohort", int(rappor.width), int(rappor.m))
    cohorts = arr[:, 0].astype(np.int64)
    index_in_range(cohorts, rappor.cohorts, "`body`", "cohort", f"cohorts = {rappor.cohorts}")
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
