"""The printed form of a regression fit (:meth:`RegressionResult.table`): what
``deniable regress`` shows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deniable.common import (
    epsilon_note,
    format_interval,
    format_number,
    format_parameters,
)
from deniable.estimation._regression_stats import SE_TYPES
from deniable.results import Table

if TYPE_CHECKING:  # pragma: no cover
    from deniable.estimation._regression_results import RegressionResult

__all__ = ["regression_table"]


def regression_table(result: RegressionResult, level: float) -> Table:
    """The fit's summary rows, then the coefficient table (intervals at ``level``)."""
    d = result.design
    dropped = f" ({result.n_dropped} rows with missing values dropped)" if result.n_dropped else ""
    its = ", ".join(f"{n} {k}" for k, n in result.iterations.items())
    rows = [
        ("model", f"{result.title} ({result.model})"),
        ("formula", result.formula),
        ("design", f"{d.name} ({format_parameters(d.parameters())})"),
        ("P(yes | 1), P(yes | 0)", f"{d.p_yes_given_1:.6g}, {d.p_yes_given_0:.6g}"),
        ("ε", epsilon_note(d.epsilon)),
        ("respondents", f"{result.nobs}{dropped}"),
        ("log-likelihood", f"{result.llf:.4f}"),
        ("converged", f"{'yes' if result.converged else 'NO'} ({its} iterations)"),
    ]
    fit: Any = result
    prev = fit.prevalence(level=level)
    rows.append(
        (prev.description,
         f"{format_number(prev.value)} (SE {format_number(prev.se)}), "
         f"{level:.0%} CI {prev.ci.format()}")
    )  # fmt: skip
    test = getattr(result, "direct_test", None)
    if test is not None:
        rows.append(
            ("direct vs randomized",
             f"logit shift {format_number(test.delta)} (SE {format_number(test.se)}), "
             f"LR χ²(1) = {test.lr.statistic:.3f}, p = {format_number(test.lr.pvalue)}")
        )  # fmt: skip
    ci = result.conf_int(level=level).to_numpy()
    bse, z, p = result.bse, result.tvalues, result.pvalues
    coefs = [
        (term, format_number(float(result.params.iloc[i])), format_number(float(bse.iloc[i])),
         f"{float(z.iloc[i]):.3f}", format_number(float(p.iloc[i])), format_interval(ci[i]))
        for i, term in enumerate(result.terms)
    ]  # fmt: skip
    for name, est, se, lo, hi in result._ancillary_rows(level):
        coefs.append((name, format_number(est), format_number(se), "", "",
                      format_interval((lo, hi))))  # fmt: skip
    table = Table(
        ("term", "coef", "std err", "z", "P>|z|", f"{level:.0%} CI"),
        tuple(coefs),
        title="Coefficients",
        notes=(
            f"SE from the {SE_TYPES[result.se_type]}; z and p from the normal distribution",
            *(f"note: {note}" for note in result.notes),
        ),
        align="lrrrrr",
    )
    return Table.pairs(rows, title="Regression with randomized answers", sections=(table,))
