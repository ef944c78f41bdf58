"""Telemetry streams on disk: report batches appended to Parquet, partitioned by stream and
day, written so that an acknowledged batch is durable and a reader never sees part of one.

Layout under a root directory (any local file system)::

    <root>/stream=<id>/_stream.json                    the stream's spec, written once
    <root>/stream=<id>/day=YYYY-MM-DD/part-<t>-<r>.parquet   one file per appended batch

:func:`append_batch` decodes and checks a body (:func:`~deniable.distributed.decode_batch`),
writes its reports to a temporary file in the day's directory (a hidden name, which readers
skip), flushes and fsyncs it, links it to a new name (never over an existing file), removes
the temporary name and fsyncs the directory (and each directory it created), then returns a
:class:`StoredBatch`: when it returns, the batch is durable.  A process killed at any point
leaves either the whole file or no visible file; a leftover temporary file is ignored by
readers and removed by :func:`~deniable.distributed.clean_stream`.

Each partition file is a report table (:func:`~deniable.distributed.write_report_table`'s
columns and oracle key), so :func:`~deniable.distributed.aggregate_stream` (or
:func:`~deniable.distributed.aggregate` given :func:`~deniable.distributed.stream_files`)
tallies a stream's days in process or on a Dask cluster.  The stream's oracle is stored
beside its partitions (``_stream.json``: schema ``deniable.stream/1``, the stream id and the
oracle's key) the first time a batch is appended, and checked on every append and read:
another oracle, or the same oracle with another ``k`` or epsilon, is refused, never mixed
into the stream.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import atomic_write, load_json, validation
from deniable.distributed._batch import decode_batch
from deniable.distributed._sources import resolve_mechanism
from deniable.distributed._tables import (
    KEY_METADATA,
    column_dtypes,
    record,
    report_columns,
    to_columns,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = [
    "STREAM_SPEC_FILE",
    "STREAM_SPEC_SCHEMA",
    "StoredBatch",
    "append_batch",
    "append_batches",
    "append_reports",
]

#: The schema of the spec file stored beside a stream's partitions.
STREAM_SPEC_SCHEMA = "deniable.stream/1"
#: The name of that file in ``<root>/stream=<id>/``.
STREAM_SPEC_FILE = "_stream.json"
#: A stream id: letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_DAY = re.compile(r"day=(\d{4}-\d{2}-\d{2})")


@dataclass(frozen=True)
class StoredBatch:
    """What :func:`append_batch` stored: ``reports`` reports of the oracle ``key`` in the
    new Parquet file ``path``, the partition of ``stream`` and ``day`` (durable)."""

    stream: str
    day: dt.date
    path: Path
    reports: int
    key: str


def _stream_id(stream: Any) -> str:
    if not isinstance(stream, str):
        raise ParameterTypeError(f"`stream` must be a string, got {type(stream).__name__}.")
    if not _ID.fullmatch(stream):
        raise ParameterError(
            "`stream` must be 1 to 128 letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit, got {stream!r}."
        )
    return stream


def _day(day: Any, name: str = "day") -> dt.date:
    return validation.day(name, day)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents, each new directory made durable (its
    parent fsynced)."""
    missing = []
    p = path
    while not p.is_dir():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            if not d.is_dir():
                raise DataError(
                    f"cannot create the directory {str(d)!r}: a file is there."
                ) from None
        except OSError as exc:
            raise DataError(
                f"cannot create the directory {str(d)!r}: {exc.strerror or exc}."
            ) from None
        _fsync_dir(d.parent)


def _spec_path(root: Path, stream: str) -> Path:
    return root / f"stream={stream}" / STREAM_SPEC_FILE


def _stored_key(root: Path, stream: str) -> str | None:
    path = _spec_path(root, stream)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DataError(f"cannot read {str(path)!r}: {exc.strerror or exc}.") from None
    doc = load_json(text, source=repr(str(path)))
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != STREAM_SPEC_SCHEMA
        or doc.get("stream") != stream
        or not isinstance(doc.get("key"), str)
    ):
        raise DataError(
            f"{str(path)!r} is not the spec of stream {stream!r} (schema "
            f"{STREAM_SPEC_SCHEMA}, fields schema, stream, key)."
        )
    return str(doc["key"])


def _days(root: Path, stream: str) -> list[tuple[dt.date, Path]]:
    folder = root / f"stream={stream}"
    if not folder.is_dir():
        return []
    out = []
    for entry in folder.iterdir():
        m = _DAY.fullmatch(entry.name)
        if m and entry.is_dir():
            try:
                out.append((dt.date.fromisoformat(m.group(1)), entry))
            except ValueError:
                continue
    return sorted(out)


def _same_oracle(root: Path, stream: str, oracle: Any, *, create: bool) -> None:
    """Refuse ``oracle`` unless it is the stream's stored one; store it first if the
    stream has no spec yet and ``create``."""
    stored = _stored_key(root, stream)
    if stored is None and create:
        if _days(root, stream):
            raise DataError(
                f"stream {stream!r} under {str(root)!r} has partitions but no "
                f"{STREAM_SPEC_FILE}: refusing to append reports whose oracle cannot be "
                "checked against them."
            )
        path = _spec_path(root, stream)
        _make_dirs(path.parent)
        doc = {"schema": STREAM_SPEC_SCHEMA, "stream": stream, "key": oracle.key}
        text = json.dumps(doc, indent=2) + "\n"
        try:
            atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), replace=False)
            _fsync_dir(path.parent)
        except DataError:
            if not path.exists():  # not a race with another writer: a real failure
                raise
        stored = _stored_key(root, stream)
    if stored is None:
        raise DataError(f"no stream {stream!r} under {str(root)!r} (no {STREAM_SPEC_FILE}).")
    if stored != oracle.key:
        raise DataError(
            f"stream {stream!r} holds reports of {stored}; refusing reports of {oracle.key} "
            "(a stream's oracle and its parameters never change: start a new stream)."
        )


def _write_new(folder: Path, table: Any) -> Path:
    """Write ``table`` to a new Parquet file in ``folder``: a hidden temporary file,
    fsynced, linked to a fresh name (never over a file), then the directory fsynced."""
    import pyarrow.parquet as pq

    name = f"part-{time.time_ns():020d}-{secrets.token_hex(6)}.parquet"
    tmp = folder / f".{name}.tmp"
    final = folder / name
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        raise DataError(f"cannot write in {str(folder)!r}: {exc.strerror or exc}.") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            pq.write_table(table, fh)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, final)  # fails if a file is there: never replaces one
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            if os.path.lexists(final):  # no hard links here: check, then rename
                raise
            os.rename(tmp, final)
        tmp.unlink(missing_ok=True)
        _fsync_dir(folder)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise DataError(f"cannot write {str(final)!r}: {exc.strerror or exc}.") from exc
        raise
    return final


def append_reports(
    root: str | os.PathLike[str], stream: str, mechanism: Any, reports: Any, *, day: Any
) -> StoredBatch:
    """Append ``reports`` of ``mechanism`` (an oracle, its key or spec) to ``stream``'s
    partition of ``day`` as one new Parquet file, durably (module docstring); the reports
    (an array, or :class:`~deniable.oracles.RapporReports` for RAPPOR) are checked by the
    oracle first.  The first append stores the stream's oracle; an append with another one
    is refused (:class:`~deniable.exceptions.DataError`), nothing written."""
    oracle = resolve_mechanism(mechanism)
    sid, when = _stream_id(stream), _day(day)
    if isinstance(reports, np.ndarray) and reports.ndim == 0:
        raise DataError(f"`reports` must be an array of reports, got a scalar {reports!r}.")
    return _append(root, sid, oracle, to_columns(oracle, reports), when)


def _decoded(oracle: Any, reports: Any) -> list[npt.NDArray[Any]]:
    """The columns of reports :func:`decode_batch` returned (checked there: an array is
    only reshaped; RAPPOR's cohorts and bits are split by :func:`to_columns`)."""
    if not isinstance(reports, np.ndarray):
        return to_columns(oracle, reports)
    _, width = record(oracle)
    rows = reports.reshape(reports.shape[0], width)
    return [rows[:, i] for i in range(width)]


def _append(
    root: str | os.PathLike[str],
    sid: str,
    oracle: Any,
    columns: list[npt.NDArray[Any]],
    when: dt.date,
) -> StoredBatch:
    """Append the columns of checked reports (:func:`append_reports`)."""
    import pyarrow as pa

    n = int(columns[0].shape[0])
    if n == 0:
        raise DataError("a batch must hold at least one report, got none.")
    base = Path(root)
    _same_oracle(base, sid, oracle, create=True)
    schema = pa.schema(
        [
            pa.field(c, pa.from_numpy_dtype(t), nullable=False)
            for c, t in zip(report_columns(oracle), column_dtypes(oracle), strict=True)
        ],
        metadata={KEY_METADATA: str(oracle.key).encode("utf-8")},
    )
    table = pa.table([pa.array(col, type=schema.field(i).type) for i, col in enumerate(columns)],
                     schema=schema)  # fmt: skip
    folder = base / f"stream={sid}" / f"day={when.isoformat()}"
    _make_dirs(folder)
    return StoredBatch(sid, when, _write_new(folder, table), n, str(oracle.key))


def append_batch(
    root: str | os.PathLike[str],
    stream: str,
    mechanism: Any,
    body: bytes | bytearray | memoryview,
    *,
    day: Any,
) -> StoredBatch:
    """Decode the binary batch ``body`` (:func:`~deniable.distributed.decode_batch`: every
    report checked against ``mechanism``) and append its reports to ``stream``'s partition
    of ``day`` (:func:`append_reports`).  What the service's ingestion route calls with the
    stream's oracle, the request body and the day; a bad body, another oracle, or a stream
    stored with another oracle is one :class:`~deniable.exceptions.DataError`, nothing
    written.  Returns once the batch is durable.

    >>> import tempfile
    >>> from deniable.distributed import encode_batch, aggregate_stream
    >>> from deniable.oracles import OUE
    >>> oracle = OUE.from_epsilon(1.0, k=10)
    >>> root = tempfile.mkdtemp()
    >>> body = encode_batch(oracle, oracle.randomize([1, 2, 2, 9], rng=7))
    >>> stored = append_batch(root, "app-version", oracle, body, day="2026-11-28")
    >>> stored.reports, stored.path.parent.name
    (4, 'day=2026-11-28')
    >>> tally = aggregate_stream(root, "app-version", scheduler="synchronous")
    >>> tally == oracle.tally(oracle.randomize([1, 2, 2, 9], rng=7)), int(tally.counts[-1])
    (True, 4)
    """
    sid = _stream_id(stream)
    when = _day(day)
    oracle = resolve_mechanism(mechanism)
    return _append(root, sid, oracle, _decoded(oracle, decode_batch(oracle, body)), when)


def append_batches(
    root: str | os.PathLike[str],
    stream: str,
    mechanism: Any,
    bodies: Sequence[bytes | bytearray | memoryview],
    *,
    day: Any,
) -> StoredBatch:
    """Append several binary batches of one day as **one** Parquet file (a group commit:
    one fsync for the group).  Every body is decoded and checked before anything is
    written: one bad body refuses the group, naming its index."""
    sid = _stream_id(stream)
    when = _day(day)
    oracle = resolve_mechanism(mechanism)
    if isinstance(bodies, bytes | bytearray | memoryview | str) or not isinstance(bodies, Sequence):
        raise ParameterTypeError(
            f"`bodies` must be a sequence of binary batches, got {type(bodies).__name__}."
        )
    if not bodies:
        raise DataError("`bodies` must hold at least one batch, got none.")
    parts = []
    for i, body in enumerate(bodies):
        try:
            parts.append(_decoded(oracle, decode_batch(oracle, body)))
        except DataError as exc:
            raise DataError(f"`bodies[{i}]`: {exc}") from None
    columns = [np.concatenate([p[j] for p in parts]) for j in range(len(parts[0]))]
    return _append(root, sid, oracle, columns, when)
