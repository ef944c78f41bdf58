"""`deniable telemetry`: frequency oracles for telemetry (``docs/telemetry.md``).

``choose`` ranks the oracles by their exact variance for ``--k``, ``--epsilon`` and ``--n``;
``simulate`` writes a report file, or a Parquet or CSV report table, of simulated devices
(seeded; a progress bar on a terminal; RAPPOR's strings: ``_telemetry_rappor``; the count
mean sketches': ``_telemetry_sketch``);
``aggregate`` (``_telemetry_aggregate``) tallies a report file in batches or report
tables on a Dask cluster and prints every frequency with its SE (for a sampled population;
``--json`` also gives the fixed-population SE of Wang et al. 2017) and intervals.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from deniable.cli._base import fail
from deniable.cli._files import claim_output
from deniable.cli._options import (
    NO_OPTIONS,
    ForceOpt,
    JsonOpt,
    SeedOpt,
    fresh_seed,
    mechanism_option,
    passed_on,
)
from deniable.cli._render import show
from deniable.cli._telemetry_aggregate import MAX_ROWS, aggregate_command
from deniable.cli._telemetry_discovery import (
    DISCOVERY,
    AlphabetOpt,
    FragmentShareOpt,
    GramOpt,
    MaxLengthOpt,
    PairsOpt,
    PuzzleBitsOpt,
    SketchKindOpt,
    not_discovery,
    simulate_discovery,
)
from deniable.cli._telemetry_heavy import (
    HEAVY,
    MaxBytesOpt,
    StartBitsOpt,
    StepBitsOpt,
    not_heavy,
    simulate_heavy,
)
from deniable.cli._telemetry_oracle import simulate_oracle
from deniable.cli._telemetry_ranges import (
    ORDERED,
    BinsOpt,
    BranchingOpt,
    DomainOpt,
    LevelOracleOpt,
    LowerOpt,
    UpperOpt,
    not_ordered,
    simulate_ordered,
)
from deniable.cli._telemetry_rappor import (
    RAPPOR,
    CandidatesOpt,
    CohortsOpt,
    FOpt,
    HOpt,
    MOpt,
    POpt,
    QOpt,
    ValuesOpt,
    check_simulate_options,
    simulate_rappor,
)
from deniable.cli._telemetry_sketch import (
    SKETCHES,
    SaltOpt,
    SketchColumnsOpt,
    SketchRowsOpt,
    SpecVersionOpt,
    not_sketch,
    simulate_sketch,
)
from deniable.cli._telemetry_write import Simulation

__all__ = [
    "DISCOVERY_PARAMS",
    "FORMATS",
    "HEAVY_PARAMS",
    "MAX_ROWS",
    "MECHANISMS",
    "ORDERED_PARAMS",
    "RAPPOR_PARAMS",
    "SKETCH_SHAPE",
    "cli",
    "telemetry_app",
]

#: The mechanisms ``simulate`` takes, by their ``--mechanism`` name: the library's registry
#: (``deniable.oracles.FREQUENCY_ORACLES``, written out here so that ``--help`` imports none
#: of the library; a test keeps the two equal).
MECHANISMS = (
    "grr", "sue", "oue", "blh", "olh", "olh-linear", "hadamard", "subset",
    "l-grr", "l-sue", "l-oue", "l-osue", "loloha",
)  # fmt: skip
#: The formats ``simulate`` writes: a report file (``DNRP``) or a report table.
FORMATS = ("reports", "parquet", "csv")
#: The largest report file ``simulate`` writes (16 GiB) and the most devices.
MAX_FILE_BYTES = 1 << 34
MAX_DEVICES = 10**9

telemetry_app = typer.Typer(
    name="telemetry",
    help=(
        "Frequency oracles for telemetry: choose one, simulate devices into a report file, "
        "aggregate a report file in batches."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

KOpt = Annotated[int, typer.Option("--k", min=2, help="Number of values (categories), >= 2.")]
EpsOpt = Annotated[float, typer.Option("--epsilon", help="The epsilon of one report, > 0.")]

#: The options of each family of mechanisms, which simulate passes on as given (option
#: name to value): RAPPOR's, the count mean sketches', PEM's and TreeHist's, those of the
#: mechanisms of ordered values, SFP's and RAPPOR n-grams'.
RAPPOR_PARAMS = passed_on(m=MOpt, h=HOpt, cohorts=CohortsOpt, f=FOpt, p=POpt, q=QOpt)
SKETCH_SHAPE = passed_on(
    sketch_rows=SketchRowsOpt,
    sketch_columns=SketchColumnsOpt,
    salt=SaltOpt,
    spec_version=SpecVersionOpt,
)
HEAVY_PARAMS = passed_on(max_bytes=MaxBytesOpt, start_bits=StartBitsOpt, step_bits=StepBitsOpt)
ORDERED_PARAMS = passed_on(domain=DomainOpt, branching=BranchingOpt, level_oracle=LevelOracleOpt,
                           lower=LowerOpt, upper=UpperOpt, bins=BinsOpt)  # fmt: skip
DISCOVERY_PARAMS = passed_on(alphabet=AlphabetOpt, max_length=MaxLengthOpt,
                             puzzle_bits=PuzzleBitsOpt, fragment_share=FragmentShareOpt,
                             sketch=SketchKindOpt, gram=GramOpt, pairs=PairsOpt)  # fmt: skip


@telemetry_app.command("choose")
def choose_command(
    k: KOpt,
    epsilon: EpsOpt,
    n: Annotated[
        int, typer.Option("--n", min=1, help="Number of reports (sets the printed SEs).")
    ] = 1_000_000,
    as_json: JsonOpt = False,
) -> None:
    """Rank the frequency oracles by exact variance and say which to use and why."""
    from deniable.oracles import choose_oracle

    show(choose_oracle(epsilon, k, n), as_json)


@telemetry_app.command("simulate")
@RAPPOR_PARAMS.expand("rappor_params")
@SKETCH_SHAPE.expand("shape")
@HEAVY_PARAMS.expand("heavy")
@ORDERED_PARAMS.expand("ordered")
@DISCOVERY_PARAMS.expand("found")
def simulate_command(
    out: Annotated[
        str,
        typer.Option(
            "--out",
            help="The file to write: FILE.dnrp (a report file), FILE.parquet (or .pq), or "
            "FILE.csv (also .csv.gz, .csv.bz2, .csv.zst: compressed).",
            show_default=False,
        ),
    ],
    devices: Annotated[
        int | None,
        typer.Option(
            "--devices",
            min=1,
            help="Number of devices (with RAPPOR's --values: its lines).",
            show_default=False,
        ),
    ] = None,
    k: Annotated[
        int | None,
        mechanism_option("--k", "Number of values (categories), >= 2; not for RAPPOR.", min=2),
    ] = None,
    epsilon: Annotated[
        float | None,
        mechanism_option(
            "--epsilon",
            "The epsilon of one report, > 0; not for RAPPOR (its epsilons follow from --h, "
            "--f, --p, --q).",
        ),
    ] = None,
    mechanism: Annotated[
        str,
        typer.Option(
            "--mechanism",
            help=f"The oracle: {', '.join(MECHANISMS)}, {RAPPOR}, a count mean sketch of "
            f"strings: {', '.join(SKETCHES)}, heavy hitters: {', '.join(HEAVY + DISCOVERY)}, "
            f"or ranges and distributions of numbers: {', '.join(ORDERED)}.",
        ),
    ] = "olh",
    candidates: CandidatesOpt = None,
    values: ValuesOpt = None,
    rappor_params: dict[str, Any] = NO_OPTIONS,
    shape: dict[str, Any] = NO_OPTIONS,
    heavy: dict[str, Any] = NO_OPTIONS,
    ordered: dict[str, Any] = NO_OPTIONS,
    found: dict[str, Any] = NO_OPTIONS,
    seed: SeedOpt = None,
    file_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="reports (a report file), parquet or csv (a report table for `aggregate` "
            "on a Dask cluster); default: the one the suffix of --out names (.dnrp, "
            ".parquet, .csv, ...); a suffix that names another format is an error.",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Simulate devices (values 0..k-1, frequencies proportional to 1/(j+1)) and write their
    reports to a report file, or a Parquet or CSV report table.

    RAPPOR (--mechanism rappor) simulates strings, drawn by Zipf's law over --candidates or
    read from --values, into a report file or a report table (a cohort column, then the
    packed bits).  The count mean sketches (--mechanism cms or hcms) simulate strings the
    same way into a report file, with --epsilon, --sketch-rows, --sketch-columns, --salt
    (and CMS's --spec-version, 1 or 2); the heavy-hitter protocols (--mechanism pem or
    treehist) with --epsilon, --max-bytes, --alphabet and PEM's --start-bits, --step-bits;
    SFP and RAPPOR's n-grams (--mechanism sfp or rappor-ngram) with --alphabet, --max-length
    and their own (docs/heavy-hitters.md); the range mechanisms (hierarchical-histogram,
    haar-hrr: --domain values by Zipf's law) and square-wave (Beta(2, 5) numbers on
    [--lower, --upper]) with --epsilon and their own options."""

    from deniable import oracles as o
    from deniable.distributed import CSV_SUFFIXES

    if mechanism not in (*o.FREQUENCY_ORACLES, RAPPOR, *SKETCHES, *HEAVY, *ORDERED, *DISCOVERY):
        fail(
            f"`--mechanism` must be one of {', '.join(o.FREQUENCY_ORACLES)}, "
            f"{', '.join(ORDERED)}, {', '.join(DISCOVERY)}, {', '.join(SKETCHES)}, "
            f"{', '.join(HEAVY)}, {RAPPOR}, got {mechanism!r}."
        )
    if mechanism not in ORDERED:  # the ranges and Square Wave check their own
        not_ordered(mechanism, ordered)
    if mechanism not in DISCOVERY:  # SFP and RAPPOR n-grams check their own (_discovery)
        if mechanism not in HEAVY and found["alphabet"] is not None:  # PEM's, TreeHist's too
            fail(f"`--alphabet` applies to `--mechanism` {', '.join(DISCOVERY + HEAVY)} only, "
                 f"got {mechanism!r}.")  # fmt: skip
        not_discovery(mechanism, {n: x for n, x in found.items() if n != "alphabet"})
    if mechanism not in HEAVY:  # PEM and TreeHist check their own (_telemetry_heavy)
        not_heavy(mechanism, heavy)
    if mechanism not in (*SKETCHES, *DISCOVERY):  # the sketches check their own
        not_sketch(mechanism, shape)
    if mechanism not in (*SKETCHES, *HEAVY, *ORDERED, *DISCOVERY):
        check_simulate_options(mechanism, rappor_params, candidates=candidates, values=values,
                               devices=devices, k=k, epsilon=epsilon)  # fmt: skip
    target = claim_output(
        "--out",
        out,
        force=force,
        formats={"reports": (".dnrp",), "parquet": (".parquet", ".pq"), "csv": CSV_SUFFIXES},
        format=file_format,
        format_option="--format",
        inputs=[("--candidates", candidates), ("--values", values)],
    )
    file_format = target.format
    run = Simulation(target, out, devices, candidates, values,
                     seed=fresh_seed() if seed is None else seed, max_devices=MAX_DEVICES,
                     max_bytes=MAX_FILE_BYTES, as_json=as_json)  # fmt: skip
    if mechanism == RAPPOR:  # strings through a Bloom filter (_telemetry_rappor)
        return simulate_rappor(run, params=rappor_params)
    if mechanism in SKETCHES:  # strings through a keyed hash into a sketch (_telemetry_sketch)
        dims = {"k": shape["sketch-rows"], "m": shape["sketch-columns"], "salt": shape["salt"],
                "spec_version": shape["spec-version"]}  # fmt: skip
        return simulate_sketch(run, mechanism=mechanism, epsilon=epsilon,
                               others={"k": k, **rappor_params}, shape=dims)  # fmt: skip
    if mechanism in ORDERED:  # values of an ordered domain, numbers (_telemetry_ranges)
        return simulate_ordered(run, mechanism=mechanism, epsilon=epsilon, params=ordered,
                                others={"k": k, **rappor_params})  # fmt: skip
    if mechanism in DISCOVERY:  # strings from their fragments (_telemetry_discovery)
        return simulate_discovery(run, mechanism=mechanism, options={
            **found, **shape, **rappor_params, "epsilon": epsilon, "k": k})  # fmt: skip
    if mechanism in HEAVY:  # strings, prefix by prefix (_telemetry_heavy)
        return simulate_heavy(run, mechanism=mechanism, epsilon=epsilon,
                              others={"k": k, **rappor_params},
                              params={**heavy, "alphabet": found["alphabet"]})  # fmt: skip
    assert devices is not None and k is not None and epsilon is not None
    simulate_oracle(run, mechanism=mechanism, devices=devices, k=k, epsilon=epsilon)


telemetry_app.command("aggregate")(aggregate_command)

#: ``deniable aggregate``: the same command at the top level (the name the issue and the
#: docs use for the job a telemetry pipeline runs every day).
cli = typer.Typer()
cli.command("aggregate")(aggregate_command)
