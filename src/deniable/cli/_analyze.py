"""`deniable analyze` and `deniable report`.

Question specs for `deniable report` look like ``COLUMN=DESIGN:NAME=VALUE,NAME=VALUE``
(e.g. ``drugs=forced:forced_yes=1/6,forced_no=1/6``; ``tax=two-coin`` when every parameter
has a default).  The column is everything before the first ``=`` that is followed by a
design name, so a column name may itself hold ``=`` or ``:``.  A two-group design names its
group column after ``@``: ``cheat=sld:p1=2/12,p2=10/12@version`` (everything after the
first ``@`` that follows the design name, so a group column may hold ``@`` too).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NamedTuple

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from deniable.cli._base import (
    app,
    build_design,
    console,
    emit_json,
    fail,
    fmt_epsilon,
    fmt_interval,
    fmt_num,
    fmt_params,
    kv_table,
)
from deniable.cli._designs import (
    JsonOpt,
    LevelOpt,
    ParamOpt,
    design_channel_fields,
    epsilon_note,
    estimate_payload,
    estimate_rows,
)
from deniable.cli._files import progress_bar, refuse_inputs, write_output
from deniable.cli._twogroup import two_group_payload, two_group_rows, two_group_table
from deniable.common import _validation as v
from deniable.designs import (
    DESIGNS,
    TWO_GROUP_DESIGNS,
    Design,
    Tally,
    TwoGroupDesign,
    TwoGroupEstimate,
    make_design,
)
from deniable.results import Estimate
from deniable.survey import Analysis

FileArg = Annotated[
    str,
    typer.Argument(
        metavar="FILE", help="Survey data: .csv (also .csv.gz ...) or .parquet.", show_default=False
    ),
]
MissingOpt = Annotated[
    str,
    typer.Option("--missing", help="Missing reports: drop (default; counted and shown) or error."),
]


@contextmanager
def _extras() -> Iterator[None]:
    """An extra that is not installed (pandas, pyarrow, matplotlib): one error line."""
    try:
        yield
    except ImportError as exc:
        fail(str(exc))


class Question(NamedTuple):
    """One ``--question``: the column, its design and (two-group designs) the group column."""

    column: str
    design: Design
    group: str | None = None


def parse_question(spec: str) -> Question:
    """``COLUMN=DESIGN[:NAME=VALUE,...][@GROUP]`` -> :class:`Question` (module docstring)."""
    example = "--question drugs=forced:forced_yes=1/6,forced_no=1/6"
    every = [*DESIGNS, *TWO_GROUP_DESIGNS]
    start = 0
    while True:
        i = spec.find("=", start)
        if i < 0:
            fail(
                f"`--question` must look like COLUMN=DESIGN:NAME=VALUE,...[@GROUP_COLUMN] with "
                f"DESIGN one of {', '.join(every)} (e.g. {example}), got {spec!r}."
            )
        head, at, group = spec[i + 1 :].partition("@")
        name, _, params = head.partition(":")
        if i > 0 and name.strip() in every:
            break
        start = i + 1
    column = spec[:i]
    values: dict[str, str] = {}
    for item in params.split(",") if params.strip() else ():
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            fail(
                f"`--question` {spec!r}: each design parameter must look like NAME=VALUE "
                f"(e.g. {example}), got {item!r}."
            )
        if key in values:
            fail(f"`--question` {spec!r}: parameter {key!r} given twice.")
        values[key] = value
    design = make_design(name.strip(), values)
    if at and not group:
        fail(f"`--question` {spec!r}: name the group column after '@' (e.g. @version).")
    if design.n_groups == 2 and not at:
        fail(
            f"`--question` {spec!r}: design {design.name!r} needs two groups: add the column "
            "of each respondent's group (1 or 2) after '@', e.g. "
            "cheat=sld:p1=2/12,p2=10/12@version."
        )
    if at and design.n_groups == 1:
        fail(
            f"`--question` {spec!r}: '@{group}' names a group column, which only two-group "
            f"designs take ({', '.join(TWO_GROUP_DESIGNS)}); design {design.name!r} has one."
        )
    return Question(column, design, group or None)


# --------------------------------------------------------------------------- analyze


def _group_table(frame: Any, level: float, two: bool) -> Table:
    ci = "Wald" if two else "exact"
    table = Table(
        caption=f"estimate: unbiased (may leave [0, 1]); SE: plug-in (n); CI: {ci}",
        caption_justify="left",
    )
    cols = ("group", *(("parameter",) if two else ()), "n", "missing", "estimate", "bounded",
            "SE", f"{level:.0%} CI ({ci})")  # fmt: skip
    for col in cols:
        text = col in ("group", "parameter")
        table.add_column(col, justify="left" if text else "right", no_wrap=col != "group")
    for row in frame.itertuples(index=False):
        table.add_row(
            Text(str(row.group)), *((Text(row.parameter),) if two else ()), str(row.n),
            str(row.missing), fmt_num(row.estimate), fmt_num(row.bounded), fmt_num(row.se),
            Text(fmt_interval((row.ci_lower, row.ci_upper))),
        )  # fmt: skip
    return table


@app.command("analyze")
def analyze_command(
    file: FileArg,
    column: Annotated[str, typer.Option("--column", help="Column of 0/1 reports.")],
    design: Annotated[str, typer.Option("--design", help="Design name (see `deniable designs`).")],
    param: ParamOpt = None,
    group_column: Annotated[
        str | None,
        typer.Option(
            "--group-column",
            help="Two-group designs: column of each respondent's group (1 or 2).",
        ),
    ] = None,
    by: Annotated[
        str | None, typer.Option("--by", help="Estimate per group of this column.")
    ] = None,
    level: LevelOpt = 0.95,
    missing: MissingOpt = "drop",
    as_json: JsonOpt = False,
) -> None:
    """Estimate the prevalence from a column of reports in a CSV or Parquet file."""
    from deniable.survey import analyze_file

    d = build_design(design, param)
    two = d.n_groups == 2
    if two and group_column is None:
        fail(
            f"design {d.name!r} needs two groups: give --group-column COLUMN (the column of "
            "each respondent's group, 1 or 2)."
        )
    if not two and group_column is not None:
        fail(
            f"`--group-column` applies to the two-group designs ({', '.join(TWO_GROUP_DESIGNS)})"
            f"; design {d.name!r} has one group (--by estimates per subgroup)."
        )
    lvl = v.level(level)
    miss = v.choice("--missing", missing, ("drop", "error"))
    with _extras(), progress_bar(not as_json, f"reading {file}") as progress:
        result: Any = analyze_file(file, column, d, group=group_column, by=by, level=lvl,
                              missing=miss, progress=progress)  # fmt: skip
    if by is not None:
        frame = result
        groups = [
            {k: (None if isinstance(x, float) and math.isnan(x) else x) for k, x in row.items()}
            for row in frame.to_dict(orient="records")
        ]
        if as_json:
            payload = {
                "file": file, "column": column, "by": by, "design": d.name,
                "parameters": d.parameters(), "epsilon": d.epsilon, "level": lvl,
                "interval": "wald" if two else "exact",
                "missing_group": frame.attrs["missing_group"], "groups": groups,
            }  # fmt: skip
            if two:
                payload["group_column"] = group_column
            for g in payload["groups"]:
                g.pop("epsilon")
            emit_json(payload)
            return
        out = console()
        rows = [
            ("file, column, by", f"{file}, {column}, {by}"),
            ("design", f"{d.name} ({fmt_params(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("rows without a group (dropped)", str(frame.attrs["missing_group"])),
        ]
        if two:
            rows.insert(1, ("group column (1 or 2)", str(group_column)))
        out.print(kv_table(rows, title="Prevalence by group"))
        out.print(_group_table(frame, lvl, two))
        return
    res: Analysis = result
    est = res.estimate
    if isinstance(est, TwoGroupEstimate):
        assert isinstance(d, TwoGroupDesign)
        if as_json:
            payload = two_group_payload(d, est, lvl, design_channel_fields(d))
            payload.update(file=file, column=column, group_column=group_column,
                           missing=res.missing)  # fmt: skip
            emit_json(payload)
            return
        rows = [("file, column, group column", f"{file}, {column}, {group_column}"),
                *two_group_rows(d, est, epsilon_note(d.epsilon)),
                ("missing reports or groups (dropped)", str(res.missing))]  # fmt: skip
        out = console()
        out.print(kv_table(rows, title="Two-group estimate"))
        out.print(two_group_table(est, lvl))
        return
    assert isinstance(est, Estimate)
    yes = round((est.lambda_hat or 0.0) * est.n)
    tally = Tally.binary(yes, est.n)
    if as_json:
        payload = estimate_payload(d, tally, est, lvl)
        payload.update(file=file, column=column, missing=res.missing)
        emit_json(payload)
        return
    rows = [("file, column", f"{file}, {column}"), *estimate_rows(d, tally, est, lvl)]
    at = next((i + 1 for i, (k, _) in enumerate(rows) if k == "yes / n"), len(rows))
    rows.insert(at, ("missing reports (dropped)", str(res.missing)))
    console().print(kv_table(rows, title="Prevalence estimate"))


# --------------------------------------------------------------------------- report


def _row_results(rep: Any) -> list[Any]:
    """The analysis behind each row of ``rep.to_frame()`` (one per parameter)."""
    return [res for res in rep.results for _ in res.estimates()]


@app.command("report")
def report_command(
    file: FileArg,
    question: Annotated[
        list[str] | None,
        typer.Option(
            "--question",
            "-q",
            metavar="COL=DESIGN:NAME=VALUE,...[@GROUP]",
            help="A question and its design, repeatable (e.g. -q drugs=warner:p=0.75); a "
            "two-group design adds @GROUP_COLUMN (e.g. -q q=sld:p1=2/12,p2=10/12@version).",
        ),
    ] = None,
    html: Annotated[
        str | None, typer.Option("--html", metavar="OUT", help="Also write an HTML page here.")
    ] = None,
    title: Annotated[str, typer.Option("--title", help="Title of the report.")] = "Survey report",
    level: LevelOpt = 0.95,
    missing: MissingOpt = "drop",
    as_json: JsonOpt = False,
) -> None:
    """A whole-survey report: every question's n, estimate, interval and ε."""
    from deniable.survey import survey_report_file

    if not question:
        fail("give at least one --question COL=DESIGN:NAME=VALUE,... (e.g. -q q1=warner:p=0.75).")
    questions: dict[str, Design | tuple[Design, str]] = {}
    for spec in question:
        col, d, group = parse_question(spec)
        if col in questions:
            fail(f"`--question` names column {col!r} twice.")
        questions[col] = d if group is None else (d, group)
    lvl = v.level(level)
    miss = v.choice("--missing", missing, ("drop", "error"))
    refuse_inputs([("--html", html)], [("FILE", file)])
    with _extras():
        with progress_bar(not as_json, f"reading {file}") as progress:
            rep = survey_report_file(file, questions, level=lvl, missing=miss, title=title,
                                     progress=progress)  # fmt: skip
        if html is not None:
            page = rep.to_html()
            write_output(html, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    if as_json:
        payload = rep.to_dict()
        payload["file"] = file
        if html is not None:
            payload["html"] = html
        emit_json(payload)
        return
    table = Table(
        title=f"{title}: {file}, {rep.respondents} respondents",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,
    )
    two = rep.two_group  # then a parameter column replaces the design (named in the notes)
    for col in ("question", "parameter" if two else "design", "n", "missing", "estimate",
                "SE", f"{lvl:.0%} CI" + ("" if two else " (exact)"), "ε"):  # fmt: skip
        text = col in ("question", "design", "parameter")
        table.add_column(
            col, justify="left" if text else "right", no_wrap=col == "parameter" or not text,
            overflow="fold",
        )  # fmt: skip
    for row, res in zip(rep.to_frame().itertuples(index=False), _row_results(rep), strict=True):
        table.add_row(
            Text(str(row.question)), Text(row.parameter if two else res.design.name),
            str(row.n), str(row.missing), fmt_num(row.estimate), fmt_num(row.se),
            Text(fmt_interval((row.ci_lower, row.ci_upper))), fmt_epsilon(row.epsilon),
        )  # fmt: skip
    notes = [f"{q}: {res.design.name} ({fmt_params(res.design.parameters())})"
             + (f", groups in {res.group}" if res.group is not None else "")
             for q, res in zip(questions, rep.results, strict=True)]  # fmt: skip
    notes.append(
        "estimate: unbiased (may leave [0, 1]); SE: plug-in (n); "
        "ε = ∞: a report can reveal the answer."
    )
    if two:
        wald = [str(res.column) for res in rep.results if res.interval == "wald"]
        notes.append(f"CI: exact, but Wald (delta method) for two-group: {', '.join(wald)}.")
    out = console()
    out.print(table)
    out.print(Text("\n".join(notes)))
    if html is not None:
        out.print(Text(f"wrote {html}"))


__all__ = ["Question", "parse_question"]
