"""`aggregate`: the tally of report tables, partition by partition on a Dask cluster.

The client lists the files (fsspec: a local path, a glob, a directory or any URL dask
reads), checks each file's columns (and a Parquet file's oracle key) before anything is
counted, and builds one task per partition: a run of consecutive Parquet row groups of
about ``batch`` rows (one footer read each), or a block of about
``batch`` rows of a CSV file (``dask.bytes.read_bytes`` splits it at line ends), or a whole
compressed CSV file (``.csv.gz``, ``.csv.bz2``, ``.csv.zst``: a compressed stream cannot be
split, so its task decompresses it as a stream and tallies it ``batch`` rows at a time).  A
worker reads its partition with pyarrow, checks the values fit the oracle's item type and
tallies them with the oracle's own vectorized ``tally`` (numpy), then partial tallies are
added pairwise (a tree of depth ``log2`` of the partitions), or, when a ``progress``
callback is given, added as they finish, each finished partition reported.  Memory per
worker: one partition (one batch of a compressed file) plus O(k).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from deniable.designs import Tally
from deniable.distributed._sources import (
    _check_has,
    _codec,
    _columns,
    _csv_header,
    _files,
    _one_format,
    _open_csv,
    _parquet_key,
    checked_call,
)
from deniable.distributed._tables import (
    BATCH_BYTES,
    Progress,
    column_dtypes,
    from_columns,
    record,
)
from deniable.exceptions import DataError, DeniableError, ParameterTypeError

__all__ = ["DEFAULT_BATCH", "LOCAL_WORKERS", "aggregate"]

#: Reports in one partition by default (a CSV block is sized to hold about this many).
DEFAULT_BATCH = 1 << 20
#: Workers of the local cluster started when no scheduler is given.
LOCAL_WORKERS = 2
#: Where the scheduler of a local cluster serves its HTTP health routes (any free port: the
#: default 8787 may be taken by another cluster).
LOOPBACK = "127.0.0.1:0"
#: Seconds to wait for the scheduler of an existing cluster.
CONNECT_TIMEOUT = 10.0


# ---- the tasks (run on the workers; module-level so they pickle by reference)


def _reports(table: Any, columns: Sequence[str], dtypes: Sequence[Any], where: str) -> list[Any]:
    """The arrays of the report columns of a pyarrow table, each value checked to fit its
    column's type (``dtypes``, one a column)."""
    out = []
    for name, dtype in zip(columns, dtypes, strict=True):
        info = np.iinfo(dtype)
        col = table.column(name)
        if col.null_count:
            raise DataError(f"{where}: column {name!r} has {col.null_count} missing values.")
        arr = col.to_numpy()
        if arr.dtype.kind not in "iu":
            raise DataError(
                f"{where}: column {name!r} must hold whole numbers ({dtype.name}), got {arr.dtype}."
            )
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            bad = arr[(arr < info.min) | (arr > info.max)][0]
            raise DataError(
                f"{where}: column {name!r} must hold values in {info.min}..{info.max} "
                f"({dtype.name}), got {bad}."
            )
        out.append(arr.astype(dtype, copy=False))
    return out


def _tally_parquet(
    oracle: Any,
    fs: Any,
    path: str,
    first: int,
    stop: int,
    columns: Sequence[str],
    dtypes: Sequence[Any],
) -> Tally:
    """The tally of row groups ``first .. stop - 1`` of a Parquet file: one footer read and
    one table of at most about ``batch`` rows (or one larger row group)."""
    import pyarrow.parquet as pq

    where = f"{path!r} row group {first}" + (f"..{stop - 1}" if stop - first > 1 else "")
    try:
        with fs.open(path, "rb") as fh:
            table = pq.ParquetFile(fh).read_row_groups(range(first, stop), columns=list(columns))
    except Exception as exc:
        raise DataError(f"{where} cannot be read (truncated or malformed?): {exc}") from None
    return _tally(oracle, _reports(table, columns, dtypes, where), where)


def _row_group_runs(rows: Sequence[int], batch: int) -> list[tuple[int, int]]:
    """Consecutive row groups in runs of at most ``batch`` rows (a larger group alone):
    the partitions of one Parquet file.  One task per run, not per group, so a file of many
    small row groups costs O(rows / batch) footer reads, not one per group (each footer
    read is O(groups): quadratic in the groups before).

    >>> _row_group_runs([3, 3, 3, 10, 1], 6)
    [(0, 2), (2, 3), (3, 4), (4, 5)]
    """
    runs: list[tuple[int, int]] = []
    start, held = 0, 0
    for i, n in enumerate(rows):
        if i > start and held + n > batch:
            runs.append((start, i))
            start, held = i, 0
        held += n
    if start < len(rows):
        runs.append((start, len(rows)))
    return runs


def _tally_csv(
    oracle: Any,
    block: bytes,
    path: str,
    index: int,
    names: Sequence[str],
    columns: Sequence[str],
    dtypes: Sequence[Any],
) -> Tally:
    import pyarrow.csv as pcsv

    where = f"{path!r} block {index}"
    types = _csv_types(columns, dtypes)
    try:
        table = pcsv.read_csv(
            io.BytesIO(block),
            read_options=pcsv.ReadOptions(column_names=list(names), skip_rows=int(index == 0)),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=list(columns), strings_can_be_null=False
            ),
        )
    except Exception as exc:
        raise DataError(f"{where} is not a CSV of reports: {exc}") from None
    return _tally(oracle, _reports(table, columns, dtypes, where), where)


def _tally_csv_stream(
    oracle: Any,
    fs: Any,
    path: str,
    names: Sequence[str],
    columns: Sequence[str],
    dtypes: Sequence[Any],
    block: int,
) -> Tally:
    """The tally of a whole compressed CSV file, decompressed as a stream and read about
    ``block`` bytes of text at a time (memory: one block plus O(k))."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    types = _csv_types(columns, dtypes)
    total: Tally | None = None
    index = 0
    try:
        with _open_csv(fs, path) as fh:
            reader = pcsv.open_csv(
                fh,
                read_options=pcsv.ReadOptions(
                    column_names=list(names), skip_rows=1, block_size=block
                ),
                convert_options=pcsv.ConvertOptions(
                    column_types=types, include_columns=list(columns), strings_can_be_null=False
                ),
            )
            for index, batch in enumerate(reader):
                where = f"{path!r} batch {index}"
                table = pa.Table.from_batches([batch])
                part = _tally(oracle, _reports(table, columns, dtypes, where), where)
                total = part if total is None else total + part
    except DeniableError:
        raise
    except Exception as exc:
        raise DataError(
            f"{path!r} (from batch {index}) is not a CSV of reports (truncated or malformed?): "
            f"{exc}"
        ) from None
    return _tally_none(oracle) if total is None else total


def _csv_types(columns: Sequence[str], dtypes: Sequence[Any]) -> dict[str, Any]:
    """pyarrow's type of each CSV column: read as 64-bit integers, then range-checked."""
    import pyarrow as pa

    return {c: pa.int64() if t.kind == "i" or t.itemsize < 8 else pa.uint64()
            for c, t in zip(columns, dtypes, strict=True)}  # fmt: skip


def _tally(oracle: Any, columns: list[Any], where: str) -> Tally:
    try:
        out: Tally = oracle.tally(from_columns(oracle, columns))
    except DeniableError as exc:
        raise type(exc)(f"{where}: {exc}") from None
    return out


def _add(a: Tally, b: Tally) -> Tally:
    return a + b


# ---- the client


def _tasks(
    oracle: Any, source: Any, fmt: str | None, columns: Sequence[str] | None, batch: int
) -> list[Any]:
    """The delayed tally of every partition, after checking every file's columns."""
    from dask import delayed

    fs, paths = _files(source)
    kind = _one_format(paths, fmt)
    cols = _columns(oracle, columns)
    dtype, width = record(oracle)
    dtypes = column_dtypes(oracle)
    # a partition holds at most 128 MB of reports, whatever `batch` says
    batch = max(1, min(batch, BATCH_BYTES // (width * dtype.itemsize)))
    tasks: list[Any] = []
    if kind == "parquet":
        part = delayed(_tally_parquet, pure=True)
        for path in paths:
            key, names, groups = _parquet_key(fs, path)
            if key is not None and key != oracle.key:
                raise DataError(
                    f"{path!r} holds reports of {key}, not of this oracle {oracle.key}."
                )
            _check_has(path, names, cols, oracle)
            tasks.extend(
                part(oracle, fs, path, first, stop, cols, dtypes)
                for first, stop in _row_group_runs(groups, batch)
            )
        if not tasks:  # files without row groups: the tally of no reports
            tasks.append(delayed(_tally_none)(oracle))
        return tasks
    from dask.bytes import read_bytes

    headers = {}
    for path in paths:
        names = _csv_header(fs, path)
        _check_has(path, names, cols, oracle)
        headers[path] = names
    row = sum(len(str(np.iinfo(t).max)) + 1 for t in dtypes)
    blocksize = max(1 << 16, row, min(batch * row, 2 * BATCH_BYTES))  # text: 2 x the bytes
    for path in paths:  # a compressed file: one task that streams it
        if _codec(path) is not None:
            part = delayed(_tally_csv_stream, pure=True)
            tasks.append(part(oracle, fs, path, headers[path], cols, dtypes, blocksize))
    plain = [p for p in paths if _codec(p) is None]
    if not plain:
        return tasks
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    urls = [p if protocol == "file" else f"{protocol}://{p}" for p in plain]
    _, blocks = read_bytes(urls, delimiter=b"\n", blocksize=blocksize, sample=False)
    for path, file_blocks in zip(plain, blocks, strict=True):
        part = delayed(_tally_csv, pure=True)
        tasks.extend(
            part(oracle, b, path, i, headers[path], cols, dtypes) for i, b in enumerate(file_blocks)
        )
    return tasks


def _tally_none(oracle: Any) -> Tally:
    empty = [np.empty(0, dtype=t) for t in column_dtypes(oracle)]
    out: Tally = oracle.tally(from_columns(oracle, empty))
    return out


def _tree(tasks: list[Any]) -> Any:
    """The sum of delayed tallies as a balanced tree of additions."""
    from dask import delayed

    add = delayed(_add, pure=True)
    while len(tasks) > 1:
        pairs = [add(tasks[i], tasks[i + 1]) for i in range(0, len(tasks) - 1, 2)]
        tasks = pairs + ([tasks[-1]] if len(tasks) % 2 else [])
    return tasks[0]


@contextmanager
def local_client(workers: int) -> Iterator[Any]:
    """A client of a ``LocalCluster`` started for the call and closed after it: ``workers``
    processes of one thread each, no dashboard."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,  # no dashboard; its health routes on any port
            scheduler_kwargs={"dashboard": False, "dashboard_address": LOOPBACK},
            # the workers log a failed task with its traceback on this process's
            # stderr; the error reaches the caller as one DataError instead
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def aggregate(
    source: Any,
    mechanism: Any = None,
    *,
    scheduler: Any = None,
    columns: Sequence[str] | None = None,
    batch: int = DEFAULT_BATCH,
    format: str | None = None,
    local_workers: int = LOCAL_WORKERS,
    timeout: float = CONNECT_TIMEOUT,
    progress: Progress | None = None,
) -> Tally:
    """The tally of the reports in a Parquet or CSV report table, computed with Dask.

    Parameters
    ----------
    source : str, os.PathLike or list of them
        A file, a glob (``day-*.parquet``), a directory (its files) or any URL dask and
        fsspec read (``s3://bucket/day/*.parquet``), or a list of them.
    mechanism : oracle, str or mapping, optional
        The oracle, its key or its spec.  Default: the key the Parquet files carry, which
        must be one key in every file (a file without a key, or of another oracle, is
        refused whatever the order of the files; a CSV table needs ``mechanism``).  Given,
        a Parquet file whose key differs is refused, naming both keys.
    scheduler : None, str or distributed.Client, optional
        ``None`` (default): a ``LocalCluster`` of ``local_workers`` worker processes with
        one thread each and no dashboard, started for this call and closed after it; a
        scheduler address (``tcp://host:8786``) to use an existing cluster; a
        ``distributed.Client``; or ``"synchronous"``: no cluster, the partitions tallied
        one after another in this process.
    columns : sequence of str, optional
        The report columns (default :func:`report_columns`: ``report`` or ``report_0 ..``).
    batch : int
        Reports in one partition, about: a CSV block (cut at line ends), or a run of
        consecutive Parquet row groups of at most ``batch`` rows (a larger row group alone;
        ``write_report_table`` writes ``2**20`` rows a group).
    format : {"parquet", "csv"}, optional
        Default: by the suffix of each file (``.csv.gz``, ``.csv.bz2`` and ``.csv.zst``
        are CSV, each file read as one decompressing stream); files of two formats are
        refused.
    progress : callable, optional
        ``progress(done, total)`` after each partition is tallied (``total`` partitions);
        the partial tallies are then added as they finish instead of in a tree on the
        cluster (the same sum: integer addition).

    Returns
    -------
    Tally
        The oracle's tally of every report (``k + 1`` support counts, then ``n``), equal to
        ``oracle.tally(all_reports)``: estimate with ``oracle.estimate(tally)``.

    Every file's columns (and a Parquet file's key) are checked before anything is counted;
    a value outside the oracle's range, a truncated or malformed file raise one
    :class:`~deniable.exceptions.DataError` naming the file and the problem.  Nothing is
    written.
    """
    size, workers, oracle = checked_call(source, mechanism, batch, format, local_workers)
    if str(getattr(oracle, "name", "")) in ("sfp", "rappor-ngram"):  # steps, not one tally
        raise ParameterTypeError(
            f"`mechanism` {oracle.key} is estimated in steps: aggregate its tables with "
            "aggregate_strings."
        )
    if not hasattr(oracle, "tally"):  # PEM, TreeHist: rounds, not one tally
        raise ParameterTypeError(
            f"`mechanism` {oracle.key} has no tally (its rounds need every report): aggregate "
            "its tables with aggregate_heavy_hitters."
        )
    if scheduler is not None and not isinstance(scheduler, str):
        from distributed import Client

        if not isinstance(scheduler, Client):
            raise ParameterTypeError(
                "`scheduler` must be None, an address, 'synchronous' or a distributed.Client, "
                f"got {type(scheduler).__name__}."
            )
    if progress is not None and not callable(progress):
        raise ParameterTypeError(
            f"`progress` must be a callable (done, total) or None, got {type(progress).__name__}."
        )
    tasks = _tasks(oracle, source, format, columns, size)
    return _run(tasks, scheduler, workers, timeout, progress)


def _as_completed(client: Any, tasks: list[Any], progress: Progress) -> Any:
    """The sum of the partitions' tallies, added as they finish, ``progress`` after each."""
    from distributed import as_completed

    futures = client.compute(tasks)
    total: Tally | None = None
    for count, future in enumerate(as_completed(futures), start=1):
        part = future.result()
        total = part if total is None else total + part
        progress(count, len(futures))
    return total


def _run(
    tasks: list[Any], scheduler: Any, workers: int, timeout: float, progress: Progress | None
) -> Tally:
    def done(result: Any) -> Tally:
        if not isinstance(result, Tally):  # pragma: no cover - the graph returns a Tally
            raise DataError("the cluster returned no tally.")
        return result

    def on(client: Any) -> Tally:
        if progress is None:
            return done(client.compute(_tree(tasks)).result())
        return done(_as_completed(client, tasks, progress))

    try:
        if scheduler == "synchronous":
            if progress is None:
                return done(_tree(tasks).compute(scheduler="synchronous"))
            total: Tally | None = None
            for count, task in enumerate(tasks, start=1):
                part = task.compute(scheduler="synchronous")
                total = part if total is None else total + part
                progress(count, len(tasks))
            return done(total)
        from distributed import Client

        if scheduler is None:
            with local_client(workers) as client:
                return on(client)
        if isinstance(scheduler, str):
            with Client(scheduler, timeout=timeout) as client:
                return on(client)
        return on(scheduler)
    except DeniableError:
        raise
    except (OSError, TimeoutError) as exc:
        raise DataError(f"`scheduler` {scheduler!r}: cannot reach it ({exc}).") from None
    except Exception as exc:
        raise DataError(f"aggregation failed: {type(exc).__name__}: {exc}") from None
