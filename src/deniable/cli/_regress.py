"""`deniable regress`: regression with randomized answers from a CSV or Parquet file.

Logistic regression of a randomized 0/1 outcome (``logistic_rr``; ``--link`` probit or
cloglog), or, with ``--predictor``, linear regression on a randomized binary predictor
(``linear_rr``).  The sample's design comes from columns of the same file, with the options
of ``deniable analyze`` (``--weights --strata --psu --fpc --repweights ...``, declared once
in ``cli/_sample.py``).  Needs the ``[data]`` extra (pandas, formulaic; pyarrow for Parquet).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from deniable.cli._base import build_design, fail
from deniable.cli._options import DesignOpt, JsonOpt, LevelOpt, ParamOpt
from deniable.cli._render import emit_json, show
from deniable.cli._sample import NO_SAMPLE, SAMPLE, SampleOptions
from deniable.common import validation as v
from deniable.designs import BinaryDesign, Kuk
from deniable.exceptions import DeniableError

if TYPE_CHECKING:  # pragma: no cover
    from deniable.survey import DesignColumns

__all__ = ["cli", "read_table"]

cli = typer.Typer()

_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
_SE = ("observed", "expected", "opg")
_LINKS = ("logit", "probit", "cloglog")
_BREADS = ("observed", "expected")
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
    sample: DesignColumns | None = None,
    group: str | None = None,
) -> Any:
    """The columns of ``path`` that the model uses (the formula is checked first), and
    those of the sample's design, read by the survey-file reader: the same header,
    missing-value and 0/1 rules as every command that reads reports.  Replicate weights
    given by a pattern (``rw*``) read every column, to match it."""
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
        dict.fromkeys([*lhs, *rhs, *(c for c in (predictor, direct, group) if c is not None)])
    )
    if sample is not None:
        columns = _with_design_columns(columns, sample)
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


def _with_design_columns(columns: list[str] | None, sample: DesignColumns) -> list[str] | None:
    """``columns`` and the design's (``None``, every column, for a replicate pattern)."""
    reps = sample.replicate_weights
    if isinstance(reps, str) and "," not in reps:
        return None
    extra = sample.columns([])  # names are needed only to match a pattern
    return list(dict.fromkeys([*(columns or []), *(str(c).strip() for c in extra)]))


def two_group_kwargs(
    d: Any, group_column: str | None, predictor: str | None, direct: str | None
) -> dict[str, Any]:
    """``{"group": column}`` for a two-group design with ``--group-column`` (``{}`` for a
    one-group design); one error line where the pair does not fit."""
    from deniable.designs import TwoGroupDesign

    if not isinstance(d, TwoGroupDesign):
        if group_column is not None:
            fail(f"`--group-column` applies to the two-group designs; design {d.name!r} has "
                 "one group.")  # fmt: skip
        return {}
    if group_column is None:
        fail(f"design {d.name!r} needs two groups: give --group-column COLUMN (the column of "
             "each respondent's group, 1 or 2).")  # fmt: skip
    for flag, given in (("--predictor", predictor), ("--direct", direct)):
        if given is not None:
            fail(f"`{flag}` is not available with a two-group design.")
    return {"group": group_column}


def design_kwargs(
    path: str,
    frame: Any,
    sample: DesignColumns | None,
    link: str,
    bread: str | None,
    predictor: str | None,
) -> dict[str, Any]:
    """The keyword arguments of ``logistic_rr`` for ``--link``, ``--bread`` and the design
    columns; one error line where they do not apply."""
    v.choice("--link", link, _LINKS)
    if bread is not None:
        v.choice("--bread", bread, _BREADS)
    if predictor is not None:
        for flag, given in (
            ("--link", link != "logit"),
            ("--bread", bread is not None),
            ("a sample design (--weights, --strata, ...)", sample is not None),
        ):
            if given:
                fail(f"{flag} applies to the logistic model (a randomized outcome), not to "
                     "--predictor.")  # fmt: skip
        return {}
    if sample is None:
        if bread is not None:
            fail("`--bread` chooses the sandwich of a sample design: give its columns "
                 "(--weights, --strata, --psu, --fpc) too, or drop it.")  # fmt: skip
        return {"link": link}
    if bread is not None and sample.replicate_weights is not None:
        fail("`--bread` applies to a design of strata and PSUs; with --repweights the "
             "model is refitted per replicate: drop it.")  # fmt: skip
    names = [str(c) for c in frame.columns]
    for part in ("weights", "strata", "psu", "fpc"):
        column = getattr(sample, part)
        if column is not None and column not in names:
            fail(f"`{sample.label(part)}` names column {column!r}, which is not in the data "
                 f"file {path!r} (columns: {', '.join(map(repr, names[:12]))}).")  # fmt: skip
    design = sample.design(frame, lambda r: f"data row {r + 1} of {path!r}")
    return {"link": link, "sample_design": design, "bread": bread}


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
        fail("`--agq` needs `--random` (a mixed-effects model), e.g. --random '(1|school)'.")
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
@SAMPLE.expand("sampling")
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
    link: Annotated[
        str,
        typer.Option(
            "--link",
            help="Link of the prevalence model: logit, probit or cloglog (also with --random).",
        ),
    ] = "logit",
    bread: Annotated[
        str | None,
        typer.Option(
            "--bread",
            help="With a sample design: the sandwich's bread, observed (default) or expected "
            "(as R's svyglm).",
            show_default=False,
        ),
    ] = None,
    group_column: Annotated[
        str | None,
        typer.Option(
            "--group-column",
            metavar="COLUMN",
            help="Two-group designs: column of each respondent's group (1 or 2).",
        ),
    ] = None,
    sampling: SampleOptions = NO_SAMPLE,
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
    random: RandomOpt = None,
    agq: AgqOpt = None,
) -> None:
    """Regression with randomized answers: logistic (or probit, cloglog) on a randomized
    outcome, or linear on a randomized predictor (--predictor).

    Under a sample design from columns of the file (--weights, --strata, --psu, --fpc or
    --repweights) the fit is weighted and its standard errors design-based; with --random,
    a mixed-effects model."""
    from deniable.estimation import linear_rr, logistic_rr

    v.choice("--se", se, _SE)
    lvl = level
    d = build_design(design, param)
    if isinstance(d, Kuk) and d.n_reports != 2:  # a red count, not a yes/no
        fail(
            f"`--design` must give one yes/no report per respondent; {d.name!r} with these "
            f"parameters has {d.n_reports} report values."
        )
    two_group = two_group_kwargs(d, group_column, predictor, direct)
    if not two_group and not isinstance(d, BinaryDesign):
        fail(
            f"`--design` must be a one-group design with yes/no reports (regression needs its "
            f"P(yes | 1) and P(yes | 0)), or a two-group design with --group-column; "
            f"{d.name!r} is neither."
        )
    if random is not None or agq is not None:
        given = [
            name
            for name, value in (
                ("--weights", sampling.weights), ("--strata", sampling.strata),
                ("--psu", sampling.psu), ("--fpc", sampling.fpc),
                ("--repweights", sampling.repweights), ("--bread", bread),
                ("--group-column", group_column),
            )
            if value is not None
        ]  # fmt: skip
        if given:
            fail(f"`{given[0]}` cannot be combined with `--random` (a mixed-effects model of a "
                 "simple random sample with one-group designs).")  # fmt: skip
        assert isinstance(d, BinaryDesign)  # two-group designs need --group-column, refused
        _regress_mixed(d, data, formula, random, agq, link, se, predictor, direct, lvl, as_json)
        return
    sample = sampling.columns()
    if sample is not None and se != "observed":
        fail("`--se` chooses a model-based standard error; with a sample design the "
             "covariance is design-based (choose its --bread), drop --se.")  # fmt: skip
    if two_group and sample is not None:
        fail("a sample design (--weights, --strata, ...) is not available with a two-group "
             "design yet.")  # fmt: skip
    frame = read_table(data, formula, predictor=predictor, direct=direct, sample=sample,
                       group=group_column)  # fmt: skip
    kwargs = design_kwargs(data, frame, sample, link, bread, predictor) | two_group
    with warnings.catch_warnings():  # shown as notes below the table instead
        warnings.simplefilter("ignore", RuntimeWarning)
        if predictor is None:
            se_kw: dict[str, Any] = {} if sample is not None else {"se": se}
            fitted: Any = d  # a BinaryDesign, or a TwoGroupDesign with --group-column
            result: Any = logistic_rr(formula, frame, fitted, direct=direct, **se_kw, **kwargs)
        else:
            assert isinstance(d, BinaryDesign)  # two-group designs refuse --predictor above
            result = linear_rr(formula, frame, d, predictor, direct=direct, se=se)
    if as_json:
        emit_json({"data": data, **result.to_dict(lvl)})
        return
    show(result, level=lvl)
