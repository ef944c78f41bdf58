"""`deniable analyze`, `deniable report` and `deniable simulation-study`.

Question specs for `deniable report` look like ``COLUMN=DESIGN:NAME=VALUE,NAME=VALUE``
(e.g. ``drugs=forced:forced_yes=1/6,forced_no=1/6``; ``tax=two-coin`` when every parameter
has a default).  The column is everything before the first ``=`` that is followed by a
design name, so a column name may itself hold ``=`` or ``:``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from deniable import _validation as v
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
    parse_number,
)
from deniable.cli._designs import (
    DesignArg,
    JsonOpt,
    LevelOpt,
    ParamOpt,
    epsilon_note,
    estimate_payload,
    estimate_rows,
)
from deniable.designs import DESIGNS, Design, Tally, make_design

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


def parse_question(spec: str) -> tuple[str, Design]:
    """``COLUMN=DESIGN[:NAME=VALUE,...]`` -> ``(column, design)`` (see the module docstring)."""
    example = "--question drugs=forced:forced_yes=1/6,forced_no=1/6"
    start = 0
    while True:
        i = spec.find("=", start)
        if i < 0:
            fail(
                f"`--question` must look like COLUMN=DESIGN:NAME=VALUE,... with DESIGN one of "
                f"{', '.join(DESIGNS)} (e.g. {example}), got {spec!r}."
            )
        name, _, params = spec[i + 1 :].partition(":")
        if i > 0 and name.strip() in DESIGNS:
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
    return column, make_design(name.strip(), values)


# --------------------------------------------------------------------------- analyze


def _group_table(frame: Any, level: float) -> Table:
    table = Table(
        caption="estimate: unbiased (may leave [0, 1]); SE: plug-in (n); CI: exact",
        caption_justify="left",
    )
    for col in ("group", "n", "missing", "estimate", "bounded", "SE", f"{level:.0%} CI (exact)"):
        table.add_column(col, justify="left" if col == "group" else "right", no_wrap=col != "group")
    for row in frame.itertuples(index=False):
        table.add_row(
            Text(str(row.group)),
            str(row.n),
            str(row.missing),
            fmt_num(row.estimate),
            fmt_num(row.bounded),
            fmt_num(row.se),
            Text(fmt_interval((row.ci_lower, row.ci_upper))),
        )
    return table


@app.command("analyze")
def analyze_command(
    file: FileArg,
    column: Annotated[str, typer.Option("--column", help="Column of 0/1 reports.")],
    design: Annotated[str, typer.Option("--design", help="Design name (see `deniable designs`).")],
    param: ParamOpt = None,
    by: Annotated[
        str | None, typer.Option("--by", help="Estimate per group of this column.")
    ] = None,
    level: LevelOpt = 0.95,
    missing: MissingOpt = "drop",
    as_json: JsonOpt = False,
) -> None:
    """Estimate the prevalence from a column of reports in a CSV or Parquet file."""
    from deniable.analysis import analyze, grouped, read_reports

    d = build_design(design, param)
    lvl = v.level(level)
    miss = v.choice("--missing", missing, ("drop", "error"))
    with _extras():
        df = read_reports(file)
        if by is not None:
            frame = grouped(df, column, d, by, level=lvl, missing=miss)
        else:
            res = analyze(df, column, d, level=lvl, missing=miss)
    if by is not None:
        groups = [
            {k: (None if isinstance(x, float) and math.isnan(x) else x) for k, x in row.items()}
            for row in frame.to_dict(orient="records")
        ]
        if as_json:
            payload = {
                "file": file, "column": column, "by": by, "design": d.name,
                "parameters": d.parameters(), "epsilon": d.epsilon, "level": lvl,
                "interval": "exact", "missing_group": frame.attrs["missing_group"],
                "groups": groups,
            }  # fmt: skip
            for g in payload["groups"]:
                g.pop("epsilon")
            emit_json(payload)
            return
        out = console()
        out.print(
            kv_table(
                [
                    ("file, column, by", f"{file}, {column}, {by}"),
                    ("design", f"{d.name} ({fmt_params(d.parameters())})"),
                    ("ε", epsilon_note(d.epsilon)),
                    ("rows without a group (dropped)", str(frame.attrs["missing_group"])),
                ],
                title="Prevalence by group",
            )
        )
        out.print(_group_table(frame, lvl))
        return
    est = res.estimate
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


@app.command("report")
def report_command(
    file: FileArg,
    question: Annotated[
        list[str] | None,
        typer.Option(
            "--question",
            "-q",
            metavar="COL=DESIGN:NAME=VALUE,...",
            help="A question and its design, repeatable (e.g. -q drugs=warner:p=0.75).",
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
    from deniable.analysis import read_reports
    from deniable.report import survey_report

    if not question:
        fail("give at least one --question COL=DESIGN:NAME=VALUE,... (e.g. -q q1=warner:p=0.75).")
    questions: dict[str, Design] = {}
    for spec in question:
        col, d = parse_question(spec)
        if col in questions:
            fail(f"`--question` names column {col!r} twice.")
        questions[col] = d
    lvl = v.level(level)
    miss = v.choice("--missing", missing, ("drop", "error"))
    with _extras():
        df = read_reports(file)
        rep = survey_report(df, questions, level=lvl, missing=miss, title=title)
        if html is not None:
            rep.to_html(html)
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
    )
    for col in ("question", "design", "n", "missing", "estimate", "SE",
                f"{lvl:.0%} CI (exact)", "ε"):  # fmt: skip
        text = col in ("question", "design")
        table.add_column(
            col, justify="left" if text else "right", no_wrap=not text, overflow="fold"
        )
    for row, res in zip(rep.to_frame().itertuples(index=False), rep.results, strict=True):
        table.add_row(
            Text(str(row.question)), Text(res.design.name), str(row.n), str(row.missing),
            fmt_num(row.estimate), fmt_num(row.se),
            Text(fmt_interval((row.ci_lower, row.ci_upper))), fmt_epsilon(row.epsilon),
        )  # fmt: skip
    notes = [f"{q}: {res.design.name} ({fmt_params(res.design.parameters())})"
             for q, res in zip(questions, rep.results, strict=True)]  # fmt: skip
    notes.append(
        "estimate: unbiased (may leave [0, 1]); SE: plug-in (n); "
        "ε = ∞: a report can reveal the answer."
    )
    out = console()
    out.print(table)
    out.print(Text("\n".join(notes)))
    if html is not None:
        out.print(Text(f"wrote {html}"))


# --------------------------------------------------------------------------- study


@app.command("simulation-study")
def simulation_study_command(
    design: DesignArg,
    param: ParamOpt = None,
    n: Annotated[int | None, typer.Option("--n", "-n", help="Respondents per survey.")] = None,
    prevalence: Annotated[str | None, typer.Option("--prevalence", help="True prevalence.")] = None,
    replications: Annotated[
        int, typer.Option("--replications", "-r", help="Number of simulated surveys.")
    ] = 1000,
    seed: Annotated[
        int | None, typer.Option("--seed", min=0, help="Seed (default: fresh, printed).")
    ] = None,
    non_compliance: Annotated[
        str,
        typer.Option("--non-compliance", help="Share who always say no, whatever the coin says."),
    ] = "0",
    null: Annotated[
        str | None, typer.Option("--null", help="Also give the rejection rate of H0: π = NULL.")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            "--method", help="binomial (draw yes counts; default) or respondents (simulate each)."
        ),
    ] = "binomial",
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Repeat a simulated survey: bias, SEs, RMSE, interval coverage (and power).

    A progress bar runs on stderr when it is a terminal (never with --json).
    """
    from deniable.simulation import simulation_study

    d = build_design(design, param)
    if n is None:
        fail("`--n` (respondents per survey) is required.")
    if prevalence is None:
        fail("`--prevalence` is required.")
    pi = parse_number("--prevalence", prevalence)
    s = parse_number("--non-compliance", non_compliance)
    pi0 = None if null is None else parse_number("--null", null)
    err = Console(stderr=True)
    bar = Progress(
        TextColumn("simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=as_json or not err.is_terminal,
    )
    task: list[TaskID] = []

    def step(done: int, total: int) -> None:
        # started at the first finished block: bad input fails before anything is drawn
        if not task:
            bar.start()
            task.append(bar.add_task("surveys", total=total))
        bar.update(task[0], completed=done)

    try:
        st = simulation_study(
            d, n, pi, replications=replications, seed=seed, non_compliance=s, level=level,
            null=pi0, method=method, progress=step,
        )  # fmt: skip
    finally:
        if task:
            bar.stop()
    if as_json:
        emit_json(st.to_dict())
        return
    mc = st.mc_se_coverage
    rows = [
        ("design", f"{d.name} ({fmt_params(d.parameters())})"),
        ("ε", epsilon_note(d.epsilon)),
        ("n, replications, seed", f"{st.n}, {st.replications}, {st.seed}"),
        ("prevalence, non-compliance", f"{st.prevalence:g}, {st.non_compliance:g}"),
        ("expected estimate (closed form)", fmt_num(st.expected_estimate, 6)),
        ("bias (± Monte Carlo SE)", f"{st.bias:+.6f} ± {st.mc_se_bias:.6f}"),
        ("empirical SE (true SE)", f"{fmt_num(st.empirical_se, 6)} ({fmt_num(st.true_se, 6)})"),
        ("mean estimated SE (plug-in)", fmt_num(st.mean_se, 6)),
        ("RMSE", fmt_num(st.rmse, 6)),
        (f"coverage of {st.level:.0%} exact CI",
         f"{st.coverage_exact:.4f} ± {mc(st.coverage_exact):.4f}"),
        (f"coverage of {st.level:.0%} Wald CI",
         f"{st.coverage_wald:.4f} ± {mc(st.coverage_wald):.4f}"),
    ]  # fmt: skip
    if st.null is not None:
        assert st.rejection_exact is not None and st.rejection_wald is not None
        rows.append(
            (
                f"rejects π = {st.null:g} at {1 - st.level:.0%} (exact / Wald)",
                f"{st.rejection_exact:.4f} / {st.rejection_wald:.4f}",
            )
        )
    method_note = (
        "yes counts drawn from Binomial(n, λ)" if st.method == "binomial" else "every respondent"
    )
    rows.append(("simulated", method_note))
    console().print(kv_table(rows, title="Simulation study"))


__all__ = ["parse_question"]
