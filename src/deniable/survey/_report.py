"""A whole-survey report: every question's n, estimate, interval and ε, as a text table, a
DataFrame, JSON, and a self-contained HTML page with a forest plot.

Tables and the DataFrame need the ``[data]`` extra (pandas); the HTML page's forest plot
needs ``[plot]`` (matplotlib).  ε is printed ``∞`` (``"inf"`` in JSON) for a design with a
deterministic path, never as a finite number.

A two-group question (``{column: (design, group_column)}``) takes one row per estimated
parameter (e.g. the stochastic lie detector's ``prevalence`` and ``honesty``), with its
delta-method Wald interval; the table then gains ``parameter`` and ``interval`` columns.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deniable.common import (
    atomic_write_text,
    dumps,
    format_epsilon,
    format_interval,
    format_number,
    format_parameters,
    to_jsonable,
)
from deniable.common import validation as v
from deniable.designs import Design
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.results import Result, Table
from deniable.survey._analysis import Analysis, _analysis, _check, _plan, frame_analyses
from deniable.survey._analysis_file import read_counts
from deniable.survey._compare import design_fields, report_design_table
from deniable.survey._files import Progress, SurveyFile
from deniable.survey._questionnaire import Survey
from deniable.survey._readers import check_frame, require_pandas
from deniable.survey._sample import (
    design_parameter,
    sample_spec,
    with_design,
)

__all__ = ["SurveyReport", "survey_report", "survey_report_file"]

_INTERVAL = (
    "exact: Clopper-Pearson interval for the share of yes reports, mapped through the design"
)
_INTERVAL_WALD = "wald (two-group questions): estimate ± z SE, delta-method SE"


def _design_label(design: Design) -> str:
    params = ", ".join(
        f"{k}={x:.6g}" if isinstance(x, float) else f"{k}={x}"
        for k, x in design.parameters().items()
    )
    return f"{design.name}({params})"


@dataclass(frozen=True)
class SurveyReport(Result):
    """Every question of a survey analysed with its design (see :func:`survey_report`).

    ``results`` holds one :class:`~deniable.survey.Analysis` per question, in the order
    given; ``respondents`` is the number of rows of the data; ``file`` the file they were
    read from (:func:`survey_report_file`; else ``None``).
    """

    results: tuple[Analysis, ...]
    level: float
    respondents: int
    title: str = "Survey report"
    file: str | None = None
    sample: str | None = None

    @property
    def designed(self) -> bool:
        """True when the questions have design-based estimates (a sample design was
        given; :attr:`sample` describes it)."""
        return any(r.design_based is not None for r in self.results)

    @property
    def two_group(self) -> bool:
        """True when some question has Wald intervals (two-group designs, one row per
        parameter; Kuk's multi-draw design)."""
        return any(r.interval == "wald" for r in self.results)

    @property
    def several(self) -> bool:
        """True when some question has several rows (a two-group design's parameters, a
        categorical design's categories): the table then names each row's parameter."""
        return any(len(r.estimates()) > 1 for r in self.results)

    def _rows(self) -> list[dict[str, Any]]:
        rows = []
        for r in self.results:
            e: Any = r.estimate
            for j, (name, p) in enumerate(r.estimates().items()):
                lo, hi = p.ci(r.level, r.interval)
                if r.design.n_groups == 2:
                    yes = sum(e.yes_counts)
                elif r.categorical:
                    yes = int(e.tally.counts[j])  # the reports of category j
                else:
                    yes = round((e.lambda_hat or 0.0) * e.n)
                rows.append(
                    {
                        "question": str(r.column),
                        "design": _design_label(r.design),
                        "parameter": name,
                        "n": r.n,
                        "missing": r.missing,
                        "yes": yes,
                        "estimate": p.value,
                        "bounded": p.bounded,
                        "se": p.se,
                        "se_unbiased": p.se_unbiased,
                        "ci_lower": lo,
                        "ci_upper": hi,
                        "interval": r.interval,
                        "epsilon": r.design.epsilon,
                    }
                )
                if r.design_based is not None:
                    rows[-1].update(design_fields(design_parameter(r.design_based, j, name),
                                                  r.level))  # fmt: skip
        return rows

    def to_frame(self) -> Any:
        """One row per question (per parameter of a two-group question): question, design,
        parameter, n, missing, yes, estimate (unbiased moment), bounded, se (plug-in),
        se_unbiased, ci_lower, ci_upper, interval (``exact``; ``wald`` for two-group
        questions), epsilon (a float; ``inf`` for designs with a deterministic path); under
        a sample design also the design-based ``design_estimate``, ``design_se``,
        ``design_df``, ``design_deff``, ``design_ci_lower``, ``design_ci_upper`` (``t``
        interval; NaN for a parameter without one)."""
        pd = require_pandas()
        out = pd.DataFrame(self._rows())
        out.attrs.update(level=self.level, interval=self._interval_note(),
                         respondents=self.respondents)  # fmt: skip
        return out

    def _interval_note(self) -> str:
        return f"{_INTERVAL}; {_INTERVAL_WALD}" if self.two_group else _INTERVAL

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict (no NaN or Infinity: an infinite ε is ``"inf"``)."""
        questions = []
        for r in self.results:
            item = {"question": str(r.column), **r.to_dict()}
            item.pop("column")
            questions.append(item)
        out: dict[str, Any] = {
            "title": self.title,
            "level": self.level,
            "respondents": self.respondents,
            "interval": self._interval_note(),
            "se_convention": "se: plug-in (divides by n); se_unbiased: divides by n - 1",
            "questions": questions,
        }
        if self.file is not None:
            out["file"] = self.file
        if self.sample is not None:
            out["sample_design"] = self.sample
        result: dict[str, Any] = to_jsonable(out)
        return result

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return dumps(self.to_dict(), indent=indent)

    def _cells(self, *, html: bool = False) -> tuple[list[str], list[list[str]]]:
        """Header and rows of the table (and of the HTML page with ``html``)."""
        two, several = self.two_group, self.several
        ci = f"{self.level:.0%} CI" + ("" if two else " (exact)")
        head = ["question", "design", *(["parameter"] if several else []), "n", "missing",
                "estimate", *(["bounded MLE"] if html else []), "SE",
                *(["SE (n − 1)"] if html else []), ci,
                *(["interval"] if two else []), "ε"]  # fmt: skip
        body = []
        for row in self._rows():
            seu = row["se_unbiased"]
            body.append(
                [row["question"], row["design"], *([row["parameter"]] if several else []),
                 str(row["n"]), str(row["missing"]), f"{row['estimate']:.4f}",
                 *([f"{row['bounded']:.4f}"] if html else []), f"{row['se']:.4f}",
                 *([f"{seu:.4f}" if math.isfinite(seu) else "n/a"] if html else []),
                 f"[{row['ci_lower']:.4f}, {row['ci_upper']:.4f}]",
                 *([row["interval"]] if two else []), format_epsilon(row["epsilon"])]
            )  # fmt: skip
        return head, body

    def table(self) -> Table:
        """One row per question (per parameter of a two-group one, per category of a
        categorical one): n, missing reports, estimate, SE, interval and ε; below it each
        question's design."""
        two = self.two_group
        several = self.several  # then a parameter column replaces the design (in the notes)
        rows = []
        for row, res in zip(self._rows(), [r for r in self.results for _ in r.estimates()],
                            strict=True):  # fmt: skip
            rows.append(
                (row["question"], row["parameter"] if several else res.design.name,
                 str(row["n"]), str(row["missing"]), format_number(row["estimate"]),
                 format_number(row["se"]), format_interval((row["ci_lower"], row["ci_upper"])),
                 format_epsilon(row["epsilon"]))
            )  # fmt: skip
        notes = [
            f"{r.column}: {r.design.name} ({format_parameters(r.design.parameters())})"
            + (f", groups in {r.group}" if r.group is not None else "")
            for r in self.results
        ]
        notes.append(
            "estimate: unbiased (may leave [0, 1]); SE: plug-in (n); "
            "ε = ∞: a report can reveal the answer."
        )
        if two:
            wald = [r for r in self.results if r.interval == "wald"]
            kinds = sorted({"two-group" if r.design.n_groups == 2 else "multi-draw" for r in wald})
            notes.append(
                f"CI: exact, but Wald (delta method) for {' and '.join(kinds)}: "
                f"{', '.join(str(r.column) for r in wald)}."
            )
        where = f"{self.file}, " if self.file is not None else ""
        extra = (report_design_table(self),) if self.designed else ()
        return Table(
            ("question", "parameter" if several else "design", "n", "missing", "estimate", "SE",
             f"{self.level:.0%} CI" + ("" if two else " (exact)"), "ε"),
            tuple(rows),
            title=f"{self.title}: {where}{self.respondents} respondents",
            notes=tuple(notes),
            align="llrrrrrr",
            sections=extra,
        )  # fmt: skip

    def forest_svg(self) -> str:
        """The forest plot (estimate and exact interval per question) as SVG text.

        Drawn with matplotlib's object API (no pyplot state), text as paths, a fixed hash
        salt and no date, so the same report gives the same SVG.  XML comments (where
        matplotlib echoes label text) are removed.
        """
        from deniable.plotting import forest_svg

        rows = self._rows()
        labels = [
            f"{r['question']}{': ' + r['parameter'] if self.several else ''}  "
            f"(ε = {format_epsilon(r['epsilon'])})"
            for r in rows
        ]
        kind = "interval (exact; Wald for two-group)" if self.two_group else "exact interval"
        # exact intervals are clipped to [0, 1] (Wald ones are not); an unbiased estimate
        # outside [0, 1] is drawn alone
        return forest_svg(
            labels,
            [r["estimate"] for r in rows],
            [r["ci_lower"] for r in rows],
            [r["ci_upper"] for r in rows],
            xlabel=f"prevalence: estimate and {self.level:.0%} {kind}",
        )

    def to_html(self, path: str | Path | None = None, *, plot: bool = True) -> str:
        """A self-contained HTML page (inline CSS and SVG, no external resources): the table
        of every question and, with ``plot``, the forest plot.  Every user-supplied string
        (title, question names) is escaped.  Written to ``path`` (UTF-8) when given; the
        page is returned either way."""
        from deniable.survey._report_html import report_page

        page = report_page(self, plot=plot)
        if path is not None:  # a temporary file renamed into place: never half-written
            atomic_write_text(path, page)
        return page


Questions = Mapping[Any, Design | tuple[Design, Any]] | Survey


def _questions(
    questions: Questions, title: str, level: float, missing: str
) -> list[tuple[Any, Any, Any, float]]:
    """``(column, design, group column or None, level)`` per question, checked."""
    if isinstance(questions, Survey):  # the columns of a service export: the question ids
        # (a two-group question's groups in the export's column `<id>_group`)
        questions = {
            q.id: (q.design, q.group_column) if q.two_group else q.design
            for q in questions.questions
        }
    if not isinstance(questions, Mapping):
        raise ParameterTypeError(
            "`questions` must be a mapping {column: design} (or {column: (design, "
            f"group_column)}} for a two-group design), got {type(questions).__name__}."
        )
    if not questions:
        raise ParameterError("`questions` must name at least one column, got an empty mapping.")
    if not isinstance(title, str):
        raise ParameterTypeError(f"`title` must be a string, got {type(title).__name__}.")
    out = []
    for column, spec in questions.items():
        design: Any = spec
        group = None
        if isinstance(spec, tuple):
            if len(spec) != 2 or not isinstance(spec[0], Design):
                raise ParameterTypeError(
                    f"`questions[{column!r}]` must be a design or a pair (design, "
                    f"group_column), got {spec!r}."
                )
            design, group = spec
        elif getattr(spec, "n_groups", 1) == 2:
            raise DataError(
                f"design {spec.name!r} needs two groups: give group=... as "
                f"questions[{column!r}] = (design, group_column), the column holding each "
                "respondent's group (1 or 2)."
            )
        d, lvl = _check(design, column, group, None, level, missing)
        out.append((column, d, group, lvl))
    return out


def survey_report(
    df: Any,
    questions: Questions,
    *,
    level: float = 0.95,
    missing: str = "drop",
    title: str = "Survey report",
    sample_design: Any = None,
    weights: Any = None,
    strata: Any = None,
    psu: Any = None,
    fpc: Any = None,
    replicate_weights: Any = None,
) -> SurveyReport:
    """Analyse every question of a survey: ``questions`` maps a column to its design, or for
    a two-group design to ``(design, group_column)`` (the column of randomization groups,
    1 or 2); or it is a :class:`~deniable.survey.Survey` (a survey file), whose question ids
    name the columns, as in the service's report export.

    Each question is :func:`~deniable.survey.analyze` of its column (same validation and
    missing-value handling); the report lists n, estimate, interval and ε (one row per
    estimated parameter of a two-group question, per category of a categorical one).
    :func:`survey_report_file` does the same
    on a file, reading it once, in batches.

    >>> import pandas as pd
    >>> from deniable import Mangat, Warner
    >>> df = pd.DataFrame({"drugs": [1, 0, 1, 1, 0, 0, 0, 1], "tax": [0, 0, 1, 0, 1, 1, 0, 0]})
    >>> rep = survey_report(df, {"drugs": Warner(0.75), "tax": Mangat(0.5)})
    >>> print(rep.table())
    Survey report: 8 respondents
    question  design  n  missing  estimate      SE    95% CI (exact)       ε
    --------  ------  -  -------  --------  ------  ----------------  ------
    drugs     warner  8        0    0.5000  0.3536  [0.0000, 1.0000]  1.0986
    tax       mangat  8        0   -0.2500  0.3423  [0.0000, 0.5103]       ∞
    drugs: warner (p=0.75)
    tax: mangat (p=0.5)
    estimate: unbiased (may leave [0, 1]); SE: plug-in (n); ε = ∞: a report can reveal the
    answer.

    With a sample design (``sample_design``, or the columns ``weights``, ``strata``,
    ``psu``, ``fpc``, ``replicate_weights``, as in :func:`~deniable.survey.analyze`) every
    question also gets its design-based estimate, SE, df, design effect and ``t``
    interval beside the unweighted ones.
    """
    check_frame(df)
    specs = _questions(questions, title, level, missing)
    parts = {"weights": weights, "strata": strata, "psu": psu, "fpc": fpc,
             "replicate_weights": replicate_weights}  # fmt: skip
    spec = sample_spec(sample_design, parts)
    results, sample = frame_analyses(df, specs, spec, missing)
    return SurveyReport(tuple(results), v.level(level), len(df), title, sample=_describe(sample))


def survey_report_file(
    path: str | os.PathLike[str],
    questions: Questions,
    *,
    level: float = 0.95,
    missing: str = "drop",
    title: str = "Survey report",
    block_size: int | None = None,
    progress: Progress | None = None,
    sample_design: Any = None,
    weights: Any = None,
    strata: Any = None,
    psu: Any = None,
    fpc: Any = None,
    replicate_weights: Any = None,
) -> SurveyReport:
    """:func:`survey_report` on a CSV or Parquet file, read once and in batches (only the
    question and group columns; memory bounded by the batch, see
    :func:`~deniable.survey.analyze_file`).  ``respondents`` is the number of data rows.
    Under a sample design (as :func:`survey_report`) the columns are read whole."""
    specs = _questions(questions, title, level, missing)
    label = str(path)
    place = lambda r: f"data row {r} of {label!r}"  # noqa: E731
    plans = [_plan(d, c, g, None, place) for c, d, g, _ in specs]
    parts = {"weights": weights, "strata": strata, "psu": psu, "fpc": fpc,
             "replicate_weights": replicate_weights}  # fmt: skip
    spec = sample_spec(sample_design, parts)
    with SurveyFile(path, block_size=block_size, progress=progress) as f:
        f.check_columns([(w, c) for c, _, g, _ in specs
                         for w, c in (("column", c), ("group", g)) if c is not None])  # fmt: skip
        rows, frame, sample = read_counts(f, label, plans, spec, missing)
    results = [_analysis(p, d, lvl, label) for p, (_, d, _, lvl) in zip(plans, specs, strict=True)]
    if sample is not None:
        results = [with_design(r, frame, p, sample) for r, p in zip(results, plans, strict=True)]
    return SurveyReport(tuple(results), v.level(level), rows, title, label, _describe(sample))


def _describe(sample: Any) -> str | None:
    """The one-line description of the sample design (``None`` without one)."""
    return None if sample is None else f"{sample.describe()}; SE: {sample.variance_method}"
