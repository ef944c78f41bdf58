"""The result of :func:`mixed_logistic_rr`: fixed effects, variance components, conditional
modes of the random effects, and goodness of fit."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import epsilon_note, format_interval, format_number, format_parameters
from deniable.common import validation as v
from deniable.designs import BinaryDesign
from deniable.estimation._regression_data import require_data_extras
from deniable.estimation._regression_links import LINK_FORMULAS
from deniable.estimation._regression_results import RegressionResult
from deniable.estimation._regression_stats import SE_TYPES, LRTest, chi2_text, zquantile
from deniable.exceptions import ParameterError
from deniable.results import Table

__all__ = ["HosmerLemeshow", "MixedRRResult", "VarianceComponent"]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class HosmerLemeshow:
    """A Hosmer-Lemeshow-style check on the randomized answers (Hosmer & Lemeshow 1980).

    Rows are cut into ``groups`` bins by their fitted report probability
    ``lambda_i = P0_i + (P1_i - P0_i) F(x_i' beta + z_i' b_j)`` (random effects at their
    conditional modes); ``statistic = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))`` over the
    bins, referred to chi-squared with ``groups - 2`` degrees of freedom.  With random
    effects the reference distribution is approximate: read it as a descriptive check.
    """

    statistic: float
    df: int
    pvalue: float
    groups: int

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: every field."""
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"Hosmer-Lemeshow on the randomized answers ({self.groups} bins): "
            f"{chi2_text(self)} (approximate)"
        )


@dataclass(frozen=True)
class VarianceComponent:
    """A standard deviation or correlation of the random effects, with its SE and interval.

    Standard deviations: Wald on ``ln sd`` from the observed information, mapped back
    (``se = sd * se(ln sd)``, the delta method); correlations: Wald on ``atanh rho``
    (Fisher's z), mapped back.  ``nan`` where the estimate is on the boundary.
    """

    name: str
    estimate: float
    se: float
    lower: float
    upper: float

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict."""
        return {
            "name": self.name,
            "estimate": self.estimate,
            "se": self.se,
            "ci": [self.lower, self.upper],
        }


def _chi2(statistic: str, test: Any, note: str = "") -> str:
    """A chi-squared test (an LR test or Hosmer-Lemeshow) in one line of the table."""
    return f"{statistic} = {test.statistic:.3f}, p = {format_number(test.pvalue)}{note}"


@dataclass(frozen=True, eq=False)
class MixedRRResult(RegressionResult):
    """Result of :func:`mixed_logistic_rr`.

    ``theta`` holds ``(beta, ln sd_1 .. ln sd_q, atanh rho_kl)`` and ``cov`` its covariance
    (the inverse observed information of the marginal likelihood); ``params``, ``bse``,
    ``conf_int`` are the fixed effects.  :meth:`variance_components` gives the standard
    deviations and correlations of the random effects, :meth:`random_effects` their
    conditional modes with conditional SEs; ``lr_random`` tests the random effects against
    the fixed-effects fit, ``hosmer_lemeshow`` checks the fit on the randomized answers.
    """

    title: ClassVar[str] = "Mixed-effects regression with a randomized outcome"

    link: str = "logit"
    method: str = "laplace"
    n_agq: int = 1
    random: str = ""
    group: str = ""
    random_names: tuple[str, ...] = ()
    n_groups: int = 0
    group_sizes: tuple[int, float, int] = (0, 0.0, 0)
    designs: Mapping[Any, BinaryDesign] = field(default_factory=dict, repr=False)
    item: str | None = None
    llf_fixed: float = math.nan
    lr_random: LRTest | None = field(default=None, repr=False)
    hosmer_lemeshow: HosmerLemeshow | None = field(default=None, repr=False)
    modes: Array = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    modes_cov: Array = field(default_factory=lambda: np.zeros((0, 0, 0)), repr=False)
    labels: Any = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ numbers

    @property
    def q(self) -> int:
        """Number of random effects per group."""
        return len(self.random_names)

    @property
    def sd(self) -> Array:
        """Standard deviations of the random effects."""
        k = len(self.terms)
        return np.exp(self.theta[k : k + self.q])

    @property
    def method_label(self) -> str:
        """``Laplace`` or ``AGHQ (n nodes)``."""
        return "Laplace" if self.method == "laplace" else f"AGHQ ({self.n_agq} nodes)"

    def variance_components(self, level: float = 0.95) -> tuple[VarianceComponent, ...]:
        """Standard deviations (then correlations) of the random effects with Wald
        intervals on the log (Fisher-z) scale at ``level``."""
        z = zquantile(v.level(level))
        k, q = len(self.terms), self.q
        out = []
        diag = np.diag(self.cov)
        for i, name in enumerate(self.random_names):
            j = k + i
            sd = math.exp(self.theta[j]) if np.isfinite(self.theta[j]) else 0.0
            se_log = math.sqrt(diag[j]) if np.isfinite(diag[j]) and diag[j] >= 0 else math.nan
            lo, hi = (
                (sd * math.exp(-z * se_log), sd * math.exp(z * se_log))
                if math.isfinite(se_log)
                else (math.nan, math.nan)
            )
            out.append(VarianceComponent(f"sd({name}|{self.group})", sd, sd * se_log, lo, hi))
        rows, cols = np.tril_indices(q, -1)
        for m, (r, c) in enumerate(zip(rows, cols, strict=True)):
            j = k + q + m
            rho = math.tanh(self.theta[j]) if not math.isnan(self.theta[j]) else math.nan
            se_z = math.sqrt(diag[j]) if np.isfinite(diag[j]) and diag[j] >= 0 else math.nan
            lo, hi = math.tanh(self.theta[j] - z * se_z), math.tanh(self.theta[j] + z * se_z)
            name = f"corr({self.random_names[c]},{self.random_names[r]}|{self.group})"
            out.append(VarianceComponent(name, rho, (1 - rho * rho) * se_z, lo, hi))
        return tuple(out)

    def random_effects(self) -> Any:
        """Conditional modes of the random effects (BLUPs) per group, with conditional SEs
        (``sqrt`` of the diagonal of ``L H_j^-1 L'``, lme4's ``condVar``): a DataFrame
        indexed by group."""
        pd = require_data_extras()[0]
        cols: dict[str, Any] = {}
        for i, name in enumerate(self.random_names):
            cols[name] = self.modes[:, i]
            cols[f"se({name})"] = np.sqrt(np.maximum(self.modes_cov[:, i, i], 0.0))
        return pd.DataFrame(cols, index=pd.Index(self.labels, name=self.group))

    def lr_test(self, other: RegressionResult) -> LRTest:
        """Likelihood-ratio test of nested fixed effects under the same random term.

        Both fits must use the same random term, link and approximation (Laplace or AGHQ
        with the same nodes): log-likelihoods from different approximations are not
        comparable.  The random effects themselves are tested by :attr:`lr_random`.
        """
        if isinstance(other, MixedRRResult):
            mine = (self.random, self.link, self.method, self.n_agq)
            theirs = (other.random, other.link, other.method, other.n_agq)
            if mine != theirs:
                raise ParameterError(
                    "`other` must have the same random term, link and approximation to be "
                    f"compared, got {theirs} against {mine} (random, link, method, n_agq)."
                )
        return super().lr_test(other)

    # ------------------------------------------------------------------ output

    def _ancillary_rows(self, level: float) -> list[tuple[str, float, float, float, float]]:
        return [
            (c.name, c.estimate, c.se, c.lower, c.upper) for c in self.variance_components(level)
        ]

    def _header(self) -> list[str]:
        lines = []
        for line in super()._header():
            if line.startswith(("Design:", "Channel:", "Epsilon:")) and len(self.designs) > 1:
                continue
            lines.append(re.sub(r"\s*MLE \([^)]*\)", self._method_text, line))
        if len(self.designs) > 1:
            for key, d in self.designs.items():
                eps = "inf" if math.isinf(d.epsilon) else f"{d.epsilon:.4f}"
                lines.append(
                    f"{'Item ' + str(key) + ':':<15}{d.name}, P(yes|1) = {d.p_yes_given_1:.4f}, "
                    f"P(yes|0) = {d.p_yes_given_0:.4f}, epsilon {eps}"
                )
        lines.append(f"{'Link:':<15}{self.link}: {LINK_FORMULAS[self.link]}")
        lo, mean, hi = self.group_sizes
        lines.append(
            f"{'Random:':<15}{self.random}: {self.n_groups} groups of {lo} to {hi} rows "
            f"(mean {mean:.1f})"
        )
        return lines

    def _method_text(self, match: re.Match[str]) -> str:
        """The fit's method in the width of the base header's ``MLE (...)`` it replaces."""
        short = "ML, Laplace" if self.method == "laplace" else f"ML, AGHQ {self.n_agq}"
        return short.rjust(len(match[0]))

    def _extra_lines(self, level: float) -> list[str]:
        lines = []
        if self.lr_random is not None:
            lines.append(str(self.lr_random) + self._boundary_rule())
        if self.hosmer_lemeshow is not None:
            lines.append(str(self.hosmer_lemeshow))
        return lines

    def _boundary_rule(self) -> str:
        if self.q == 1:
            return "; p from the 50:50 mixture of chi2(0) and chi2(1) (variance on its boundary)"
        return "; p from chi2 ignoring the boundary (conservative)"

    def _extra_dict(self, level: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "link": self.link,
            "method": self.method,
            "n_agq": self.n_agq,
            "random": self.random,
            "group": self.group,
            "n_groups": self.n_groups,
            "group_sizes": {
                "min": self.group_sizes[0],
                "mean": self.group_sizes[1],
                "max": self.group_sizes[2],
            },
            "variance_components": [c.to_dict() for c in self.variance_components(level)],
            "variance_ci_method": "Wald on the log sd (Fisher z for correlations), mapped back",
            "deviance": -2 * self.llf,
            "llf_fixed": self.llf_fixed,
        }
        if len(self.designs) > 1:
            # the top-level fields describe one design; with one per item they would show
            # the first item's channel and epsilon as if they were every answer's
            out.update(
                design="per item (see designs)",
                parameters=None,
                p_yes_given_1=None,
                p_yes_given_0=None,
                epsilon=max(d.epsilon for d in self.designs.values()),
                epsilon_note=(
                    "the largest epsilon of one answer to one item; a respondent who answers "
                    "several items spends their sum (basic composition)"
                ),
            )
        if self.item is not None:
            out["item"] = self.item
            out["designs"] = [
                {
                    "item": key,
                    "design": d.name,
                    "parameters": d.parameters(),
                    "p_yes_given_1": d.p_yes_given_1,
                    "p_yes_given_0": d.p_yes_given_0,
                    "epsilon": d.epsilon,
                }
                for key, d in self.designs.items()
            ]
        if self.lr_random is not None:
            out["lr_random"] = {
                **self.lr_random.to_dict(),
                "reference": self._boundary_rule()[2:],
            }
        if self.hosmer_lemeshow is not None:
            out["hosmer_lemeshow"] = self.hosmer_lemeshow.to_dict()
        return out

    def table(self, level: float = 0.95) -> Table:
        """The fit for people: model, formula, random term, design(s) and ε, convergence,
        the tests, then the fixed effects and the variance components with intervals."""
        lvl = v.level(level)
        its = ", ".join(f"{n} {k}" for k, n in self.iterations.items())
        rows = [
            ("model", f"{self.title} ({self.model})"),
            ("formula", self.formula),
            ("random", f"{self.random}: {self.n_groups} groups"),
            ("link", f"{self.link}: {LINK_FORMULAS[self.link]}"),
            ("method", f"maximum likelihood, {self.method_label}"),
        ]
        for key, d in self.designs.items():
            label = "design" if key is None else f"design of item {key!r}"
            rows.append((label, f"{d.name} ({format_parameters(d.parameters())})"))
            rows.append(("  ε" if key is not None else "ε", epsilon_note(d.epsilon)))
        dropped = f" ({self.n_dropped} rows with missing values dropped)" if self.n_dropped else ""
        rows += [
            ("rows", f"{self.nobs}{dropped}"),
            ("log-likelihood", f"{self.llf:.4f} (AIC {self.aic:.2f}, BIC {self.bic:.2f})"),
            ("converged", f"{'yes' if self.converged else 'NO'} ({its})"),
        ]
        if self.lr_random is not None:
            lr = _chi2("LR χ²", self.lr_random, self._boundary_rule())
            rows.append(("random effects vs none", lr))
        if self.hosmer_lemeshow is not None:
            h = self.hosmer_lemeshow
            rows.append(("Hosmer-Lemeshow (approx.)", _chi2(f"χ²({h.df})", h)))
        ci = self.conf_int(level=lvl).to_numpy()
        bse, z, p = self.bse, self.tvalues, self.pvalues
        coefs = tuple(
            (term, format_number(float(self.params.iloc[i])), format_number(float(bse.iloc[i])),
             f"{float(z.iloc[i]):.3f}", format_number(float(p.iloc[i])), format_interval(ci[i]))
            for i, term in enumerate(self.terms)
        )  # fmt: skip
        fixed = Table(
            ("term", "coef", "std err", "z", "P>|z|", f"{lvl:.0%} CI"),
            coefs,
            title="Fixed effects",
            notes=(
                f"SE from the {SE_TYPES[self.se_type]} of the marginal likelihood; z and p "
                "from the normal distribution",
                *(f"note: {note}" for note in self.notes),
            ),
            align="lrrrrr",
        )
        vc = Table(
            ("component", "estimate", "std err", f"{lvl:.0%} CI"),
            tuple(
                (
                    c.name,
                    format_number(c.estimate),
                    format_number(c.se),
                    format_interval((c.lower, c.upper)),
                )
                for c in self.variance_components(lvl)
            ),
            title="Random effects",
            notes=("intervals: Wald on the log sd (Fisher z for correlations), mapped back",),
            align="lrrr",
        )
        return Table.pairs(rows, title="Mixed-effects regression", sections=(fixed, vc))
