"""The count mean sketches on the command line (``deniable telemetry simulate --mechanism
cms|hcms`` and ``aggregate`` of their report files with ``--candidates``;
``docs/sketches.md``).

``simulate`` draws each device's string (Zipf's law over the lines of ``--candidates``, in
their order, or the lines of ``--values``, one device a line), randomizes it with the
library's :class:`~deniable.oracles.CMS` or :class:`~deniable.oracles.HCMS` and writes a
report file.  The salt (the row hashes) is ``--salt`` or, by default, drawn from the seed:
the estimate is unbiased over a salt drawn at random.  A CMS's reports follow spec 2 (the
library's default) or, with ``--spec-version 1``, spec 1 (the reports of files written
before spec 2; its key names no ``spec_version``).  ``aggregate`` tallies the file in
batches and estimates the share of each candidate string
(:class:`~deniable.oracles.SketchEstimate`: both variance conventions and an interval).
"""

from __future__ import annotations

from typing import Annotated, Any

from deniable.cli._base import fail, guard_io, refuse_options
from deniable.cli._files import progress_bar
from deniable.cli._options import mechanism_option
from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_strings import (
    check_lengths,
    read_lines,
    string_batches,
)
from deniable.cli._telemetry_write import Simulation
from deniable.common import format_epsilon, to_jsonable
from deniable.results import Table

__all__ = [
    "SKETCHES",
    "SKETCH_DEFAULTS",
    "SaltOpt",
    "SketchColumnsOpt",
    "SketchRowsOpt",
    "SpecVersionOpt",
    "aggregate_sketch",
    "not_rappor_decoder",
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
#: The spec versions of a CMS's reports (``deniable.cms-spec/1`` and ``/2``; the default:
#: the library's) and each sketch's options (``simulate`` refuses the others by name).
_SPEC_VERSIONS = {"1": 1, "2": 2}
_SPEC_DEFAULT = 2
_OWN = {
    "cms": "--epsilon, --sketch-rows, --sketch-columns, --salt and --spec-version",
    "hcms": "--epsilon, --sketch-rows, --sketch-columns and --salt",
}
#: Devices randomized at once.
_BATCH = 1 << 16

SketchRowsOpt = Annotated[
    int | None,
    mechanism_option(
        "--sketch-rows",
        help="CMS/HCMS only: the sketch's rows k (hash functions), 1..65536 (default 64).",
    ),
]
SketchColumnsOpt = Annotated[
    int | None,
    mechanism_option(
        "--sketch-columns",
        help="CMS/HCMS only: the sketch's columns m, 2..65536, a power of two for HCMS "
        "(default 1024).",
    ),
]
SaltOpt = Annotated[
    int | None,
    mechanism_option(
        "--salt",
        help="CMS/HCMS only: the salt of the row hashes, 0..2**32-1 (default: drawn from "
        "the seed).",
    ),
]
SpecVersionOpt = Annotated[
    str | None,  # text: any other value is refused naming the two (not typer's own error)
    mechanism_option(
        "--spec-version",
        help="CMS only: the spec of its reports, 1 or 2 (default 2; 1: the reports of files "
        "written before spec 2, one random word a bit).",
        metavar="1|2",
    ),
]


def not_sketch(mechanism: str, shape: dict[str, Any]) -> None:
    """Refuse the sketches' options (``--spec-version``: CMS's) for another mechanism."""
    both = {name: x for name, x in shape.items() if name != "spec-version"}
    refuse_options(both, "`--mechanism cms` and `hcms`", mechanism)
    refuse_options({"spec-version": shape.get("spec-version")}, "`--mechanism cms`", mechanism)


def _epsilon_note(sketch: Any) -> str:
    # eps exact (the bits that move between two strings attain it); implemented <= eps
    return (
        f"epsilon {format_epsilon(sketch.epsilon)} per report, any change of a device's "
        f"string (implemented: {format_epsilon(sketch.implemented_epsilon)})"
    )


def simulate_sketch(
    run: Simulation,
    *,
    mechanism: str,
    epsilon: float | None,
    others: dict[str, Any],
    shape: dict[str, Any],
) -> None:
    """Simulate devices of a CMS or HCMS into the report file or table of ``run`` and print
    it; ``others``: options of other mechanisms (refused when given); ``shape``: the
    sketch's ``k``, ``m``, ``salt`` and CMS's ``spec_version`` (``None``: the default)."""
    import numpy as np

    from deniable.oracles import CMS, HCMS

    version = shape.get("spec_version")
    if mechanism != "cms":  # HCMS has one spec
        others = {**others, "spec-version": version}
    given = [f"`--{name}`" for name, x in others.items() if x is not None]
    if given:
        fail(
            f"{', '.join(given)} do not apply to `--mechanism {mechanism}`: its parameters "
            f"are {_OWN[mechanism]}."
        )
    if version is not None and version not in _SPEC_VERSIONS:
        fail(f"`--spec-version` must be 1 or 2, got {version!r}.")
    run.require_pyarrow()
    if epsilon is None:
        fail(f"`--epsilon` must be given for `--mechanism {mechanism}`.")
    gen = np.random.default_rng(run.seed)
    salt = shape["salt"] if shape["salt"] is not None else int(gen.integers(1 << 32))
    k = shape["k"] if shape["k"] is not None else SKETCH_DEFAULTS["k"]
    m = shape["m"] if shape["m"] is not None else SKETCH_DEFAULTS["m"]
    spec_version = _SPEC_DEFAULT if version is None else _SPEC_VERSIONS[version]
    sketch: Any  # a bad parameter: one error line
    if mechanism == "cms":
        sketch = CMS(k=k, m=m, epsilon=epsilon, salt=salt, spec_version=spec_version)
    else:
        sketch = HCMS(k=k, m=m, epsilon=epsilon, salt=salt)
    strings, n = run.strings(mechanism)
    check_lengths("--values" if run.values else "--candidates", strings, sketch.max_bytes)
    run.check_devices(n)
    record = 2 + sketch.width if mechanism == "cms" else 8
    run.check_file_size(n, record, f"{mechanism}, m = {m}")

    def batches() -> Any:  # Zipf's law over the candidates, in their order, or --values
        for _, batch_values in string_batches(strings, n, zipf=run.values is None, rng=gen,
                                              batch=_BATCH):  # fmt: skip
            yield sketch.randomize(batch_values.tolist(), rng=gen)

    # a table, CMS: the row column, then the packed bits; HCMS: one column
    data = run.write_strings(
        sketch, n, batches(), mechanism=sketch.key, epsilon=float(sketch.epsilon),
        implemented_epsilon=float(sketch.implemented_epsilon), salt=salt,
    )  # fmt: skip
    if run.as_json:
        emit_json(to_jsonable(data))
        return
    shown = {**data, "mechanism": mechanism, "epsilon": format_epsilon(sketch.epsilon),
             "implemented_epsilon": format_epsilon(sketch.implemented_epsilon)}  # fmt: skip
    old = ", spec version 1" if mechanism == "cms" and spec_version == 1 else ""
    notes = (f"k = {k} rows, m = {m} columns, salt {salt}{old}", _epsilon_note(sketch))
    print_table(Table.pairs(shown.items(), title=f"simulated {mechanism.upper()} reports",
                            notes=notes))  # fmt: skip


def aggregate_sketch(
    file: str,
    key: str,
    *,
    candidates: str | None,
    batch: int,
    rows: int,
    level: float,
    as_json: bool,
) -> None:
    """Tally a sketch's report file and estimate the share of each string of
    ``candidates`` (the first ``rows`` shown, all with ``--json``)."""
    from deniable.oracles import sketch_from_key, tally_file

    sketch = sketch_from_key(key)
    cand = sketch_candidates(sketch, candidates, file)
    with guard_io(f"read {file!r}"), progress_bar(not as_json, f"reading {file}") as progress:
        tally = tally_file(sketch, file, batch=batch, progress=progress)
    show_sketch(sketch, tally, cand, file=file, rows=rows, level=level, as_json=as_json)


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
    check_lengths("--candidates", cand, sketch.max_bytes)
    return cand


def show_sketch(
    sketch: Any, tally: Any, cand: list[str], *, file: str, rows: int, level: float,
    as_json: bool,
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
    more = len(table.rows) - min(rows, len(table.rows))
    notes = (
        *((f"... {more} more candidates (--rows, or --json for all)",) if more else ()),
        *table.notes,
        _epsilon_note(sketch),
    )
    print_table(Table(table.columns, table.rows[:rows], title=table.title, notes=notes))


def not_rappor_decoder(file: str, method: str, penalty: float | None, alpha: float) -> None:
    """Refuse RAPPOR's decoder options for a sketch's reports (which take --candidates)."""
    given = ["`--penalty`"] if penalty is not None else []
    given += ["`--method`"] if method != "nnls" else []
    given += ["`--alpha`"] if alpha != 0.05 else []
    if given:
        fail(
            f"{', '.join(given)} apply to RAPPOR's reports only; {file!r} holds the reports "
            "of a count mean sketch (its estimate takes --candidates and --level)."
        )
