"""A frequency oracle of values ``0..k-1`` on the command line: ``deniable telemetry
simulate --mechanism grr|oue|olh|...`` (the strings' mechanisms have their own modules:
``_telemetry_rappor``, ``_telemetry_sketch``, ``_telemetry_heavy``).

The devices' values follow Zipf's law (frequencies proportional to ``1 / (j + 1)``), are
randomized by the library's oracle in batches and written to a report file or a report
table; the seed, the oracle's key and its epsilon are printed.
"""

from __future__ import annotations

from typing import Any

from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_write import Simulation
from deniable.common import format_epsilon
from deniable.results import Table

__all__ = ["simulate_oracle"]

#: Devices randomized and written at once by ``simulate`` (fewer for large reports).
_BATCH = 1 << 18
#: Bytes of reports ``simulate`` randomizes at once.
_BATCH_BYTES = 1 << 25


def simulate_oracle(run: Simulation, *, mechanism: str, devices: int, k: int,
                    epsilon: float) -> None:  # fmt: skip
    """Simulate ``devices`` devices of the oracle ``mechanism`` into the report file or
    table of ``run`` and print it."""
    import numpy as np

    from deniable import oracles as o
    from deniable.simulation import DevicePopulation

    oracle: Any = o.make_oracle(mechanism, epsilon, k)
    run.check_devices(devices)
    one = oracle.randomize([0], rng=np.random.default_rng(0))
    per_report = int(one.nbytes)
    run.check_file_size(devices, per_report, f"{mechanism}, k = {k}",
                        advice="simulate fewer devices or write several files")  # fmt: skip
    step = max(1, min(_BATCH, _BATCH_BYTES // per_report))
    # the devices' values: Zipf's law, frequencies proportional to 1/(j+1)
    batches = DevicePopulation.zipf(k).reports(
        oracle, devices, rng=np.random.default_rng(run.seed), batch=step
    )
    run.require_pyarrow()
    written = run.write(oracle, devices, batches)
    data = {
        "file": str(run.out),
        "format": run.target.format,
        "devices": devices,
        "mechanism": oracle.key,
        "epsilon": float(oracle.epsilon),
        "seed": run.seed,
        "bytes": written,
    }
    if run.as_json:
        emit_json(data)
    else:  # the key (exact parameters) is in the file's header and the JSON
        shown = {**data, "mechanism": oracle.name, "epsilon": format_epsilon(oracle.epsilon)}
        print_table(Table.pairs(shown.items(), title="simulated telemetry reports"))
