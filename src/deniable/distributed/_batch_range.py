"""The range mechanisms' records in a report batch (``deniable.batch/1``, :mod:`._batch`).

A record of :class:`~deniable.oracles.HierarchicalHistogram` or
:class:`~deniable.oracles.HaarHRR` is its report file's record
(``deniable.oracles._range_files``): the device's level (a little-endian ``uint16``, two
items when the level reports are bytes, else one item of their type), then the level
oracle's report padded with zero items to the widest level's ``W``.  A JSON report is
``[level, item_0, ..., item_{W-1}]`` (the level one number).  Each record is checked and
named by its index in the batch: its level below the number of levels, its padding zero,
and its report by its level's oracle (the first report the oracle refuses is found by
bisection, so a good batch is checked in one call a level).  Square Wave's record, its cell
(one ``uint16``), takes :mod:`._batch`'s plain path: its tally checks every cell.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.distributed._range_tables import range_layout
from deniable.exceptions import DataError, DeniableError

__all__ = ["range_from_json", "range_from_rows", "range_json", "range_rows", "range_wire"]


def range_wire(mechanism: Any) -> tuple[np.dtype[Any], int]:
    """``(little-endian item type, items a record)`` of a range mechanism's batch record."""
    dtype, head, items = range_layout(mechanism)
    return dtype.newbyteorder("<"), head + items


def _first_refused(oracle: Any, part: npt.NDArray[Any]) -> tuple[int, str]:
    """The index of the first report of ``part`` that ``oracle`` refuses, and why (by
    bisection over prefixes: the refused prefix's last half holds it)."""
    check = getattr(oracle, "check_reports", None) or oracle.tally
    lo, hi, why = 0, len(part), ""
    while hi - lo > 1:  # part[:lo] passes, part[:hi] fails
        mid = (lo + hi) // 2
        try:
            check(part[:mid])
            lo = mid
        except DeniableError as exc:
            hi, why = mid, str(exc)
    if not why:
        try:
            check(part[:hi])
        except DeniableError as exc:
            why = str(exc)
    return hi - 1, why


def _checked(mechanism: Any, reports: Any, what: str) -> Any:
    """``reports`` (:class:`~deniable.oracles.LevelReports`) with every level's reports
    checked by its oracle; the first refused one named by its index in the batch."""
    level = np.asarray(reports.level, dtype=np.int64)
    for j, oracle in enumerate(mechanism.levels):
        part = np.asarray(reports.reports[j])
        check = getattr(oracle, "check_reports", None) or oracle.tally
        try:
            check(part)
        except DeniableError:
            i, why = _first_refused(oracle, part)
            index = int(np.flatnonzero(level == j)[i])
            raise DataError(
                f"{what}: report {index} (level {j}) is refused by its level oracle: {why}"
            ) from None
    return reports


def range_from_rows(mechanism: Any, rows: npt.NDArray[Any], what: str) -> Any:
    """The :class:`~deniable.oracles.LevelReports` of checked batch records."""
    from deniable.oracles import range_from_records

    try:
        reports = range_from_records(mechanism, np.asarray(rows))
    except DataError as exc:
        raise DataError(f"{what}: {exc}") from None
    return _checked(mechanism, reports, what)


def range_rows(mechanism: Any, reports: Any, what: str) -> npt.NDArray[Any]:
    """The checked batch records (``(n, head + W)``, little-endian) of ``reports``: the
    mechanism's :class:`~deniable.oracles.LevelReports`, or records as a batch holds them."""
    from deniable.oracles import LevelReports, range_records

    dtype, width = range_wire(mechanism)
    if not isinstance(reports, LevelReports):
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != width or arr.dtype.kind not in "iu":
            raise DataError(
                f"{what} must be the LevelReports of {mechanism.name!r} or records of {width} "
                f"items, got an array of {arr.dtype} of shape {arr.shape}."
            )
        reports = range_from_rows(mechanism, arr, what)
    else:
        _checked(mechanism, reports, what)
    try:
        rec = range_records(mechanism, reports)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None
    return np.ascontiguousarray(rec, dtype=dtype)


def range_json(mechanism: Any, reports: Any) -> list[Any]:
    """The JSON reports ``[level, item_0, ..., item_{W-1}]`` of ``reports``."""
    rec = range_rows(mechanism, reports, "`reports`")
    _, width = range_wire(mechanism)
    head = width - _items(mechanism)  # the level: a little-endian uint16 in 2 bytes, or 1 item
    level = rec[:, :2].copy().view("<u2")[:, 0] if head == 2 else rec[:, 0]
    return [[int(lv), *(int(x) for x in row[head:])] for lv, row in zip(level, rec, strict=True)]


def _items(mechanism: Any) -> int:
    """``W``: the items of the widest level's report."""
    return range_layout(mechanism)[2]


def _fast_rows(items: list[Any], w: int, dtype: np.dtype[Any]) -> npt.NDArray[Any] | None:
    """``items`` as an ``(n, 1 + W)`` integer array when every report has the right shape and
    fits (levels below 2**16, items in the item type), else None (the slow path names the
    first bad report).  JSON's booleans and floats were refused before."""
    try:
        arr = np.array(items)
    except (ValueError, OverflowError):
        return None
    if arr.dtype.kind not in "iu" or arr.shape != (len(items), 1 + w) or not arr.size:
        return None
    info = np.iinfo(dtype)
    level, rest = arr[:, 0], arr[:, 1:]
    if int(level.min()) < 0 or int(level.max()) >= 2**16:
        return None
    if rest.size and (int(rest.min()) < info.min or int(rest.max()) > info.max):
        return None
    return arr


def range_from_json(mechanism: Any, items: list[Any]) -> Any:
    """The checked :class:`~deniable.oracles.LevelReports` of JSON reports (a whole batch
    at once when it is well formed, else report by report to name the first bad one)."""
    dtype, width = range_wire(mechanism)
    w = _items(mechanism)
    head = width - w
    info = np.iinfo(dtype)
    rec = np.zeros((len(items), width), dtype=dtype)
    fast = _fast_rows(items, w, dtype)
    if fast is not None:
        if head == 2:
            rec[:, :2] = fast[:, 0].astype("<u2").view(np.uint8).reshape(-1, 2)
        else:
            rec[:, 0] = fast[:, 0]
        rec[:, head:] = fast[:, 1:]
        return range_from_rows(mechanism, rec, "`body`")
    for i, item in enumerate(items):
        if (
            not isinstance(item, list)
            or len(item) != 1 + w
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in item)
        ):
            raise DataError(
                f"`body` report {i} must be a list of {1 + w} whole numbers [level, item_0, "
                f"..., item_{w - 1}], got {str(item)[:80]}."
            )
        level, *rest = item
        if not 0 <= level < 2**16:
            raise DataError(f"`body` report {i}: its level must be in 0..65535, got {level}.")
        outside = [x for x in rest if not info.min <= x <= info.max]
        if outside:
            raise DataError(
                f"`body` report {i}: its items must be in {info.min}..{info.max} "
                f"({dtype.name}), got {outside[0]}."
            )
        if head == 2:
            rec[i, :2] = np.array([level], dtype="<u2").view(np.uint8)
        else:
            rec[i, 0] = level
        rec[i, head:] = rest
    return range_from_rows(mechanism, rec, "`body`")
