"""Bayesian logistic regression with a randomized outcome, through NumPyro: ``bayes_logistic_rr``.

The true answer follows ``P(T = 1 | x) = expit(x' beta + u_group)`` and the report the
design's channel, ``P(y = 1 | x) = P0 + (P1 - P0) expit(x' beta + u_group)``: the
randomization is inside the likelihood, as in :func:`~deniable.estimation.logistic_rr`.
Priors: ``beta_j ~ Normal(0, prior_scale)``; with ``groups``, random intercepts
``u_g = tau z_g``, ``z_g ~ Normal(0, 1)`` (the non-centred form), ``tau ~ HalfNormal(1)``,
which pools the groups towards the common intercept.  The posterior is sampled by NumPyro's
NUTS (Hoffman & Gelman 2014; Phan, Pradhan & Jankowiak 2019); nothing here is a
hand-written sampler.

Convergence is reported, never assumed: split R-hat and the effective sample size of every
parameter (NumPyro's ``split_gelman_rubin`` and ``effective_sample_size``; Gelman et al.
2013, Bayesian Data Analysis, 3rd ed., section 11.4-11.5) and the number of divergent
transitions; R-hat above :data:`RHAT_LIMIT` or any
divergence issues a :class:`SamplerWarning`.

NumPyro and JAX (the ``bayes`` extra) are imported inside the function.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import BinaryDesign
from deniable.estimation._regression_data import check_design, model_data
from deniable.exceptions import DataError, SamplerWarning
from deniable.results import Result, Table

__all__ = ["RHAT_LIMIT", "BayesLogisticRRResult", "bayes_logistic_rr"]

Array = npt.NDArray[np.float64]

#: R-hat above this (on any parameter) issues a :class:`SamplerWarning`.
RHAT_LIMIT = 1.01
_CHAIN_METHODS = ("sequential", "vectorized", "parallel")


def _require_numpyro() -> tuple[Any, Any, Any]:
    try:
        import jax
        import numpyro  # type: ignore[import-untyped]
        import numpyro.diagnostics  # type: ignore[import-untyped]
        import numpyro.distributions  # type: ignore[import-untyped]
        import numpyro.infer  # type: ignore[import-untyped]
    except ModuleNotFoundError as exc:
        raise ImportError(
            f"Bayesian regression needs NumPyro and JAX ({exc.name} is missing): "
            "pip install 'deniable[bayes]'"
        ) from None
    return jax, numpyro, jax.numpy


@dataclass(frozen=True, eq=False)
class BayesLogisticRRResult(Result):
    """Result of :func:`bayes_logistic_rr`: posterior draws and their summaries.

    Attributes
    ----------
    terms : names of the coefficients.
    draws : parameter name -> array of draws, shape ``(chains, draws)`` (coefficients by
        term; ``"tau"`` and ``"u[<group>]"`` with ``groups``).
    r_hat, ess : split R-hat and effective sample size per parameter.
    divergences : number of divergent transitions (all chains).
    design, formula, groups, prior_scale, nobs : what was fitted.
    """

    terms: tuple[str, ...]
    draws: dict[str, Array] = field(repr=False)
    r_hat: dict[str, float]
    ess: dict[str, float]
    divergences: int
    design: BinaryDesign
    formula: str
    groups: str | None
    group_labels: tuple[str, ...]
    prior_scale: float
    nobs: int

    @property
    def params(self) -> dict[str, float]:
        """Posterior means of the coefficients, by term."""
        return {t: float(np.mean(self.draws[t])) for t in self.terms}

    def mean(self, name: str) -> float:
        """Posterior mean of the parameter ``name``."""
        return float(np.mean(self._draws(name)))

    def sd(self, name: str) -> float:
        """Posterior standard deviation of the parameter ``name``."""
        return float(np.std(self._draws(name), ddof=1))

    def interval(self, name: str, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed credible interval of ``name`` from the draws' quantiles."""
        level = v.level(level)
        d = self._draws(name).ravel()
        lo, hi = np.quantile(d, [(1 - level) / 2, (1 + level) / 2])
        return float(lo), float(hi)

    def _draws(self, name: str) -> Array:
        if name not in self.draws:
            raise DataError(
                f"`name` must be one of {', '.join(repr(k) for k in self.draws)}, got {name!r}."
            )
        return self.draws[name]

    @property
    def converged(self) -> bool:
        """R-hat at most :data:`RHAT_LIMIT` everywhere and no divergences."""
        worst = max(self.r_hat.values(), default=1.0)
        return self.divergences == 0 and not worst > RHAT_LIMIT

    def table(self, level: float = 0.95) -> Table:
        pct = f"{100 * level:g}%"
        names = [*self.terms, *(["tau"] if self.groups else [])]
        rows = []
        for name in names:
            lo, hi = self.interval(name, level)
            rows.append((name, self.mean(name), self.sd(name), lo, hi, self.r_hat[name],
                         round(self.ess[name])))  # fmt: skip
        chains, draws = self.draws[self.terms[0]].shape
        notes = [
            f"design {self.design!r}; {self.nobs} reports; prior Normal(0, {self.prior_scale:g})"
            " on each coefficient",
            f"NUTS: {chains} chains x {draws} draws; divergences: {self.divergences}; "
            f"max R-hat {max(self.r_hat.values()):.4f}",
        ]
        if self.groups:
            notes.append(
                f"random intercepts by {self.groups!r} ({len(self.group_labels)} groups), "
                "tau ~ HalfNormal(1)"
            )
        if not self.converged:
            notes.append("WARNING: the sampler did not clearly converge (see R-hat, divergences)")
        return Table(
            ("term", "mean", "sd", f"{pct} low", f"{pct} high", "R-hat", "ESS"),
            tuple(rows),
            title="Bayesian logistic regression with a randomized outcome",
            notes=tuple(notes),
        )

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        names = [*self.terms, *(["tau"] if self.groups else [])]
        return {
            "formula": self.formula,
            "design": self.design.describe(),
            "groups": self.groups,
            "nobs": self.nobs,
            "prior_scale": self.prior_scale,
            "divergences": self.divergences,
            "converged": self.converged,
            "parameters": {
                n: {
                    "mean": self.mean(n),
                    "sd": self.sd(n),
                    "interval": list(self.interval(n, level)),
                    "r_hat": self.r_hat[n],
                    "ess": self.ess[n],
                }
                for n in names
            },
            "level": level,
        }


def bayes_logistic_rr(
    formula: str,
    data: Any,
    design: BinaryDesign,
    *,
    prior_scale: float = 2.5,
    groups: str | None = None,
    chains: int = 2,
    draws: int = 500,
    warmup: int = 500,
    seed: int = 0,
    chain_method: str = "sequential",
    target_accept: float = 0.9,
) -> BayesLogisticRRResult:
    """Bayesian logistic regression of randomized reports, sampled by NumPyro's NUTS.

    Parameters
    ----------
    formula, data, design : as for :func:`~deniable.estimation.logistic_rr`.
    prior_scale : standard deviation of the Normal(0, ``prior_scale``) prior of every
        coefficient (intercept included), in logit units.
    groups : a column of group labels (schools, clinics): adds random intercepts that pool
        the groups (``u_g ~ Normal(0, tau)``, ``tau ~ HalfNormal(1)``).
    chains, draws, warmup : NUTS chains, kept draws per chain and warm-up draws per chain.
    seed : the seed of the sampler (JAX's PRNG key).
    chain_method : ``"sequential"`` (default), ``"vectorized"`` or ``"parallel"``
        (NumPyro's; ``"parallel"`` needs as many JAX devices as chains).
    target_accept : NUTS's target acceptance probability during warm-up (higher: smaller
        steps, fewer divergences in the funnel of a hierarchical model; NumPyro's default
        is 0.8).

    Returns
    -------
    BayesLogisticRRResult
        The draws, their summaries and the convergence diagnostics.

    Notes
    -----
    Needs the ``bayes`` extra (``pip install 'deniable[bayes]'``).  Issues a
    :class:`SamplerWarning` when R-hat exceeds :data:`RHAT_LIMIT` or a transition diverged.
    """
    prior_scale = v.positive("prior_scale", prior_scale)
    chains = v.integer("chains", chains, minimum=1)
    draws = v.integer("draws", draws, minimum=10)
    warmup = v.integer("warmup", warmup, minimum=10)
    seed = v.integer("seed", seed, minimum=0, maximum=2**32 - 1)
    chain_method = v.choice("chain_method", chain_method, _CHAIN_METHODS)
    target_accept = v.probability("target_accept", target_accept, low_open=True, high_open=True)
    design = check_design(design)
    md = model_data(formula, data, outcome="binary", extras={"groups": groups} if groups else {})
    jax, numpyro, jnp = _require_numpyro()
    dist, infer = numpyro.distributions, numpyro.infer

    p1, p0 = float(design.p_yes_given_1), float(design.p_yes_given_0)
    # P(y=1) = low + |c| expit(s eta) and P(y=0) = (1 - high) + |c| expit(-s eta), with
    # c = P1 - P0, s = sign(c): both sums of non-negative terms, taken in log space.
    low, high, gap, sign = min(p0, p1), max(p0, p1), abs(p1 - p0), math.copysign(1.0, p1 - p0)
    with np.errstate(divide="ignore"):
        log_low, log_rest, log_gap = np.log(low), np.log(1 - high), math.log(gap)
    X = jnp.asarray(md.X)
    y = jnp.asarray(md.y)
    labels: tuple[str, ...] = ()
    codes = None
    if groups:
        raw = md.extras[groups]
        uniq, inverse = np.unique(raw.astype(str), return_inverse=True)
        labels, codes = tuple(str(u) for u in uniq), jnp.asarray(inverse)
    k = md.X.shape[1]

    def model() -> None:
        beta = numpyro.sample("beta", dist.Normal(0.0, prior_scale).expand([k]).to_event(1))
        eta = X @ beta
        if codes is not None:
            tau = numpyro.sample("tau", dist.HalfNormal(1.0))
            z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([len(labels)]).to_event(1))
            eta = eta + tau * z[codes]
        log_yes = jnp.logaddexp(log_low, log_gap + jax.nn.log_sigmoid(sign * eta))
        log_no = jnp.logaddexp(log_rest, log_gap + jax.nn.log_sigmoid(-sign * eta))
        numpyro.factor("reports", jnp.sum(jnp.where(y == 1, log_yes, log_no)))

    mcmc = infer.MCMC(
        infer.NUTS(model, target_accept_prob=target_accept),
        num_warmup=warmup,
        num_samples=draws,
        num_chains=chains,
        chain_method=chain_method,
        progress_bar=False,
    )
    with warnings.catch_warnings():
        # NumPyro warns that chains run sequentially when there are fewer devices than chains.
        warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
        mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging",))
    samples = mcmc.get_samples(group_by_chain=True)
    beta = np.asarray(samples["beta"], dtype=np.float64)
    out: dict[str, Array] = {t: beta[:, :, j] for j, t in enumerate(md.terms)}
    if codes is not None:
        tau = np.asarray(samples["tau"], dtype=np.float64)
        z = np.asarray(samples["z"], dtype=np.float64)
        out["tau"] = tau
        for j, label in enumerate(labels):
            out[f"u[{label}]"] = tau * z[:, :, j]
    diag = numpyro.diagnostics
    r_hat = {n: split_rhat(diag, d) for n, d in out.items()}
    ess = {n: float(diag.effective_sample_size(d)) for n, d in out.items()}
    divergences = int(np.sum(np.asarray(mcmc.get_extra_fields()["diverging"])))
    result = BayesLogisticRRResult(
        terms=md.terms, draws=out, r_hat=r_hat, ess=ess, divergences=divergences,
        design=design, formula=formula, groups=groups, group_labels=labels,
        prior_scale=prior_scale, nobs=len(md.y),
    )  # fmt: skip
    warn_unconverged(r_hat, divergences, stacklevel=2)
    return result


def warn_unconverged(r_hat: dict[str, float], divergences: int, *, stacklevel: int = 2) -> None:
    """Issue a :class:`SamplerWarning` when a transition diverged or some R-hat exceeds
    :data:`RHAT_LIMIT` (or is not a number); ``stacklevel=2`` points it at the caller of
    the function that calls this one."""
    worst = max(r_hat, key=lambda n: r_hat[n] if math.isfinite(r_hat[n]) else math.inf)
    if divergences or not r_hat[worst] <= RHAT_LIMIT:
        warnings.warn(
            f"the NUTS sampler did not clearly converge: {divergences} divergent transitions, "
            f"R-hat {r_hat[worst]:.4f} for {worst!r} (limit {RHAT_LIMIT}); run more "
            "`warmup`/`draws` or `chains`, or reparametrize, before trusting the summaries.",
            SamplerWarning,
            stacklevel=stacklevel + 1,
        )


def split_rhat(diag: Any, d: Array) -> float:
    """Split R-hat of draws of shape ``(chains, draws)`` (NumPyro's)."""
    if d.shape[0] < 2 and d.shape[1] < 4:  # pragma: no cover - draws >= 10 is enforced
        return math.nan
    return float(diag.split_gelman_rubin(d))
