"""A frequency oracle of values ``0..k-1`` on the command line: ``deniable telemetry
simulate --mechanism grr|oue|olh|...`` (the strings' mechanisms have their own modules:
``_telemetry_rappor``, ``_telemetry_sketch``, ``_telemetry_heavy``).

The devices' values follow Zipf's law (frequencies proportional to ``1 / (j + 1)``), are
randomized by the library's oracle in batches and written to a report file or a report
table; the seed, the oracle's key and its epsilon are printed.
"""

from __future__ import annotations

from typing import Any

from deniable.cli._base import fail
from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_write import check_file_size, require_pyarrow, write_reports
from deniable.common import format_epsilon
from deniable.results import Table

__all__ = ["simulate_oracle"]

#: Devices randomized and written at once by ``simulate`` (fewer for large reports).
_BATCH = 1 << 18
#: Bytes of reports ``simulate`` randomizes at once.
_BATCH_BYTES = 1 << 25


def simulate_oracle(
    target: Any,
    *,
    mechanism: str,
    out: str,
    devices: int,
    k: int,
    epsilon: float,
    seed: int,
    limits: tuple[int, int],
    as_json: bool,
) -> None:
    """Simulate ``devices`` devices of the oracle ``mechanism`` into the report file or
    table ``target`` (claimed) and print it; ``limits``: the most devices and the most
    bytes of the file."""
    import numpy as np

    from deniable import oracles as o
    from deniable.simulation import DevicePopulation

    max_devices, max_bytes = limits
    oracle: Any = o.make_oracle(mechanism, epsilon, k)
    if devices > max_devices:
        fail(f"`--devices` must be at most {max_devices:,}, got {devices}.")
    one = oracle.randomize([0], rng=np.random.default_rng(0))
    per_report = int(one.nbytes)
    check_file_size(devices, per_report, f"{mechanism}, k = {k}", max_bytes,
                    advice="simulate fewer devices or write several files")  # fmt: skip
    step = max(1, min(_BATCH, _BATCH_BYTES // per_report))
    # the devices' values: Zipf's law, frequencies proportional to 1/(j+1)
    batches = DevicePopulation.zipf(k).reports(
        oracle, devices, rng=np.random.default_rng(seed), batch=step
    )
    require_pyarrow(target.format)
    written = write_reports(target, oracle, devices, batches, out=out, as_json=as_json)
    data = {
        "file": str(out),
        "format": target.format,
        "devices": devices,
        "mechanism": oracle.key,
        "epsilon": float(oracle.epsilon),
        "seed": seed,
        "bytes": written,
    }
    if as_json:
        emit_json(data)
    else:  # the key (exact parameters) is in the file's header and the JSON
        shown = {**data, "mechanism": oracle.name, "epsilon": format_epsilon(oracle.epsilon)}
        print_table(Table.pairs(shown.items(), title="simulated telemetry reports"))
