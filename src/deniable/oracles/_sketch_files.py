"""The count mean sketches' report-file form (``deniable.oracles._files`` writes and reads
it) and the sketch a key names.

**A row** of a CMS report: the report's row ``j`` as a little-endian ``uint16`` (``k <=
65,536`` rows, so ``0..65535``), then its ``m`` randomized bits packed into ``ceil(m / 8)``
bytes as :class:`~deniable.oracles.SketchReports` holds them (bit ``i`` at bit ``i % 8`` of
byte ``2 + i // 8``, padding bits 0): the record's dtype is ``|u1``, ``2 + ceil(m / 8)``
items a report.  An HCMS report is one integer ``2 (j m + l) + b`` (``<i8``, one item a
report), as for any oracle whose report is a number.

**The header** is version 1 of ``deniable.reports/1``: the sketch's key
(``cms{"epsilon":..,"k":..,"m":..,"max_bytes":..,"salt":..}``, likewise ``hcms``) names the
mechanism and every parameter, the salt (the row hashes, ``deniable.cms/1``) included, so a
file is read only by the sketch that wrote it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, DeniableError
from deniable.oracles._bits import INDEX_BYTES, indexed_records, split_records
from deniable.oracles._cms import CMS
from deniable.oracles._cms_base import CountMeanSketch
from deniable.oracles._hcms import HCMS
from deniable.oracles._sketch import SketchReports

__all__ = [
    "is_sketch_key",
    "sketch_from_key",
    "sketch_from_records",
    "sketch_record",
    "sketch_records",
]

#: Bytes of a CMS row's row index (a little-endian ``uint16``).
ROW_BYTES = INDEX_BYTES
_SKETCHES: dict[str, type[CountMeanSketch]] = {CMS.name: CMS, HCMS.name: HCMS}
_FIELDS = {"epsilon", "k", "m", "max_bytes", "salt"}


def is_sketch_key(key: str) -> bool:
    """Whether ``key`` names a count mean sketch (``cms{...}`` or ``hcms{...}``)."""
    return str(key).partition("{")[0] in _SKETCHES


def sketch_from_key(key: str) -> CountMeanSketch:
    """The :class:`~deniable.oracles.CMS` or :class:`~deniable.oracles.HCMS` whose ``key``
    is ``key`` (a report file's or a tally's); a key that is not a sketch's canonical one is
    refused with :class:`~deniable.exceptions.DataError`.

    >>> sketch = HCMS(k=4, m=8, epsilon=1.0, salt=3)
    >>> sketch_from_key(sketch.key) == sketch
    True
    """
    from deniable.oracles._spec import _key_parameters, _parameter

    name, params = _key_parameters(key, _SKETCHES)
    fields = _FIELDS | {"spec_version"} if name == CMS.name else _FIELDS
    if params is None or not _FIELDS <= set(params) <= fields:
        raise DataError(
            f"`key` must be a count mean sketch's key like "
            f"{CMS(k=4, m=8, epsilon=1.0).key}, got {key!r}."
        )
    if name == CMS.name:  # a key without spec_version is spec 1's (keys before spec 2)
        params = {"spec_version": 1, **params}
    try:
        out = _SKETCHES[name](**{n: _parameter(n, x) for n, x in params.items()})
    except DeniableError as exc:  # a parameter that is no number, or out of its range
        raise DataError(f"`key` {key!r} does not fit {name!r}: {exc}") from None
    if out.key != key:
        raise DataError(f"`key` {key!r} is not canonical (the mechanism's key is {out.key}).")
    return out


def sketch_record(sketch: CountMeanSketch) -> tuple[np.dtype[Any], int, bool]:
    """The record of a report (``deniable.oracles._files``): its dtype, items per report and
    whether reports are rows of a 2-D array."""
    if isinstance(sketch, CMS):
        return np.dtype("|u1"), ROW_BYTES + sketch.width, True
    return np.dtype("<i8"), 1, False


def sketch_records(sketch: CountMeanSketch, reports: Any) -> npt.NDArray[Any]:
    """The records of ``reports``, checked as ``sketch.tally`` checks them: CMS ``(n, 2 +
    ceil(m / 8))`` bytes, each report's row (``<u2``) then its packed bits; HCMS the
    report integers."""
    if not isinstance(sketch, CMS):
        arr = np.asarray(reports)
        sketch.tally(arr)  # the values' range and kind, naming `reports`
        return arr
    rep = sketch._reports(reports)
    return indexed_records(rep.rows, rep.bits, sketch.width)


def sketch_from_records(sketch: CountMeanSketch, records: npt.NDArray[Any]) -> Any:
    """The reports of records (CMS: :class:`~deniable.oracles.SketchReports` of ``(n, 2 +
    ceil(m / 8))`` bytes, a row out of range or a padding bit set refused by the sketch's
    check; HCMS: the integers themselves)."""
    if not isinstance(sketch, CMS):
        return np.asarray(records)
    rows, bits = split_records(records, sketch.width, "CMS")
    return sketch._reports(SketchReports(rows, bits))
