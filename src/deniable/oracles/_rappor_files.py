"""RAPPOR's report-file form: a report is a row of ``2 + m / 8`` bytes, the header carries
RAPPOR's parameters and both epsilons (``deniable.oracles._files`` writes and reads it).

**A row**: the report's cohort as a little-endian ``uint16`` (cohorts are at most 65,536,
so ``0..65535``), then its ``m`` bits packed into ``m / 8`` bytes as
:class:`~deniable.oracles.RapporReports` holds them (bit ``i`` at bit ``i % 8`` of byte
``2 + i // 8``).  The record's dtype is ``|u1``, ``2 + m / 8`` items a report.

**The header** is that of every report file (``deniable.reports/1``) at version 2: after
the oracle's key (``rappor{"cohorts":..,"f":..,"h":..,"m":..,"p":..,"q":..}``) a block of
UTF-8 JSON, :func:`rappor_file_metadata`: the schema ``deniable.reports.rappor/1``, ``m``,
``h``, ``cohorts``, ``f``, ``p``, ``q``, the Bloom filter's hash family
(``deniable.rappor/1``), ``permanent_epsilon`` (the PRR's: the bound over any number of
reports of one value; ``"inf"`` at ``f = 0``) and ``epsilon`` (one report's, the first).
A file is read only by the mechanism of its key, and only if its header's block is the one
that mechanism writes: a file of other parameters, of another hash family, or of RAPPOR
without the block is refused before any report is counted.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.exceptions import DataError
from deniable.oracles._bits import INDEX_BYTES, indexed_records, split_records
from deniable.oracles._rappor import HASH_FAMILY, Rappor, RapporReports

__all__ = [
    "RAPPOR_FILE_SCHEMA",
    "rappor_file_metadata",
    "rappor_from_key",
    "rappor_from_records",
    "rappor_records",
]

#: The schema of RAPPOR's header block (and of its row layout).
RAPPOR_FILE_SCHEMA = "deniable.reports.rappor/1"
#: Bytes of a row's cohort (a little-endian ``uint16``).
COHORT_BYTES = INDEX_BYTES


def rappor_file_metadata(rappor: Rappor) -> dict[str, Any]:
    """The header block of a report file of ``rappor`` (plain JSON data).

    >>> meta = rappor_file_metadata(Rappor(m=128, h=2, cohorts=64, f=0.5, p=0.5, q=0.75))
    >>> meta["m"], meta["cohorts"], round(meta["permanent_epsilon"], 4), round(meta["epsilon"], 4)
    (128, 64, 4.3944, 1.0743)
    """
    return dict(
        to_jsonable(
            {
                "schema": RAPPOR_FILE_SCHEMA,
                "m": rappor.m,
                "h": rappor.h,
                "cohorts": rappor.cohorts,
                "f": rappor.f,
                "p": rappor.p,
                "q": rappor.q,
                "hash": HASH_FAMILY,
                # the PRR's epsilon bounds any number of reports of one value
                "permanent_epsilon": rappor.permanent_epsilon,
                # one report, PRR then IRR: the first report's epsilon
                "epsilon": rappor.epsilon,
                "record": f"cohort <u2, then m / 8 = {rappor.width} bytes of packed bits",
            }
        )
    )


def check_rappor_metadata(rappor: Rappor, meta: Any, path: str) -> None:
    """Refuse a header block that is not the one ``rappor`` writes (naming what differs)."""
    if meta is None:
        raise DataError(
            f"report file {path!r} holds RAPPOR reports but its header carries no RAPPOR "
            f"parameters (schema {RAPPOR_FILE_SCHEMA}): refused."
        )
    expected = json.loads(json.dumps(rappor_file_metadata(rappor)))
    if not isinstance(meta, dict):
        raise DataError(f"report file {path!r}: its header's RAPPOR block is not a JSON object.")
    differ = sorted(k for k in expected.keys() | meta.keys() if meta.get(k) != expected.get(k))
    if differ:
        shown = ", ".join(f"{k} = {meta.get(k)!r} (not {expected.get(k)!r})" for k in differ)
        raise DataError(
            f"report file {path!r} was written for other RAPPOR parameters than its key "
            f"{rappor.key} says: {shown}; refused."
        )


def rappor_records(rappor: Rappor, reports: Any) -> npt.NDArray[np.uint8]:
    """``(n, 2 + m / 8)`` bytes: each report's cohort (``<u2``) then its packed bits; the
    reports are checked as ``rappor.tally`` checks them."""
    rep = rappor._reports(reports)
    return indexed_records(rep.cohorts, rep.bits, rappor.width)


def rappor_from_records(rappor: Rappor, records: npt.NDArray[Any]) -> RapporReports:
    """The :class:`~deniable.oracles.RapporReports` of ``(n, 2 + m / 8)`` record bytes (a
    cohort out of range is refused by the mechanism's check)."""
    cohorts, bits = split_records(records, rappor.width, "RAPPOR")
    return rappor._reports(RapporReports(cohorts, bits))


def rappor_from_key(key: str) -> Rappor:
    """The :class:`~deniable.oracles.Rappor` whose ``key`` is ``key`` (a report file's or a
    tally's); a key that is not RAPPOR's canonical one is refused.

    >>> r = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75)
    >>> rappor_from_key(r.key) == r
    True
    """
    from deniable.oracles._spec import rappor_key_oracle

    return rappor_key_oracle(key)


def is_rappor_key(key: str) -> bool:
    """Whether ``key`` names RAPPOR (``rappor{...}``)."""
    return str(key).startswith(Rappor.name + "{")
