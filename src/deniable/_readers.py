"""Survey files in and out (CSV, Parquet; the format is chosen by extension), and
:func:`require_pandas`, the import of pandas (the ``[data]`` extra) done only when called.

Re-exported by :mod:`deniable.analysis`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = ["check_frame", "read_reports", "require_pandas", "write_reports"]

_CSV = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".csv.zip")
_PARQUET = (".parquet", ".pq")


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


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(_CSV):
        return "csv"
    if name.endswith(_PARQUET):
        return "parquet"
    raise ParameterError(
        f"`path` must end in {', '.join(_CSV + _PARQUET)} (the format is chosen by "
        f"extension), got {str(path)!r}."
    )


def _parquet_engine() -> None:
    try:
        import pyarrow  # noqa: F401
    except ModuleNotFoundError as exc:
        raise ImportError("Parquet needs pyarrow: pip install 'deniable[data]'") from exc


def read_reports(path: str | Path) -> Any:
    """Read a survey file into a DataFrame: CSV (``.csv``, optionally compressed ``.csv.gz``
    ...) or Parquet (``.parquet``, ``.pq``), chosen by extension.

    Raises :class:`~deniable.exceptions.ParameterError` for another extension and
    :class:`~deniable.exceptions.DataError` for a file that cannot be read or parsed
    (the message names the file and the reason).
    """
    pd = require_pandas()
    p = Path(path)
    kind = _kind(p)
    if kind == "parquet":
        _parquet_engine()
    try:
        if kind == "csv":
            return pd.read_csv(p)
        return pd.read_parquet(p)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError):
            raise DataError(f"cannot read reports file {str(p)!r}: {exc.strerror or exc}.") from exc
        raise DataError(f"reports file {str(p)!r} is not valid {kind}: {exc}.") from exc
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"reports file {str(p)!r} is not valid {kind}: {reason}.") from exc


def write_reports(df: Any, path: str | Path) -> Path:
    """Write ``df`` as CSV or Parquet (by extension, as :func:`read_reports` reads it back)."""
    check_frame(df)
    p = Path(path)
    kind = _kind(p)
    try:
        if kind == "csv":
            df.to_csv(p, index=False)
        else:
            _parquet_engine()
            df.to_parquet(p, index=False)
    except OSError as exc:
        raise DataError(f"cannot write {str(p)!r}: {exc.strerror or exc}.") from exc
    return p
