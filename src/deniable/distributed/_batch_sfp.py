"""The Sequence Fragment Puzzle's reports in a report batch (``deniable.batch/1``,
:mod:`._batch`).

A report of :class:`~deniable.oracles.SFP` is its device's record in an SFP report file
(``deniable.oracles._string_files``): with HCMS three little-endian ``int64`` (the position
``l``, the fragment report, the whole-string report); with CMS bytes, ``l`` as a ``uint16``,
then each CMS report as its record (the row ``uint16``, then ``ceil(m / 8)`` bytes of packed
bits).  JSON: the list of the record's items (``[l, fragment, word]`` with HCMS; the bytes
with CMS), the columns of a report table.

Decoding checks the shape, every position (``0 .. P - 1``) and each half as its sketch
checks it (a row out of range, a padding bit set, a value past ``2 k m``), and returns
:class:`~deniable.oracles.SFPReports`; bad input is one
:class:`~deniable.exceptions.DataError` naming the input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, DeniableError

__all__ = ["sfp_from_json", "sfp_from_rows", "sfp_json", "sfp_rows"]


def _little(sfp: Any) -> np.dtype[Any]:
    from deniable.oracles import string_record

    return string_record(sfp)[0].newbyteorder("<")


def sfp_rows(sfp: Any, reports: Any, what: str) -> npt.NDArray[Any]:
    """``(n, w)`` records (little-endian) of :class:`~deniable.oracles.SFPReports` or of
    records, each checked by the protocol."""
    from deniable.oracles import SFPReports, sfp_from_records, sfp_records

    try:
        if isinstance(reports, SFPReports):
            rec = sfp_records(sfp, reports)
        else:
            rec = np.asarray(reports)
            sfp_from_records(sfp, rec)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None
    return np.ascontiguousarray(rec, dtype=_little(sfp))


def sfp_from_rows(sfp: Any, rows: npt.NDArray[Any], what: str) -> Any:
    """The :class:`~deniable.oracles.SFPReports` of ``(n, w)`` records, every position and
    sketch report checked (``what`` names the input in the error)."""
    from deniable.oracles import sfp_from_records

    try:
        return sfp_from_records(sfp, rows)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None


def sfp_json(sfp: Any, reports: Any) -> list[list[int]]:
    """The JSON reports (each record's items) of checked SFP reports."""
    out: list[list[int]] = sfp_rows(sfp, reports, "`reports`").tolist()
    return out


def sfp_from_json(sfp: Any, items: list[Any]) -> Any:
    """The :class:`~deniable.oracles.SFPReports` of the JSON reports ``items`` (lists of a
    record's whole numbers), every one checked."""
    from deniable.oracles import string_record

    dtype, width = _little(sfp), string_record(sfp)[1]
    info = np.iinfo(dtype)
    ok = all(
        isinstance(r, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        for r in items
    )
    if not ok:
        raise DataError("`body` reports of SFP must be lists of whole numbers (a record's items).")
    lengths = {len(r) for r in items}
    flat = [x for r in items for x in r]
    if flat and (min(flat) < info.min or max(flat) > info.max):
        bad = min(flat) if min(flat) < info.min else max(flat)
        raise DataError(
            f"`body` reports of SFP must hold items in {info.min}..{info.max}, got {bad}."
        )
    if len(lengths) > 1:
        raise DataError(
            f"`body` reports of SFP must all have one length, got lengths {sorted(lengths)}."
        )
    n = len(items)
    arr = np.array(items, dtype=dtype).reshape(n, -1) if n else np.empty((0, width), dtype=dtype)
    return sfp_from_rows(sfp, arr, "`body`")
