"""What every ``deniable telemetry simulate`` writes the same way, whatever the mechanism
(``_telemetry_oracle``, ``_telemetry_rappor``, ``_telemetry_sketch``, ``_telemetry_heavy``):
the extra a report table needs, the bound on the file's size, and the write itself (a
report file, or a Parquet or CSV report table whose columns are the oracle's:
``deniable.distributed._tables``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from deniable.cli._base import fail, guard_io
from deniable.cli._files import progress_bar

__all__ = ["check_file_size", "require_pyarrow", "write_reports"]


def require_pyarrow(format: str) -> None:
    """One error line when ``--format`` asks for a report table and pyarrow is missing."""
    if format != "reports":
        try:
            import pyarrow  # noqa: F401 - checked here so the error names the extra
        except ImportError:
            fail(
                f"`--format {format}` needs pyarrow, of the [dask] extra: "
                "pip install 'deniable[dask]'."
            )


def check_file_size(
    n: int, record: int, what: str, max_bytes: int, *, advice: str = "simulate fewer devices"
) -> None:
    """One error line when ``n`` reports of ``record`` bytes (``what``: the mechanism and
    the parameter that sets the size) would pass ``max_bytes``."""
    if n * record > max_bytes:
        fail(
            f"`--devices` {n} reports of {record} bytes ({what}) would make a report file "
            f"larger than {max_bytes >> 30} GiB; {advice}."
        )


def write_reports(
    target: Any, oracle: Any, n: int, batches: Iterable[Any], *, out: str, as_json: bool
) -> int:
    """Write the ``n`` reports of ``oracle`` that ``batches`` yields into ``target`` (a
    claimed report file or table, ``out`` as given), with a progress bar unless
    ``as_json``; the size of the file written, in bytes."""
    from deniable.oracles import write_report_batches

    def write(tmp: Any, progress: Any) -> Any:
        if target.format == "reports":
            return write_report_batches(tmp, oracle, n, batches, progress=progress)
        from deniable.distributed import write_report_table

        return write_report_table(tmp, oracle, n, batches, format=target.format,
                                  progress=progress)  # fmt: skip

    with guard_io(f"write {out!r}"), progress_bar(not as_json, f"writing {out}") as progress:
        path = target.write(lambda tmp: write(tmp, progress))
    return Path(path).stat().st_size
