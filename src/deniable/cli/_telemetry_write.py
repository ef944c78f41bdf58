"""What every ``deniable telemetry simulate`` does the same way, whatever the mechanism
(``_telemetry_oracle``, ``_telemetry_rappor``, ``_telemetry_sketch``, ``_telemetry_heavy``):
the run's options (:class:`Simulation`), the extra a report table needs, the bound on the
file's size, and the write itself (a report file, or a Parquet or CSV report table whose
columns are the oracle's: ``deniable.distributed._tables``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deniable.cli._base import fail, guard_io
from deniable.cli._files import progress_bar
from deniable.cli._telemetry_strings import device_strings

__all__ = ["Simulation"]


@dataclass(frozen=True)
class Simulation:
    """One ``simulate``'s options that every mechanism takes: the claimed report file or
    table ``target`` (``out`` as given), the devices (``--devices``, and the strings'
    mechanisms' ``--candidates`` or ``--values``), the seed used, the most devices and
    bytes of a file, and ``--json``."""

    target: Any
    out: str
    devices: int | None
    candidates: str | None
    values: str | None
    seed: int
    max_devices: int
    max_bytes: int
    as_json: bool

    def strings(self, mechanism: str) -> tuple[list[str], int]:
        """The strings the devices are drawn from (``--candidates``) or hold (``--values``),
        and the number of devices (``_telemetry_strings.device_strings``)."""
        return device_strings(self.candidates, self.values, self.devices, mechanism,
                              max_devices=self.max_devices)  # fmt: skip

    def require_pyarrow(self) -> None:
        """One error line when ``--format`` asks for a report table and pyarrow is
        missing."""
        if self.target.format != "reports":
            try:
                import pyarrow  # noqa: F401 - checked here so the error names the extra
            except ImportError:
                fail(
                    f"`--format {self.target.format}` needs pyarrow, of the [dask] extra: "
                    "pip install 'deniable[dask]'."
                )

    def check_file_size(
        self, n: int, record: int, what: str, *, advice: str = "simulate fewer devices"
    ) -> None:
        """One error line when ``n`` reports of ``record`` bytes (``what``: the mechanism
        and the parameter that sets the size) would pass :attr:`max_bytes`."""
        if n * record > self.max_bytes:
            fail(
                f"`--devices` {n} reports of {record} bytes ({what}) would make a report file "
                f"larger than {self.max_bytes >> 30} GiB; {advice}."
            )

    def check_devices(self, n: int) -> None:
        """One error line for more than :attr:`max_devices` devices."""
        if n > self.max_devices:
            fail(f"`--devices` must be at most {self.max_devices:,}, got {n}.")

    def write(self, oracle: Any, n: int, batches: Iterable[Any]) -> int:
        """Write the ``n`` reports of ``oracle`` that ``batches`` yields into the claimed
        report file or table, with a progress bar unless ``--json``; the size of the file
        written, in bytes."""
        from deniable.oracles import write_report_batches

        target = self.target

        def write(tmp: Any, progress: Any) -> Any:
            if target.format == "reports":
                return write_report_batches(tmp, oracle, n, batches, progress=progress)
            from deniable.distributed import write_report_table

            return write_report_table(tmp, oracle, n, batches, format=target.format,
                                      progress=progress)  # fmt: skip

        label = f"writing {self.out}"
        with guard_io(f"write {self.out!r}"), progress_bar(not self.as_json, label) as progress:
            path = target.write(lambda tmp: write(tmp, progress))
        return Path(path).stat().st_size

    def write_strings(self, oracle: Any, n: int, batches: Iterable[Any],
                      **fields: Any) -> dict[str, Any]:  # fmt: skip
        """:meth:`write` the reports of a strings' mechanism (RAPPOR, a sketch, PEM or
        TreeHist), and what it printed: the file, its format, the devices, ``fields`` (the
        mechanism's key and epsilons, ...), where the strings came from, the seed and the
        bytes written."""
        written = self.write(oracle, n, batches)
        return {
            "file": str(self.out), "format": self.target.format, "devices": n, **fields,
            "strings": "zipf over --candidates" if self.values is None else "--values",
            "seed": self.seed, "bytes": written,
        }  # fmt: skip
