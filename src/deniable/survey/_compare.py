"""The unweighted analysis of a question beside its design-based one: what the sample's
design (weights, strata, clusters, replicates) changed in the estimate, its SE and its
interval.  Used by :class:`~deniable.survey.Analysis` and
:class:`~deniable.survey.SurveyReport` when a sample design is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from deniable.common import format_interval, format_number, to_jsonable
from deniable.designs import DesignEstimate
from deniable.results import Result, Table
from deniable.sampling import SurveyEstimate
from deniable.survey._sample import design_parameter

__all__ = [
    "DESIGN_COLUMNS",
    "DesignSummary",
    "comparison_rows",
    "comparison_table",
    "design_fields",
    "grouped_design_table",
    "report_design_cells",
    "report_design_table",
    "with_design_by",
]

#: The columns a design-based analysis adds to a grouped result or a report's DataFrame.
DESIGN_COLUMNS = (
    "design_estimate",
    "design_se",
    "design_df",
    "design_deff",
    "design_ci_lower",
    "design_ci_upper",
)


def design_fields(based: SurveyEstimate | None, level: float) -> dict[str, float]:
    """:data:`DESIGN_COLUMNS` of one design-based estimate (NaN where there is none): the
    estimate, its SE, df, design effect and ``t`` interval."""
    if based is None:
        return dict.fromkeys(DESIGN_COLUMNS, math.nan)
    lo, hi = based.ci(level, "t")
    return dict(zip(DESIGN_COLUMNS, (based.value, based.se, float(based.df), based.deff, lo, hi),
                    strict=True))  # fmt: skip


def comparison_rows(analysis: Any) -> list[dict[str, Any]]:
    """One dict per estimated parameter: the unweighted estimate, SE and interval (the
    analysis's method) beside :func:`design_fields` of the design-based one (``None`` for
    a parameter without one)."""
    based = analysis.design_based
    out = []
    for j, (name, est) in enumerate(analysis.estimates().items()):
        lo, hi = est.ci(analysis.level, analysis.interval)
        design = None if based is None else design_parameter(based, j, name)
        out.append({
            "parameter": name, "estimate": est.value, "se": est.se, "ci_lower": lo,
            "ci_upper": hi, "interval": analysis.interval,
            **(dict.fromkeys(DESIGN_COLUMNS) if design is None
               else design_fields(design, analysis.level)),
        })  # fmt: skip
    result: list[dict[str, Any]] = to_jsonable(out)
    return result


def comparison_table(analysis: Any) -> Table:
    """Each parameter twice: as if from a simple random sample (the unweighted analysis)
    and under the sample's design, with SE, df, design effect and interval."""
    based = analysis.design_based
    level = analysis.level
    rows = []
    for row in comparison_rows(analysis):
        rows.append((row["parameter"], "unweighted", format_number(row["estimate"], 4),
                     format_number(row["se"], 4), "", "1",
                     f"{format_interval((row['ci_lower'], row['ci_upper']), 4)} "
                     f"({row['interval']})"))  # fmt: skip
        if row["design_estimate"] is None:
            rows.append((row["parameter"], "design-based", "n/a", "", "", "", ""))
            continue
        rows.append((row["parameter"], "design-based", format_number(row["design_estimate"], 4),
                     format_number(row["design_se"], 4), format_number(row["design_df"], 0),
                     format_number(row["design_deff"], 3),
                     f"{format_interval((row['design_ci_lower'], row['design_ci_upper']), 4)}"
                     " (t)"))  # fmt: skip
    method, design = based.variance_method, based.design
    notes: tuple[str, ...] = (
        f"design: {design}; SE: {method}.",
        "unweighted: the analysis as if from a simple random sample (deff 1); design-based: "
        "the de-biased reports weighted, with the design's SE, degrees of freedom and t "
        "interval; deff: the design-based variance over the simple random sample's.",
    )
    if any(r[2] == "n/a" for r in rows):
        notes = (*notes, "n/a: a two-group design's other parameters have no design-based "
                 "estimate (its prevalence has).")  # fmt: skip
    return Table(
        ("parameter", "analysis", "estimate", "SE", "df", "deff", f"{level:.0%} CI"),
        tuple(rows),
        title=f"Unweighted and design-based estimates ({analysis.column})",
        notes=notes,
        align="llrrrrr",
    )


@dataclass(frozen=True)
class DesignSummary(Result):
    """What ``deniable analyze`` prints for a question under a sample design: the
    unweighted summary (design, counts, ε, estimate), the comparison of both analyses and
    the design-based estimate in full."""

    analysis: Any
    unweighted: DesignEstimate

    def to_dict(self) -> dict[str, Any]:
        """The unweighted summary's fields, then ``design_based`` (the design-based
        estimate's fields) and ``comparison`` (the rows of the comparison table)."""
        a = self.analysis
        out = self.unweighted.to_dict()
        out["design_based"] = a.design_based.to_dict(a.level)
        out["comparison"] = comparison_rows(a)
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The unweighted summary, then the comparison and the design-based estimate."""
        a = self.analysis
        first = self.unweighted.table()
        extra = (comparison_table(a), a.design_based.table(a.level))
        return Table(first.columns, first.rows, title=first.title, notes=first.notes,
                     header=first.header, sections=(*first.sections, *extra),
                     align=first.align)  # fmt: skip


def report_design_cells(self: Any) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a :class:`~deniable.survey.SurveyReport`'s design-based
    estimates."""
    head = ["question", "parameter", "estimate", "SE", "df", "deff",
            f"{self.level:.0%} CI (t)"]  # fmt: skip
    body = []
    for row in self._rows():
        if math.isnan(row["design_estimate"]):
            body.append([row["question"], row["parameter"], "n/a", "", "", "", ""])
            continue
        ci = (row["design_ci_lower"], row["design_ci_upper"])
        body.append([row["question"], row["parameter"], format_number(row["design_estimate"]),
                     format_number(row["design_se"]), format_number(row["design_df"], 0),
                     format_number(row["design_deff"], 3), format_interval(ci)])  # fmt: skip
    return head, body


def report_design_table(self: Any) -> Table:
    """A report's design-based estimates under the sample design, one row per parameter."""
    head, body = report_design_cells(self)
    return Table(
        tuple(head), tuple(tuple(r) for r in body),
        title="Design-based estimates (the de-biased reports weighted)",
        notes=(f"sample design: {self.sample}.",
               "df: the design's degrees of freedom; deff: the design-based variance over "
               "a simple random sample's; n/a: a two-group design's other parameters."),
        align="llrrrrr",
    )  # fmt: skip


def with_design_by(frame: Any, df: Any, plan: Any, rr: Any, sample: Any, text: bool) -> Any:
    """The per-group DataFrame ``frame`` of ``plan``'s question with :data:`DESIGN_COLUMNS`:
    each group's design-based estimate as a domain of the full design (R's ``svyby``; NaN
    for a group without an estimate)."""
    from deniable.exceptions import DataError
    from deniable.survey._questions import FrameCells, label_order
    from deniable.survey._sample import design_estimate, plan_codes

    codes, groups = plan_codes(df, plan)
    ids = FrameCells(df[plan.by]).labels(plan.labels)
    order = [i for i, _ in label_order(plan.labels, text)]
    per = len(frame) // max(len(order), 1)
    cells: dict[str, list[float]] = {c: [] for c in DESIGN_COLUMNS}
    level = frame.attrs["level"]
    for i in order:
        try:
            based = design_estimate(rr, sample, codes, groups, domain=ids == i)
        except DataError:  # no reports in the group (or in one randomization group)
            based = None
        for j in range(per):
            r = len(cells["design_estimate"])
            name = str(frame["parameter"].iloc[r]) if "parameter" in frame else "prevalence"
            one = None if based is None else design_parameter(based, j, name)
            for c, x in design_fields(one, level).items():
                cells[c].append(x)
    attrs = dict(frame.attrs)
    out = frame.assign(**cells)
    out.attrs.update(attrs, sample_design=f"{sample.describe()}; SE: {sample.variance_method}")
    return out


def grouped_design_table(frame: Any) -> Table:
    """The design-based columns of a per-group DataFrame as a table."""
    key = "parameter" if "parameter" in frame else "category" if "category" in frame else None
    rows = []
    for r in frame.to_dict(orient="records"):
        first = (str(r["group"]), *((str(r[key]),) if key else ()))
        if math.isnan(r["design_estimate"]):
            rows.append((*first, "n/a", "", "", "", ""))
            continue
        rows.append((*first, format_number(r["design_estimate"], 4),
                     format_number(r["design_se"], 4), format_number(r["design_df"], 0),
                     format_number(r["design_deff"], 3),
                     format_interval((r["design_ci_lower"], r["design_ci_upper"]), 4)))  # fmt: skip
    return Table(
        ("group", *((key,) if key else ()), "estimate", "SE", "df", "deff",
         f"{frame.attrs['level']:.0%} CI (t)"),
        tuple(rows),
        title="Design-based estimates by group (each a domain of the full design)",
        notes=(f"sample design: {frame.attrs['sample_design']}.",),
        align=("ll" if key else "l") + "rrrrr",
    )  # fmt: skip
