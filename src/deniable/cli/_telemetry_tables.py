"""`deniable telemetry aggregate` of report tables and of telemetry streams
(``docs/telemetry.md``).

A report table (Parquet or CSV: a path, a glob, a directory or a URL) or the partitions of
a telemetry stream (``--stream-root ROOT --stream ID [--start DAY] [--end DAY]``: the
Parquet files :func:`~deniable.distributed.stream_files` lists, read by
:func:`~deniable.distributed.aggregate_stream` with the oracle of the stream's
``_stream.json``) is tallied on a Dask cluster (a local one by default, ``--scheduler`` for
an existing one, ``--local-workers 0`` in this process).  The oracle is known before any
report is counted, so that RAPPOR's decoder options are checked first.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from deniable.cli._base import fail, guard_io
from deniable.cli._files import progress_bar
from deniable.exceptions import DeniableError

__all__ = ["EndOpt", "StartOpt", "StreamOpt", "StreamRootOpt", "TableSource", "table_source"]

StreamRootOpt = Annotated[
    str | None,
    typer.Option(
        "--stream-root",
        help="The folder of telemetry streams (with --stream): aggregate a stream's "
        "partitions instead of FILE.",
        show_default=False,
    ),
]
StreamOpt = Annotated[
    str | None,
    typer.Option(
        "--stream",
        help="The stream's id under --stream-root; its oracle is the one its _stream.json names.",
        show_default=False,
    ),
]
StartOpt = Annotated[
    str | None,
    typer.Option(
        "--start",
        help="With --stream: the first day (YYYY-MM-DD) aggregated; default: the first.",
        show_default=False,
    ),
]
EndOpt = Annotated[
    str | None,
    typer.Option(
        "--end",
        help="With --stream: the last day (YYYY-MM-DD, included); default: the last.",
        show_default=False,
    ),
]


class TableSource:
    """Report tables to tally: a ``file`` (path, glob, directory, URL) or a stream's days,
    with the oracle they hold when it is known before counting (``None``: ``aggregate``
    reads it from the tables, or gives the error)."""

    def __init__(
        self, label: str, oracle: Any, *, file: str | None = None,
        stream: tuple[str, str, str | None, str | None] | None = None,
    ) -> None:  # fmt: skip
        self.label = label
        self.oracle = oracle
        self.file = file
        self.stream = stream

    def tally(
        self, mechanism: str | None, *, scheduler: Any, batch: int, local_workers: int,
        as_json: bool,
    ) -> Any:  # fmt: skip
        """The tally of every report, on the cluster ``scheduler`` names."""
        from deniable.distributed import aggregate, aggregate_stream

        with (
            guard_io(f"read {self.label!r}"),
            progress_bar(not as_json, f"tallying {self.label}", unit="partitions") as progress,
        ):
            options: dict[str, Any] = {
                "scheduler": scheduler,
                "batch": batch,
                "local_workers": local_workers,
                "progress": progress,
            }
            if self.stream is not None:
                root, sid, start, end = self.stream
                return aggregate_stream(root, sid, mechanism, start=start, end=end, **options)
            return aggregate(self.file, mechanism, **options)


def table_source(
    file: str | None,
    *,
    stream_root: str | None,
    stream: str | None,
    start: str | None,
    end: str | None,
    mechanism: str | None,
) -> TableSource | None:
    """What ``aggregate`` tallies as report tables: the stream the options name (checked:
    its ``_stream.json``, the day range, a day range holding reports), ``FILE`` when it
    names tables, or ``None`` when ``FILE`` is a report file (one error line for options
    that do not go together)."""
    from deniable.distributed import CSV_SUFFIXES

    named = [f"`{n}`" for n, x in (("--stream-root", stream_root), ("--stream", stream),
                                  ("--start", start), ("--end", end)) if x is not None]  # fmt: skip
    if named:
        if file is not None:
            fail(
                f"`FILE` and {', '.join(named)} are two sources: give FILE, or --stream-root "
                f"ROOT --stream ID [--start DAY] [--end DAY], got both (FILE {file!r})."
            )
        if stream_root is None or stream is None:
            fail(
                "`--stream-root` and `--stream` must be given together (the folder of streams "
                f"and the stream's id), got only {', '.join(named)}."
            )
        return _stream_source(stream_root, stream, start, end, mechanism)
    if file is None:
        fail(
            "`FILE` must be given (a report file or report tables), or --stream-root ROOT "
            "--stream ID for a telemetry stream's partitions."
        )
    lowered = file.lower().rstrip("/")
    table = lowered.endswith((".parquet", ".pq", *CSV_SUFFIXES)) or "://" in file
    from pathlib import Path

    if not table and not Path(file).is_dir():
        return None  # a report file
    return TableSource(file, _known_oracle(file, mechanism), file=file)


def _known_oracle(file: str, mechanism: str | None) -> Any:
    """The oracle of ``file``'s tables if known without counting: ``--mechanism``'s, else
    the key of its first Parquet file (the others are checked by ``aggregate``)."""
    from deniable.distributed import require_dask, resolve_mechanism, table_mechanism

    try:
        require_dask()
    except ImportError as exc:  # one line naming the extra, never a traceback
        fail(str(exc))
    if mechanism is not None:
        return resolve_mechanism(mechanism)
    try:
        return resolve_mechanism(table_mechanism(file))  # an oracle, RAPPOR or a sketch
    except (DeniableError, OSError):
        return None  # a CSV table, or a file aggregate refuses with its own error


def _stream_source(
    root: str, stream: str, start: str | None, end: str | None, mechanism: str | None
) -> TableSource:
    from pathlib import Path

    from deniable.distributed import (
        STREAM_SPEC_FILE,
        require_dask,
        resolve_mechanism,
        stream_files,
        stream_oracle,
    )

    try:
        require_dask()
    except ImportError as exc:
        fail(str(exc))
    if not Path(root).is_dir():
        fail(f"`--stream-root` must be a folder of telemetry streams, got {root!r}.")
    try:
        oracle = stream_oracle(root, stream)
    except DeniableError as exc:
        fail(f"`--stream` {stream!r}: {exc}")
    if mechanism is not None and resolve_mechanism(mechanism) != oracle:
        fail(
            f"`--mechanism` must be the oracle of stream {stream!r} (its {STREAM_SPEC_FILE} "
            f"names {oracle.key}) or left out, got {resolve_mechanism(mechanism).key}."
        )
    for name, day in (("--start", start), ("--end", end)):
        if day is not None:
            _check_day(name, day)
    files = stream_files(root, stream, start=start, end=end)
    days = f"{start or 'the first day'} .. {end or 'the last day'}"
    if not files:
        fail(
            f"`--stream` {stream!r} under {root!r} holds no reports in the days {days}; "
            "choose days it has partitions of (day=YYYY-MM-DD folders)."
        )
    label = f"{root}/stream={stream} ({days})"
    return TableSource(label, oracle, stream=(root, stream, start, end))


def _check_day(option: str, day: str) -> None:
    import datetime as dt
    import re

    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
            raise ValueError
        dt.date.fromisoformat(day)
    except ValueError:
        fail(f"`{option}` must be a day YYYY-MM-DD, got {day!r}.")
