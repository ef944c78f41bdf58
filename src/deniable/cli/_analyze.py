"""`deniable analyze` and `deniable report`.

Question specs for `deniable report` look like ``COLUMN=DESIGN:NAME=VALUE,NAME=VALUE``
(e.g. ``drugs=forced:forced_yes=1/6,forced_no=1/6``; ``tax=two-coin`` when every parameter
has a default).  The column is everything before the first ``=`` that is followed by a
design name, so a column name may itself hold ``=`` or ``:``.  A two-group design names its
group column after ``@``: ``cheat=sld:p1=2/12,p2=10/12@version`` (everything after the
first ``@`` that follows the design name, so a group column may hold ``@`` too).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from deniable.cli._base import build_design, fail
from deniable.cli._bayes import BayesOpt, PriorOpt, bayes_prior, show_with_posterior
from deniable.cli._files import claim_output, progress_bar
from deniable.cli._options import ForceOpt, JsonOpt, LevelOpt, ParamOpt
from deniable.cli._render import console, emit_json, show
from deniable.cli._robustness import (
    RobustnessOpt,
    check_shift,
    robustness_data,
    show_robustness,
)
from deniable.cli._sample import NO_SAMPLE, SAMPLE, SampleOptions
from deniable.common import validation as v
from deniable.designs import DESIGNS, TWO_GROUP_DESIGNS, Design, make_design
from deniable.exceptions import DeniableError

if TYPE_CHECKING:
    from deniable.survey import Survey

cli = typer.Typer()

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
SurveyOpt = Annotated[
    str | None,
    typer.Option(
        "--survey",
        metavar="SURVEY_FILE",
        help="A survey file (deniable.survey/1): the designs of its questions, whose ids name "
        "the columns (as in the service's report export).",
        show_default=False,
    ),
]


def question_option(metavar: str, help: str) -> Any:
    """The ``--question``/``-q`` option (repeatable: a column, its design and parameters, as
    :func:`parse_question` reads them) of `deniable report` and `deniable crosstab`."""
    return typer.Option("--question", "-q", metavar=metavar, help=help)


def read_survey(path: str) -> Survey:
    """The survey file at ``path`` (``--survey``), or one error line."""
    from deniable.survey import load_survey

    try:
        return load_survey(path)
    except DeniableError as exc:
        fail(f"`--survey`: {exc}")


def check_question(found: Survey, column: str, *, when: str = "") -> None:
    """One error line when ``column`` (``--column``) is not a question of ``found``."""
    ids = [q.id for q in found.questions]
    if column not in ids:
        fail(
            f"`--column` must name a question of the survey {found.id!r} ({', '.join(ids)})"
            f"{when}, got {column!r}."
        )


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


@cli.command("analyze")
@SAMPLE.expand("sampling")
def analyze_command(
    file: FileArg,
    column: Annotated[
        str,
        typer.Option(
            "--column", help="Column of reports: 0/1, or a category 0..k-1 (categorical designs)."
        ),
    ],
    design: Annotated[
        str | None,
        typer.Option(
            "--design", "-d", help="Design name (see `deniable designs`).", show_default=False
        ),
    ] = None,
    param: ParamOpt = None,
    survey: SurveyOpt = None,
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
    sampling: SampleOptions = NO_SAMPLE,
    bayes: BayesOpt = False,
    prior: PriorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Estimate the prevalence (or a categorical question's shares) from a column of reports
    in a CSV or Parquet file; the design from --design/--param or from --survey."""
    from deniable.survey import GroupedAnalysis, analyze_file

    if survey is not None:
        if design is not None or param:
            fail("give the design either by --design/--param or by --survey, not both.")
        found = read_survey(survey)
        check_question(found, column, when=" when --survey is given")
        d = found.question(column).design
    elif design is None:
        fail("give the design: --design NAME (with --param NAME=VALUE ...) or --survey FILE.")
    else:
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
    miss = v.choice("--missing", missing, ("drop", "error"))
    sample = sampling.columns()
    post_prior = bayes_prior(bayes, prior, by=by, sampled=sample is not None)
    with _extras(), progress_bar(not as_json, f"reading {file}") as progress:
        result = analyze_file(file, column, d, group=group_column, by=by, level=level,
                              missing=miss, progress=progress, sample_design=sample)  # fmt: skip
    if by is not None:
        show(GroupedAnalysis(result, d, file), as_json)
    elif post_prior is None:
        show(result.summary(), as_json)
    else:
        show_with_posterior(result, post_prior, level, as_json)


# --------------------------------------------------------------------------- report


@cli.command("report")
@SAMPLE.expand("sampling")
def report_command(
    file: FileArg,
    question: Annotated[
        list[str] | None,
        question_option(
            "COL=DESIGN:NAME=VALUE,...[@GROUP]",
            "A question and its design, repeatable (e.g. -q drugs=warner:p=0.75); a two-group "
            "design adds @GROUP_COLUMN (e.g. -q q=sld:p1=2/12,p2=10/12@version).",
        ),
    ] = None,
    survey: SurveyOpt = None,
    html: Annotated[
        str | None,
        typer.Option("--html", metavar="OUT", help="Also write an HTML page here (OUT.html)."),
    ] = None,
    title: Annotated[
        str | None,
        typer.Option(
            "--title",
            help="Title of the report [default: the survey's title, or Survey report].",
            show_default=False,
        ),
    ] = None,
    level: LevelOpt = 0.95,
    missing: MissingOpt = "drop",
    force: ForceOpt = False,
    robustness: RobustnessOpt = None,
    sampling: SampleOptions = NO_SAMPLE,
    as_json: JsonOpt = False,
) -> None:
    """A whole-survey report: every question's n, estimate, interval and ε (by --question, or
    every question of a survey file by --survey)."""
    from deniable.survey import survey_report_file

    check_shift(robustness)
    if survey is not None and question:
        fail("give the questions either by --question or by --survey, not both.")
    if survey is None and not question:
        fail(
            "give at least one --question COL=DESIGN:NAME=VALUE,... (e.g. -q q1=warner:p=0.75) "
            "or a survey file by --survey FILE."
        )
    sample = sampling.columns()
    page_out = claim_output(
        "--html", html, force=force, formats=["html"], inputs=[("FILE", file), ("--survey", survey)]
    )
    questions: dict[str, Design | tuple[Design, str]] = {}
    if survey is not None:
        found = read_survey(survey)
        questions = {
            q.id: (q.design, q.group_column) if q.two_group else q.design for q in found.questions
        }
        title = found.title if title is None else title
    for spec in question or ():
        col, d, group = parse_question(spec)
        if col in questions:
            fail(f"`--question` names column {col!r} twice.")
        questions[col] = d if group is None else (d, group)
    miss = v.choice("--missing", missing, ("drop", "error"))
    with _extras():
        with progress_bar(not as_json, f"reading {file}") as progress:
            rep = survey_report_file(file, questions, level=level, missing=miss,
                                     title="Survey report" if title is None else title,
                                     progress=progress, sample_design=sample)  # fmt: skip
        if page_out is not None:
            page_out.write_text(rep.to_html())
    if as_json:
        payload = rep.to_dict()
        if html is not None:
            payload["html"] = html
        if robustness is not None:
            payload["robustness"] = robustness_data(rep.results, robustness)
        emit_json(payload)
        return
    show(rep)
    if robustness is not None:
        show_robustness(rep.results, robustness)
    if html is not None:
        console().print(f"wrote {html}", markup=False, highlight=False)


__all__ = [
    "Question",
    "check_question",
    "cli",
    "parse_question",
    "question_option",
    "read_survey",
]
