"""`deniable crosstab`: the joint distribution of two randomized-response items of a
responses file (:func:`deniable.estimation.joint_estimate`), their association
(:func:`~deniable.estimation.association`) and a test of independence
(:func:`~deniable.estimation.independence_test`), under the sample-design options of
`deniable analyze` (``cli/_sample.py``).

The two items are given as ``--question COL=DESIGN:NAME=VALUE,...`` (the syntax of
`deniable report`) or, with ``--survey``, as two ``--column`` names of the survey's
questions.  Rows where either item is missing are dropped (``--missing drop``, counted and
shown) before the sample design is built: a complete-case analysis.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from deniable.cli._analyze import (
    FileArg,
    MissingOpt,
    SurveyOpt,
    check_question,
    parse_question,
    question_option,
    read_survey,
)
from deniable.cli._base import fail
from deniable.cli._options import JsonOpt, LevelOpt
from deniable.cli._render import emit_json, print_table
from deniable.cli._sample import NO_SAMPLE, SAMPLE, SampleOptions
from deniable.common import validation as v

if TYPE_CHECKING:
    from deniable.designs import Design

__all__ = ["cli", "crosstab_command"]

cli = typer.Typer()

#: The estimators of the joint distribution the association is computed from.
ESTIMATORS = ("moment", "mle")
#: The tests of independence.
TESTS = ("wald", "rao-scott", "lr")


def _items(
    question: list[str] | None, survey: str | None, column: list[str] | None
) -> list[tuple[str, Design]]:
    """The two items (column, design) from ``--question`` or ``--survey`` + ``--column``."""
    if survey is not None:
        if question:
            fail("give the items either by --question or by --survey and --column, not both.")
        found = read_survey(survey)
        ids = [q.id for q in found.questions]
        names = list(column or ())
        if len(names) != 2:
            fail(
                f"`--column` must be given twice with --survey (two of the survey's questions: "
                f"{', '.join(ids)}), got {len(names)}."
            )
        for name in names:
            check_question(found, name)
        pairs = [(name, found.question(name).design) for name in names]
    else:
        if column:
            fail("`--column` names questions of a survey file: give --survey too, or use "
                 "--question COL=DESIGN:NAME=VALUE,... for each item.")  # fmt: skip
        specs = list(question or ())
        if len(specs) != 2:
            fail(
                "`--question` must be given exactly twice (COL=DESIGN:NAME=VALUE,..., e.g. "
                f"-q drugs=warner:p=0.75 -q cheat=warner:p=0.75), got {len(specs)}."
            )
        pairs = []
        for spec in specs:
            q = parse_question(spec)
            if q.group is not None:
                fail(f"`--question` {spec!r}: two-group designs are not supported by crosstab.")
            pairs.append((q.column, q.design))
    if pairs[0][0] == pairs[1][0]:
        fail(f"the two items must be different columns, got {pairs[0][0]!r} twice.")
    for col, d in pairs:
        if d.n_groups != 1:
            fail(
                f"item {col!r}: design {d.name!r} has two randomization groups; crosstab takes "
                "one-group designs (binary or categorical)."
            )
    return pairs


def _codes(frame: Any, col: str, k: int, place: str) -> Any:
    """Column ``col`` of ``frame`` as float codes 0..k-1 (NaN where missing); one error
    naming the column, the allowed values and the first bad one."""
    import numpy as np

    pd = __import__("pandas")
    values = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=np.float64)
    raw = frame[col].to_numpy()
    present = ~pd.isna(frame[col]).to_numpy()
    ok = ~np.isnan(values) & (values == np.round(values)) & (values >= 0) & (values < k)
    bad = np.flatnonzero(present & ~ok)
    if bad.size:
        i = int(bad[0])
        value = raw[i].item() if hasattr(raw[i], "item") else raw[i]
        fail(
            f"column {col!r} must hold the reports 0..{k - 1} (or be empty where missing), got "
            f"{value!r} in data row {i + 1} of {place} ({bad.size} such rows)."
        )
    return np.where(present, values, np.nan)


@cli.command("crosstab")
@SAMPLE.expand("sampling")
def crosstab_command(
    file: FileArg,
    question: Annotated[
        list[str] | None,
        question_option(
            "COL=DESIGN:NAME=VALUE,...",
            "An item and its design, given twice (e.g. -q drugs=warner:p=0.75).",
        ),
    ] = None,
    survey: SurveyOpt = None,
    column: Annotated[
        list[str] | None,
        typer.Option(
            "--column",
            metavar="QUESTION_ID",
            help="With --survey: a question of the survey, given twice (the two items).",
        ),
    ] = None,
    estimator: Annotated[
        str,
        typer.Option(
            "--estimator",
            help="Joint estimate the association is measured on: moment (unbiased, "
            "may leave the simplex) or mle (EM on the simplex).",
        ),
    ] = "moment",
    test: Annotated[
        str,
        typer.Option("--test", help="Test of independence: wald, rao-scott or lr."),
    ] = "wald",
    level: LevelOpt = 0.95,
    missing: MissingOpt = "drop",
    sampling: SampleOptions = NO_SAMPLE,
    as_json: JsonOpt = False,
) -> None:
    """Two randomized items together: their joint distribution, association (odds ratio,
    risk difference, corrected correlation, ...) and a test of independence."""
    import numpy as np

    from deniable.estimation import association, independence_test, joint_estimate
    from deniable.results import Table
    from deniable.survey import read_frame

    pairs = _items(question, survey, column)
    miss = v.choice("--missing", missing, ("drop", "error"))
    est = v.choice("--estimator", estimator, ESTIMATORS)
    method = v.choice("--test", test, TESTS)
    spec = sampling.columns()
    needed = [c for c, _ in pairs]
    if spec is not None:
        parts = [getattr(spec, p) for p in ("weights", "strata", "psu", "fpc")]
        needed += [c for c in parts if c is not None]
    # replicate weights may be a pattern ('rw*'): read every column to match it
    whole = spec is not None and spec.replicate_weights is not None
    frame = read_frame(file, columns=None if whole else list(dict.fromkeys(needed)))
    absent = [c for c in needed if c not in frame.columns]
    if absent:
        fail(
            f"FILE {file!r} has no column {absent[0]!r} (its columns: "
            f"{', '.join(map(str, frame.columns))})."
        )
    place = repr(str(file))
    codes = [_codes(frame, c, d.n_reports, place) for c, d in pairs]
    keep = ~np.isnan(codes[0]) & ~np.isnan(codes[1])
    dropped = int((~keep).sum())
    if dropped and miss == "error":
        row = int(np.flatnonzero(~keep)[0]) + 1
        fail(
            f"`--missing error`: data row {row} of {place} has no report for an item "
            f"({dropped} such rows); give --missing drop to leave them out."
        )
    if not keep.any():
        fail(f"no row of {place} has a report for both items ({', '.join(needed[:2])}).")
    frame.index = frame.index + 1  # data rows, numbered from 1, in messages
    kept = frame[keep]
    sample = None if spec is None else spec.design(kept, lambda r: f"data row {r} of {place}")
    reports = [c[keep].astype(np.int64) for c in codes]
    names = [c for c, _ in pairs]
    joint = replace(joint_estimate([d for _, d in pairs], reports, sample), items=tuple(names))
    if est == "mle" and joint.mle is None:
        fail("`--estimator mle` needs items with a dense channel: " + "; ".join(joint.notes))
    assoc = association(joint, estimator=est, level=level)
    indep = independence_test(joint, method=method)
    designs = [d.name for _, d in pairs]
    if as_json:
        emit_json({
            "file": str(file), "items": names, "designs": designs, "missing": dropped,
            "level": level, "estimator": est, "joint": joint.to_dict(level),
            "association": assoc.to_dict(), "independence": indep.to_dict(),
        })  # fmt: skip
        return
    jt = joint.table(level)
    title = (
        f"Joint distribution of {names[0]} ({designs[0]}) and {names[1]} ({designs[1]}): "
        f"{joint.design}"
    )
    notes = (f"cells (value of {names[0]}, value of {names[1]}); {jt.notes[0]}", *jt.notes[1:])
    if dropped:
        notes = (*notes, f"{dropped} rows with a missing report dropped (complete cases).")
    joined = Table(jt.columns, jt.rows, title=title, notes=notes,
                   sections=(assoc.table(), indep.table()))  # fmt: skip
    print_table(joined)
