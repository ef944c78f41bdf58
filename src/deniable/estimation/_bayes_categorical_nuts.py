"""The posterior of a categorical design's prevalences sampled by NumPyro's NUTS.

The model: ``pi ~ Dirichlet(alpha)`` (NumPyro samples it on the simplex through its
stick-breaking transform) and the report counts multinomial with probabilities
``channel @ pi`` (the multinomial coefficient, a constant, is left out).  Convergence is
checked as for :func:`~deniable.estimation.bayes_logistic_rr`: split R-hat and effective
sample size of every ``pi_j``, divergent transitions, a :class:`SamplerWarning` when they
fail.  NumPyro and JAX (the ``bayes`` extra) are imported inside the function.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from deniable.estimation._bayes_mcmc import _require_numpyro, split_rhat, warn_unconverged

__all__ = ["NutsDraws", "sample_categorical"]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class NutsDraws:
    """Draws of ``pi``, shape ``(chains, draws, k)``, and their diagnostics per category."""

    draws: Array
    r_hat: tuple[float, ...]
    ess: tuple[float, ...]
    divergences: int

    method = "NUTS (NumPyro)"


def sample_categorical(
    channel: Array,
    counts: Array,
    alpha: Array,
    *,
    chains: int,
    draws: int,
    warmup: int,
    seed: int,
    stacklevel: int,
) -> NutsDraws:
    """Run NUTS on the posterior of ``pi`` and check its convergence (``stacklevel`` as
    ``warn_unconverged`` takes it: 2 is the caller of this function's caller)."""
    jax, numpyro, jnp = _require_numpyro()
    dist, infer = numpyro.distributions, numpyro.infer
    p = jnp.asarray(channel)
    c = jnp.asarray(counts)
    seen = c > 0

    def model() -> None:
        pi = numpyro.sample("pi", dist.Dirichlet(jnp.asarray(alpha)))
        lam = p @ pi
        # counts * log(lambda), 0 for a report value never seen (lambda may be 0 there)
        log_lam = jnp.log(jnp.where(seen, lam, 1.0))
        numpyro.factor("reports", jnp.sum(jnp.where(seen, c * log_lam, 0.0)))

    mcmc = infer.MCMC(
        infer.NUTS(model),
        num_warmup=warmup,
        num_samples=draws,
        num_chains=chains,
        chain_method="sequential",
        progress_bar=False,
    )
    with warnings.catch_warnings():
        # NumPyro warns that chains run sequentially when there are fewer devices than chains.
        warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
        mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging",))
    pi_draws = np.asarray(mcmc.get_samples(group_by_chain=True)["pi"], dtype=np.float64)
    diag = numpyro.diagnostics
    k = pi_draws.shape[2]
    r_hat = tuple(split_rhat(diag, pi_draws[:, :, j]) for j in range(k))
    ess = tuple(float(diag.effective_sample_size(pi_draws[:, :, j])) for j in range(k))
    divergences = int(np.sum(np.asarray(mcmc.get_extra_fields()["diverging"])))
    warn_unconverged({f"pi[{j}]": r for j, r in enumerate(r_hat)}, divergences,
                     stacklevel=stacklevel)  # fmt: skip
    return NutsDraws(np.clip(pi_draws, 0.0, 1.0), r_hat, ess, divergences)
