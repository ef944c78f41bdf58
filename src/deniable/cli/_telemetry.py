"""`deniable telemetry`: frequency oracles for telemetry (``docs/telemetry.md``).

``choose`` ranks the oracles by their exact variance for ``--k``, ``--epsilon`` and ``--n``;
``simulate`` writes a report file, or a Parquet or CSV report table, of simulated devices
(seeded; a progress bar on a terminal; RAPPOR's strings: ``_telemetry_rappor``; the count
mean sketches': ``_telemetry_sketch``);
``aggregate`` tallies a report file in batches
(memory O(k) plus one batch, a progress bar), or report tables on a Dask cluster (a local
one by default, ``--scheduler ADDRESS`` for an existing one; ``deniable.distributed``), and
prints every frequency with its SE (for a sampled population; ``--json`` also gives the
fixed-population SE of Wang et al. 2017) and intervals; RAPPOR's reports are decoded against
``--candidates`` (``_telemetry_rappor``), the sketches' estimated for them
(``_telemetry_sketch``); report tables and a telemetry stream's days (``--stream-root``,
``--stream``) are found in ``_telemetry_tables``.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from deniable.cli._base import fail, guard_io
from deniable.cli._files import claim_output, progress_bar
from deniable.cli._options import ForceOpt, JsonOpt, LevelOpt, SeedOpt, fresh_seed
from deniable.cli._render import emit_json, print_table, show
from deniable.cli._telemetry_discovery import (
    DISCOVERY,
    AlphabetOpt,
    EdgeThresholdOpt,
    FragmentShareOpt,
    GramOpt,
    MaxLengthOpt,
    PairsOpt,
    PuzzleBitsOpt,
    SketchKindOpt,
    aggregate_discovery,
    aggregate_discovery_tables,
    not_discovery,
    simulate_discovery,
)
from deniable.cli._telemetry_heavy import (
    HEAVY,
    MaxBytesOpt,
    StartBitsOpt,
    StepBitsOpt,
    TopKOpt,
    aggregate_heavy,
    aggregate_heavy_tables,
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
    QuantileOpt,
    RangeOpt,
    UpperOpt,
    aggregate_ordered,
    aggregate_ordered_tables,
    not_ordered,
    not_ordered_query,
    simulate_ordered,
)
from deniable.cli._telemetry_rappor import (
    RAPPOR,
    AlphaOpt,
    CandidatesOpt,
    CohortsOpt,
    FOpt,
    HOpt,
    MethodOpt,
    MOpt,
    PenaltyOpt,
    POpt,
    QOpt,
    ValuesOpt,
    aggregate_rappor,
    check_simulate_options,
    decode_rappor,
    not_rappor,
    rappor_candidates,
    simulate_rappor,
)
from deniable.cli._telemetry_sketch import (
    SKETCHES,
    SaltOpt,
    SketchColumnsOpt,
    SketchRowsOpt,
    aggregate_sketch,
    not_rappor_decoder,
    not_sketch,
    show_sketch,
    simulate_sketch,
    sketch_candidates,
)
from deniable.cli._telemetry_tables import (
    EndOpt,
    StartOpt,
    StreamOpt,
    StreamRootOpt,
    table_source,
)
from deniable.cli._telemetry_write import Simulation

__all__ = ["FORMATS", "MAX_ROWS", "MECHANISMS", "cli", "telemetry_app"]

#: The mechanisms ``simulate`` takes, by their ``--mechanism`` name: the library's registry
#: (``deniable.oracles.FREQUENCY_ORACLES``, written out here so that ``--help`` imports none
#: of the library; a test keeps the two equal).
MECHANISMS = (
    "grr", "sue", "oue", "blh", "olh", "olh-linear", "hadamard", "subset",
    "l-grr", "l-sue", "l-oue", "l-osue", "loloha",
)  # fmt: skip
#: The formats ``simulate`` writes: a report file (``DNRP``) or a report table.
FORMATS = ("reports", "parquet", "csv")
#: Categories ``aggregate`` prints by default (a table), and the most it prints (``--rows``,
#: or every category with ``--json``).
TABLE_ROWS = 32
MAX_ROWS = 1 << 16
#: The most local Dask workers ``aggregate --local-workers`` starts.
MAX_LOCAL_WORKERS = 64
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
        typer.Option(
            "--k",
            min=2,
            help="Number of values (categories), >= 2; not for RAPPOR.",
            show_default=False,
        ),
    ] = None,
    epsilon: Annotated[
        float | None,
        typer.Option(
            "--epsilon",
            help="The epsilon of one report, > 0; not for RAPPOR (its "
            "epsilons follow from --h, --f, --p, --q).",
            show_default=False,
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
    bloom_bits: MOpt = None,
    hashes: HOpt = None,
    cohorts: CohortsOpt = None,
    prr_f: FOpt = None,
    irr_p: POpt = None,
    irr_q: QOpt = None,
    sketch_rows: SketchRowsOpt = None,
    sketch_columns: SketchColumnsOpt = None,
    salt: SaltOpt = None,
    max_bytes: MaxBytesOpt = None,
    start_bits: StartBitsOpt = None,
    step_bits: StepBitsOpt = None,
    domain: DomainOpt = None,
    branching: BranchingOpt = None,
    level_oracle: LevelOracleOpt = None,
    lower: LowerOpt = None,
    upper: UpperOpt = None,
    bins: BinsOpt = None,
    alphabet: AlphabetOpt = None,
    max_length: MaxLengthOpt = None,
    puzzle_bits: PuzzleBitsOpt = None,
    fragment_share: FragmentShareOpt = None,
    sketch_kind: SketchKindOpt = None,
    gram: GramOpt = None,
    pairs: PairsOpt = None,
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
    same way into a report file, with --epsilon, --sketch-rows, --sketch-columns, --salt;
    the heavy-hitter protocols (--mechanism pem or treehist) with --epsilon, --max-bytes
    and PEM's --start-bits, --step-bits; SFP and RAPPOR's n-grams (--mechanism sfp or
    rappor-ngram) with --alphabet, --max-length and their own (docs/heavy-hitters.md); the
    range mechanisms (hierarchical-histogram, haar-hrr: --domain values by Zipf's law) and
    square-wave (Beta(2, 5) numbers on [--lower, --upper]) with --epsilon and their own
    options."""

    from deniable import oracles as o
    from deniable.distributed import CSV_SUFFIXES

    if mechanism not in (*o.FREQUENCY_ORACLES, RAPPOR, *SKETCHES, *HEAVY, *ORDERED, *DISCOVERY):
        fail(
            f"`--mechanism` must be one of {', '.join(o.FREQUENCY_ORACLES)}, "
            f"{', '.join(ORDERED)}, {', '.join(DISCOVERY)}, {', '.join(SKETCHES)}, "
            f"{', '.join(HEAVY)}, {RAPPOR}, got {mechanism!r}."
        )
    heavy = {"max-bytes": max_bytes, "start-bits": start_bits, "step-bits": step_bits}
    rappor_params = {"m": bloom_bits, "h": hashes, "cohorts": cohorts, "f": prr_f,
                     "p": irr_p, "q": irr_q}  # fmt: skip
    shape = {"sketch-rows": sketch_rows, "sketch-columns": sketch_columns, "salt": salt}
    ordered = {"domain": domain, "branching": branching, "level-oracle": level_oracle,
               "lower": lower, "upper": upper, "bins": bins}  # fmt: skip
    if mechanism not in ORDERED:  # the ranges and Square Wave check their own
        not_ordered(mechanism, ordered)
    found = {"alphabet": alphabet, "max-length": max_length, "puzzle-bits": puzzle_bits,
             "fragment-share": fragment_share, "sketch": sketch_kind, "gram": gram,
             "pairs": pairs}  # fmt: skip
    if mechanism not in DISCOVERY:  # SFP and RAPPOR n-grams check their own (_discovery)
        not_discovery(mechanism, found)
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
        dims = {"k": sketch_rows, "m": sketch_columns, "salt": salt}
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
                              others={"k": k, **rappor_params}, params=heavy)  # fmt: skip
    assert devices is not None and k is not None and epsilon is not None
    simulate_oracle(run, mechanism=mechanism, devices=devices, k=k, epsilon=epsilon)


@telemetry_app.command("aggregate")
def aggregate_command(
    file: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE]",
            help="A report file, or Parquet or CSV (also .csv.gz, .csv.bz2, .csv.zst) report "
            "tables: a path, a glob, a directory or a URL dask reads; or none, with "
            "--stream-root and --stream.",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[
        int,
        typer.Option(
            "--batch",
            min=1024,
            help="Reports read at once (a partition of a table), >= 1024; at most 128 MB of "
            "them whatever this says.",
        ),
    ] = 1 << 20,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            help="Tally report tables on the existing Dask cluster of this scheduler "
            "(tcp://host:8786).",
            show_default=False,
        ),
    ] = None,
    local_workers: Annotated[
        int,
        typer.Option(
            "--local-workers",
            min=0,
            help="Worker processes of the local Dask cluster for report tables (0: no "
            f"cluster, in this process), at most {MAX_LOCAL_WORKERS}.",
        ),
    ] = 2,
    mechanism: Annotated[
        str | None,
        typer.Option(
            "--mechanism",
            help="The oracle's key or spec (JSON) for CSV tables; a Parquet table, a stream "
            "and a report file name their own (given, it must be theirs).",
            show_default=False,
        ),
    ] = None,
    stream_root: StreamRootOpt = None,
    stream: StreamOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    rows: Annotated[
        int | None,
        typer.Option(
            "--rows",
            min=0,
            help=f"Categories shown, the first ones (default: up to {TABLE_ROWS}; with --json "
            f"all of them, at most {MAX_ROWS:,}); only these are computed. At most "
            f"{MAX_ROWS:,}.",
        ),
    ] = None,
    candidates: CandidatesOpt = None,
    method: MethodOpt = "nnls",
    penalty: PenaltyOpt = None,
    alpha: AlphaOpt = 0.05,
    top_k: TopKOpt = None,
    ranges: RangeOpt = None,
    quantiles: QuantileOpt = None,
    edge_threshold: EdgeThresholdOpt = None,
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Tally a report file in batches, or report tables on a Dask cluster (memory O(k)), and
    estimate every frequency.

    A telemetry stream's days are report tables: --stream-root ROOT --stream ID [--start DAY]
    [--end DAY] instead of FILE.  Intervals and rows are computed for the categories shown
    only (--rows, at most 65,536).  RAPPOR's reports (a report file or tables) are decoded
    against --candidates; PEM's and TreeHist's give the strings found, without them; the
    range mechanisms' answer --range A:B and --quantile Q, Square Wave's give the mean and
    --quantile Q."""
    from deniable.oracles import (
        Rappor,
        is_range_key,
        oracle_from_key,
        read_report_key,
        sketch_from_key,
        tally_file,
    )

    if local_workers > MAX_LOCAL_WORKERS:
        fail(f"`--local-workers` must be at most {MAX_LOCAL_WORKERS}, got {local_workers}.")
    if rows is not None and rows > MAX_ROWS:
        fail(f"`--rows` must be at most {MAX_ROWS:,} (the categories shown), got {rows}.")
    refused = {"`--candidates`": candidates is not None, "`--rows`": rows is not None,
               "`--method`": method != "nnls", "`--penalty`": penalty is not None}  # fmt: skip
    heavy_opts = {"`--top-k`": top_k is not None, "`--alpha`": alpha != 0.05}
    tables = table_source(file, stream_root=stream_root, stream=stream, start=start, end=end,
                          mechanism=mechanism)  # fmt: skip
    if tables is None:
        assert file is not None
        if scheduler is not None or mechanism is not None:
            fail(
                "`--scheduler` and `--mechanism` apply to Parquet or CSV report tables; "
                f"`FILE` {file!r} is tallied as a report file in this process."
            )
        with guard_io(f"read {file!r}"):
            key = read_report_key(file)
        if key.partition("{")[0] not in DISCOVERY:
            not_discovery(key.partition("{")[0], {"edge-threshold": edge_threshold})
        if is_range_key(key):  # ranges, quantiles, distributions (_telemetry_ranges)
            return aggregate_ordered(file, key, refused={**refused, **heavy_opts},
                                     ranges=ranges, quantiles=quantiles, level=level,
                                     batch=batch, as_json=as_json)  # fmt: skip
        not_ordered_query(file, ranges, quantiles)
        if key.partition("{")[0] in DISCOVERY:  # strings from fragments, no dictionary
            return aggregate_discovery(file, key, refused={**refused, "`--top-k`": top_k
                                       is not None}, alpha=alpha, edge_threshold=edge_threshold,
                                       level=level, batch=batch, as_json=as_json)  # fmt: skip
        if key.partition("{")[0] in HEAVY:  # heavy hitters found, no dictionary
            return aggregate_heavy(file, key, refused=refused, top_k=top_k, alpha=alpha,
                                   level=level, batch=batch, as_json=as_json)  # fmt: skip
        not_heavy(key.partition("{")[0], {"top-k": top_k})
        if key.partition("{")[0] in SKETCHES:  # estimated for --candidates
            not_rappor_decoder(file, method, penalty, alpha)
            return aggregate_sketch(file, key, candidates=candidates, batch=batch, rows=rows,
                                    level=level, table_rows=TABLE_ROWS,
                                    as_json=as_json)  # fmt: skip
        if key.startswith(RAPPOR + "{"):  # decoded against --candidates
            return aggregate_rappor(file, key, candidates=candidates, method=method,
                                    penalty=penalty, alpha=alpha, batch=batch, rows=rows,
                                    level=level, table_rows=TABLE_ROWS,
                                    as_json=as_json)  # fmt: skip
        not_rappor(file, candidates, method, penalty, alpha)
        with guard_io(f"read {file!r}"):
            oracle = oracle_from_key(key)
            _check_json_rows(as_json, rows, int(oracle.k))  # before any report is read
            with progress_bar(not as_json, f"reading {file}") as progress:
                tally = tally_file(oracle, file, batch=batch, progress=progress)
    else:
        if scheduler is not None and "://" not in scheduler:
            fail(f"`--scheduler` must be an address like tcp://host:8786, got {scheduler!r}.")
        where: Any = scheduler if scheduler is not None else (
            None if local_workers else "synchronous"
        )  # fmt: skip
        cand = None
        name = getattr(tables.oracle, "name", None)
        if name not in DISCOVERY:
            not_discovery(str(name or "these reports"), {"edge-threshold": edge_threshold})
        if name in ORDERED:  # ranges, distributions
            return aggregate_ordered_tables(tables, mechanism,
                                            refused={**refused, **heavy_opts}, ranges=ranges,
                                            quantiles=quantiles, level=level, scheduler=where,
                                            batch=batch, local_workers=max(local_workers, 1),
                                            as_json=as_json)  # fmt: skip
        not_ordered_query(tables.label, ranges, quantiles)
        if name in DISCOVERY:  # tallies, then likelihoods
            return aggregate_discovery_tables(tables, refused={**refused, "`--top-k`": top_k
                                              is not None}, alpha=alpha, level=level,
                                              edge_threshold=edge_threshold, scheduler=where,
                                              batch=batch, local_workers=max(local_workers, 1),
                                              as_json=as_json)  # fmt: skip
        if getattr(tables.oracle, "name", None) in HEAVY:  # each round on the cluster
            return aggregate_heavy_tables(tables, refused=refused, top_k=top_k, alpha=alpha,
                                          level=level, scheduler=where, batch=batch,
                                          local_workers=max(local_workers, 1),
                                          as_json=as_json)  # fmt: skip
        not_heavy(str(getattr(tables.oracle, "name", "these reports")), {"top-k": top_k})
        if isinstance(tables.oracle, Rappor):  # the decoder's input checked before counting
            cand = rappor_candidates(tables.oracle, candidates, tables.label)
        elif getattr(tables.oracle, "name", None) in SKETCHES:  # likewise the sketch's
            not_rappor_decoder(tables.label, method, penalty, alpha)
            cand = sketch_candidates(tables.oracle, candidates, tables.label)
        else:
            not_rappor(tables.label, candidates, method, penalty, alpha)
        tally = tables.tally(mechanism, scheduler=where, batch=batch,
                             local_workers=max(local_workers, 1), as_json=as_json)  # fmt: skip
        if (tally.mechanism or "").partition("{")[0] in SKETCHES:  # --candidates checked above
            sketch = sketch_from_key(tally.mechanism or "")
            return show_sketch(sketch, tally, cand or sketch_candidates(sketch, candidates,
                               tables.label), file=tables.label, rows=rows, level=level,
                               table_rows=TABLE_ROWS, as_json=as_json)  # fmt: skip
        oracle = oracle_from_key(tally.mechanism or "")
        if isinstance(oracle, Rappor):  # decoded against --candidates (checked above)
            if cand is None:
                cand = rappor_candidates(oracle, candidates, tables.label)
            return decode_rappor(oracle, tally, cand, file=tables.label, method=method,
                                 penalty=penalty, alpha=alpha, rows=rows, level=level,
                                 table_rows=TABLE_ROWS, as_json=as_json)  # fmt: skip
    k = int(tally.counts.size) - 1
    _check_json_rows(as_json, rows, k)
    shown = (k if as_json else min(k, TABLE_ROWS)) if rows is None else min(rows, k)
    # only the categories shown are estimated with intervals: the work follows --rows, not k
    est = oracle.estimate(tally)
    if as_json:
        emit_json(est.to_dict(level, rows=None if shown == k else shown))
    else:  # a frequency oracle's or k-ary randomized response's (categorical) table
        print_table(est.table(level, shown))
    sys.stdout.flush()


def _check_json_rows(as_json: bool, rows: int | None, k: int) -> None:
    if as_json and rows is None and k > MAX_ROWS:
        fail(
            f"`--json` prints every category, at most {MAX_ROWS:,}; this oracle has k = {k:,}: "
            f"give --rows N (at most {MAX_ROWS:,}) for the first N."
        )


#: ``deniable aggregate``: the same command at the top level (the name the issue and the
#: docs use for the job a telemetry pipeline runs every day).
cli = typer.Typer()
cli.command("aggregate")(aggregate_command)
