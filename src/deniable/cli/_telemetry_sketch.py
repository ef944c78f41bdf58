"""The count mean sketches on the command line (``deniable telemetry simulate --mechanism
cms|hcms`` and ``aggregate`` of their report files with ``--candidates``;
``docs/sketches.md``).

``simulate`` draws each device's string (Zipf's law over the lines of ``--candidates``, in
their order, or the lines of ``--values``, one device a line), randomizes it with the
library's :class:`~deniable.oracles.CMS` or :class:`~deniable.oracles.HCMS` and writes a
report file.  The salt (the row hashes) is ``--salt`` or, by default, drawn from the seed:
the estimate is unbiased over a salt drawn at random.  ``aggregate`` tallies the file in
batches and estimates the share of each candidate string
(:class:`~deniable.oracles.SketchEstimate`: both variance conventions and an interval).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from deniable.cli._base import fail, guard_io
from deniable.cli._files import progress_bar
from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_rappor import read_lines
from deniable.common import format_epsilon, to_jsonable
from deniable.results import Table

__all__ = [
    "SKETCHES",
    "SKETCH_DEFAULTS",
    "SaltOpt",
    "SketchColumnsOpt",
    "SketchRowsOpt",
    "aggregate_sketch",
    "not_sketch",
    "show_sketch",
    "simulate_sketch",
    "sketch_candidates",
]

#: ``simulate --mechanism cms|hcms``: strings through a keyed hash into a sketch (not in the
#: registry of oracles of values ``0..k-1``; ``docs/sketches.md``).
SKETCHES = ("cms", "hcms")
#: The sketch's shape when not given: 64 rows of 1024 columns (a tally of 65,600 cells).
SKETCH_DEFAULTS: dict[str, int] = {"k": 64, "m": 1024}
#: Devices randomized at once.
_BATCH = 1 << 16

SketchRowsOpt = Annotated[
    int | None,
    typer.Option(
        "--sketch-rows",
        help="CMS/HCMS only: the sketch's rows k (hash functions), 1..65536 (default 64).",
        show_default=False,
    ),
]
SketchColumnsOpt = Annotated[
    int | None,
    typer.Option(
        "--sketch-columns",
        help="CMS/HCMS only: the sketch's columns m, 2..65536, a power of two for HCMS "
        "(default 1024).",
        show_default=False,
    ),
]
SaltOpt = Annotated[
    int | None,
    typer.Option(
        "--salt",
        help="CMS/HCMS only: the salt of the row hashes, 0..2**32-1 (default: drawn from "
        "the seed).",
        show_default=False,
    ),
]


def not_sketch(mechanism: str, shape: dict[str, int | None]) -> None:
    """Refuse the sketches' options for another mechanism."""
    given = [f"`--{name}`" for name, x in shape.items() if x is not None]
    if given:
        fail(f"{', '.join(given)} apply to `--mechanism cms` and `hcms` only, got {mechanism!r}.")


def _epsilon_note(sketch: Any) -> str:
    # eps exact (the bits that move between two strings attain it); implemented <= eps
    return (
        f"epsilon {format_epsilon(sketch.epsilon)} per report, any change of a device's "
        f"string (implemented: {format_epsilon(sketch.implemented_epsilon)})"
    )


def _device_strings(
    candidates: str | None, values: str | None, devices: int | None, mechanism: str
) -> tuple[list[str], int]:
    """The strings devices are drawn from (or hold, one a device) and the device count."""
    if (candidates is None) == (values is None):
        fail(
            f"`--mechanism {mechanism}` simulates strings: give --candidates FILE (devices "
            "drawn by Zipf's law over its lines) or --values FILE (one device's string a "
            f"line), one of them, got {'both' if candidates else 'neither'}."
        )
    if values is not None:
        strings = read_lines("--values", values, distinct=False)
        if devices is not None and devices != len(strings):
            fail(
                f"`--devices` must be the number of strings of --values ({len(strings)}) or "
                f"left out, got {devices}."
            )
        return strings, len(strings)
    assert candidates is not None
    if devices is None:
        fail("`--devices` must be given with --candidates (the number of devices drawn).")
    return read_lines("--candidates", candidates, distinct=True), devices


def _check_lengths(option: str, strings: list[str], max_bytes: int) -> None:
    for i, s in enumerate(strings, 1):
        if len(s.encode("utf-8")) > max_bytes:
            fail(
                f"`{option}`: string {i} ({s[:32]!r}...) must be at most max_bytes = "
                f"{max_bytes} bytes in UTF-8, got {len(s.encode('utf-8'))}."
            )


def simulate_sketch(
    target: Any,
    *,
    mechanism: str,
    out: str,
    devices: int | None,
    candidates: str | None,
    values: str | None,
    epsilon: float | None,
    others: dict[str, Any],
    shape: dict[str, int | None],
    seed: int,
    limits: tuple[int, int],
    as_json: bool,
) -> None:
    """Simulate devices of a CMS or HCMS into the report file ``target`` (claimed) and
    print it; ``others``: options of other mechanisms (refused when given); ``shape``: the
    sketch's ``k``, ``m`` and ``salt`` (``None``: the default); ``limits``: the most devices
    and the most bytes of the file."""
    import numpy as np

    from deniable.oracles import CMS, HCMS, write_report_batches
    from deniable.simulation import DevicePopulation

    max_devices, max_bytes = limits
    given = [f"`--{name}`" for name, x in others.items() if x is not None]
    if given:
        fail(
            f"{', '.join(given)} do not apply to `--mechanism {mechanism}`: its parameters "
            "are --epsilon, --sketch-rows, --sketch-columns and --salt."
        )
    if target.format != "reports":
        try:
            import pyarrow  # noqa: F401 - checked here so the error names the extra
        except ImportError:
            fail(
                f"`--format {target.format}` needs pyarrow, of the [dask] extra: "
                "pip install 'deniable[dask]'."
            )
    if epsilon is None:
        fail(f"`--epsilon` must be given for `--mechanism {mechanism}`.")
    gen = np.random.default_rng(seed)
    salt = shape["salt"] if shape["salt"] is not None else int(gen.integers(1 << 32))
    k = shape["k"] if shape["k"] is not None else SKETCH_DEFAULTS["k"]
    m = shape["m"] if shape["m"] is not None else SKETCH_DEFAULTS["m"]
    cls = CMS if mechanism == "cms" else HCMS
    sketch: Any = cls(k=k, m=m, epsilon=epsilon, salt=salt)  # a bad parameter: one error line
    strings, n = _device_strings(candidates, values, devices, mechanism)
    _check_lengths("--values" if values else "--candidates", strings, sketch.max_bytes)
    if n > max_devices:
        fail(f"`--devices` must be at most {max_devices:,}, got {n}.")
    record = 2 + sketch.width if mechanism == "cms" else 8
    if n * record > max_bytes:
        fail(
            f"`--devices` {n} reports of {record} bytes ({mechanism}, m = {m}) would make a "
            f"report file larger than {max_bytes >> 30} GiB; simulate fewer devices."
        )
    pool = np.asarray(strings, dtype=object)
    population = DevicePopulation.zipf(len(strings)) if values is None else None

    def batches() -> Any:
        for start in range(0, n, _BATCH):
            size = min(_BATCH, n - start)
            if population is not None:  # Zipf's law over the candidates, in their order
                batch_values = pool[population.draw(size, rng=gen)]
            else:
                batch_values = pool[start : start + size]
            yield sketch.randomize(batch_values.tolist(), rng=gen)

    def write(tmp: Any, progress: Any) -> Any:
        if target.format == "reports":
            return write_report_batches(tmp, sketch, n, batches(), progress=progress)
        from deniable.distributed import write_report_table

        # CMS: the row column, then the packed bits; HCMS: one column (distributed._tables)
        return write_report_table(tmp, sketch, n, batches(), format=target.format,
                                  progress=progress)  # fmt: skip

    with guard_io(f"write {out!r}"), progress_bar(not as_json, f"writing {out}") as progress:
        path = target.write(lambda tmp: write(tmp, progress))
    data = {
        "file": str(out),
        "format": target.format,
        "devices": n,
        "mechanism": sketch.key,
        "epsilon": float(sketch.epsilon),
        "implemented_epsilon": float(sketch.implemented_epsilon),
        "salt": salt,
        "strings": "zipf over --candidates" if values is None else "--values",
        "seed": seed,
        "bytes": Path(path).stat().st_size,
    }
    if as_json:
        emit_json(to_jsonable(data))
        return
    shown = {**data, "mechanism": mechanism, "epsilon": format_epsilon(sketch.epsilon),
             "implemented_epsilon": format_epsilon(sketch.implemented_epsilon)}  # fmt: skip
    notes = (f"k = {k} rows, m = {m} columns, salt {salt}", _epsilon_note(sketch))
    print_table(Table.pairs(shown.items(), title=f"simulated {mechanism.upper()} reports",
                            notes=notes))  # fmt: skip


def aggregate_sketch(
    file: str,
    key: str,
    *,
    candidates: str | None,
    batch: int,
    rows: int | None,
    level: float,
    table_rows: int,
    as_json: bool,
) -> None:
    """Tally a sketch's report file and estimate the share of each string of
    ``candidates`` (the first ``rows`` shown, all with ``--json``)."""
    from deniable.oracles import sketch_from_key, tally_file

    sketch = sketch_from_key(key)
    cand = sketch_candidates(sketch, candidates, file)
    with guard_io(f"read {file!r}"), progress_bar(not as_json, f"reading {file}") as progress:
        tally = tally_file(sketch, file, batch=batch, progress=progress)
    show_sketch(sketch, tally, cand, file=file, rows=rows, level=level, table_rows=table_rows,
                as_json=as_json)  # fmt: skip


def sketch_candidates(sketch: Any, candidates: str | None, file: str) -> list[str]:
    """The strings of ``candidates`` to estimate ``sketch``'s reports of ``file`` for,
    checked (given, distinct, at most ``max_bytes`` each) before any report is read."""
    if candidates is None:
        fail(
            f"`--candidates` FILE (one candidate string a line) is needed to estimate from "
            f"the {sketch.name.upper()} reports of {file!r}: a sketch counts hashed columns, "
            "not strings."
        )
    cand = read_lines("--candidates", candidates, distinct=True)
    _check_lengths("--candidates", cand, sketch.max_bytes)
    return cand


def show_sketch(
    sketch: Any, tally: Any, cand: list[str], *, file: str, rows: int | None, level: float,
    table_rows: int, as_json: bool,
) -> None:  # fmt: skip
    """Estimate the share of each of ``cand`` from ``sketch``'s tally (of a report file,
    report tables) and print it (the first ``rows``, all with ``--json``)."""
    est = sketch.estimate(tally, cand)
    if as_json:
        eps = {"epsilon": sketch.epsilon, "implemented_epsilon": sketch.implemented_epsilon}
        data = {"file": file, **eps, **est.to_dict(level)}
        emit_json(to_jsonable(data))
        return
    table = est.table(level)
    shown = table_rows if rows is None else rows
    more = len(table.rows) - min(shown, len(table.rows))
    notes = (
        *((f"... {more} more candidates (--rows, or --json for all)",) if more else ()),
        *table.notes,
        _epsilon_note(sketch),
    )
    print_table(Table(table.columns, table.rows[:shown], title=table.title, notes=notes))
