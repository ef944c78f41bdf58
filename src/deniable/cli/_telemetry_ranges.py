"""The mechanisms of ordered values on the command line: ``deniable telemetry simulate
--mechanism hierarchical-histogram|haar-hrr|square-wave`` and ``aggregate`` of their report
files and tables (``docs/ranges.md``, ``docs/distributions.md``).

``simulate`` draws each device's value (the range mechanisms: ``0..D-1`` by Zipf's law,
frequencies proportional to ``1 / (j + 1)``, as for the frequency oracles; Square Wave:
``lower + (upper - lower) X`` with ``X ~ Beta(2, 5)``), randomizes it with the library's
mechanism and writes a report file or a report table.  ``aggregate`` tallies them and
answers ``--range A:B`` (the share of the values in ``[A, B]``, with its SE and a normal
interval) and ``--quantile Q`` (with the interval of the CDF band's inversion) for the range
mechanisms; for Square Wave it prints the mean (the unbiased moment mean with its Wald
interval, and EMS's mean) and the quantiles, with parametric-bootstrap intervals on
``--replicates`` replicates (default 200) drawn from ``--seed`` (default a fresh seed, printed),
both refused for the reports of another mechanism.
"""

from __future__ import annotations

from typing import Annotated, Any

from deniable.cli._base import fail, guard_io, refuse_for_reports, refuse_options
from deniable.cli._files import progress_bar
from deniable.cli._options import fresh_seed, mechanism_option
from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_range_answers import (
    WAVE,
    check_queries,
    epsilon_note,
    show_ordered,
)
from deniable.cli._telemetry_write import Simulation
from deniable.common import format_epsilon, to_jsonable
from deniable.exceptions import DeniableError
from deniable.results import Table

__all__ = [
    "ORDERED",
    "RANGES",
    "BinsOpt",
    "BranchingOpt",
    "DomainOpt",
    "LevelOracleOpt",
    "LowerOpt",
    "QuantileOpt",
    "RangeOpt",
    "ReplicatesOpt",
    "UpperOpt",
    "aggregate_ordered",
    "aggregate_ordered_tables",
    "not_ordered",
    "not_ordered_query",
    "simulate_ordered",
    "wave_bootstrap",
]

#: ``simulate --mechanism``: the range mechanisms over ``0..D-1``, and Square Wave.
RANGES = ("hierarchical-histogram", "haar-hrr")
ORDERED = (*RANGES, WAVE)
#: Devices randomized at once, and the most bytes of their reports (a level oracle of
#: 2**24 values writes 2 MB a report).
_BATCH = 1 << 16
_BATCH_BYTES = 1 << 25

DomainOpt = Annotated[
    int | None,
    mechanism_option(
        "--domain",
        help="hierarchical-histogram/haar-hrr only: the values 0..D-1, D a power of "
        "--branching (of 2 for haar-hrr), at most 2**24.",
    ),
]
BranchingOpt = Annotated[
    int | None,
    mechanism_option(
        "--branching",
        help="hierarchical-histogram only: the tree's branching factor B >= 2 (default 2).",
    ),
]
LevelOracleOpt = Annotated[
    str | None,
    mechanism_option(
        "--level-oracle",
        help="hierarchical-histogram only: the oracle of each level, grr, oue, olh or "
        "hadamard (default oue).",
    ),
]
LowerOpt = Annotated[
    float | None,
    mechanism_option("--lower", help="square-wave only: the values' lower bound (default 0)."),
]
UpperOpt = Annotated[
    float | None,
    mechanism_option("--upper", help="square-wave only: the values' upper bound (default 1)."),
]
BinsOpt = Annotated[
    int | None,
    mechanism_option(
        "--bins",
        help="square-wave only: bins of the estimated distribution, 2..4096 (default 256).",
    ),
]
RangeOpt = Annotated[
    list[str] | None,
    mechanism_option(
        "--range",
        help="hierarchical-histogram/haar-hrr reports: the share of the values in [A, B], "
        "given as A:B (repeat for more).",
    ),
]
QuantileOpt = Annotated[
    list[float] | None,
    mechanism_option(
        "--quantile",
        help="hierarchical-histogram/haar-hrr/square-wave reports: the Q-quantile, Q in (0, 1] "
        "(repeat for more; default the quartiles when no --range is given).",
    ),
]
ReplicatesOpt = Annotated[
    int | None,
    mechanism_option(
        "--replicates",
        help="square-wave reports only: the parametric-bootstrap replicates behind the "
        "intervals of the EMS mean and the quantiles, 2..100000 (default 200; the time "
        "grows with it).",
    ),
]
#: The replicates of Square Wave's bootstrap when ``--replicates`` is not given, and the seed
#: of the library's own default (what a caller that gives no bootstrap gets).
DEFAULT_BOOTSTRAP = (200, 0)


def wave_bootstrap(mechanism: str, replicates: int | None, seed: int | None) -> tuple[int, int]:
    """``(replicates, seed)`` of Square Wave's bootstrap from ``--replicates`` (200 when not
    given) and ``--seed`` (a fresh seed, printed with the answers, when not given), checked
    before any report is read; both are refused for the reports of another ``mechanism``."""
    from deniable.oracles import BOOTSTRAP_REPLICATES

    if mechanism != WAVE:
        refuse_options({"replicates": replicates, "seed": seed}, f"{WAVE} reports", mechanism)
    least, most = BOOTSTRAP_REPLICATES
    if replicates is not None and not least <= replicates <= most:
        fail(f"`--replicates` must be an integer in [{least}, {most}], got {replicates}.")
    if seed is not None and seed < 0:
        fail(f"`--seed` must be a whole number >= 0, got {seed}.")
    return (
        DEFAULT_BOOTSTRAP[0] if replicates is None else replicates,
        fresh_seed() if seed is None else seed,
    )


def not_ordered(mechanism: str, given: dict[str, Any]) -> None:
    """Refuse the options of the mechanisms of ordered values for another mechanism."""
    refuse_options(given, f"`--mechanism` {', '.join(ORDERED)}", mechanism)


def not_ordered_query(what: str, ranges: list[str] | None, quantiles: list[float] | None) -> None:
    """Refuse ``--range`` and ``--quantile`` for reports (``what``) of another mechanism."""
    named = [f"`--{n}`" for n, x in (("range", ranges), ("quantile", quantiles)) if x]
    if named:
        fail(
            f"{', '.join(named)} apply to the reports of {', '.join(ORDERED)} only; {what!r} "
            "holds the reports of another mechanism."
        )


def _mechanism(mechanism: str, epsilon: float | None, params: dict[str, Any]) -> Any:
    """The mechanism of the options; one error line for a missing or a foreign option (the
    library names a bad value)."""
    from deniable.oracles import HaarHRR, HierarchicalHistogram, SquareWave

    own = {
        "hierarchical-histogram": ("domain", "branching", "level-oracle"),
        "haar-hrr": ("domain",),
        WAVE: ("lower", "upper", "bins"),
    }[mechanism]
    foreign = [f"`--{n}`" for n, x in params.items() if x is not None and n not in own]
    if foreign:
        fail(
            f"{', '.join(foreign)} do not apply to `--mechanism {mechanism}`: its parameters "
            f"are --epsilon{''.join(f', --{n}' for n in own)}."
        )
    needed = ("epsilon",) if mechanism == WAVE else ("epsilon", "domain")
    missing = [f"`--{n}`" for n in needed if {**params, "epsilon": epsilon}[n] is None]
    if missing:
        fail(f"{', '.join(missing)} must be given for `--mechanism {mechanism}`.")
    try:
        if mechanism == WAVE:
            lower = 0.0 if params["lower"] is None else params["lower"]
            upper = 1.0 if params["upper"] is None else params["upper"]
            bins = 256 if params["bins"] is None else params["bins"]
            return SquareWave(epsilon, lower=lower, upper=upper, bins=bins)  # type: ignore[arg-type]
        if mechanism == "haar-hrr":
            return HaarHRR(params["domain"], epsilon)  # type: ignore[arg-type]
        branching = 2 if params["branching"] is None else params["branching"]
        oracle = "oue" if params["level-oracle"] is None else params["level-oracle"]
        hh = HierarchicalHistogram(params["domain"], branching, epsilon, oracle=oracle)  # type: ignore[arg-type]
    except DeniableError as exc:  # the library's message, naming the options
        message = str(exc)
        for name, option in _OPTIONS.items():
            message = message.replace(f"`{name}`", f"`--{option}`")
        fail(message)
    try:  # the level oracles are built when first used: the largest is D values
        hh.levels  # noqa: B018
    except DeniableError as exc:
        fail(
            f"`--domain` {hh.domain} is too large for `--level-oracle` {hh.oracle} (its "
            f"last level is an oracle of D values): {exc}"
        )
    return hh


#: The library's parameter names and the options that give them.
_OPTIONS = {"domain": "domain", "branching": "branching", "oracle": "level-oracle",
            "lower": "lower", "upper": "upper", "bins": "bins", "epsilon": "epsilon",
            "requested_epsilon": "epsilon"}  # fmt: skip


def simulate_ordered(
    run: Simulation, *, mechanism: str, epsilon: float | None, params: dict[str, Any],
    others: dict[str, Any],
) -> None:  # fmt: skip
    """Simulate devices of a range mechanism or Square Wave into the report file or table
    of ``run`` and print it; ``params``: this group's options by name (``None``: not
    given); ``others``: options of other mechanisms (refused when given)."""
    import numpy as np

    given = [f"`--{name}`" for name, x in others.items() if x is not None]
    given += [n for n, x in (("`--candidates`", run.candidates), ("`--values`", run.values)) if x]
    if given:
        fail(
            f"{', '.join(given)} do not apply to `--mechanism {mechanism}` (its devices' "
            "values are drawn: give --devices)."
        )
    if run.devices is None:
        fail(f"`--devices` must be given for `--mechanism {mechanism}`.")
    mech = _mechanism(mechanism, epsilon, params)
    run.require_pyarrow()
    n = run.devices
    run.check_devices(n)
    record = _record_bytes(mech)
    run.check_file_size(n, record, f"{mechanism}, {record} bytes a report")
    gen = np.random.default_rng(run.seed)
    if mechanism == WAVE:
        scale = mech.upper - mech.lower
        drawn = f"lower + (upper - lower) Beta(2, 5) on [{mech.lower:g}, {mech.upper:g}]"
    else:
        from deniable.simulation import DevicePopulation

        population = DevicePopulation.zipf(mech.domain)
        drawn = f"zipf over 0..{mech.domain - 1}"

    step = max(1, min(_BATCH, _BATCH_BYTES // record))

    def batches() -> Any:  # values drawn _BATCH at a time, randomized `step` at a time
        for start in range(0, n, _BATCH):
            size = min(_BATCH, n - start)
            if mechanism == WAVE:  # clipped: lower + scale * x may round past upper
                x = np.minimum(mech.lower + scale * gen.beta(2.0, 5.0, size), mech.upper)
            else:
                x = population.draw(size, rng=gen)
            for first in range(0, size, step):
                yield mech.randomize(x[first : first + step], rng=gen)

    written = run.write(mech, n, batches())
    data = {
        "file": str(run.out), "format": run.target.format, "devices": n, "mechanism": mech.key,
        "epsilon": float(mech.epsilon), "implemented_epsilon": float(mech.implemented_epsilon),
        "values": drawn, "seed": run.seed, "bytes": written,
    }  # fmt: skip
    if run.as_json:
        emit_json(to_jsonable(data))
        return
    shown = {**data, "mechanism": mechanism, "epsilon": format_epsilon(mech.epsilon),
             "implemented_epsilon": format_epsilon(mech.implemented_epsilon)}  # fmt: skip
    title = f"simulated {mechanism} reports"
    print_table(Table.pairs(shown.items(), title=title, notes=(epsilon_note(mech),)))


def _record_bytes(mech: Any) -> int:
    from deniable.oracles import range_records

    if mech.name == WAVE:
        return 2
    import numpy as np

    one = mech.randomize(np.zeros(1, dtype=np.int64), rng=0)
    return int(range_records(mech, one).nbytes)


def _refuse(what: str, refused: dict[str, bool]) -> None:
    refuse_for_reports(what, refused, "the reports of a mechanism of ordered values (its "
                       "estimate takes --range, --quantile and --level).")  # fmt: skip


def aggregate_ordered(
    file: str, key: str, *, refused: dict[str, bool], ranges: list[str] | None,
    quantiles: list[float] | None, level: float, batch: int, as_json: bool,
    bootstrap: tuple[int, int] = DEFAULT_BOOTSTRAP,
) -> None:  # fmt: skip
    """Tally the report file of a range mechanism or Square Wave and answer the queries;
    ``refused``: options given that do not apply (``--candidates``, ...); ``bootstrap``:
    Square Wave's (:func:`wave_bootstrap`)."""
    from deniable.oracles import range_from_key, tally_file

    _refuse(file, refused)
    mech = range_from_key(key)
    pairs, qs = check_queries(mech, file, ranges, quantiles)
    with guard_io(f"read {file!r}"), progress_bar(not as_json, f"reading {file}") as progress:
        tally = tally_file(mech, file, batch=batch, progress=progress)
    show_ordered(mech, tally, pairs, qs, file=file, level=level, as_json=as_json,
                 bootstrap=bootstrap)  # fmt: skip


def aggregate_ordered_tables(
    tables: Any, mechanism: str | None, *, refused: dict[str, bool], ranges: list[str] | None,
    quantiles: list[float] | None, level: float, scheduler: Any, batch: int,
    local_workers: int, as_json: bool, bootstrap: tuple[int, int] = DEFAULT_BOOTSTRAP,
) -> None:  # fmt: skip
    """The same for report tables (``_telemetry_tables.TableSource``), tallied on the Dask
    cluster ``scheduler`` names."""
    from deniable.oracles import range_from_key

    _refuse(tables.label, refused)
    pairs, qs = check_queries(tables.oracle, tables.label, ranges, quantiles)
    tally = tables.tally(mechanism, scheduler=scheduler, batch=batch,
                         local_workers=local_workers, as_json=as_json)  # fmt: skip
    mech = range_from_key(tally.mechanism or "")
    show_ordered(mech, tally, pairs, qs, file=tables.label, level=level, as_json=as_json,
                 bootstrap=bootstrap)  # fmt: skip
