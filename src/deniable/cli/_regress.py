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
from rich import box
from rich.table import Table
from rich.text import Text

from deniable.cli._base import (
    app,
    build_design,
    console,
    emit_json,
    fail,
    fmt_interval,
    fmt_num,
    fmt_params,
    kv_table,
)
from deniable.cli._designs import JsonOpt, LevelOpt, ParamOpt, epsilon_note
from deniable.common import _validation as v
from deniable.designs import BinaryDesign, Kuk

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
    from deniable.survey._files import CSV_SUFFIXES
    from deniable.survey._readers import read_frame

    name = Path(path).name.lower()
    if not name.endswith(CSV_SUFFIXES + tuple(_SUFFIXES)):
        fail(
            f"`--data` must be a .csv, .parquet or .pq file (or compressed CSV: "
            f"{', '.join(CSV_SUFFIXES[1:])}), got {path!r} "
            f"(suffix {Path(path).suffix or '(none)'!r})."
        )
    _data_modules()
    from deniable.estimation._formula import check_formula

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


def _coef_table(result: Any, level: float) -> Table:
    pct = f"{level:.0%}"
    table = Table(
        title="Coefficients",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption=f"SE from the {_describe(result.se_type)}; z and p from the normal distribution",
        caption_justify="left",
    )
    for col in ("term", "coef", "std err", "z", "P>|z|", f"{pct} CI"):
        table.add_column(col, justify="left" if col == "term" else "right", no_wrap=True)
    ci = result.conf_int(1 - level).to_numpy()
    bse, z, p = result.bse, result.tvalues, result.pvalues
    for i, term in enumerate(result.terms):
        table.add_row(
            Text(term),
            fmt_num(float(result.params.iloc[i])),
            fmt_num(float(bse.iloc[i])),
            f"{float(z.iloc[i]):.3f}",
            fmt_num(float(p.iloc[i])),
            Text(fmt_interval(ci[i])),
        )
    for name, est, se, lo, hi in result._ancillary_rows(level):
        table.add_row(Text(name), fmt_num(est), fmt_num(se), "", "", Text(fmt_interval((lo, hi))))
    return table


def _describe(se: str) -> str:
    from deniable.estimation import SE_TYPES

    return SE_TYPES[se]


@app.command("regress")
def regress_command(
    design: Annotated[
        str,
        typer.Option(
            "--design", "-d", help="Design name (see `deniable designs`).", show_default=False
        ),
    ],
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
) -> None:
    """Regression with randomized answers: logistic on a randomized outcome, or linear on a
    randomized predictor (--predictor)."""
    from deniable.estimation import linear_rr, logistic_rr

    v.choice("--se", se, _SE)
    lvl = v.level(level)
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
    frame = read_table(data, formula, predictor=predictor, direct=direct)
    with warnings.catch_warnings():  # shown as notes below the table instead
        warnings.simplefilter("ignore", RuntimeWarning)
        if predictor is None:
            result: Any = logistic_rr(formula, frame, d, direct=direct, se=se)
        else:
            result = linear_rr(formula, frame, d, predictor, direct=direct, se=se)
    if as_json:
        payload = {"data": data, **result.to_dict(lvl)}
        emit_json(payload)
        return
    rows = [
        ("model", f"{result.title} ({result.model})"),
        ("formula", formula),
        ("design", f"{d.name} ({fmt_params(d.parameters())})"),
        ("P(yes | 1), P(yes | 0)", f"{d.p_yes_given_1:.6g}, {d.p_yes_given_0:.6g}"),
        ("ε", epsilon_note(d.epsilon)),
        (
            "respondents",
            str(result.nobs)
            + (
                f" ({result.n_dropped} rows with missing values dropped)"
                if result.n_dropped
                else ""
            ),
        ),
        ("log-likelihood", f"{result.llf:.4f}"),
        (
            "converged",
            ("yes" if result.converged else "NO")
            + " ("
            + ", ".join(f"{n} {k}" for k, n in result.iterations.items())
            + " iterations)",
        ),
    ]
    prev = result.prevalence(level=lvl)
    rows.append(
        (
            prev.description,
            f"{fmt_num(prev.value)} (SE {fmt_num(prev.se)}), "
            f"{lvl:.0%} CI {fmt_interval((prev.lower, prev.upper))}",
        )
    )
    test = getattr(result, "direct_test", None)
    if test is not None:
        rows.append(
            (
                "direct vs randomized",
                f"logit shift {fmt_num(test.delta)} "
                f"(SE {fmt_num(test.se)}), LR χ²(1) = {test.lr.statistic:.3f}, "
                f"p = {fmt_num(test.lr.pvalue)}",
            )
        )
    out = console()
    out.print(kv_table(rows, title="Regression with randomized answers"))
    out.print(_coef_table(result, lvl))
    for note in result.notes:
        out.print(Text(f"note: {note}"))
