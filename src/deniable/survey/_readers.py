"""Survey files in and out of DataFrames (CSV, Parquet; the format is chosen by extension),
and :func:`require_pandas`, the import of pandas (the ``[data]`` extra) done only when called.

Reading follows the file rules of :mod:`deniable.survey` (a header row, unique column
names, blank lines are rows of missing values); columns named in ``reports`` are judged by
the value rules of :mod:`deniable.survey`, as every other reader does.  Writing is
atomic (:func:`deniable.common.atomic_write`).  Re-exported by :mod:`deniable.survey`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deniable.common import atomic_write
from deniable.exceptions import DataError, ParameterTypeError
from deniable.survey._files import SurveyFile, file_kind, require_pyarrow
from deniable.survey._questions import FrameCells
from deniable.survey._tally import ColumnLog
from deniable.survey._values import MISSING, ValueRule

__all__ = ["check_frame", "read_frame", "read_reports", "require_pandas", "write_reports"]


def require_pandas() -> Any:
    """Import pandas, or raise an ``ImportError`` that says how to install it."""
    try:
        import pandas as pd
    except ModuleNotFoundError as exc:
        raise ImportError("this feature needs pandas: pip install 'deniable[data]'") from exc
    return pd


def check_frame(df: Any) -> Any:
    """pandas, after checking that ``df`` is a DataFrame."""
    pd = require_pandas()
    if not isinstance(df, pd.DataFrame):
        raise ParameterTypeError(f"`df` must be a pandas DataFrame, got {type(df).__name__}.")
    return pd


def read_reports(path: str | os.PathLike[str], *, columns: Sequence[str] | None = None) -> Any:
    """Read a survey file into a DataFrame: CSV (``.csv``, optionally compressed ``.csv.gz``
    ...) with a header row, or Parquet (``.parquet``, ``.pq``), chosen by extension;
    ``columns`` reads only those.

    Two columns of the same name are an error; a blank line is a row of missing values.
    Raises :class:`~deniable.exceptions.ParameterError` for another extension and
    :class:`~deniable.exceptions.DataError` for a file that cannot be read or parsed (the
    message names the file and the reason).  For large files prefer
    :func:`~deniable.survey.analyze_file`, which reads in batches.
    """
    frame = read_frame(path, columns=columns)
    absent = [c for c in columns or () if c not in frame.columns]
    if absent:
        raise DataError(
            f"`columns` must be columns of {str(path)!r} ({', '.join(map(repr, frame.columns))})"
            f", got {absent[0]!r}."
        )
    return frame


def read_frame(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str] | None = None,
    reports: Mapping[str, str] | None = None,
    what: str = "reports file",
) -> Any:
    """The columns of a report file as a DataFrame, read as by :func:`read_reports`;
    each column of ``reports`` (``{column: what it is}``, e.g. ``{"y": "the outcome"}``) is
    checked by the 0/1 report rules and returned as floats (0.0, 1.0, NaN for missing).  A
    bad value raises a :class:`~deniable.exceptions.DataError` naming the column, the first
    offending value, its data row and how many there are.  ``columns`` not in the file are
    left for the caller to report; ``what`` names the file in messages."""
    pd = require_pandas()
    p = Path(path)
    kind = file_kind(p)
    reports = dict(reports or {})
    with SurveyFile(p, what=what) as f:  # the checks every reader makes: file, header, dupes
        names = list(f.names)
    asked = list(dict.fromkeys([*(names if columns is None else columns), *reports]))
    # a column the file lacks: read them all, so the caller's error can list them
    wanted = asked if all(c in names for c in asked) else names
    label = f"{what} {str(p)!r}"
    try:
        if kind == "csv":
            frame = pd.read_csv(p, usecols=wanted, skip_blank_lines=False, encoding="utf-8")
            frame = frame[wanted]
        else:
            require_pyarrow()
            frame = pd.read_parquet(p, columns=wanted)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"{label} is not a readable {kind} file: {reason.rstrip('.')}.") from exc
    rule = ValueRule(0, 1, True, "0/1 values (or True/False)")
    for name, role in reports.items():
        if name not in frame.columns:
            continue
        cells = FrameCells(frame[name])
        log = ColumnLog(name, "column", rule, lambda r: f"data row {r} of {label}")
        log.subject = f"{role} {name!r}"
        codes = cells.codes(rule, {})
        log.add(codes, lambda i: i + 1, cells.value)
        if log.n_bad:
            raise log.bad_error()
        values = codes.astype(np.float64)
        values[codes == MISSING] = np.nan
        frame[name] = values
    return frame


def write_reports(df: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``df`` as CSV or Parquet (by extension, as :func:`read_reports` reads it back).

    The file is written to a temporary file beside ``path`` and renamed into place, so a
    failure leaves the old file (if any) untouched and no partial file behind.
    """
    check_frame(df)
    p = Path(path)
    if file_kind(p) == "csv":
        compression = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zip": "zip"}
        how = compression.get(p.suffix.lower())
        if how == "zstd":  # through pyarrow's codec: pandas would need the zstandard package
            pa = require_pyarrow()

            def write(tmp: Path) -> None:
                with pa.CompressedOutputStream(str(tmp), "zstd") as out:
                    df.to_csv(out, index=False, mode="wb")

            atomic_write(p, write)
        else:
            atomic_write(p, lambda tmp: df.to_csv(tmp, index=False, compression=how))
    else:
        require_pyarrow()
        atomic_write(p, lambda tmp: df.to_parquet(tmp, index=False))
    return p
