"""Estimates per subgroup (``analyze(..., by=...)``): the DataFrame of :func:`grouped`
from a question's counts, one row per subgroup (and parameter of a two-group design, or
category of a categorical one), and :class:`GroupedAnalysis`, the result that prints it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from deniable.common import (
    epsilon_note,
    format_interval,
    format_number,
    format_parameters,
    to_jsonable,
)
from deniable.designs import BinaryDesign, CategoricalEstimate, Design, TwoGroupDesign
from deniable.results import Result, Table
from deniable.survey._questions import Plan, label_order
from deniable.survey._readers import require_pandas

__all__ = ["CATEGORY_COLUMNS", "GROUPED_COLUMNS", "TWO_GROUP_COLUMNS", "GroupedAnalysis"]

# The columns every kind of row ends with: the dropped reports, then the estimate.
_ESTIMATE_COLUMNS = (
    "missing",
    "estimate",
    "bounded",
    "se",
    "se_unbiased",
    "ci_lower",
    "ci_upper",
    "epsilon",
)

#: Columns of the DataFrame returned by :func:`grouped` (``analyze(..., by=...)``).
GROUPED_COLUMNS = ("group", "n", "yes", *_ESTIMATE_COLUMNS)

#: Columns of :func:`grouped` for a categorical design: one row per (group, category);
#: ``count`` is the reports of that category, ``n`` all reports of the group.
CATEGORY_COLUMNS = ("group", "category", "n", "count", *_ESTIMATE_COLUMNS)

#: Columns of :func:`grouped` for a two-group design: one row per (group, parameter).
TWO_GROUP_COLUMNS = ("group", "parameter", "n", "n1", "n2", "yes1", "yes2", *_ESTIMATE_COLUMNS)


@dataclass(frozen=True)
class GroupedAnalysis(Result):
    """The per-group estimates of :func:`grouped` (``analyze(..., by=...)``) as a result
    that prints: ``frame`` is the DataFrame :func:`grouped` returns.

    ``file`` (optional) is the file the reports were read from.  A subgroup without reports
    (or, two-group designs, without reports in one randomization group) has no estimate:
    NaN in the frame, ``null`` in :meth:`to_dict`.
    """

    frame: Any = field(compare=False)
    design: Design
    file: str | None = None

    def to_frame(self) -> Any:
        """The per-group DataFrame."""
        return self.frame

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: the question (``file``, ``column``, ``by``, design, ``level``,
        ``interval``, ``missing_group``) and ``groups``, one dict per row of the frame
        (without ``epsilon``, given once)."""
        two = self.design.n_groups == 2
        attrs = self.frame.attrs
        d = self.design
        groups = []
        for row in self.frame.to_dict(orient="records"):
            row.pop("epsilon")
            groups.append({k: (None if isinstance(x, float) and math.isnan(x) else x)
                           for k, x in row.items()})  # fmt: skip
        out: dict[str, Any] = {} if self.file is None else {"file": self.file}
        out.update(
            column=attrs["column"], by=attrs["by"], design=d.name, parameters=d.parameters(),
            epsilon=d.epsilon, level=attrs["level"], interval=attrs["method"],
            missing_group=attrs["missing_group"], groups=groups,
        )  # fmt: skip
        if two:
            out["group_column"] = attrs["group"]
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The question, then one row per group (and parameter, for two-group designs, or
        category, for categorical ones): n, missing reports, estimate, bounded MLE, SE and
        interval."""
        two = self.design.n_groups == 2
        attrs = self.frame.attrs
        if "category" in self.frame.columns:
            return self._category_table()
        rows = self._head()
        if two:
            rows.insert(1, ("group column (1 or 2)", str(attrs["group"])))
        ci = "Wald" if attrs["method"] == "wald" else "exact"
        body = [
            (str(r.group), *((str(r.parameter),) if two else ()), str(r.n), str(r.missing),
             format_number(r.estimate), format_number(r.bounded), format_number(r.se),
             format_interval((r.ci_lower, r.ci_upper)))
            for r in self.frame.itertuples(index=False)
        ]  # fmt: skip
        table = Table(
            ("group", *(("parameter",) if two else ()), "n", "missing", "estimate", "bounded",
             "SE", f"{attrs['level']:.0%} CI ({ci})"),
            tuple(body),
            notes=(f"estimate: unbiased (may leave [0, 1]); SE: plug-in (n); CI: {ci}",),
            align=("ll" if two else "l") + "rrrrrr",
        )  # fmt: skip
        return Table.pairs(rows, title="Prevalence by group", sections=(table, *self._design()))

    def _design(self) -> tuple[Table, ...]:
        """The design-based estimates by group, when a sample design was given."""
        if "design_estimate" not in self.frame.columns:
            return ()
        from deniable.survey._compare import grouped_design_table

        return (grouped_design_table(self.frame),)

    def _head(self) -> list[tuple[str, str]]:
        attrs, d = self.frame.attrs, self.design
        where = ("file, " if self.file is not None else "") + "column, by"
        values = [*([self.file] if self.file is not None else []), attrs["column"], attrs["by"]]
        return [
            (where, ", ".join(str(x) for x in values)),
            ("design", f"{d.name} ({format_parameters(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("rows without a group (dropped)", str(attrs["missing_group"])),
        ]

    def _category_table(self) -> Table:
        attrs = self.frame.attrs
        body = [
            (str(r.group), str(r.category), str(r.n), str(r.count), str(r.missing),
             format_number(r.estimate), format_number(r.bounded), format_number(r.se),
             format_interval((r.ci_lower, r.ci_upper)))
            for r in self.frame.itertuples(index=False)
        ]  # fmt: skip
        table = Table(
            ("group", "category", "n", "reports", "missing", "estimate", "MLE", "SE",
             f"{attrs['level']:.0%} CI (exact)"),
            tuple(body),
            notes=("n: the group's reports; reports: those of the category; estimate: unbiased "
                   "(may leave [0, 1]); MLE: on the simplex; SE: plug-in (n); CI: exact, each "
                   'category as the binary design "report j or not"',),
            align="llrrrrrrr",
        )  # fmt: skip
        return Table.pairs(self._head(), title="Category shares by group",
                           sections=(table, *self._design()))  # fmt: skip


def _reports(d: Design) -> int:
    """The report values a column holds: the design's for one group, 0/1 (within each
    randomization group) for two."""
    return 2 if d.n_groups == 2 else d.n_reports


def _category_rows(
    label: Any, c: npt.NDArray[np.int64], d: Design, lvl: float
) -> list[tuple[Any, ...]]:
    """The rows of one subgroup of a categorical design: one per category."""
    k = d.n_reports
    n, miss = int(c[0, :k].sum()), int(c[0, k])
    if n == 0:
        return [(label, j, 0, 0, miss, *(math.nan,) * 6, d.epsilon) for j in range(k)]
    est = cast(CategoricalEstimate, d.estimate(d.tally_counts(c[0, :k])))
    rows = []
    for j in range(k):
        e = est.category(j)
        lo, hi = e.ci(lvl, "exact")
        rows.append((label, j, n, int(c[0, j]), miss, e.value, float(est.bounded[j]), e.se,
                     e.se_unbiased, lo, hi, d.epsilon))  # fmt: skip
    return rows


def _grouped(plan: Plan, d: Design, lvl: float, *, text: bool) -> Any:
    """The per-label DataFrame of :func:`grouped` from a question's counts."""
    pd = require_pandas()
    counts = plan.counts.label_counts(len(plan.labels))
    eps = d.epsilon
    two = d.n_groups == 2
    m = _reports(d)
    categorical = not two and d.n_truths > 2
    # Kuk's multi-draw estimate (a count per report) has Wald intervals only
    method = "wald" if two or (m > 2 and not categorical) else "exact"
    rows: list[tuple[Any, ...]] = []
    for i, label in label_order(plan.labels, text):
        c = counts[i]
        if categorical:
            rows.extend(_category_rows(label, c, d, lvl))
            continue
        if two:
            td = cast(TwoGroupDesign, d)
            ns = (int(c[0, 0] + c[0, 1]), int(c[1, 0] + c[1, 1]))
            ys = (int(c[0, 1]), int(c[1, 1]))
            n = sum(ns)
            miss = int(c.sum()) - n
            ests = dict(td.estimate(yes=ys, n=ns).estimates) if min(ns) > 0 else {}
            for pname in td.estimated:
                e = ests.get(pname)
                nums = (math.nan,) * 6 if e is None else (
                    e.value, e.bounded, e.se, e.se_unbiased, *e.ci(lvl, "wald"))  # fmt: skip
                rows.append((label, pname, n, *ns, *ys, miss, *nums, eps))
            continue
        n, miss = int(c[0, :m].sum()), int(c[0, m])
        yes = 0
        if n == 0:
            est_v = bnd = se = seu = lo = hi = math.nan
        else:
            est = cast(BinaryDesign, d).estimate(d.tally_counts(c[0, :m]))
            # the yes reports; with m > 2 (Kuk's multi-draw) the share of red cards times n,
            # as the whole-survey report counts them
            yes = int(c[0, 1]) if m == 2 else round((est.lambda_hat or 0.0) * n)
            lo, hi = est.ci(lvl, method)
            est_v, bnd, se, seu = est.value, est.bounded, est.se, est.se_unbiased
        rows.append((label, n, yes, miss, est_v, bnd, se, seu, lo, hi, eps))
    columns = TWO_GROUP_COLUMNS if two else CATEGORY_COLUMNS if categorical else GROUPED_COLUMNS
    out = pd.DataFrame(rows, columns=list(columns))
    out.attrs.update(
        column=plan.column,
        by=plan.by,
        design=d.name,
        level=lvl,
        method=method,
        interval="wald (delta method)"
        if method == "wald"
        else "exact (Clopper-Pearson for lambda, mapped through the design)"
        + ('; each category as the binary design "report j or not"' if categorical else ""),
        missing_group=int(counts[0].sum()),
    )
    if two:
        out.attrs["group"] = plan.group
    return out
