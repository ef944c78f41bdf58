"""Report files and chunked aggregation: a tally in O(k) memory however many reports.

A **report file** (``deniable.reports/1``) holds the reports of one oracle as fixed-size
little-endian records after a header that names the oracle:

==========  ===========================================================================
bytes       field
==========  ===========================================================================
4           magic ``DNRP``
2           version (``uint16``, 1)
4           length ``L`` of the key (``uint32``), then the key (UTF-8): the oracle's
            :attr:`key`, the identity its tallies carry
4           length ``D`` of the record dtype (``uint32``), then the dtype (ASCII, numpy's
            ``str``, e.g. ``<u8``)
4           items per report ``w`` (``uint32``): one for a numbered report, ``ceil(k /
            8)`` bytes for a packed bit vector, 3 for a hashed report
8           number of reports ``n`` (``uint64``)
n w s       the reports, ``s`` bytes per item
==========  ===========================================================================

Version 2 (written for RAPPOR only; every other oracle's file stays version 1) has one more
field after the key: ``4`` bytes, the length ``J`` of a block (``uint32``), then ``J``
bytes of UTF-8 JSON describing the reports (RAPPOR's parameters and epsilons, and its row
layout: ``deniable.oracles._rappor_files``); :func:`read_report_metadata` gives it.  A
RAPPOR report is a row of ``2 + m / 8`` bytes (``|u1``): its cohort (``<u2``), then its
packed bits.  A CMS report is a row of ``2 + ceil(m / 8)`` bytes: its row (``<u2``), then
its packed bits; an HCMS report one ``<i8`` (``deniable.oracles._sketch_files``).  A
PEM or TreeHist record is its group then its report's words (``_heavy_files``); an SFP
record its position then its two sketch reports, a RAPPOR n-gram record its position pairs
then its reports (``_string_files``): SFP's file is tallied here, the others' read whole
(:func:`~deniable.oracles.read_heavy_file`, :func:`~deniable.oracles.read_ngram_file`).

:func:`write_reports` (or :func:`write_report_batches`, a batch at a time) writes one
atomically (a temporary file renamed into place: never half-written); :func:`tally_file`
reads it in batches of ``batch`` reports (at most 128 MB of them) and adds their tallies,
so memory is O(k) plus one batch, and calls ``progress(done, total)`` after each batch
(the command line draws a progress bar with it).  A file of another oracle, a
header that does not parse, a RAPPOR file whose header block is not the one its key's
mechanism writes, or a file whose size is not the header plus ``n`` whole
reports (truncated, or with bytes after the last report) is refused with
:class:`~deniable.exceptions.DataError` before any report is counted.
:func:`tally_batches` adds the tallies of any iterable of report arrays the same way.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from deniable.common import atomic_write
from deniable.common import validation as v
from deniable.designs import Tally
from deniable.exceptions import DataError, DeniableError, ParameterTypeError
from deniable.oracles._cms import CMS
from deniable.oracles._cms_base import CountMeanSketch
from deniable.oracles._file_header import (
    _VERSION,
    _VERSION_BLOCK,
    BATCH_BYTES,
    REPORTS_MAGIC,
    _header,
    check_file,
    read_batches,
)
from deniable.oracles._heavy_files import heavy_record, heavy_records
from deniable.oracles._heavy_hitters import PEM, HeavyHitterReports, TreeHist
from deniable.oracles._range_files import range_from_records, range_record, range_records
from deniable.oracles._ranges import LevelReports, LevelSampled
from deniable.oracles._rappor import Rappor, RapporReports
from deniable.oracles._rappor_files import (
    COHORT_BYTES,
    rappor_file_metadata,
    rappor_from_records,
    rappor_records,
)
from deniable.oracles._rappor_ngram import RapporNgram
from deniable.oracles._rappor_ngram_decode import NgramReports
from deniable.oracles._sfp import SFP
from deniable.oracles._sfp_result import SFPReports, SFPTally
from deniable.oracles._sketch import SketchReports
from deniable.oracles._sketch_files import sketch_from_records, sketch_record, sketch_records
from deniable.oracles._square_wave import SquareWave
from deniable.oracles._string_files import (
    ngram_record,
    ngram_records,
    sfp_from_records,
    sfp_record,
    sfp_records,
)

__all__ = [
    "REPORTS_MAGIC",
    "read_report_key",
    "read_report_metadata",
    "tally_batches",
    "tally_file",
    "write_report_batches",
    "write_reports",
]

DEFAULT_BATCH = 1 << 20
Progress = Callable[[int, int], object]


def _record(oracle: Any) -> tuple[np.dtype[Any], int, bool]:
    """The little-endian dtype of one report item, the items per report, and whether the
    oracle's reports are rows of a 2-D array (a unary oracle's packed bits are, even when
    one byte holds them: k <= 8).  RAPPOR's: bytes, ``2 + m / 8`` a report."""
    if isinstance(oracle, Rappor):
        return np.dtype("|u1"), COHORT_BYTES + oracle.width, True
    if isinstance(oracle, CountMeanSketch):  # strings in: no report of the value 0 to look at
        return sketch_record(oracle)
    if isinstance(oracle, PEM | TreeHist):  # the group, then the report (_heavy_files)
        return heavy_record(oracle)
    if isinstance(oracle, LevelSampled | SquareWave):  # the level, then its report; a cell
        return range_record(oracle)
    if isinstance(oracle, SFP):  # the position, then two reports (_string_files)
        return sfp_record(oracle)
    if isinstance(oracle, RapporNgram):  # the positions, then the reports (_string_files)
        return ngram_record(oracle)
    if not hasattr(oracle, "randomize") or not hasattr(oracle, "tally"):
        raise ParameterTypeError(
            f"`oracle` must be a frequency oracle (randomize and tally), got "
            f"{type(oracle).__name__}."
        )
    zero = np.zeros(1, dtype=np.int64)
    sample = np.asarray(oracle.randomize(zero, rng=np.random.default_rng(0)))
    width = int(np.prod(sample.shape[1:], dtype=np.int64)) if sample.ndim > 1 else 1
    return sample.dtype.newbyteorder("<"), width, sample.ndim > 1


def _check(oracle: Any, reports: npt.NDArray[Any]) -> None:
    """The oracle's check of reports (k-ary RR: its tally, O(n + k))."""
    check = getattr(oracle, "check_reports", None)
    if check is not None:
        check(reports)
    else:
        oracle.tally(reports)


def write_reports(path: str | os.PathLike[str], oracle: Any, reports: npt.ArrayLike) -> Path:
    """Write ``reports`` of ``oracle`` to a report file (module docstring), atomically.

    The reports are checked first (as the oracle's ``tally`` checks them), so a file is
    never written with reports its oracle would refuse.
    """
    if isinstance(
        reports, RapporReports | SketchReports | HeavyHitterReports | LevelReports | SFPReports
    ):
        n = reports.n if isinstance(reports, HeavyHitterReports | LevelReports) else len(reports)
        return write_report_batches(path, oracle, n, [reports])
    if isinstance(reports, NgramReports):
        n = len(reports)
        return write_report_batches(path, oracle, n, [reports])
    arr = np.asarray(reports)
    n = int(arr.shape[0]) if arr.ndim else 0
    return write_report_batches(path, oracle, n, [arr])


def write_report_batches(
    path: str | os.PathLike[str],
    oracle: Any,
    n: int,
    batches: Iterable[npt.ArrayLike],
    *,
    progress: Progress | None = None,
) -> Path:
    """Write ``n`` reports of ``oracle``, given in ``batches`` (any iterable of report
    arrays), to a report file, atomically: memory one batch.  Each batch is validated by the
    oracle's ``tally`` before it is written; batches that do not hold exactly ``n`` reports
    in all raise :class:`~deniable.exceptions.DataError` and leave no file.
    ``progress(done, n)`` is called after each batch."""
    total = v.integer("n", n, minimum=0)
    dtype, width, _ = _record(oracle)
    heavy = oracle if isinstance(oracle, PEM | TreeHist) else None
    key = str(oracle.key).encode("utf-8")
    dt = dtype.str.encode("ascii")
    rappor = oracle if isinstance(oracle, Rappor) else None
    block = b""
    if rappor is not None:  # version 2: RAPPOR's parameters and epsilons after the key
        meta = json.dumps(rappor_file_metadata(rappor), sort_keys=True, allow_nan=False)
        block = struct.pack("<I", len(meta.encode("utf-8"))) + meta.encode("utf-8")
    head = (
        REPORTS_MAGIC
        + struct.pack("<H", _VERSION if rappor is None else _VERSION_BLOCK)
        + struct.pack("<I", len(key)) + key
        + block
        + struct.pack("<I", len(dt)) + dt
        + struct.pack("<IQ", width, total)
    )  # fmt: skip

    def write(tmp: Path) -> None:
        done = 0
        with open(tmp, "wb") as fh:
            fh.write(head)
            for reports in batches:
                arr: npt.NDArray[Any]
                if rappor is not None:  # checked as its tally checks them, then as rows
                    arr = rappor_records(rappor, reports)
                elif isinstance(oracle, CountMeanSketch):  # likewise
                    arr = sketch_records(oracle, reports)
                elif heavy is not None:  # each group's reports checked by its oracle
                    arr = heavy_records(heavy, reports)
                elif isinstance(oracle, LevelSampled):  # each level's by its oracle
                    arr = range_records(oracle, reports)
                elif isinstance(oracle, SFP):  # each report checked by its sketch
                    arr = sfp_records(oracle, reports)
                elif isinstance(oracle, RapporNgram):  # checked as its discovery checks them
                    arr = ngram_records(oracle, reports)
                else:
                    arr = np.asarray(reports)
                    _check(oracle, arr)  # shape, dtype and range, naming `reports`
                m = int(arr.shape[0]) if arr.ndim else 0
                if done + m > total:
                    raise DataError(f"`batches` hold more than the n = {total} reports promised.")
                np.ascontiguousarray(arr.reshape(m, width), dtype=dtype).tofile(fh)
                done += m
                if progress is not None:
                    progress(done, total)
        if done != total:
            raise DataError(f"`batches` hold {done} reports, not the n = {total} promised.")

    return atomic_write(path, write)


def read_report_key(path: str | os.PathLike[str]) -> str:
    """The key of the oracle whose reports a report file holds (from its header)."""
    name = os.fspath(path)
    with open(name, "rb") as fh:
        return _header(fh, name)[0]


def read_report_metadata(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON block of a report file's header (version 2: RAPPOR's parameters and
    epsilons, ``deniable.oracles._rappor_files``), or ``None`` (version 1)."""
    name = os.fspath(path)
    with open(name, "rb") as fh:
        return _header(fh, name)[5]


@overload
def tally_file(
    oracle: SFP, path: str | os.PathLike[str], *, batch: int = ...,
    progress: Progress | None = ...,
) -> SFPTally: ...  # fmt: skip


@overload
def tally_file(
    oracle: Any, path: str | os.PathLike[str], *, batch: int = ...,
    progress: Progress | None = ...,
) -> Tally: ...  # fmt: skip


def tally_file(
    oracle: Any,
    path: str | os.PathLike[str],
    *,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> Tally | SFPTally:
    """The tally of a report file of ``oracle`` (SFP's: an
    :class:`~deniable.oracles.SFPTally`), read ``batch`` reports at a time, or
    ``BATCH_BYTES`` (128 MB) of them if fewer (memory: O(k) for the tally plus one
    batch); ``progress(done, total)`` is called after each batch.  Refuses a file of
    another oracle (naming both keys), a malformed header and a truncated or overlong file,
    before counting anything."""
    size = v.integer("batch", batch, minimum=1)
    name = os.fspath(path)
    if isinstance(oracle, PEM | TreeHist | RapporNgram):
        reader = "read_ngram_file" if isinstance(oracle, RapporNgram) else "read_heavy_file"
        raise ParameterTypeError(
            f"`oracle` {type(oracle).__name__} has no tally (its estimate needs every "
            f"report): read its file with {reader}."
        )
    dtype, width, rows = _record(oracle)
    with open(name, "rb") as fh:
        rappor = oracle if isinstance(oracle, Rappor) else None
        n = check_file(fh, name, oracle.key, dtype, width, rappor=rappor)
        size = min(size, max(1, BATCH_BYTES // (width * dtype.itemsize)))  # 128 MB at most
        total: Tally | SFPTally | None = None
        records: Callable[[Any, npt.NDArray[Any]], Any] | None = None
        if rappor is not None:
            records = rappor_from_records
        elif isinstance(oracle, CMS):
            records = sketch_from_records
        elif isinstance(oracle, LevelSampled):
            records = range_from_records
        elif isinstance(oracle, SFP):
            records = sfp_from_records
        for done, chunk in read_batches(fh, name, n, dtype, width, size):
            reports = chunk if rows else chunk.reshape(-1)
            if records is not None:  # a bad record or report refused naming the file
                first = done - reports.shape[0]
                part = _record_reports(_tally_of(records), oracle, reports, name, first)
            else:
                part = oracle.tally(reports.astype(dtype.newbyteorder("="), copy=False))
            total = part if total is None else total + part
            if progress is not None:
                progress(done, n)
    if total is None:
        empty = np.empty((0, width) if rows else 0, dtype=dtype)
        if isinstance(oracle, SFP):
            return oracle.tally(sfp_from_records(oracle, empty))
        if isinstance(oracle, CMS):
            return oracle.tally(sketch_from_records(oracle, empty))
        if isinstance(oracle, LevelSampled):
            return oracle.tally(range_from_records(oracle, empty))
        total = oracle.tally(rappor_from_records(rappor, empty) if rappor else empty)
    return total


def _tally_of(
    from_records: Callable[[Any, npt.NDArray[Any]], Any],
) -> Callable[[Any, npt.NDArray[Any]], Tally]:
    """The tally of the reports ``from_records`` makes of record rows."""
    return lambda mechanism, rows: mechanism.tally(from_records(mechanism, rows))


def _record_reports(
    from_records: Callable[[Any, npt.NDArray[Any]], Any], mechanism: Any,
    rows: npt.NDArray[Any], path: str, done: int,
) -> Any:  # fmt: skip
    """What ``from_records`` makes of record rows (CMS's, RAPPOR's or a range mechanism's
    reports, or their tally); a bad row is refused naming the file and the rows."""
    try:
        return from_records(mechanism, rows)
    except DeniableError as exc:
        raise DataError(
            f"report file {path!r}, reports {done}..{done + rows.shape[0] - 1}: {exc}"
        ) from None


def tally_batches(
    oracle: Any, batches: Iterable[npt.ArrayLike], *, progress: Progress | None = None
) -> Tally:
    """The sum of the tallies of ``batches`` of reports (any iterable of report arrays, a
    generator reading a file for instance): memory O(k) plus one batch.
    ``progress(done, -1)`` is called after each batch with the reports counted so far."""
    total: Tally | None = None
    done = 0
    for reports in batches:
        arr = np.asarray(reports)
        part = oracle.tally(arr)
        total = part if total is None else total + part
        done += int(arr.shape[0]) if arr.ndim else 1
        if progress is not None:
            progress(done, -1)
    if total is None:
        raise DataError("`batches` must hold at least one batch of reports, got none.")
    return total
