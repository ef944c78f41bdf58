"""Where report tables come from: the files a source names (fsspec), their format, the
oracle their keys name, their columns, and the ``dask`` extra they need.  Everything here
runs on the client, before any partition is counted (:mod:`._aggregate` builds and runs the
tasks)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from deniable.common import validation as v
from deniable.distributed._tables import KEY_METADATA, record, report_columns, table_format
from deniable.exceptions import DataError, DeniableError, ParameterError, ParameterTypeError

__all__ = ["checked_call", "require_dask", "resolve_mechanism", "table_mechanism"]


#: What the ``dask`` extra brings, imported by the functions that use them.
_EXTRA = ("dask", "distributed", "fsspec", "pyarrow")


def require_dask() -> None:
    """Import what report tables need (the ``dask`` extra), or one ``ImportError`` naming
    the extra to install."""
    import importlib

    for name in _EXTRA:
        try:
            importlib.import_module(name)
        except ImportError:
            raise ImportError(
                f"Parquet and CSV report tables need the [dask] extra ({name} is missing): "
                "pip install 'deniable[dask]'."
            ) from None


def resolve_mechanism(mechanism: Any) -> Any:
    """The oracle ``mechanism`` names: an oracle itself (or RAPPOR, a count mean sketch, a
    heavy-hitter protocol), its key (``olh{...}``, ``rappor{...}``, ``cms{...}``,
    ``pem{...}``, as a report file or a Parquet table carries it) or its device spec (a
    mapping or JSON text, read by :func:`deniable.oracles.mechanism_from_spec` by its
    schema: ``deniable.oracle/1``, RAPPOR's ``deniable.rappor-spec/1``, the sketches'
    ``deniable.cms-spec/1``, the range mechanisms' ``deniable.range-spec/1``, Square Wave's
    ``deniable.square-wave-spec/1``, PEM's and TreeHist's ``deniable.heavy-spec/1`` or k-ary
    randomized response's question spec ``deniable.question/1``)."""
    from deniable.oracles import (
        PEM,
        SFP,
        Rappor,
        RapporNgram,
        TreeHist,
        heavy_from_key,
        is_heavy_key,
        is_range_key,
        is_string_protocol_key,
        mechanism_from_spec,
        oracle_from_key,
        range_from_key,
        rappor_ngram_from_key,
        sfp_from_key,
        sketch_from_key,
    )

    if isinstance(mechanism, str) and mechanism.strip().startswith("{"):
        return mechanism_from_spec(mechanism.strip())  # by its schema: oracles.DEVICE_SPECS
    if isinstance(mechanism, Mapping):
        return mechanism_from_spec(mechanism)
    if isinstance(mechanism, str):
        key = mechanism.strip()
        if key.partition("{")[0] in ("cms", "hcms"):  # strings through a keyed hash
            return sketch_from_key(key)
        if is_heavy_key(key):  # heavy hitters: estimated round by round (_heavy)
            return heavy_from_key(key)
        if is_range_key(key):  # ranges and Square Wave: a level and its report; a cell
            return range_from_key(key)
        if is_string_protocol_key(key):  # SFP, RAPPOR n-grams: in steps (_strings)
            return sfp_from_key(key) if key.startswith("sfp{") else rappor_ngram_from_key(key)
        return oracle_from_key(key)
    if isinstance(mechanism, Rappor | PEM | TreeHist | SFP | RapporNgram) or (
        hasattr(mechanism, "randomize") and hasattr(mechanism, "tally")
    ):
        record(mechanism)
        return mechanism
    raise ParameterTypeError(
        "`mechanism` must be a frequency oracle, its key or its spec, got "
        f"{type(mechanism).__name__}."
    )


def _files(source: Any) -> tuple[Any, list[str]]:
    """``(filesystem, paths)`` of ``source``: each existing file it names (a directory
    stands for the files in it), sorted within each pattern."""
    import fsspec

    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    if not items:
        raise DataError("`source` must name at least one file, got an empty list.")
    fs: Any = None
    paths: list[str] = []
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise ParameterTypeError(
                f"`source` must be a path, a glob, a URL or a list of them, got "
                f"{type(item).__name__}."
            )
        name = os.fspath(item)
        try:
            ifs, _, found = fsspec.core.get_fs_token_paths(name)
        except (ValueError, ImportError, OSError) as exc:
            raise DataError(f"cannot read `source` {name!r}: {exc}") from None
        if fs is None:
            fs = ifs
        elif type(ifs) is not type(fs):
            raise DataError("`source` mixes file systems; give files of one file system.")
        pattern = any(ch in name for ch in "*?[")
        for path in sorted(found):
            if pattern and _hidden(path):  # a temporary file being written, say
                continue
            if fs.isdir(path):
                inner = sorted(p for p in fs.ls(path, detail=False) if fs.isfile(p))
                paths.extend(p for p in inner if not _hidden(p))
            elif fs.isfile(path):
                paths.append(path)
        if not paths:
            if found and all(fs.isdir(p) for p in found):
                raise DataError(f"`source` {name!r} is a directory with no report tables in it.")
            raise DataError(f"`source` {name!r} names no file (no such file, or no match).")
    return fs, paths


def _hidden(path: str) -> bool:
    return os.path.basename(path.rstrip("/")).startswith((".", "_"))


def _parquet_key(fs: Any, path: str) -> tuple[str | None, list[str], list[int]]:
    """``(oracle key or None, column names, rows of each row group)`` of a Parquet file."""
    import pyarrow.parquet as pq

    try:
        with fs.open(path, "rb") as fh:
            meta = pq.ParquetFile(fh).metadata
    except Exception as exc:  # pyarrow raises ArrowInvalid (a ValueError) and OSError
        raise DataError(
            f"{path!r} is not a readable Parquet file (truncated or malformed?): {exc}"
        ) from None
    schema = meta.schema.to_arrow_schema()
    raw = (schema.metadata or {}).get(KEY_METADATA)
    key = raw.decode("utf-8", errors="replace") if raw is not None else None
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    return key, list(schema.names), groups


def table_mechanism(path: str | os.PathLike[str]) -> str:
    """The key of the oracle whose reports the Parquet report table ``path`` (the first file
    a glob or directory names) holds, from its schema metadata."""
    fs, paths = _files(path)
    key, _, _ = _parquet_key(fs, paths[0])
    if key is None:
        raise DataError(
            f"{paths[0]!r} carries no oracle key (it was not written by deniable); give "
            "`mechanism`."
        )
    return key


#: pyarrow's codec of each compressed CSV suffix.
_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}


def _codec(path: str) -> str | None:
    """The compression codec a CSV path's suffix names, or None for a plain ``.csv``."""
    return next((c for suf, c in _CODECS.items() if path.lower().endswith(".csv" + suf)), None)


def _open_csv(fs: Any, path: str) -> Any:
    """A binary stream of the CSV text of ``path`` (decompressed as it is read)."""
    codec = _codec(path)
    raw = fs.open(path, "rb")
    if codec is None:
        return raw
    import pyarrow as pa

    return pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), codec)


def _csv_header(fs: Any, path: str) -> list[str]:
    try:
        with _open_csv(fs, path) as fh:
            line = bytes(fh.readline(1 << 16) if _codec(path) is None else _first_line(fh))
    except DeniableError:
        raise
    except Exception as exc:  # a corrupt compressed stream
        raise DataError(f"{path!r} cannot be read as a CSV file of reports: {exc}") from None
    try:
        text = line.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise DataError(
            f"{path!r} is not a CSV file of reports (its header is not UTF-8)."
        ) from None
    return [c.strip().strip('"') for c in text.split(",")] if text else []


def _columns(oracle: Any, columns: Sequence[str] | None) -> tuple[str, ...]:
    wanted = report_columns(oracle)
    if columns is None:
        return wanted
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise ParameterTypeError("`columns` must be a sequence of column names (str).")
    given = tuple(columns)
    if len(given) != len(wanted) or len(set(given)) != len(given):
        raise ParameterError(
            f"`columns` must name {len(wanted)} distinct columns (the items of one report of "
            f"{oracle.name}), got {len(given)}: {', '.join(given)}."
        )
    return given


def _first_line(stream: Any) -> bytes:
    """The first line of a (decompressing) pyarrow stream, at most 64 KiB."""
    got = b""
    while b"\n" not in got and len(got) < 1 << 16:
        chunk = stream.read(4096)
        if not chunk:
            break
        got += bytes(chunk)
    return got.split(b"\n", 1)[0]


def _check_has(path: str, names: Sequence[str], columns: Sequence[str], oracle: Any) -> None:
    missing = [c for c in columns if c not in names]
    if missing:
        raise DataError(
            f"{path!r} has no column {', '.join(missing)} (reports of {oracle.name} need "
            f"{', '.join(columns)}; it has {', '.join(names) or 'no columns'})."
        )


def _one_format(paths: Sequence[str], fmt: str | None) -> str:
    """The one table format of ``paths`` (``fmt`` if given, else each path's suffix): files
    of two formats are refused whatever their order, naming one of each."""
    if fmt is not None:
        return table_format(paths[0], fmt)
    kinds: dict[str, str] = {}
    for path in paths:
        kinds.setdefault(table_format(path), path)
    if len(kinds) > 1:
        (a, pa), (b, pb) = sorted(kinds.items())
        raise DataError(
            f"`source` mixes report tables of two formats ({a} {pa!r} and {b} {pb!r}); "
            "aggregate the tables of one format (and one oracle) at a time."
        )
    return next(iter(kinds))


def _table_oracle(source: Any, fmt: str | None) -> Any:
    """The oracle every Parquet file of ``source`` names: each must carry a key, and the
    same one, whatever the order of the files (a file without one, or of another oracle, is
    refused naming it)."""
    fs, paths = _files(source)
    if _one_format(paths, fmt) != "parquet":
        raise ParameterError(
            "`mechanism` must be given for CSV reports (a CSV table does not name its "
            "oracle), got None."
        )
    keys: dict[str, str] = {}
    for path in paths:
        key, _, _ = _parquet_key(fs, path)
        if key is None:
            raise DataError(
                f"{path!r} carries no oracle key (it was not written by deniable); give "
                "`mechanism` to read every file as that oracle's reports."
            )
        keys.setdefault(key, path)
    if len(keys) > 1:
        (ka, pa), (kb, pb) = sorted(keys.items())[:2]
        raise DataError(
            f"`source` holds reports of different oracles: {pa!r} of {ka} and {pb!r} of "
            f"{kb}; aggregate the tables of one oracle at a time."
        )
    return resolve_mechanism(next(iter(keys)))  # an oracle's, RAPPOR's or a sketch's key


def checked_call(
    source: Any, mechanism: Any, batch: int, format: str | None, local_workers: int
) -> tuple[int, int, Any]:
    """``(batch, local_workers, mechanism)`` of a call on report tables, checked: the
    mechanism given (an object, key or spec), or by default the one the tables carry."""
    size = v.integer("batch", batch, minimum=1)
    workers = v.integer("local_workers", local_workers, minimum=1, maximum=256)
    require_dask()
    found = _table_oracle(source, format) if mechanism is None else resolve_mechanism(mechanism)
    return size, workers, found
