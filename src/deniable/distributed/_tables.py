"""Report tables: an oracle's reports as Parquet or CSV columns.

A report of ``w`` items (one for a numbered report such as k-ary RR or Hadamard
response, ``ceil(k / 8)`` bytes for a packed bit vector, three 64-bit words for a hashed
report) is one row: column ``report`` when ``w = 1``, else ``report_0 .. report_{w-1}``,
each of the oracle's item type (``uint8`` ... ``uint64``).  A Parquet table also carries
the oracle's key in its schema metadata (:data:`KEY_METADATA`), so it names its oracle as
a report file does; a CSV table does not, and is read with the oracle given.

RAPPOR's reports (:class:`~deniable.oracles.RapporReports`) are rows of a ``cohort``
column (``uint16``: cohorts are at most 65,536) then its ``m`` bits packed into ``m / 8``
bytes, ``report_0 .. report_{m/8-1}`` (``uint8``, bit ``i`` at bit ``i % 8`` of
``report_{i // 8}``), as its report file packs them (``deniable.oracles._rappor_files``).
A CMS report (:class:`~deniable.oracles.SketchReports`) is likewise a ``row`` column
(``uint16``: at most 65,536 rows) then its ``m`` bits packed into ``ceil(m / 8)`` bytes; an
HCMS report one ``int64`` column ``report`` (``deniable.oracles._sketch_files``).  A
heavy-hitter report (:class:`~deniable.oracles.PEM`, :class:`~deniable.oracles.TreeHist`)
is a ``group`` column (``uint16``: the device's group, which round reads it) then its
``l W + 1`` words ``report_0 .. report_{l W}`` (``uint64``: the rows of its hash, then its
bucket; ``deniable.oracles._heavy_files``).  A report of a range mechanism
(:class:`~deniable.oracles.HierarchicalHistogram`, :class:`~deniable.oracles.HaarHRR`) is a
``level`` column (``uint16``) then its level oracle's report, padded with zeros to the widest
level's ``W`` items: ``report`` when ``W = 1``, else ``report_0 .. report_{W-1}``, of the
level reports' item type (``deniable.oracles._range_files``); a Square Wave report is its
cell, one ``uint16`` column ``report``.  An SFP or RAPPOR n-gram report
(:class:`~deniable.oracles.SFP`, :class:`~deniable.oracles.RapporNgram`) is its record's
items ``report_0 .. report_{w-1}`` as its report file lays them out (SFP with HCMS: the
position and two ``int64`` reports; SFP with CMS and the n-grams: bytes, ``uint8``;
``deniable.oracles._string_files``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import atomic_write
from deniable.common import validation as v
from deniable.distributed._range_tables import (
    LEVEL_COLUMN,
    range_from_columns,
    range_layout,
    range_mechanism,
    range_to_columns,
    square_wave,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = [
    "CSV_SUFFIXES",
    "KEY_METADATA",
    "TABLE_FORMATS",
    "column_dtypes",
    "from_columns",
    "report_columns",
    "table_format",
    "to_columns",
    "two_dimensional",
    "write_report_table",
]

#: The schema-metadata field of a Parquet report table that holds the oracle's key.
KEY_METADATA = b"deniable.mechanism"
#: The table formats, by name.
TABLE_FORMATS = ("parquet", "csv")
#: The suffixes of CSV report tables: plain, or compressed (read as one stream per file).
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zst")
#: pyarrow's codec of each compressed CSV suffix (written and read with it).
CSV_CODECS = {".csv.gz": "gzip", ".csv.bz2": "bz2", ".csv.zst": "zstd"}
#: Rows in one Parquet row group / one CSV write by default.
ROW_GROUP = 1 << 20
#: The most bytes of reports one partition holds, whatever ``batch`` says.
BATCH_BYTES = 1 << 27

Progress = Callable[[int, int], object]


#: The column of a RAPPOR report's cohort, and its type.
COHORT_COLUMN = "cohort"
_COHORT = np.dtype(np.uint16)


def _rappor(oracle: Any) -> Any:
    """``oracle`` if it is RAPPOR (reports of a cohort and packed bits), else None."""
    from deniable.oracles import Rappor

    return oracle if isinstance(oracle, Rappor) else None


#: The column of a CMS report's row (its type: that of RAPPOR's cohort).
ROW_COLUMN = "row"


def _sketch(oracle: Any) -> Any:
    """``oracle`` if it is a count mean sketch (reports of strings), else None."""
    from deniable.oracles import CountMeanSketch

    return oracle if isinstance(oracle, CountMeanSketch) else None


def _cms(oracle: Any) -> Any:
    """``oracle`` if it is a CMS (reports of a row and packed bits), else None."""
    from deniable.oracles import CMS

    return oracle if isinstance(oracle, CMS) else None


#: The column of a heavy-hitter report's group (its type: that of RAPPOR's cohort).
GROUP_COLUMN = "group"


def _heavy(oracle: Any) -> Any:
    """The heavy-hitter protocol of ``oracle`` (itself, or the protocol a round of its
    estimate counts for: ``distributed._heavy``), else None."""
    from deniable.oracles import PEM, TreeHist

    inner = getattr(oracle, "protocol", oracle)
    return inner if isinstance(inner, PEM | TreeHist) else None


def _strings(oracle: Any) -> Any:
    """The SFP or RAPPOR n-gram protocol of ``oracle`` (itself, or the protocol a step of
    its aggregation tallies for: ``distributed._strings``), else None."""
    from deniable.oracles import SFP, RapporNgram

    inner = getattr(oracle, "protocol", oracle)
    return inner if isinstance(inner, SFP | RapporNgram) else None


def _string_records(protocol: Any) -> Any:
    """``(records, from_records)`` of an SFP or RAPPOR n-gram protocol."""
    from deniable.oracles import (
        SFP,
        ngram_from_records,
        ngram_records,
        sfp_from_records,
        sfp_records,
    )

    if isinstance(protocol, SFP):
        return sfp_records, sfp_from_records
    return ngram_records, ngram_from_records


def record(oracle: Any) -> tuple[np.dtype[Any], int]:
    """The dtype of one report item (native order) and the items per report of ``oracle``
    (RAPPOR: its ``2 + m / 8`` bytes, the cohort's two then the bits'; CMS: ``2 + ceil(m /
    8)`` bytes, the row's two then the bits'; HCMS: one ``int64``)."""
    rappor = _rappor(oracle)
    if rappor is not None:
        return np.dtype(np.uint8), _COHORT.itemsize + int(rappor.width)
    if _cms(oracle) is not None:
        return np.dtype(np.uint8), _COHORT.itemsize + int(oracle.width)
    heavy = _heavy(oracle)
    if heavy is not None:  # the group, then the report's words
        return np.dtype(np.uint64), 1 + heavy.oracle(heavy.levels[0]).report_width
    strings = _strings(oracle)
    if strings is not None:  # the record's items (oracles._string_files)
        from deniable.oracles import string_record

        dtype, width = string_record(strings)
        return dtype.newbyteorder("="), width
    if _sketch(oracle) is not None:  # HCMS: strings in, so no report of the value 0
        return np.dtype(np.int64), 1
    if range_mechanism(oracle) is not None:  # the level (one item), then W items
        dtype, _, width = range_layout(oracle)
        return dtype, 1 + width
    if square_wave(oracle) is not None:
        return np.dtype(np.uint16), 1
    if not hasattr(oracle, "randomize") or not hasattr(oracle, "tally"):
        raise ParameterTypeError(
            f"`mechanism` must be a frequency oracle (randomize and tally), got "
            f"{type(oracle).__name__}."
        )
    sample = np.asarray(oracle.randomize(np.zeros(1, dtype=np.int64), rng=0))
    width = int(np.prod(sample.shape[1:], dtype=np.int64)) if sample.ndim > 1 else 1
    return sample.dtype.newbyteorder("="), width


def two_dimensional(oracle: Any) -> bool:
    """Whether ``oracle``'s reports are rows of a 2-D array (a unary oracle's packed bits
    are, even when one byte holds them: k <= 8), so a one-column table is read back as
    ``(m, 1)``, not ``(m,)``."""
    if _rappor(oracle) is not None or _cms(oracle) is not None or _heavy(oracle) is not None:
        return True
    if range_mechanism(oracle) is not None or _strings(oracle) is not None:
        return True
    if _sketch(oracle) is not None or square_wave(oracle) is not None:
        return False
    return bool(np.asarray(oracle.randomize(np.zeros(1, dtype=np.int64), rng=0)).ndim > 1)


def report_columns(oracle: Any) -> tuple[str, ...]:
    """The column names of ``oracle``'s reports in a report table: ``("report",)`` for a
    report of one item, else ``report_0 .. report_{w-1}``.

    >>> from deniable.oracles import OLH, GRR
    >>> report_columns(OLH.from_epsilon(1.0, k=1024))
    ('report_0', 'report_1', 'report_2')
    >>> report_columns(GRR.from_epsilon(1.0, k=16))
    ('report',)
    >>> from deniable.oracles import Rappor
    >>> report_columns(Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.5, q=0.75))
    ('cohort', 'report_0', 'report_1')
    """
    rappor = _rappor(oracle)
    if rappor is not None:
        return (COHORT_COLUMN, *(f"report_{i}" for i in range(int(rappor.width))))
    if _cms(oracle) is not None:
        return (ROW_COLUMN, *(f"report_{i}" for i in range(int(oracle.width))))
    _, width = record(oracle)
    if _heavy(oracle) is not None:
        return (GROUP_COLUMN, *(f"report_{i}" for i in range(width - 1)))
    if range_mechanism(oracle) is not None:
        items = ("report",) if width == 2 else tuple(f"report_{i}" for i in range(width - 1))
        return (LEVEL_COLUMN, *items)
    return ("report",) if width == 1 else tuple(f"report_{i}" for i in range(width))


def column_dtypes(oracle: Any) -> tuple[np.dtype[Any], ...]:
    """The type of each column of :func:`report_columns` (RAPPOR: ``uint16`` for the
    cohort, ``uint8`` for each byte of bits; every other oracle: its item type)."""
    dtype, width = record(oracle)
    if _rappor(oracle) is not None or _cms(oracle) is not None:
        return (_COHORT, *([dtype] * (width - _COHORT.itemsize)))
    if _heavy(oracle) is not None or range_mechanism(oracle) is not None:
        return (_COHORT, *([dtype] * (width - 1)))
    return (dtype,) * width


def to_columns(oracle: Any, reports: Any) -> list[npt.NDArray[Any]]:
    """The columns of a batch of ``oracle``'s reports (one array each, :func:`column_dtypes`),
    the reports checked first by the oracle (shape, type, range), naming ``reports``."""
    rappor = _rappor(oracle)
    if rappor is not None:
        rep = rappor._reports(reports)  # checks the cohorts and the bits' shape and type
        bits = np.asarray(rep.bits)
        return [rep.cohorts.astype(_COHORT), *(bits[:, i] for i in range(bits.shape[1]))]
    cms = _cms(oracle)
    if cms is not None:
        srep = cms._reports(reports)  # checks the rows and the bits' shape, type and padding
        bits = np.asarray(srep.bits)
        return [srep.rows.astype(_COHORT), *(bits[:, i] for i in range(bits.shape[1]))]
    heavy = _heavy(oracle)
    if heavy is not None:  # each group's reports checked by its oracle
        from deniable.oracles import heavy_from_records, heavy_records

        if isinstance(reports, np.ndarray):  # records [group, words ...] (a batch's)
            heavy_from_records(heavy, reports)
            rec = reports.astype(np.uint64, copy=False)
        else:
            rec = heavy_records(heavy, reports)
        return [rec[:, 0].astype(_COHORT), *(rec[:, i] for i in range(1, rec.shape[1]))]
    if range_mechanism(oracle) is not None:  # each level's reports checked by its oracle
        return range_to_columns(oracle, reports)
    strings = _strings(oracle)
    if strings is not None:  # checked by the protocol as its report file's records
        rec = _string_records(strings)[0](strings, reports)
        return [rec[:, i] for i in range(rec.shape[1])]
    arr = np.asarray(reports)
    check = getattr(oracle, "check_reports", None) or oracle.tally
    check(arr)  # shape, dtype and range, naming `reports`
    if arr.ndim == 0:
        raise DataError(f"`reports` must be an array of reports, got a scalar {arr!r}.")
    _, width = record(oracle)
    rows = arr.reshape(arr.shape[0], width)
    return [rows[:, i] for i in range(width)]


def from_columns(oracle: Any, columns: Sequence[npt.NDArray[Any]]) -> Any:
    """The batch of ``oracle``'s reports that the arrays of its columns hold (the reverse of
    :func:`to_columns`; the values already fit each column's type)."""
    rappor = _rappor(oracle)
    if rappor is not None:
        from deniable.oracles import RapporReports

        cohorts = np.asarray(columns[0]).astype(np.int64)
        if cohorts.size and int(cohorts.max()) >= rappor.cohorts:
            raise DataError(
                f"column {COHORT_COLUMN!r} must hold cohorts 0..{rappor.cohorts - 1} (cohorts = "
                f"{rappor.cohorts}), got {int(cohorts.max())}."
            )
        bits = np.empty((cohorts.size, len(columns) - 1), dtype=np.uint8)
        for i, col in enumerate(columns[1:]):
            bits[:, i] = col
        return RapporReports(cohorts, bits)
    cms = _cms(oracle)
    if cms is not None:
        from deniable.oracles import SketchReports

        rows = np.asarray(columns[0]).astype(np.int64)
        packed = np.empty((rows.size, len(columns) - 1), dtype=np.uint8)
        for i, col in enumerate(columns[1:]):
            packed[:, i] = col
        return cms._reports(SketchReports(rows, packed))  # rows past k, padding bits refused
    dtype, width = record(oracle)
    if (
        range_mechanism(oracle) is not None
    ):  # the records: each level's reports checked by its tally
        return range_from_columns(oracle, columns)
    if _strings(oracle) is not None:  # the records: checked where they are read
        rec = np.empty((np.asarray(columns[0]).size, width), dtype=dtype)
        for i, col in enumerate(columns):
            rec[:, i] = col
        return rec
    heavy = _heavy(oracle)
    if heavy is not None:  # the records: each group's reports are checked by its round
        rec = np.empty((np.asarray(columns[0]).size, width), dtype=np.uint64)
        for i, col in enumerate(columns):
            rec[:, i] = col
        groups = len(heavy.levels)
        if rec.shape[0] and int(rec[:, 0].max()) >= groups:
            raise DataError(
                f"column {GROUP_COLUMN!r} must hold groups 0..{groups - 1} ({groups} prefix "
                f"lengths), got {int(rec[:, 0].max())}."
            )
        return rec
    out = np.empty((np.asarray(columns[0]).size, width), dtype=dtype)
    for i, col in enumerate(columns):
        out[:, i] = col
    return out if width > 1 or two_dimensional(oracle) else out[:, 0]


def table_format(path: str | os.PathLike[str], format: str | None = None) -> str:
    """``format`` if given (``parquet`` or ``csv``), else the one the suffix of ``path``
    names (``.parquet``, ``.pq``, ``.csv``, or a compressed ``.csv.gz``, ``.csv.bz2`` or
    ``.csv.zst``).  A ``format`` that contradicts the suffix is an error naming both."""
    name = os.fspath(path).rstrip("/").lower()
    named = (
        "parquet" if name.endswith((".parquet", ".pq"))
        else "csv" if name.endswith(CSV_SUFFIXES) else None
    )  # fmt: skip
    if format is not None:
        if format not in TABLE_FORMATS:
            raise ParameterError(
                f"`format` must be one of {', '.join(TABLE_FORMATS)}, got {format!r}."
            )
        if named is not None and named != format:
            raise ParameterError(
                f"`format` {format!r} contradicts the path {os.fspath(path)!r}, whose suffix "
                f"names {named}."
            )
        return format
    if named is not None:
        return named
    raise ParameterError(
        f"`format` must be given (parquet or csv) when the path does not end in .parquet, "
        f".pq, .csv or a compressed .csv ({', '.join(CSV_SUFFIXES[1:])}), got path "
        f"{os.fspath(path)!r}."
    )


def write_report_table(
    path: str | os.PathLike[str],
    oracle: Any,
    n: int,
    batches: Iterable[npt.ArrayLike],
    *,
    format: str | None = None,
    row_group: int = ROW_GROUP,
    progress: Progress | None = None,
) -> Path:
    """Write ``n`` reports of ``oracle``, given in ``batches`` (any iterable of report
    arrays), to a Parquet or CSV report table (``format``, else by the suffix of ``path``),
    atomically (a temporary file renamed into place: never half-written).  A CSV table whose
    path ends in ``.csv.gz``, ``.csv.bz2`` or ``.csv.zst`` is compressed with that codec
    (as :func:`~deniable.distributed.aggregate` reads it back).

    Each batch is checked by the oracle first (shape, type, range); batches that do not hold
    exactly ``n`` reports in all raise :class:`~deniable.exceptions.DataError` and leave no
    file.  Parquet row groups hold at most ``row_group`` reports (the partitions
    :func:`~deniable.distributed.aggregate` tallies); ``progress(done, n)`` is called after
    each batch.  Memory: one batch.
    """
    import pyarrow as pa

    total = v.integer("n", n, minimum=0)
    size = v.integer("row_group", row_group, minimum=1)
    fmt = table_format(path, format)
    names = report_columns(oracle)
    schema = pa.schema(
        [
            pa.field(c, pa.from_numpy_dtype(t), nullable=False)
            for c, t in zip(names, column_dtypes(oracle), strict=True)
        ],
        metadata={KEY_METADATA: str(oracle.key).encode("utf-8")},
    )

    def table(cols: list[npt.NDArray[Any]], start: int, stop: int) -> Any:
        return pa.table([pa.array(c[start:stop]) for c in cols], schema=schema)

    lowered = os.fspath(path).lower()
    codec = next((c for suf, c in CSV_CODECS.items() if lowered.endswith(suf)), None)

    def write(tmp: Path) -> None:
        done = 0
        sink: Any = None
        if fmt == "parquet":
            import pyarrow.parquet as pq

            writer: Any = pq.ParquetWriter(tmp, schema)
        else:
            import pyarrow.csv as pcsv

            sink = pa.CompressedOutputStream(str(tmp), codec) if codec else None
            writer = pcsv.CSVWriter(tmp if sink is None else sink, schema)
        try:
            for reports in batches:
                cols = to_columns(oracle, reports)  # checked: shape, dtype and range
                m = int(cols[0].shape[0])
                if done + m > total:
                    raise DataError(f"`batches` hold more than the n = {total} reports promised.")
                for start in range(0, m, size):
                    piece = table(cols, start, start + size)
                    if fmt == "parquet":
                        writer.write_table(piece, row_group_size=size)
                    else:
                        writer.write_table(piece)
                done += m
                if progress is not None:
                    progress(done, total)
            if done != total:
                raise DataError(f"`batches` hold {done} reports, not the n = {total} promised.")
        finally:
            writer.close()
            if sink is not None:
                sink.close()

    return atomic_write(path, write)
