"""Reading survey files in batches: CSV (also ``.csv.gz``, ``.csv.bz2``, ``.csv.xz``,
``.csv.zst``, ``.csv.zip``) through pyarrow's streaming CSV reader, Parquet row group by
row group; only the columns asked for, so memory is bounded by the batch size, not the file.

The file rules (docs/analysis.md, "Survey files"):

* **Header.**  A CSV file's first line is its header, the column names, unless
  ``header=False``: then there is no header and the columns are numbered ``1, 2, ...``.  The
  header is never guessed.  Two columns of the same name are an error naming it.
* **Blank lines** are rows whose every value is missing (in a one-column file: one missing
  report); line breaks inside quoted values are allowed.
* **Rows** in messages are *data rows*, numbered from 1 and not counting the header.
* Every cell of a report column is read as text and judged by :mod:`deniable.survey`
  (the same rules as for DataFrames); Parquet columns keep their types.
* A missing, unreadable or empty file, a directory, bytes that are not UTF-8 and malformed
  CSV or Parquet are one :class:`~deniable.exceptions.DataError` naming the file.

pyarrow (the ``[data]`` extra) is imported when a file is opened, not before.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
import os
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterError
from deniable.survey._tally import Labels
from deniable.survey._values import MISSING, ValueRule, is_missing

__all__ = [
    "CSV_SUFFIXES",
    "DEFAULT_BLOCK_SIZE",
    "PARQUET_SUFFIXES",
    "SurveyFile",
    "file_kind",
    "label_ids",
    "report_codes",
    "require_pyarrow",
]

#: File names read as CSV (plain or compressed); anything else must be Parquet.
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".csv.zip")
PARQUET_SUFFIXES = (".parquet", ".pq")
#: Bytes of CSV parsed per batch (pyarrow's default is 1 MiB too).
DEFAULT_BLOCK_SIZE = 1 << 20
#: Rows per Parquet batch.
PARQUET_BATCH_ROWS = 1 << 16

Progress = Callable[[int, int], None]


def require_pyarrow() -> Any:
    """Import pyarrow, or raise an ``ImportError`` that says how to install it."""
    try:
        import pyarrow
    except ModuleNotFoundError as exc:
        raise ImportError(
            "reading survey files needs pyarrow: pip install 'deniable[data]'"
        ) from exc
    return pyarrow


def file_kind(path: Path, *, any_suffix: bool = False) -> str:
    """``"csv"`` or ``"parquet"`` by the file's extension; with ``any_suffix`` an unknown
    extension (``.txt``) is plain CSV text instead of an error."""
    name = path.name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(CSV_SUFFIXES) or any_suffix:
        return "csv"
    raise ParameterError(
        f"`path` must end in {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)} (the format is chosen "
        f"by extension), got {str(path)!r}."
    )


def _text_stream(pa: Any, raw: Any, name: str, stack: ExitStack) -> Any:
    """The decompressed bytes of a CSV file (compression chosen by extension)."""
    if name.endswith(".gz"):
        return stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))
    if name.endswith(".bz2"):
        return stack.enter_context(bz2.BZ2File(raw, mode="rb"))
    if name.endswith(".xz"):
        return stack.enter_context(lzma.LZMAFile(raw, mode="rb"))
    if name.endswith(".zst"):
        return pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd")
    if name.endswith(".zip"):
        archive = stack.enter_context(zipfile.ZipFile(raw))
        members = [m for m in archive.namelist() if not m.endswith("/")]
        if len(members) != 1:
            raise DataError(
                f"a .zip survey file must hold exactly one file, got {len(members)} "
                f"in {str(getattr(raw, 'name', '?'))!r}."
            )
        return stack.enter_context(archive.open(members[0]))
    return raw


class _Prefixed:
    """``prefix`` (bytes already read, put back) then the rest of ``stream``."""

    def __init__(self, prefix: bytes, stream: Any) -> None:
        self.prefix = prefix
        self.stream = stream
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        if self.prefix:
            if size < 0:
                out, self.prefix = self.prefix + self.stream.read(), b""
                return bytes(out)
            out, self.prefix = self.prefix[:size], self.prefix[size:]
            if len(out) < size:  # no short read at the seam
                out += self.stream.read(size - len(out))
            return bytes(out)
        return bytes(self.stream.read(size))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


_PYARROW_ERRORS = ("pyarrow",)


class SurveyFile:
    """An open survey file: its column names (:attr:`names`) and its batches
    (:meth:`batches`).  A context manager; every problem is a :class:`DataError` naming the
    file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        header: bool = True,
        any_suffix: bool = False,
        block_size: int | None = None,
        progress: Progress | None = None,
        what: str = "reports file",
    ) -> None:
        self.path = Path(path)
        self.kind = file_kind(self.path, any_suffix=any_suffix)
        self.header = header
        self.block_size = int(block_size or DEFAULT_BLOCK_SIZE)
        self.progress = progress
        self.label = f"{what} {str(self.path)!r}"
        self.rows = 0
        self._bad_row_text: str | None = None
        self._pa = require_pyarrow()
        self._stack = ExitStack()
        try:
            self._open()
        except BaseException:
            self._stack.close()
            raise

    def __enter__(self) -> SurveyFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _fail(self, reason: str) -> DataError:
        return DataError(f"cannot read {self.label}: {reason}.")

    def _invalid(self, exc: BaseException) -> DataError:
        if self._bad_row_text is not None:
            text = self._bad_row_text
        else:
            text = " ".join(str(exc).split()) or type(exc).__name__
            if "UTF8" in text or isinstance(exc, UnicodeDecodeError):
                return self._fail("it is not UTF-8 text")
        return DataError(f"{self.label} is not a readable {self.kind} file: {text.rstrip('.')}.")

    def _guarded(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except DataError:
            raise
        except (EOFError, zipfile.BadZipFile, lzma.LZMAError, UnicodeDecodeError) as exc:
            raise self._invalid(exc) from exc
        except OSError as exc:
            if type(exc).__module__.startswith(_PYARROW_ERRORS) or isinstance(
                exc, gzip.BadGzipFile
            ):
                raise self._invalid(exc) from exc
            raise self._fail(exc.strerror or str(exc)) from exc
        except Exception as exc:
            if type(exc).__module__.startswith(_PYARROW_ERRORS):
                raise self._invalid(exc) from exc
            raise

    # ----------------------------------------------------------------- opening

    def _open(self) -> None:
        if self.path.is_dir():
            raise self._fail("it is a directory")
        try:
            raw = self._stack.enter_context(open(self.path, "rb"))  # noqa: SIM115
            self.size = os.fstat(raw.fileno()).st_size
        except OSError as exc:
            raise self._fail(exc.strerror or str(exc)) from exc
        if self.size == 0:
            raise DataError(f"{self.label} is not a readable {self.kind} file: it is empty.")
        self._raw = raw
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            self._pq = self._guarded(lambda: pq.ParquetFile(raw))
            self.names = list(self._pq.schema_arrow.names)
            self.total_rows = int(self._pq.metadata.num_rows)
        else:
            self._stream = self._guarded(
                lambda: _text_stream(self._pa, raw, self.path.name.lower(), self._stack)
            )
            self.names = self._guarded(self._read_header)
        dupes = [n for i, n in enumerate(self.names) if n in self.names[:i]]
        if dupes:
            raise self._fail(
                f"the header names column {dupes[0]!r} more than once (column names must be unique)"
            )

    def _read_header(self) -> list[str]:
        """The column names from the first line (``1, 2, ...`` without a header); the bytes
        read are put back for the CSV reader."""
        first = b""
        while b"\n" not in first:
            chunk = self._stream.read(1 << 16)
            if not chunk:
                break
            first += chunk
        self._prefix = first
        if not first:
            raise self._fail("it is empty")
        line = first.split(b"\n", 1)[0].rstrip(b"\r")
        if line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        text = line.decode("utf-8")
        cells = next(csv.reader([text]), [])
        if not cells:
            if self.header:
                raise self._fail("its first line, the header, is blank")
            cells = [""]
        return [str(i + 1) for i in range(len(cells))] if not self.header else cells

    def check_columns(self, wanted: Sequence[tuple[str, Any]]) -> None:
        """A :class:`DataError` for a column (``(parameter, name)``) that is not in the file."""
        for what, name in wanted:
            if name not in self.names:
                cols = [repr(c) for c in self.names]
                if len(cols) > 30:
                    cols = [*cols[:30], f"... ({len(cols) - 30} more)"]
                where = "header" if self.kind == "csv" and self.header else "columns"
                raise DataError(
                    f"`{what}` must be one of the {where} of {self.label} "
                    f"({', '.join(cols) or 'none'}), got {name!r}."
                )

    # ----------------------------------------------------------------- reading

    def _bad_row(self, row: Any) -> str:
        where = "" if row.number is None else f" at data row {row.number - int(self.header)}"
        self._bad_row_text = (
            f"a row has {row.actual_columns} value(s) where the header has "
            f"{row.expected_columns}{where}: {row.text[:60]!r}"
        )
        return "error"

    def batches(self, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(first data row, 0-based; {column: pyarrow array})`` for each batch."""
        cols = list(dict.fromkeys(columns))
        reader = iter(self._guarded(lambda: self._record_batches(cols)))
        start = 0
        while True:
            batch = self._guarded(lambda: next(reader, None))
            if batch is None:
                break
            yield start, {c: batch.column(c) for c in cols}
            start += batch.num_rows
            self.rows = start
            if self.progress is not None:
                self.progress(self._done(start), self.size)
        if self.progress is not None:
            self.progress(self.size, self.size)

    def _done(self, rows: int) -> int:
        if self.kind == "parquet":
            return int(self.size * rows / max(self.total_rows, 1))
        try:
            return min(int(self._raw.tell()), self.size)
        except (OSError, ValueError):
            return 0

    def _record_batches(self, cols: list[str]) -> Any:
        pa = self._pa
        if self.kind == "parquet":
            return self._pq.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=cols)
        import pyarrow.csv as pcsv

        text = pa.dictionary(pa.int32(), pa.string())
        return pcsv.open_csv(
            _Prefixed(self._prefix, self._stream),
            read_options=pcsv.ReadOptions(
                block_size=self.block_size,
                use_threads=False,
                column_names=None if self.header else list(self.names),
            ),
            parse_options=pcsv.ParseOptions(
                newlines_in_values=True,
                ignore_empty_lines=False,
                invalid_row_handler=self._bad_row,
            ),
            convert_options=pcsv.ConvertOptions(
                include_columns=cols,
                column_types={c: text for c in cols},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )


# --------------------------------------------------------------------------- cells


def _dictionary(pa: Any, arr: Any) -> tuple[list[Any], npt.NDArray[np.int64]]:
    """``(distinct values, index of each entry)``; a null entry gets index ``len(values)``."""
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    uniques = arr.dictionary.to_pylist()
    idx = arr.indices
    if idx.null_count:
        idx = pc.fill_null(idx, len(uniques))
    return uniques, np.asarray(idx.to_numpy(zero_copy_only=False), dtype=np.int64)


def report_codes(arr: Any, rule: ValueRule, cache: dict[Any, int]) -> npt.NDArray[np.int32]:
    """The codes of a pyarrow array under ``rule`` (text judged once per distinct value)."""
    pa = require_pyarrow()
    t = arr.type
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
    if numeric and not pa.types.is_dictionary(t):
        isna = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        values = arr.fill_null(False if pa.types.is_boolean(t) else 0)
        return rule.numbers(values.to_numpy(zero_copy_only=False), isna)
    uniques, idx = _dictionary(pa, arr)
    lut = np.append(rule.lookup(uniques, cache), MISSING).astype(np.int32)
    out: npt.NDArray[np.int32] = lut[idx]
    return out


def label_ids(arr: Any, labels: Labels, *, text: bool) -> npt.NDArray[np.int64]:
    """Subgroup label ids (0: missing) of a pyarrow array; text labels are stripped."""
    pa = require_pyarrow()
    uniques, idx = _dictionary(pa, arr)
    if text:
        uniques = [u.strip() if isinstance(u, str) else u for u in uniques]
    lut = np.append(labels.lookup(uniques, is_missing), 0)
    return np.asarray(lut[idx], dtype=np.int64)
