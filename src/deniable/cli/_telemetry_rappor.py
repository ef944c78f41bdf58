"""RAPPOR on the command line (``deniable telemetry simulate --mechanism rappor`` and
``aggregate`` of RAPPOR's reports with ``--candidates``; ``docs/rappor.md``).

``simulate`` draws each device's string (Zipf's law over the lines of ``--candidates``, in
their order, or the lines of ``--values``, one device a line), randomizes it with the
library's :class:`~deniable.oracles.RapporClient` (cohort and PRR memoized per device, a
fresh IRR) and writes a RAPPOR report file, or a Parquet or CSV report table (a ``cohort``
column, then the packed bits).  ``aggregate`` tallies the file in batches (tables and a
stream's days on Dask: ``_telemetry_tables``) and decodes the tally against
``--candidates`` (``Rappor.decode``: NNLS or the Lasso), printing each candidate's
frequency and count with standard errors, a normal interval and the decoder's diagnostics.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import typer

from deniable.cli._base import fail, guard_io
from deniable.cli._files import progress_bar
from deniable.cli._options import mechanism_option
from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_strings import read_lines, string_batches
from deniable.cli._telemetry_write import Simulation
from deniable.common import format_epsilon, to_jsonable
from deniable.results import Table, normal_quantile

__all__ = [
    "RAPPOR",
    "RAPPOR_DEFAULTS",
    "aggregate_rappor",
    "check_simulate_options",
    "decode_rappor",
    "not_rappor",
    "rappor_candidates",
    "simulate_rappor",
]

#: ``simulate --mechanism rappor``: strings through a Bloom filter (not in the registry of
#: oracles of values ``0..k-1``; ``docs/rappor.md``).
RAPPOR = "rappor"
_RAPPOR_ONLY = "RAPPOR only (default: the paper's"
#: RAPPOR's parameters when not given: the paper's setting (Erlingsson et al. 2014).
RAPPOR_DEFAULTS: dict[str, Any] = {"m": 128, "h": 2, "cohorts": 64, "f": 0.5, "p": 0.5, "q": 0.75}
CandidatesOpt = Annotated[
    str | None,
    mechanism_option(
        "--candidates",
        help="RAPPOR: a file of candidate strings, one a line (distinct; blank lines "
        "skipped). simulate draws the devices' strings from it by Zipf's law, in its order; "
        "aggregate decodes against it (needed for RAPPOR's reports).",
    ),
]

ValuesOpt = Annotated[
    str | None,
    mechanism_option(
        "--values",
        help="RAPPOR: a file of the devices' strings, one device a line (blank lines skipped).",
    ),
]


def _param(name: str, what: str) -> Any:
    """The ``simulate`` option of RAPPOR's parameter ``name`` (``--name``), its default the
    paper's (:data:`RAPPOR_DEFAULTS`)."""
    return mechanism_option(f"--{name}", help=f"{what}; {_RAPPOR_ONLY} {RAPPOR_DEFAULTS[name]}).")


MOpt = Annotated[int | None, _param("m", "Bloom filter bits, a multiple of 8")]
HOpt = Annotated[int | None, _param("h", "Hash functions per cohort")]
CohortsOpt = Annotated[int | None, _param("cohorts", "Cohorts")]
FOpt = Annotated[float | None, _param("f", "The permanent response's f, in [0, 1)")]
POpt = Annotated[float | None, _param("p", "The instantaneous response's p < q")]
QOpt = Annotated[float | None, _param("q", "The instantaneous response's q <= 1")]

MethodOpt = Annotated[
    str,
    typer.Option(
        "--method", help="RAPPOR: how candidates are selected before the refit, nnls or lasso."
    ),
]

PenaltyOpt = Annotated[
    float | None,
    mechanism_option(
        "--penalty",
        help="RAPPOR, --method lasso: the penalty in noise SDs, >= "
        "0 (default: sqrt(2 ln K) for K candidates).",
    ),
]

AlphaOpt = Annotated[
    float,
    typer.Option(
        "--alpha",
        help="RAPPOR: the family-wise level of the reported candidates (Bonferroni over them).",
    ),
]

#: Devices randomized at once (each batch has its own memo store: a device is in one batch).
_BATCH = 1 << 16
#: The most cells of the decoder's design matrix, ``cohorts m K`` (float64: 256 MB).
MAX_DESIGN_CELLS = 1 << 25


def check_simulate_options(
    mechanism: str,
    rappor_params: dict[str, Any],
    *,
    candidates: str | None,
    values: str | None,
    devices: int | None,
    k: int | None,
    epsilon: float | None,
) -> None:
    """One error line for options of RAPPOR given to another oracle, or the reverse."""
    if mechanism == RAPPOR:
        given = [f"`--{name}`" for name, x in (("k", k), ("epsilon", epsilon)) if x is not None]
        if given:
            fail(
                f"{' and '.join(given)} do not apply to `--mechanism rappor`: its parameters "
                "are --m, --h, --cohorts, --f, --p, --q, and its epsilons follow from them."
            )
        return
    given = [f"`--{name}`" for name, x in rappor_params.items() if x is not None]
    given += [name for name, x in (("`--candidates`", candidates), ("`--values`", values)) if x]
    if given:
        fail(f"{', '.join(given)} apply to `--mechanism rappor` only, got {mechanism!r}.")
    needed = (("--devices", devices), ("--k", k), ("--epsilon", epsilon))
    missing = [f"`{name}`" for name, x in needed if x is None]
    if missing:
        fail(f"{', '.join(missing)} must be given for `--mechanism {mechanism}`.")


def not_rappor(
    file: str, candidates: str | None, method: str, penalty: float | None, alpha: float
) -> None:
    """Refuse the RAPPOR decoder's options for reports of another oracle."""
    given = [f"`{name}`" for name, x in (("--candidates", candidates), ("--penalty", penalty))
             if x is not None]  # fmt: skip
    given += ["`--method`"] if method != "nnls" else []
    given += ["`--alpha`"] if alpha != 0.05 else []
    if given:
        fail(
            f"{', '.join(given)} apply to RAPPOR's reports only (a report file, tables or a "
            f"stream); {file!r} does not hold RAPPOR reports."
        )


def _epsilons(rappor: Any) -> dict[str, float]:
    # the PRR's epsilon bounds any number of reports of one value; epsilon_1: one report
    return {"epsilon": float(rappor.permanent_epsilon), "epsilon_1": float(rappor.epsilon)}


def _epsilon_note(rappor: Any) -> str:
    return (
        f"epsilon {format_epsilon(rappor.permanent_epsilon)} over any number of reports of a "
        f"value (the permanent response's), {format_epsilon(rappor.epsilon)} the first report's"
    )


def simulate_rappor(run: Simulation, *, params: dict[str, Any]) -> None:
    """Simulate RAPPOR devices into the report file or report table of ``run`` and print
    it; ``params``: RAPPOR's parameters given (``None``: the paper's)."""
    import numpy as np

    from deniable.mechanisms import InMemoryMemoStore
    from deniable.oracles import Rappor, RapporClient

    run.require_pyarrow()
    rappor = Rappor(**{**RAPPOR_DEFAULTS, **{k: x for k, x in params.items() if x is not None}})
    strings, n = run.strings(RAPPOR)
    run.check_devices(n)
    record = 2 + rappor.width
    run.check_file_size(n, record, f"rappor, m = {rappor.m}")
    gen = np.random.default_rng(run.seed)

    def batches() -> Any:
        drawn = string_batches(strings, n, zipf=run.values is None, rng=gen, batch=_BATCH)
        for start, batch_values in drawn:  # Zipf's law over the candidates, or --values
            # the library's client: cohort and PRR memoized per device (each device is in
            # one batch, so a store a batch), a fresh IRR
            client = RapporClient(rappor, InMemoryMemoStore())
            yield client.report(np.arange(start, start + len(batch_values)),
                                batch_values.astype(str), rng=gen)  # fmt: skip

    # a table: the cohort column, then the packed bits (deniable.distributed._tables)
    data = run.write_strings(rappor, n, batches(), mechanism=rappor.key, **_epsilons(rappor))
    if run.as_json:
        emit_json(to_jsonable(data))
        return
    shown = {
        **data,
        "mechanism": "rappor",
        "epsilon": format_epsilon(rappor.permanent_epsilon),
        "epsilon_1": format_epsilon(rappor.epsilon),
    }
    notes = (
        f"m = {rappor.m} bits, h = {rappor.h}, cohorts = {rappor.cohorts}, f = {rappor.f:g}, "
        f"p = {rappor.p:g}, q = {rappor.q:g}",
        _epsilon_note(rappor),
    )
    print_table(Table.pairs(shown.items(), title="simulated RAPPOR reports", notes=notes))


def rappor_candidates(rappor: Any, candidates: str | None, file: str) -> list[str]:
    """The strings of ``candidates`` to decode ``rappor``'s reports of ``file`` against,
    checked (given, distinct, a decoder of at most :data:`MAX_DESIGN_CELLS` cells) before
    any report is read."""
    if candidates is None:
        fail(
            f"`--candidates` FILE (one candidate string a line) is needed to decode the RAPPOR "
            f"reports of {file!r}: RAPPOR counts Bloom filter bits, not values."
        )
    cand = read_lines("--candidates", candidates, distinct=True)
    cells = rappor.cohorts * rappor.m * len(cand)
    if cells > MAX_DESIGN_CELLS:
        most = MAX_DESIGN_CELLS // (rappor.cohorts * rappor.m)
        fail(
            f"`--candidates` must hold at most {most:,} strings for this file (cohorts x m = "
            f"{rappor.cohorts * rappor.m:,} rows of the decoder), got {len(cand):,}."
        )
    return cand


def aggregate_rappor(
    file: str,
    key: str,
    *,
    candidates: str | None,
    method: str,
    penalty: float | None,
    alpha: float,
    batch: int,
    rows: int,
    level: float,
    as_json: bool,
) -> None:
    """Tally a RAPPOR report file and decode it against the strings of ``candidates``
    (the first ``rows`` shown, all with ``--json``)."""
    from deniable.oracles import rappor_from_key, tally_file

    rappor = rappor_from_key(key)
    cand = rappor_candidates(rappor, candidates, file)
    with guard_io(f"read {file!r}"), progress_bar(not as_json, f"reading {file}") as progress:
        tally = tally_file(rappor, file, batch=batch, progress=progress)
    decode_rappor(rappor, tally, cand, file=file, method=method, penalty=penalty, alpha=alpha,
                  rows=rows, level=level, as_json=as_json)  # fmt: skip


def decode_rappor(
    rappor: Any,
    tally: Any,
    cand: list[str],
    *,
    file: str,
    method: str,
    penalty: float | None,
    alpha: float,
    rows: int,
    level: float,
    as_json: bool,
) -> None:
    """Decode ``rappor``'s tally (of a report file, report tables or a stream's days)
    against the strings ``cand`` and print each candidate's estimate."""
    est = rappor.decode(tally, cand, alpha=alpha, method=method, penalty=penalty)
    _show(rappor, est, file=file, level=level, rows=rows, as_json=as_json)


def _show(rappor: Any, est: Any, *, file: str, level: float, rows: int, as_json: bool) -> None:
    import numpy as np

    low, high = est.ci(level)  # a normal (Wald) interval of the refit estimate
    counts, count_se = est.counts, est.count_se
    if as_json:
        data = est.to_dict()
        for i, row in enumerate(data["candidates"]):
            row["count"] = float(counts[i])
            row["count_se"] = float(count_se[i])
            row["ci"] = None if math.isnan(low[i]) else [float(low[i]), float(high[i])]
        emit_json(to_jsonable({"file": file, **_epsilons(rappor), "level": level, **data}))
        return
    order = np.argsort(-est.values, kind="stable")
    shown = order[:rows]
    body = []
    for i in shown.tolist():
        se = float(est.se[i])
        no_se = math.isnan(se)
        body.append((
            est.candidates[i], float(est.values[i]), "-" if no_se else se,
            "-" if no_se else float(low[i]), "-" if no_se else float(high[i]),
            round(float(counts[i])), float(est.p_values[i]), "yes" if est.reported[i] else "",
        ))  # fmt: skip
    more = len(order) - len(shown)
    notes = (
        *((f"... {more} more candidates (--rows, or --json for all)",) if more else ()),
        f"frequency: the weighted least-squares refit; interval: normal, frequency +/- "
        f"{normal_quantile(level):.3g} SE ({level:.0%}); count = n x frequency; candidates "
        "most frequent first",
        *est.table().notes,
        _epsilon_note(rappor),
    )
    print_table(
        Table(
            ("candidate", "frequency", "SE", "lower", "upper", "count", "p-value", "reported"),
            tuple(body),
            title=f"RAPPOR: {int(est.reported.sum())} of {len(est.candidates)} candidates "
            f"reported, n = {est.n}",
            notes=notes,
        )
    )
