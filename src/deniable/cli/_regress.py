"""`deniable regress`: regression with randomized answers from a CSV or Parquet file.

Logistic regression of a randomized 0/1 outcome (``logistic_rr``), or, with ``--predictor``,
linear regression on a randomized binary predictor (``linear_rr``).  Needs the ``[data]``
extra (pandas, formulaic; pyarrow for Parquet).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from deniable.cli._base import build_design, fail
from deniable.cli._options import DesignOpt, JsonOpt, LevelOpt, ParamOpt
from deniable.cli._render import emit_json, show
from deniable.common import validation as v
from deniable.designs import BinaryDesign, Kuk
from deniable.exceptions import DeniableError

__all__ = ["cli", "read_table"]

cli = typer.Typer()

_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
_SE = ("observed", "expected", "opg")
_FORMULA_HELP = (
    'Model formula, e.g. "y ~ x1 + C(group) + log(income)". A formula is data, not code: '
    "column names (any name in backticks), numbers, ~ + - * / : ** ^ and parentheses, and "
    "the functions C, I, log, log2, log10, log1p, exp, sqrt, abs (also np.log ...), center, "
    "scale and poly(x, degree); anything else (attribute access, other calls, strings) is "
    "refused. See docs/regression.md."
)


def _data_modules() -> Any:
    try:
        import formulaic  # noqa: F401 - checked here so the error names the extra
        import pandas
    except ModuleNotFoundError as exc:
        fail(
            f"`deniable regress` needs the [data] extra ({exc.name} is missing): "
            "pip install 'deniable[data]'."
        )
    return pandas


def read_table(
    path: str,
    formula: str | None = None,
    *,
    predictor: str | None = None,
    direct: str | None = None,
) -> Any:
    """The columns of ``path`` that the model uses (the formula is checked first), read by
    the survey-file reader: the same header, missing-value and 0/1 rules as every command
    that reads reports."""
    from deniable.survey import CSV_SUFFIXES, read_frame

    name = Path(path).name.lower()
    if not name.endswith(CSV_SUFFIXES + tuple(_SUFFIXES)):
        fail(
            f"`--data` must be a .csv, .parquet or .pq file (or compressed CSV: "
            f"{', '.join(CSV_SUFFIXES[1:])}), got {path!r} "
            f"(suffix {Path(path).suffix or '(none)'!r})."
        )
    _data_modules()
    from deniable.estimation import check_formula

    # the formula is checked (data, not code) before anything parses it: a refused formula
    # is an error here, before the file is read
    names = check_formula(formula or "")
    lhs, rhs = list(names.outcome), list(names.covariates)
    columns: list[str] | None = list(
        dict.fromkeys([*lhs, *rhs, *(c for c in (predictor, direct) if c is not None)])
    )
    reports: dict[str, str] = {}
    if predictor is None and len(lhs) == 1:
        reports[lhs[0]] = "the outcome"
    if predictor is not None:
        reports[predictor] = "the randomized predictor"
    if direct is not None:
        reports[direct] = "the direct-questioning column"
    try:
        return read_frame(path, columns=columns, reports=reports, what="data file")
    except ImportError as exc:
        fail(str(exc))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


RandomOpt = Annotated[
    str | None,
    typer.Option(
        "--random",
        metavar="TERM",
        help="Mixed-effects model: the random term in lme4 syntax, e.g. '(1|school)' "
        "(random intercepts) or '(1 + x|school)' (and slopes), one grouping column.",
    ),
]
AgqOpt = Annotated[
    int | None,
    typer.Option(
        "--agq",
        metavar="N",
        help="With --random: adaptive Gauss-Hermite quadrature with N nodes instead of the "
        "Laplace approximation (one random intercept only).",
    ),
]
LinkOpt = Annotated[
    str,
    typer.Option("--link", help="With --random: the link, logit, probit or cloglog."),
]


def _regress_mixed(
    d: BinaryDesign,
    data: str,
    formula: str,
    random: str | None,
    agq: int | None,
    link: str,
    se: str,
    predictor: str | None,
    direct: str | None,
    level: float,
    as_json: bool,
) -> None:
    """``deniable regress --random TERM``: :func:`deniable.estimation.mixed_logistic_rr`."""
    from deniable.estimation import LINKS, mixed_logistic_rr, parse_random

    if random is None:
        used = "--agq" if agq is not None else "--link"
        fail(f"`{used}` needs `--random` (a mixed-effects model), e.g. --random '(1|school)'.")
    v.choice("--link", link, tuple(LINKS))
    for name, value in (("--predictor", predictor), ("--direct", direct)):
        if value is not None:
            fail(f"`{name}` cannot be combined with `--random`, got {name} {value!r}.")
    if se != "observed":
        fail(
            f"`--se` must be 'observed' with `--random` (the observed information of the "
            f"marginal likelihood), got {se!r}."
        )
    try:
        term = parse_random(random)
    except ValueError as exc:  # a ParameterError naming `random`: say --random
        fail(_first_line(exc).replace("`random`", "`--random`", 1))
    if agq is not None:
        v.integer("--agq", agq, minimum=1, maximum=50)
        if len(term.columns) > 1:
            fail(
                f"`--agq` needs one random effect per group (a random intercept, as lme4's "
                f"nAGQ), got --random {random!r} with {len(term.columns)}; drop --agq for "
                "the Laplace approximation."
            )
    # the random term's columns are read with the formula's (names, not code)
    slopes = [c for c in term.columns if c != "1"]
    columns = " + ".join(f"`{c}`" for c in (term.group, *slopes))
    frame = read_table(data, f"{formula} + {columns}")
    method = "laplace" if agq is None else "agq"
    with warnings.catch_warnings():  # shown as notes below the table instead
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            result = mixed_logistic_rr(
                formula, frame, d, random=random, method=method, n_agq=agq, link=link
            )
        except DeniableError as exc:  # the library names `random`; the user typed --random
            fail(_first_line(exc).replace("`random`", "`--random`", 1))
    if as_json:
        emit_json({"data": data, **result.to_dict(level)})
        return
    show(result, level=level)


@cli.command("regress")
def regress_command(
    design: DesignOpt,
    data: Annotated[
        str,
        typer.Option(
            "--data",
            metavar="FILE",
            help="A .csv or .parquet file, one row a respondent.",
            show_default=False,
        ),
    ],
    formula: Annotated[
        str,
        typer.Option(
            "--formula",
            "-f",
            help=_FORMULA_HELP,
            show_default=False,
        ),
    ],
    param: ParamOpt = None,
    se: Annotated[
        str, typer.Option("--se", help="Standard errors: observed, expected or opg.")
    ] = "observed",
    direct: Annotated[
        str | None,
        typer.Option(
            "--direct",
            metavar="COLUMN",
            help="0/1 column of respondents asked directly (tests the difference).",
        ),
    ] = None,
    predictor: Annotated[
        str | None,
        typer.Option(
            "--predictor",
            metavar="COLUMN",
            help="Linear model: the 0/1 column of randomized reports used as predictor.",
        ),
    ] = None,
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
    random: RandomOpt = None,
    agq: AgqOpt = None,
    link: LinkOpt = "logit",
) -> None:
    """Regression with randomized answers: logistic on a randomized outcome, or linear on a
    randomized predictor (--predictor); with --random, a mixed-effects model."""
    from deniable.estimation import linear_rr, logistic_rr

    v.choice("--se", se, _SE)
    lvl = level
    d = build_design(design, param)
    if isinstance(d, Kuk) and d.n_reports != 2:  # a red count, not a yes/no
        fail(
            f"`--design` must give one yes/no report per respondent; {d.name!r} with these "
            f"parameters has {d.n_reports} report values."
        )
    if not isinstance(d, BinaryDesign):
        fail(
            f"`--design` must be a one-group design with yes/no reports (regression needs its "
            f"P(yes | 1) and P(yes | 0)); {d.name!r} is not one."
        )
    if random is not None or agq is not None or link != "logit":
        _regress_mixed(d, data, formula, random, agq, link, se, predictor, direct, lvl, as_json)
        return
    frame = read_table(data, formula, predictor=predictor, direct=direct)
    with warnings.catch_warnings():  # shown as notes below the table instead
        warnings.simplefilter("ignore", RuntimeWarning)
        if predictor is None:
            result: Any = logistic_rr(formula, frame, d, direct=direct, se=se)
        else:
            result = linear_rr(formula, frame, d, predictor, direct=direct, se=se)
    if as_json:
        emit_json({"data": data, **result.to_dict(lvl)})
        return
    show(result, level=lvl)
