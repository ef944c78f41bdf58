"""RAPPOR n-gram discovery's reports in a report batch (``deniable.batch/1``, :mod:`._batch`).

A report of :class:`~deniable.oracles.RapporNgram` is its device's record in an n-gram
report file (``deniable.oracles._string_files``): bytes, the device's ``pairs`` position
pairs (one byte each), its ``2 pairs`` n-gram reports (each its cohort ``uint16`` then
``m / 8`` bytes of packed bits), then its full-string report when the protocol has one.
JSON: the list of the record's bytes, the columns of a report table.

Decoding checks the shape, every pair (``j1 < j2`` below ``G``) and every report as its
RAPPOR mechanism checks it (a cohort out of range), and returns
:class:`~deniable.oracles.NgramReports`; bad input is one
:class:`~deniable.exceptions.DataError` naming the input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, DeniableError

__all__ = ["ngram_from_json", "ngram_from_rows", "ngram_json", "ngram_rows"]


def ngram_rows(ng: Any, reports: Any, what: str) -> npt.NDArray[np.uint8]:
    """``(n, w)`` record bytes of :class:`~deniable.oracles.NgramReports` or of records,
    each checked by the protocol."""
    from deniable.oracles import NgramReports, ngram_from_records, ngram_records

    try:
        if isinstance(reports, NgramReports):
            rec = ngram_records(ng, reports)
        else:
            rec = np.asarray(reports)
            ngram_from_records(ng, rec)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None
    return np.ascontiguousarray(rec, dtype=np.uint8)


def ngram_from_rows(ng: Any, rows: npt.NDArray[Any], what: str) -> Any:
    """The :class:`~deniable.oracles.NgramReports` of ``(n, w)`` record bytes, every pair
    and report checked (``what`` names the input in the error)."""
    from deniable.oracles import ngram_from_records

    try:
        return ngram_from_records(ng, rows)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None


def ngram_json(ng: Any, reports: Any) -> list[list[int]]:
    """The JSON reports (each record's bytes) of checked n-gram reports."""
    out: list[list[int]] = ngram_rows(ng, reports, "`reports`").tolist()
    return out


def ngram_from_json(ng: Any, items: list[Any]) -> Any:
    """The :class:`~deniable.oracles.NgramReports` of the JSON reports ``items`` (lists of a
    record's bytes), every one checked."""
    from deniable.oracles import string_record

    width = string_record(ng)[1]
    ok = all(
        isinstance(r, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        for r in items
    )
    if not ok:
        raise DataError(
            "`body` reports of RAPPOR n-grams must be lists of whole numbers (a record's bytes)."
        )
    flat = [x for r in items for x in r]
    if flat and (min(flat) < 0 or max(flat) > 255):
        bad = min(flat) if min(flat) < 0 else max(flat)
        raise DataError(f"`body` reports of RAPPOR n-grams must hold bytes 0..255, got {bad}.")
    lengths = {len(r) for r in items}
    if lengths - {width}:
        raise DataError(
            f"`body` reports of RAPPOR n-grams must be {width} bytes each, got lengths "
            f"{sorted(lengths)}."
        )
    n = len(items)
    arr = np.array(items, dtype=np.uint8).reshape(n, width) if n else np.empty((0, width), np.uint8)
    return ngram_from_rows(ng, arr, "`body`")
