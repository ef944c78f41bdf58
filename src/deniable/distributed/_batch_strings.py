"""The string protocols' reports in a report batch (``deniable.batch/1``, :mod:`._batch`):
the Sequence Fragment Puzzle's and RAPPOR n-gram discovery's.

A report of either is its device's record in its report file
(``deniable.oracles._string_files``):

- :class:`~deniable.oracles.SFP`: with HCMS three little-endian ``int64`` (the position
  ``l``, the fragment report, the whole-string report); with CMS bytes, ``l`` as a
  ``uint16``, then each CMS report as its record (the row ``uint16``, then ``ceil(m / 8)``
  bytes of packed bits).  JSON: the list of the record's items (``[l, fragment, word]``
  with HCMS; the bytes with CMS).
- :class:`~deniable.oracles.RapporNgram`: bytes, the device's ``pairs`` position pairs (one
  byte each), its ``2 pairs`` n-gram reports (each its cohort ``uint16`` then ``m / 8``
  bytes of packed bits), then its full-string report when the protocol has one.  JSON: the
  list of the record's bytes.

Either way the JSON report is a row of the protocol's report table.  Decoding checks the
shape and every record as the protocol's own reader checks it (SFP: every position in ``0
.. P - 1`` and each half as its sketch checks it, a row out of range, a padding bit set, a
value past ``2 k m``; n-grams: every pair ``j1 < j2`` below ``G`` and every report as its
RAPPOR mechanism checks it, a cohort out of range), and returns
:class:`~deniable.oracles.SFPReports` or :class:`~deniable.oracles.NgramReports`; bad input
is one :class:`~deniable.exceptions.DataError` naming the input.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, DeniableError

__all__ = ["string_from_json", "string_from_rows", "string_json", "string_rows"]


class _Codec(NamedTuple):
    """How one string protocol's records are read and named."""

    reports: type  #: the protocol's reports class
    to_records: Any  #: ``(protocol, reports) -> (n, w) records``
    from_records: Any  #: ``(protocol, records) -> reports``, every record checked
    name: str  #: the protocol in an error
    item: str  #: a record's item in an error ("items", "bytes")
    held: str  #: the range of an item in an error, before ``lo..hi``
    fixed: bool  #: JSON reports of the wrong width are refused here (else by the reader)


def _codec(protocol: Any) -> _Codec:
    from deniable.oracles import (
        SFP,
        NgramReports,
        SFPReports,
        ngram_from_records,
        ngram_records,
        sfp_from_records,
        sfp_records,
    )

    if isinstance(protocol, SFP):
        return _Codec(SFPReports, sfp_records, sfp_from_records, "SFP", "items", "items in", False)
    return _Codec(
        NgramReports, ngram_records, ngram_from_records, "RAPPOR n-grams", "bytes", "bytes", True
    )


def _little(protocol: Any) -> np.dtype[Any]:
    from deniable.oracles import string_record

    return string_record(protocol)[0].newbyteorder("<")


def string_rows(protocol: Any, reports: Any, what: str) -> npt.NDArray[Any]:
    """``(n, w)`` records (little-endian) of the protocol's reports
    (:class:`~deniable.oracles.SFPReports`, :class:`~deniable.oracles.NgramReports`) or of
    records, each checked by the protocol."""
    codec = _codec(protocol)
    try:
        if isinstance(reports, codec.reports):
            rec = codec.to_records(protocol, reports)
        else:
            rec = np.asarray(reports)
            codec.from_records(protocol, rec)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None
    return np.ascontiguousarray(rec, dtype=_little(protocol))


def string_from_rows(protocol: Any, rows: npt.NDArray[Any], what: str) -> Any:
    """The reports of ``(n, w)`` records, every record checked by the protocol (``what``
    names the input in the error)."""
    try:
        return _codec(protocol).from_records(protocol, rows)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None


def string_json(protocol: Any, reports: Any) -> list[list[int]]:
    """The JSON reports (each record's items) of checked reports."""
    out: list[list[int]] = string_rows(protocol, reports, "`reports`").tolist()
    return out


def string_from_json(protocol: Any, items: list[Any]) -> Any:
    """The reports of the JSON reports ``items`` (lists of a record's whole numbers), every
    one checked: whole numbers in the record's dtype, one length (n-grams: the record's
    width), then the protocol's own check."""
    from deniable.oracles import string_record

    codec = _codec(protocol)
    dtype, width = _little(protocol), string_record(protocol)[1]
    info = np.iinfo(dtype)
    ok = all(
        isinstance(r, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        for r in items
    )
    if not ok:
        raise DataError(
            f"`body` reports of {codec.name} must be lists of whole numbers (a record's "
            f"{codec.item})."
        )
    flat = [x for r in items for x in r]
    if flat and (min(flat) < info.min or max(flat) > info.max):
        bad = min(flat) if min(flat) < info.min else max(flat)
        raise DataError(
            f"`body` reports of {codec.name} must hold {codec.held} {info.min}..{info.max}, "
            f"got {bad}."
        )
    lengths = {len(r) for r in items}
    if codec.fixed and lengths - {width}:
        raise DataError(
            f"`body` reports of {codec.name} must be {width} {codec.item} each, got lengths "
            f"{sorted(lengths)}."
        )
    if len(lengths) > 1:
        raise DataError(
            f"`body` reports of {codec.name} must all have one length, got lengths "
            f"{sorted(lengths)}."
        )
    n = len(items)
    arr = np.array(items, dtype=dtype).reshape(n, -1) if n else np.empty((0, width), dtype=dtype)
    return string_from_rows(protocol, arr, "`body`")
