"""The printed form of a regression fit (:meth:`RegressionResult.table`): what
``deniable regress`` shows."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from deniable.common import (
    epsilon_note,
    format_interval,
    format_number,
    format_parameters,
)
from deniable.results import Table

if TYPE_CHECKING:  # pragma: no cover
    from deniable.estimation._regression_results import RegressionResult

__all__ = ["header_lines", "regression_table", "summary_text"]


def regression_table(result: RegressionResult, level: float) -> Table:
    """The fit's summary rows, then the coefficient table (intervals at ``level``)."""
    d = result.design
    dropped = f" ({result.n_dropped} rows with missing values dropped)" if result.n_dropped else ""
    its = ", ".join(f"{n} {k}" for k, n in result.iterations.items())
    rows = [
        ("model", f"{result.title} ({result.model})"),
        ("formula", result.formula),
        ("design", f"{d.name} ({format_parameters(d.parameters())})"),
        (
            "P(yes | 1), P(yes | 0)" if hasattr(d, "p_yes_given_1") else "P(yes) by group",
            _channel_text(d, "{:.6g}"),
        ),
        ("ε", epsilon_note(d.epsilon)),
        ("respondents", f"{result.nobs}{dropped}"),
        (
            "pseudo-log-likelihood (weighted)" if result.sampling else "log-likelihood",
            f"{result.llf:.4f}",
        ),
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
    if result.sampling is None:
        stat, reference = "z", "z and p from the normal distribution"
    else:
        stat = "t"
        reference = f"t and p from Student's t with {result.sampling.df} degrees of freedom"
        rows.append(("sample design", result.sampling.design))
        rows.append(("population (sum of weights)", format_number(result.sampling.population)))
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
        ("term", "coef", "std err", stat, f"P>|{stat}|", f"{level:.0%} CI"),
        tuple(coefs),
        title="Coefficients",
        notes=(
            f"SE from the {result.se_description}; {reference}",
            *(f"note: {note}" for note in result.notes),
        ),
        align="lrrrrr",
    )
    return Table.pairs(rows, title="Regression with randomized answers", sections=(table,))


def header_lines(self: RegressionResult) -> list[str]:
    """The lines above the coefficients: model, fit, design, channel, covariance."""
    d = self.design
    eps = "inf (a report can reveal the answer)" if math.isinf(d.epsilon) else (f"{d.epsilon:.4f}")
    params = ", ".join(
        f"{k}={x:.4g}" if isinstance(x, float) else f"{k}={x}" for k, x in d.parameters().items()
    )
    its = " + ".join(f"{n} {k}" for k, n in self.iterations.items())
    # Df model / Df residuals as in statsmodels: regressors without the constant, and
    # nobs minus the mean-model coefficients; "Parameters" counts all (AIC, BIC).
    pairs = [
        ("Dep. variable:", self.outcome, "No. observations:", str(self.nobs)),
        ("Model:", self.model, "Df residuals:", str(self.df_resid)),
        (
            "Method:",
            "pseudo-MLE (weighted)" if self.sampling else f"MLE ({', '.join(self.iterations)})",
            "Df model:",
            str(self.df_model),
        ),
        (
            "Parameters:",
            str(self.k_params),
            "Pseudo log-lik.:" if self.sampling else "Log-likelihood:",
            f"{self.llf:.4f}",
        ),
        ("Converged:", "yes" if self.converged else "NO", "AIC:", f"{self.aic:.4f}"),
        ("Iterations:", its, "BIC:", f"{self.bic:.4f}"),
    ]
    lines = [f"{a:<15}{b[:22]:>23}  {c:<18}{e:>20}" for a, b, c, e in pairs]
    lines.append(f"{'Design:':<15}{d.name}({params})")
    channel = _channel_text(d, "{:.4f}")
    if hasattr(d, "p_yes_given_1"):
        channel = f"P(yes|1) = {d.p_yes_given_1:.4f}, P(yes|0) = {d.p_yes_given_0:.4f}"
    lines.append(f"{'Channel:':<15}{channel}")
    lines.append(f"{'Epsilon:':<15}{eps}")
    lines.append(f"{'Covariance:':<15}{self.se_description}")
    if self.sampling is not None:
        lines.append(f"{'Sample:':<15}{self.sampling.design}")
        lines.append(f"{'Reference:':<15}t with {self.sampling.df} degrees of freedom")
    return lines


def summary_text(self: RegressionResult, lvl: float) -> str:
    """:meth:`RegressionResult.summary`: header, then coef, std err, z (or t), P>|z|,
    interval."""
    width = 78
    lo_name, hi_name = f"[{(1 - lvl) / 2:.3g}", f"{1 - (1 - lvl) / 2:.3g}]"
    lines = [self.title.center(width).rstrip(), "=" * width, *self._header()]
    lines.append("=" * width)
    name_w = min(max(12, *(len(t) + 1 for t in self.terms)), 18)
    stat = "z" if self.sampling is None else "t"
    cols = ["coef", "std err", stat, f"P>|{stat}|", lo_name, hi_name]
    lines.append(" " * name_w + "".join(f"{c:>10}" for c in cols))
    lines.append("-" * width)
    ci = self.conf_int(level=lvl).to_numpy()
    for i, t in enumerate(self.terms):
        coef, se = float(self._coef()[i]), float(self._se()[i])
        zval = coef / se if se > 0 else math.nan
        p = float(self._pvalue(np.float64(zval))) if math.isfinite(zval) else math.nan
        cells = [coef, se, zval, p, float(ci[i, 0]), float(ci[i, 1])]
        fmt = [_cell(x, d) for x, d in zip(cells, (4, 4, 3, 3, 4, 4), strict=True)]
        label = t if len(t) < name_w else t[: name_w - 2] + "~"
        lines.append(f"{label:<{name_w}}" + "".join(fmt))
    extra = self._ancillary_rows(lvl)
    if extra:
        lines.append("-" * width)
        for name, est, se, lo, hi in extra:
            lines.append(
                f"{name:<{name_w}}{_cell(est, 4)}{_cell(se, 4)}{'':>20}{_cell(lo, 4)}{_cell(hi, 4)}"
            )
    lines.append("=" * width)
    tail = self._extra_lines(lvl) + list(self.notes)
    if self.n_dropped:
        tail.append(f"{self.n_dropped} rows with missing values were dropped.")
    lines.extend(tail)
    return "\n".join(lines)


def _cell(x: float, digits: int) -> str:
    """One right-aligned 10-character cell of a summary table; ``n/a`` where undefined."""
    return f"{'n/a':>10}" if math.isnan(x) else f"{x:>10.{digits}f}"


def _channel_text(d: Any, fmt: str) -> str:
    """``P(yes|1), P(yes|0)`` of a one-group design; for a two-group one each group's
    ``P(yes) = c_g + M[g] phi``, ``phi1`` the prevalence (docs/twogroup.md)."""
    if hasattr(d, "p_yes_given_1"):
        return f"{fmt.format(d.p_yes_given_1)}, {fmt.format(d.p_yes_given_0)}"
    c, M = d.linear_system()
    return "; ".join(
        f"group {g + 1}: {fmt.format(c[g])} + {fmt.format(M[g, 0])} phi1 + "
        f"{fmt.format(M[g, 1])} phi2"
        for g in range(2)
    )
