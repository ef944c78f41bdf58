"""Power and sample size of a regression with a randomized outcome: ``regression_power``.

The question a planner asks: with this design, this many respondents and covariates like
these, how likely is the Wald test of one coefficient to reject ``beta_j = 0`` at level
``alpha`` when the coefficients are ``beta``?

* **Wald, closed form.**  The expected information of one respondent, averaged over the
  covariate rows given (the covariate distribution),

      I_1 = mean_i x_i x_i' lambda_i'^2 / (lambda_i (1 - lambda_i)),

  with ``lambda = P0 + (P1 - P0) F(x' beta)``, ``lambda' = (P1 - P0) f(x' beta)``
  (``_regression_logit``), gives ``se_j = sqrt([I_1^-1]_jj / n)`` and the power of the
  two-sided test, ``Phi(|beta_j| / se_j - z) + Phi(-|beta_j| / se_j - z)`` with ``z`` the
  ``1 - alpha/2`` normal quantile (Demidenko 2007 for the logistic model without
  randomization).  Solving for ``n``: ``n = (z + z_power)^2 [I_1^-1]_jj / beta_j^2``.
* **Simulation.**  ``simulations`` surveys of ``n`` respondents: covariate rows drawn with
  replacement from those given, true answers from the model, reports through the design,
  the model fitted by maximum likelihood and the Wald test (observed information) done.
  The power is the share of surveys that reject, with its Monte Carlo standard error
  ``sqrt(p (1 - p) / simulations)``.  Fits that do not converge, or end on the boundary,
  count as not rejecting and are counted in ``failed``.  Seeded: the seed used is kept.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deniable.common import validation as v
from deniable.estimation._regression_data import Array, check_design, model_data
from deniable.estimation._regression_links import check_link, link_functions
from deniable.estimation._regression_logit import fit_logit, logit_information
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.randomness import resolve_rng
from deniable.results import Result, Table

__all__ = ["RegressionPower", "regression_power"]

_OUTCOME = "regression_power_outcome"


@dataclass(frozen=True)
class RegressionPower(Result):
    """Power of the Wald test of ``term``'s coefficient, by simulation and in closed form.

    ``power`` is the simulated share of surveys that rejected (``None`` with
    ``simulations=0``), ``mc_se`` its Monte Carlo SE; ``wald_power`` the closed form and
    ``wald_se`` the coefficient's asymptotic SE at ``n``; ``failed`` the simulated fits
    that did not converge (counted as not rejecting); ``seed`` the seed used.
    """

    term: str
    coefficient: float
    n: int
    alpha: float
    link: str
    design: str
    wald_power: float
    wald_se: float
    unit_variance: float
    power: float | None
    mc_se: float | None
    simulations: int
    failed: int
    seed: int | None

    def sample_size(self, power: float = 0.8) -> int:
        """Respondents for the closed-form Wald test to reach ``power`` (the far tail is
        ignored, so the power at this ``n`` is at least ``power``)."""
        from scipy import stats

        target = v.probability("power", power, low_open=True, high_open=True)
        z = stats.norm.ppf(1 - self.alpha / 2) + stats.norm.ppf(target)
        return max(2, math.ceil(float(z * z) * self.unit_variance / self.coefficient**2))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: every field but ``unit_variance``."""
        out = asdict(self)
        del out["unit_variance"]
        return out

    def table(self) -> Table:
        """The powers as a table."""
        rows = [
            ("test", f"Wald, {self.term} = 0 (true {self.coefficient:g}), alpha {self.alpha:g}"),
            ("design, link, n", f"{self.design}, {self.link}, {self.n}"),
            ("power, Wald closed form", f"{self.wald_power:.4f} (SE of the coefficient "
                                        f"{self.wald_se:.4g})"),
        ]  # fmt: skip
        if self.power is not None:
            rows.append(
                ("power, simulated",
                 f"{self.power:.4f} (Monte Carlo SE {self.mc_se:.4f}; {self.simulations} "
                 f"surveys, seed {self.seed}, {self.failed} fits failed)")
            )  # fmt: skip
        return Table.pairs(rows, title="Power of a regression with a randomized outcome")

    def __str__(self) -> str:
        return str(self.table())


def regression_power(
    formula: str,
    covariates: Any,
    coefficients: Any,
    design: Any,
    n: int,
    *,
    term: str,
    alpha: float = 0.05,
    link: str = "logit",
    simulations: int = 200,
    seed: int | None = None,
) -> RegressionPower:
    """Power of the Wald test of one coefficient of :func:`logistic_rr`.

    Parameters
    ----------
    formula : the right-hand side, ``"~ age + C(region)"`` (the formula language of
        :func:`logistic_rr`).
    covariates : a DataFrame of covariate rows standing for the population (the simulation
        draws rows from it with replacement; the closed form averages over it).
    coefficients : the true coefficients, a mapping from every term of the formula
        (``Intercept`` included) to its value.
    design : the one-group binary design that will randomize the answers.
    n : respondents per survey.
    term : the coefficient tested against 0 (its true value must not be 0).
    alpha : the test's level (two-sided).
    link : ``"logit"``, ``"probit"`` or ``"cloglog"``.
    simulations : simulated surveys (0: the closed form only).
    seed : seed of the simulation (default: a fresh one, kept in the result).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import ForcedResponse
    >>> x = pd.DataFrame({"x": np.random.default_rng(0).normal(size=1000)})
    >>> res = regression_power("~ x", x, {"Intercept": -1.0, "x": 0.3}, ForcedResponse(1/6, 1/6),
    ...                        1000, term="x", simulations=0)
    >>> round(res.wald_power, 3), res.sample_size(0.9)
    (0.687, 1755)
    """
    from scipy import stats

    d = check_design(design)
    link = check_link(link)
    n = v.integer("n", n, minimum=2)
    alpha = v.probability("alpha", alpha, low_open=True, high_open=True)
    simulations = v.integer("simulations", simulations, minimum=0)
    X, terms = _matrix(formula, covariates)
    beta = _coefficients(coefficients, terms)
    if not isinstance(term, str) or term not in terms:
        raise ParameterError(
            f"`term` must be one of the formula's terms {', '.join(map(repr, terms))}, "
            f"got {term!r}."
        )
    j = terms.index(term)
    if beta[j] == 0:
        raise ParameterError(f"`coefficients` must give `term` {term!r} a value other than 0.")
    p1, p0 = d.p_yes_given_1, d.p_yes_given_0
    unit = float(np.linalg.inv(_unit_information(X, beta, p1, p0, link))[j, j])
    se = math.sqrt(unit / n)
    z = float(stats.norm.ppf(1 - alpha / 2))
    shift = abs(beta[j]) / se
    wald = float(stats.norm.cdf(shift - z) + stats.norm.cdf(-shift - z))
    power = mc_se = None
    failed = 0
    used = None
    if simulations:
        used = secrets.randbelow(2**32) if seed is None else v.integer("seed", seed, minimum=0)
        rejected, failed = _simulate(X, beta, d, n, j, z, link, simulations, used)
        power = rejected / simulations
        mc_se = math.sqrt(power * (1 - power) / simulations)
    return RegressionPower(
        term, float(beta[j]), n, alpha, link, d.name, wald, se, unit, power, mc_se,
        simulations, failed, used,
    )  # fmt: skip


def _matrix(formula: Any, covariates: Any) -> tuple[Array, list[str]]:
    if not isinstance(formula, str) or not formula.strip().startswith("~"):
        raise ParameterError(
            f"`formula` must be a right-hand side such as '~ x1 + x2', got {formula!r}."
        )
    pd = __import__("pandas")
    if not isinstance(covariates, pd.DataFrame):
        raise ParameterTypeError(
            f"`covariates` must be a pandas DataFrame, got {type(covariates).__name__}."
        )
    frame = covariates.assign(**{_OUTCOME: 0})
    md = model_data(f"{_OUTCOME} {formula.strip()}", frame, outcome="binary")
    return md.X, list(md.terms)


def _coefficients(coefficients: Any, terms: list[str]) -> Array:
    from collections.abc import Mapping

    if not isinstance(coefficients, Mapping):
        raise ParameterTypeError(
            "`coefficients` must be a mapping from each term of the formula to its value, got "
            f"{type(coefficients).__name__}."
        )
    names = set(map(str, coefficients))
    if names != set(terms):
        raise ParameterError(
            f"`coefficients` must name exactly the formula's terms {', '.join(map(repr, terms))}"
            f", got {', '.join(map(repr, coefficients))}."
        )
    values = np.array([v.real(f"coefficients[{t!r}]", coefficients[t]) for t in terms])
    if not np.all(np.isfinite(values)):
        t = terms[int(np.argmax(~np.isfinite(values)))]
        raise ParameterError(f"`coefficients` must be finite, got {coefficients[t]!r} for {t!r}.")
    return values


def _unit_information(X: Array, beta: Array, p1: float, p0: float, link: str) -> Array:
    """Expected information of one respondent, averaged over the covariate rows."""
    p, q, f, _ = link_functions(link)(X @ beta)
    lam = p1 * p + p0 * q
    d1 = (p1 - p0) * f
    w = d1 * d1 / (lam * ((1 - p1) * p + (1 - p0) * q))
    out: Array = X.T @ (X * w[:, None]) / X.shape[0]
    return out


def _simulate(
    X: Array, beta: Array, design: Any, n: int, j: int, z: float, link: str, sims: int, seed: int
) -> tuple[int, int]:
    """``(rejections, failed fits)`` over ``sims`` seeded surveys."""
    rng = resolve_rng(seed)
    assert isinstance(rng, np.random.Generator)
    inverse = link_functions(link)
    p1 = np.full(n, design.p_yes_given_1)
    p0 = np.full(n, design.p_yes_given_0)
    rejected = failed = 0
    for _ in range(sims):
        Xs = X[rng.integers(0, X.shape[0], size=n)]
        truth = rng.random(n) < inverse(Xs @ beta)[0]
        y = np.asarray(design.randomize(truth, rng=rng), dtype=np.float64)
        fit = fit_logit(Xs, y, p1, p0, link=link, tol=1e-8, max_iter=50)
        if not fit.converged or fit.boundary:
            failed += 1
            continue
        info = logit_information(Xs, y, p1, p0, fit.beta, link=link)["observed"]
        try:
            var = float(np.linalg.inv(info)[j, j])
        except np.linalg.LinAlgError:
            failed += 1
            continue
        if var > 0 and abs(fit.beta[j]) / math.sqrt(var) > z:
            rejected += 1
    return rejected, failed
