"""`deniable telemetry aggregate` (and `deniable aggregate`): a report file tallied in
batches (memory O(k) plus one batch, a progress bar), or report tables on a Dask cluster (a
local one by default, ``--scheduler ADDRESS`` for an existing one; ``deniable.distributed``),
printed with every frequency's SE and intervals; RAPPOR's reports decoded against
``--candidates`` (``_telemetry_rappor``), the sketches' estimated for them
(``_telemetry_sketch``), heavy hitters found without a dictionary (``_telemetry_heavy``,
``_telemetry_discovery``), ranges and distributions answered (``_telemetry_ranges``);
report tables and a telemetry stream's days are found in ``_telemetry_tables``.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from deniable.cli._base import fail, guard_io
from deniable.cli._files import progress_bar
from deniable.cli._options import JsonOpt, LevelOpt, SeedOpt
from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_discovery import (
    DISCOVERY,
    EdgeThresholdOpt,
    MaxCandidatesOpt,
    aggregate_discovery,
    aggregate_discovery_tables,
    not_discovery,
)
from deniable.cli._telemetry_heavy import (
    HEAVY,
    TopKOpt,
    aggregate_heavy,
    aggregate_heavy_tables,
    not_heavy,
)
from deniable.cli._telemetry_ranges import (
    ORDERED,
    QuantileOpt,
    RangeOpt,
    ReplicatesOpt,
    aggregate_ordered,
    aggregate_ordered_tables,
    not_ordered_query,
    wave_bootstrap,
)
from deniable.cli._telemetry_rappor import (
    RAPPOR,
    AlphaOpt,
    CandidatesOpt,
    MethodOpt,
    PenaltyOpt,
    aggregate_rappor,
    decode_rappor,
    not_rappor,
    rappor_candidates,
)
from deniable.cli._telemetry_sketch import (
    SKETCHES,
    aggregate_sketch,
    not_rappor_decoder,
    show_sketch,
    sketch_candidates,
)
from deniable.cli._telemetry_tables import (
    EndOpt,
    StartOpt,
    StreamOpt,
    StreamRootOpt,
    table_source,
)

__all__ = ["MAX_LOCAL_WORKERS", "MAX_ROWS", "TABLE_ROWS", "aggregate_command"]

#: Categories ``aggregate`` prints by default (a table), and the most it prints (``--rows``,
#: or every category with ``--json``).
TABLE_ROWS = 32
MAX_ROWS = 1 << 16
#: The most local Dask workers ``aggregate --local-workers`` starts.
MAX_LOCAL_WORKERS = 64


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
    replicates: ReplicatesOpt = None,
    seed: SeedOpt = None,
    edge_threshold: EdgeThresholdOpt = None,
    max_candidates: MaxCandidatesOpt = None,
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
    --quantile Q (intervals from --replicates bootstrap replicates drawn from --seed)."""
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
    table_rows = TABLE_ROWS if rows is None else rows  # RAPPOR's, a sketch's candidates shown
    refused = {"`--candidates`": candidates is not None, "`--rows`": rows is not None,
               "`--method`": method != "nnls", "`--penalty`": penalty is not None}  # fmt: skip
    heavy_opts = {"`--top-k`": top_k is not None, "`--alpha`": alpha != 0.05}
    discovery_opts = {"edge-threshold": edge_threshold, "max-candidates": max_candidates}
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
            not_discovery(key.partition("{")[0], discovery_opts)
        boot = wave_bootstrap(key.partition("{")[0], replicates, seed)  # Square Wave's
        if is_range_key(key):  # ranges, quantiles, distributions (_telemetry_ranges)
            return aggregate_ordered(file, key, refused={**refused, **heavy_opts},
                                     ranges=ranges, quantiles=quantiles, level=level,
                                     batch=batch, as_json=as_json, bootstrap=boot)  # fmt: skip
        not_ordered_query(file, ranges, quantiles)
        if key.partition("{")[0] in DISCOVERY:  # strings from fragments, no dictionary
            return aggregate_discovery(file, key, refused={**refused, "`--top-k`": top_k
                                       is not None}, alpha=alpha, edge_threshold=edge_threshold,
                                       level=level, batch=batch, as_json=as_json,
                                       max_candidates=max_candidates)  # fmt: skip
        if key.partition("{")[0] in HEAVY:  # heavy hitters found, no dictionary
            return aggregate_heavy(file, key, refused=refused, top_k=top_k, alpha=alpha,
                                   level=level, batch=batch, as_json=as_json)  # fmt: skip
        not_heavy(key.partition("{")[0], {"top-k": top_k})
        if key.partition("{")[0] in SKETCHES:  # estimated for --candidates
            not_rappor_decoder(file, method, penalty, alpha)
            return aggregate_sketch(file, key, candidates=candidates, batch=batch,
                                    rows=table_rows, level=level, as_json=as_json)  # fmt: skip
        if key.startswith(RAPPOR + "{"):  # decoded against --candidates
            return aggregate_rappor(file, key, candidates=candidates, method=method,
                                    penalty=penalty, alpha=alpha, batch=batch,
                                    rows=table_rows, level=level, as_json=as_json)  # fmt: skip
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
            not_discovery(str(name or "these reports"), discovery_opts)
        boot = wave_bootstrap(str(name or "these reports"), replicates, seed)  # Square Wave's
        if name in ORDERED:  # ranges, distributions
            return aggregate_ordered_tables(tables, mechanism,
                                            refused={**refused, **heavy_opts}, ranges=ranges,
                                            quantiles=quantiles, level=level, scheduler=where,
                                            batch=batch, local_workers=max(local_workers, 1),
                                            as_json=as_json, bootstrap=boot)  # fmt: skip
        not_ordered_query(tables.label, ranges, quantiles)
        if name in DISCOVERY:  # tallies, then likelihoods
            return aggregate_discovery_tables(tables, refused={**refused, "`--top-k`": top_k
                                              is not None}, alpha=alpha, level=level,
                                              edge_threshold=edge_threshold, scheduler=where,
                                              batch=batch, local_workers=max(local_workers, 1),
                                              as_json=as_json,
                                              max_candidates=max_candidates)  # fmt: skip
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
                               tables.label), file=tables.label, rows=table_rows, level=level,
                               as_json=as_json)  # fmt: skip
        oracle = oracle_from_key(tally.mechanism or "")
        if isinstance(oracle, Rappor):  # decoded against --candidates (checked above)
            if cand is None:
                cand = rappor_candidates(oracle, candidates, tables.label)
            return decode_rappor(oracle, tally, cand, file=tables.label, method=method,
                                 penalty=penalty, alpha=alpha, rows=table_rows, level=level,
                                 as_json=as_json)  # fmt: skip
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
