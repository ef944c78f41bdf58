"""The report-file form of SFP and RAPPOR's n-grams (:class:`~deniable.oracles.SFP`,
:class:`~deniable.oracles.RapporNgram`; ``deniable.oracles._files`` writes it): one record
a device, fixed size, after the header every report file has (its key: the protocol's,
``deniable.oracles._string_keys``).

**SFP.**  What a device sends does not depend on anything the server decides: its position
``l`` (drawn independently of its string), its fragment-sketch report and its whole-string
report.  With HCMS a record is three little-endian ``int64`` (``<i8``): ``l``, the fragment
report ``2 (j m + c) + b``, the whole-string report.  With CMS it is bytes (``|u1``): ``l``
as a ``<u2``, then each report as a CMS report file lays it out (its row ``<u2``, then its
``m`` bits packed into ``ceil(m / 8)`` bytes; ``deniable.oracles._sketch_files``): ``2 + 2
(2 + ceil(m / 8))`` bytes.  SFP's tally adds across batches, so its file is tallied in
batches by :func:`~deniable.oracles.tally_file` (memory: the tally and one batch).

**RAPPOR n-grams.**  A record is bytes (``|u1``): the device's ``pairs`` position pairs
``j1, j2`` (one byte each: ``length <= 64``), then its ``2 pairs`` n-gram reports in the
order it sent them, then its full-string report when the protocol has one, each report as
a RAPPOR report file lays it out (its cohort ``<u2``, then ``m / 8`` bytes of packed bits;
``deniable.oracles._rappor_files``): ``2 pairs + 2 pairs (2 + m / 8) + (2 + m_full / 8)``
bytes.  The discovery needs every report at once (its EM links the n-grams of each
device), so :func:`read_ngram_file` reads the whole file, up to ``max_bytes``.

A record whose position, cohort, row or report its mechanism refuses raises
:class:`~deniable.exceptions.DataError`, naming the file when it is read from one.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, DeniableError, ParameterTypeError
from deniable.oracles._base import check_indices
from deniable.oracles._bits import INDEX_BYTES
from deniable.oracles._cms import CMS
from deniable.oracles._file_header import read_whole_file
from deniable.oracles._rappor_files import rappor_from_records, rappor_records
from deniable.oracles._rappor_ngram import RapporNgram
from deniable.oracles._rappor_ngram_decode import NgramReports, _checked
from deniable.oracles._sfp import SFP
from deniable.oracles._sfp_result import SFPReports
from deniable.oracles._sketch_files import sketch_from_records, sketch_records

__all__ = [
    "ngram_from_records",
    "ngram_record",
    "ngram_records",
    "read_ngram_file",
    "sfp_from_records",
    "sfp_record",
    "sfp_records",
    "string_record",
]

#: The most bytes of reports :func:`read_ngram_file` holds in memory.
MAX_READ_BYTES = 1 << 31
_POSITION = np.dtype("<u2")


# ---- SFP


def sfp_record(sfp: SFP) -> tuple[np.dtype[Any], int, bool]:
    """The record of a device (``deniable.oracles._files``): its dtype, items and that
    records are rows of a 2-D array (HCMS: ``<i8`` x 3; CMS: ``|u1`` x ``2 + 2 (2 +
    ceil(m / 8))``)."""
    if isinstance(sfp.fragment_sketch, CMS):
        return np.dtype("|u1"), INDEX_BYTES + 2 * (INDEX_BYTES + sfp.fragment_sketch.width), True
    return np.dtype("<i8"), 3, True


def _positions(sfp: SFP, positions: Any, what: str) -> npt.NDArray[np.int64]:
    pos = np.asarray(positions)
    if pos.ndim != 1 or (pos.size and pos.dtype.kind not in "iu"):
        raise DataError(
            f"`{what}` must be a 1-D integer array, got dtype {pos.dtype} and shape {pos.shape}."
        )
    check_indices(what, pos, sfp.positions)
    return pos.astype(np.int64, copy=False)


def sfp_records(sfp: SFP, reports: Any) -> npt.NDArray[Any]:
    """The ``(n, w)`` records of ``reports`` (:class:`~deniable.oracles.SFPReports` of
    ``sfp``): each device's position, then its two reports, each checked as its sketch's
    tally checks it."""
    if not isinstance(reports, SFPReports):
        raise ParameterTypeError(f"`reports` must be SFPReports, got {type(reports).__name__}.")
    pos = _positions(sfp, reports.positions, "reports.positions")
    frag = sketch_records(sfp.fragment_sketch, reports.fragments)
    word = sketch_records(sfp.word_sketch, reports.words)
    for name, part in (("fragments", frag), ("words", word)):
        if part.shape[0] != pos.size:
            raise DataError(
                f"`reports.{name}` must hold one report per device ({pos.size}), got "
                f"{part.shape[0]}."
            )
    dtype, width, _ = sfp_record(sfp)
    if dtype.kind == "i":
        return np.stack([pos, frag, word], axis=1).astype(dtype)
    out = np.empty((pos.size, width), dtype=np.uint8)
    out[:, :INDEX_BYTES] = pos.astype(_POSITION).view(np.uint8).reshape(-1, INDEX_BYTES)
    half = frag.shape[1]
    out[:, INDEX_BYTES : INDEX_BYTES + half] = frag
    out[:, INDEX_BYTES + half :] = word
    return out


def sfp_from_records(sfp: SFP, records: Any) -> SFPReports:
    """The :class:`~deniable.oracles.SFPReports` of ``(n, w)`` records
    (:func:`~deniable.oracles.string_record`): a position out of range or a report its
    sketch refuses raises :class:`~deniable.exceptions.DataError`."""
    dtype, width, _ = sfp_record(sfp)
    rec = np.asarray(records)
    if rec.ndim != 2 or rec.shape[1] != width or rec.dtype.kind not in "iu":
        raise DataError(
            f"`records` of SFP must be rows of {width} x {dtype.str} (the position, then the "
            f"two reports), got dtype {rec.dtype} and shape {rec.shape}."
        )
    if dtype.kind == "i":
        rec = rec.astype(np.int64, copy=False)
        pos = _positions(sfp, rec[:, 0], "records' positions")
        frag, word = rec[:, 1].copy(), rec[:, 2].copy()
        sketch_records(sfp.fragment_sketch, frag)  # each checked as its tally checks it
        sketch_records(sfp.word_sketch, word)
        return SFPReports(pos, frag, word)
    rec = np.ascontiguousarray(rec, dtype=np.uint8)
    raw = rec[:, :INDEX_BYTES].copy().view(_POSITION).reshape(-1)
    pos = _positions(sfp, raw.astype(np.int64), "records' positions")
    half = (width - INDEX_BYTES) // 2
    frag = sketch_from_records(sfp.fragment_sketch, rec[:, INDEX_BYTES : INDEX_BYTES + half])
    word = sketch_from_records(sfp.word_sketch, rec[:, INDEX_BYTES + half :])
    return SFPReports(pos, frag, word)


def string_record(protocol: SFP | RapporNgram) -> tuple[np.dtype[Any], int]:
    """The dtype and items of a device's record of ``protocol`` (SFP or RAPPOR n-grams):
    the columns of its report table (``deniable.distributed``)."""
    if isinstance(protocol, SFP):
        return sfp_record(protocol)[:2]
    if isinstance(protocol, RapporNgram):
        return ngram_record(protocol)[:2]
    raise ParameterTypeError(
        f"`protocol` must be SFP or RapporNgram, got {type(protocol).__name__}."
    )


# ---- RAPPOR n-grams


def ngram_record(ng: RapporNgram) -> tuple[np.dtype[Any], int, bool]:
    """The record of a device: ``|u1`` x ``2 pairs + 2 pairs (2 + m / 8) (+ 2 + m_full /
    8)``, rows of a 2-D array."""
    k = 2 * ng.pairs
    full = 0 if ng.full is None else INDEX_BYTES + ng.full.width
    return np.dtype("|u1"), k + k * (INDEX_BYTES + ng.ngram.width) + full, True


def ngram_records(ng: RapporNgram, reports: Any) -> npt.NDArray[np.uint8]:
    """The ``(n, w)`` records of ``reports`` (:class:`~deniable.oracles.NgramReports` of
    ``ng``, checked as its discovery checks them): each device's position pairs, its n-gram
    reports, its full-string report."""
    rep = _checked(ng, reports)
    n, k = len(rep), 2 * ng.pairs
    parts = [
        rep.positions.reshape(n, k).astype(np.uint8),
        rappor_records(ng.ngram, rep.ngrams).reshape(n, k * (INDEX_BYTES + ng.ngram.width)),
    ]
    if ng.full is not None and rep.full is not None:
        parts.append(rappor_records(ng.full, rep.full))
    return np.concatenate(parts, axis=1)


def ngram_from_records(ng: RapporNgram, records: Any) -> NgramReports:
    """The :class:`~deniable.oracles.NgramReports` of ``(n, w)`` record bytes
    (:func:`~deniable.oracles.string_record`), checked as the discovery checks them
    (positions, cohorts)."""
    width = ngram_record(ng)[1]
    rec = np.asarray(records)
    if rec.ndim != 2 or rec.shape[1] != width or rec.dtype != np.uint8:
        raise DataError(
            f"`records` of RAPPOR n-grams must be rows of {width} bytes (the position pairs, "
            f"the n-gram reports, the full report), got dtype {rec.dtype} and shape "
            f"{rec.shape}."
        )
    n, k, w = rec.shape[0], 2 * ng.pairs, INDEX_BYTES + ng.ngram.width
    pos = rec[:, :k].astype(np.int64).reshape(n, ng.pairs, 2)
    grams = rappor_from_records(ng.ngram, rec[:, k : k + k * w].reshape(n * k, w))
    full = None if ng.full is None else rappor_from_records(ng.full, rec[:, k + k * w :])
    return _checked(ng, NgramReports(pos, grams, full))


def read_ngram_file(
    ng: RapporNgram,
    path: str | os.PathLike[str],
    *,
    batch: int = 1 << 20,
    max_bytes: int = MAX_READ_BYTES,
    progress: Any = None,
) -> NgramReports:
    """The reports of a report file of ``ng`` (its header checked as
    :func:`~deniable.oracles.tally_file` checks one), read ``batch`` devices at a time.
    The discovery needs every report at once, so a file of more than ``max_bytes`` of
    reports is refused before any is read; ``progress(done, total)`` after each batch."""
    dtype, width, _ = ngram_record(ng)
    name, rec = read_whole_file(
        path, ng.key, (dtype, width), (batch, max_bytes), progress,
        ("devices' reports", "the discovery"),
    )  # fmt: skip
    try:
        return ngram_from_records(ng, rec)
    except DeniableError as exc:
        raise DataError(f"report file {name!r}: {exc}") from None
