"""The posterior of the prevalences under a categorical design: :class:`CategoricalPosterior`.

A categorical design (the k-ary ``Categorical``, forced response with ``k`` outcomes, Kuk's
design with several draws: any one-group design whose channel maps ``k`` true values to
report values) gets a Dirichlet(alpha) prior on its ``k`` prevalences and the multinomial
likelihood of the report counts with probabilities ``channel @ pi``.  The posterior is the
exact Dirichlet mixture of :mod:`._bayes_dirichlet` where its work is at most
:data:`CATEGORICAL_EXACT_MAX_WORK`, else drawn by NumPyro's NUTS
(:mod:`._bayes_categorical_nuts`, the ``bayes`` extra).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Design
from deniable.estimation._bayes_categorical_nuts import NutsDraws, sample_categorical
from deniable.estimation._bayes_dirichlet import (
    CATEGORICAL_EXACT_MAX_WORK,
    DirichletMixture,
    exact_work,
)
from deniable.estimation._bayes_exact import density_quantile
from deniable.estimation._bayes_prior import Beta
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.results import Result, Table

__all__ = ["MAX_CATEGORIES", "CategoricalPosterior", "categorical_posterior", "dirichlet_prior"]

Array = npt.NDArray[np.float64]

#: The most true values (categories) a categorical design may have for :func:`posterior`.
MAX_CATEGORIES = 100
_PRIOR_VALUE = {"uniform": 1.0, "jeffreys": 0.5}


def dirichlet_prior(prior: Any, k: int) -> tuple[float, ...]:
    """The Dirichlet parameters ``alpha`` of ``prior`` for ``k`` categories.

    ``"uniform"`` is all ones, ``"jeffreys"`` all 1/2, a sequence gives the ``k`` values;
    for ``k = 2`` a :class:`Beta` (a, b) of the prevalence ``pi_1`` is Dirichlet(b, a).
    """
    if isinstance(prior, Beta) and k == 2:
        return prior.b, prior.a
    if isinstance(prior, str):
        key = prior.strip().lower()
        if key in _PRIOR_VALUE:
            return (_PRIOR_VALUE[key],) * k
        raise ParameterError(
            f"`prior` of a categorical design must be 'uniform', 'jeffreys' or a sequence of "
            f"k = {k} numbers > 0 (Dirichlet parameters), got {prior!r}."
        )
    if isinstance(prior, Beta) or not hasattr(prior, "__iter__"):
        raise ParameterTypeError(
            f"`prior` of a categorical design must be 'uniform', 'jeffreys' or a sequence of "
            f"k = {k} numbers > 0 (Dirichlet parameters), got {type(prior).__name__} {prior!r}."
        )
    values = list(prior)
    if len(values) != k:
        raise ParameterError(
            f"`prior` must have k = {k} Dirichlet parameters (one per category), got "
            f"{len(values)}: {prior!r}."
        )
    out = []
    for j, x in enumerate(values):
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise ParameterTypeError(
                f"`prior` entry {j} must be a real number > 0, got {type(x).__name__} {x!r}."
            )
        if not (math.isfinite(float(x)) and float(x) > 0):
            raise ParameterError(f"`prior` entry {j} must be in (0, inf), got {x!r}.")
        out.append(float(x))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class CategoricalPosterior(Result):
    """The posterior of the prevalences ``pi_0, ..., pi_(k-1)`` of a categorical design.

    Attributes
    ----------
    design : the design the reports came from.
    prior : the Dirichlet parameters ``alpha`` (one per category).
    counts : the report counts (one per report value).
    method : ``"exact Dirichlet mixture"`` or ``"NUTS (NumPyro)"``.
    components : the number of Dirichlet components (exact route; 0 for NUTS).
    draws : the draws of ``pi``, shape ``(chains, draws, k)`` (NUTS; ``None`` when exact).
    r_hat, ess, divergences : NUTS's diagnostics per category (empty and 0 when exact).
    """

    design: Design
    prior: tuple[float, ...]
    counts: tuple[int, ...]
    _fit: DirichletMixture | NutsDraws = field(repr=False)

    @property
    def k(self) -> int:
        """The number of categories."""
        return len(self.prior)

    @property
    def method(self) -> str:
        return self._fit.method

    @property
    def components(self) -> int:
        return self._fit.components if isinstance(self._fit, DirichletMixture) else 0

    @property
    def draws(self) -> Array | None:
        return self._fit.draws.copy() if isinstance(self._fit, NutsDraws) else None

    @property
    def r_hat(self) -> tuple[float, ...]:
        return self._fit.r_hat if isinstance(self._fit, NutsDraws) else ()

    @property
    def ess(self) -> tuple[float, ...]:
        return self._fit.ess if isinstance(self._fit, NutsDraws) else ()

    @property
    def divergences(self) -> int:
        return self._fit.divergences if isinstance(self._fit, NutsDraws) else 0

    @property
    def mean(self) -> Array:
        """The posterior mean of each prevalence."""
        if isinstance(self._fit, DirichletMixture):
            return np.array([m.mean for m in self._fit.marginals])
        out: Array = self._fit.draws.mean(axis=(0, 1))
        return out

    @property
    def sd(self) -> Array:
        """The posterior standard deviation of each prevalence."""
        if isinstance(self._fit, DirichletMixture):
            return np.array([math.sqrt(m.var) for m in self._fit.marginals])
        flat = self._fit.draws.reshape(-1, self.k)
        out: Array = flat.std(axis=0, ddof=1)
        return out

    def quantile(self, q: Any) -> Array:
        """The ``q``-quantile of each prevalence's marginal posterior, in [0, 1]."""
        return self._quantile(v.probability("q", q))

    def _quantile(self, q: float) -> Array:
        if isinstance(self._fit, DirichletMixture):
            return np.array([density_quantile(m, q) for m in self._fit.marginals])
        out: Array = np.quantile(self._fit.draws.reshape(-1, self.k), q, axis=0)
        return out

    def interval(self, level: Any = 0.95) -> Array:
        """Equal-tailed credible intervals of probability ``level``, one row ``(low, high)``
        per category, inside [0, 1]."""
        level = v.level(level)
        return np.column_stack([self._quantile((1 - level) / 2), self._quantile((1 + level) / 2)])

    @property
    def converged(self) -> bool:
        """NUTS: no divergence and every R-hat at most ``RHAT_LIMIT``; always true when exact."""
        from deniable.estimation._bayes_mcmc import RHAT_LIMIT

        return self.divergences == 0 and all(r <= RHAT_LIMIT for r in self.r_hat)

    def _notes(self) -> list[str]:
        alpha = ", ".join(f"{a:g}" for a in self.prior)
        notes = [
            f"design {self.design!r}",
            f"prior Dirichlet({alpha}); report counts {list(self.counts)} (n = {sum(self.counts)})",
        ]
        if isinstance(self._fit, DirichletMixture):
            notes.append(f"method: exact Dirichlet mixture ({self.components} components)")
        else:
            chains, draws, _ = self._fit.draws.shape
            notes.append(
                f"method: NUTS (NumPyro), {chains} chains x {draws} draws; divergences: "
                f"{self.divergences}; max R-hat {max(self.r_hat):.4f}"
            )
            if not self.converged:
                notes.append("WARNING: the sampler did not clearly converge (see R-hat)")
        return notes

    def table(self, level: float = 0.95) -> Table:
        """One row per category: mean, SD, median and the equal-tailed interval (with
        R-hat and ESS after NUTS)."""
        pct = f"{100 * level:g}%"
        mean, sd, med, ci = self.mean, self.sd, self._quantile(0.5), self.interval(level)
        columns = ["category", "mean", "sd", "median", f"{pct} low", f"{pct} high"]
        nuts = isinstance(self._fit, NutsDraws)
        if nuts:
            columns += ["R-hat", "ESS"]
        rows = []
        for j in range(self.k):
            row: list[Any] = [str(j), mean[j], sd[j], med[j], ci[j, 0], ci[j, 1]]
            if nuts:
                row += [self.r_hat[j], round(self.ess[j])]
            rows.append(tuple(row))
        return Table(tuple(columns), tuple(rows), title="Posterior of the prevalences",
                     notes=tuple(self._notes()))  # fmt: skip

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON data: per-category summaries, the method and its diagnostics."""
        ci = self.interval(level)
        out: dict[str, Any] = {
            "design": self.design.describe(),
            "prior": {"dirichlet": list(self.prior)},
            "counts": list(self.counts),
            "n": sum(self.counts),
            "mean": self.mean.tolist(),
            "sd": self.sd.tolist(),
            "median": self._quantile(0.5).tolist(),
            "level": level,
            "interval": ci.tolist(),
            "method": self.method,
        }
        if isinstance(self._fit, DirichletMixture):
            out["components"] = self.components
        else:
            out.update(r_hat=list(self.r_hat), ess=list(self.ess),
                       divergences=self.divergences, converged=self.converged)  # fmt: skip
        return out


def categorical_posterior(
    design: Design,
    counts: Any,
    prior: Any,
    method: str,
    *,
    chains: int = 2,
    draws: int = 1000,
    warmup: int = 1000,
    seed: int = 0,
) -> CategoricalPosterior:
    """The posterior of a categorical design's prevalences from its report counts
    (:func:`~deniable.estimation.posterior` checks the counts and dispatches here)."""
    k = design.n_truths
    if k > MAX_CATEGORIES:
        raise ParameterError(
            f"`design` must have at most {MAX_CATEGORIES} categories for the posterior, got "
            f"k = {k}: collapse the categories, or use the design's frequentist estimate."
        )
    alpha = dirichlet_prior(prior, k)
    channel = np.asarray(design.channel, dtype=np.float64)
    c = np.asarray(counts, dtype=np.int64)
    n = int(c.sum())
    work = exact_work(n, k)
    if method == "exact" and work > CATEGORICAL_EXACT_MAX_WORK:
        raise ParameterError(
            f"`method` 'exact' is offered for a categorical design while n k (n + 1)^(k - 1) "
            f"is at most {CATEGORICAL_EXACT_MAX_WORK:.0e}, got {work:.3g} (n = {n}, k = {k}): "
            "use method='nuts' (or 'auto'; the bayes extra)."
        )
    fit: DirichletMixture | NutsDraws
    if method == "exact" or (method == "auto" and work <= CATEGORICAL_EXACT_MAX_WORK):
        fit = DirichletMixture(channel, c.astype(np.float64), np.asarray(alpha))
    else:
        fit = sample_categorical(
            channel, c.astype(np.float64), np.asarray(alpha),
            chains=v.integer("chains", chains, minimum=1),
            draws=v.integer("draws", draws, minimum=10),
            warmup=v.integer("warmup", warmup, minimum=10),
            seed=v.integer("seed", seed, minimum=0, maximum=2**32 - 1),
            stacklevel=4,
        )  # fmt: skip
    return CategoricalPosterior(design, alpha, tuple(int(x) for x in c), fit)
