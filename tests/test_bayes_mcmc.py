"""Bayesian RR logistic regression through NumPyro (deniable.estimation.bayes_logistic_rr):
the posterior mean beside the maximum-likelihood fit, the hierarchical model over groups,
convergence diagnostics and their warning, the missing extra, and bad input.  Runs are
small (a few hundred draws, 2 chains run sequentially) to keep JIT and sampling short."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import numpyro  # the bayes extra: fails loudly here when missing (tests/test_extras.py)
import pandas as pd
import pytest

from deniable.designs import Categorical, ForcedResponse, Warner
from deniable.estimation import (
    RHAT_LIMIT,
    BayesLogisticRRResult,
    bayes_logistic_rr,
    logistic_rr,
)
from deniable.exceptions import (
    ConvergenceWarning,
    DataError,
    ParameterError,
    ParameterTypeError,
    SamplerWarning,
)

# JAX starts threads: its tests run in their own pytest process (scripts/test, pyproject).
pytestmark = pytest.mark.jax

assert numpyro.__version__


def _sample(n: int, seed: int, *, groups: int = 0) -> tuple[pd.DataFrame, ForcedResponse]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    eta = -0.5 + 1.0 * x
    frame = {"x": x}
    if groups:
        school = rng.integers(0, groups, size=n)
        eta = eta + rng.normal(0, 0.8, size=groups)[school]
        frame["school"] = [f"s{g}" for g in school]
    truth = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(np.int8)
    design = ForcedResponse(1 / 6, 1 / 6)
    frame["y"] = design.randomize(truth, rng=rng)
    return pd.DataFrame(frame), design


def test_posterior_mean_is_close_to_the_maximum_likelihood_fit() -> None:
    """n = 2000 and a flat-ish Normal(0, 10) prior: the posterior mean of each coefficient
    is within 0.25 maximum-likelihood SEs of the MLE (the gap is the posterior's skew,
    O(1/sqrt(n)) SEs, plus Monte Carlo error, SE / sqrt(ESS) ~ 0.05 SE); the posterior SD
    is within 20% of the SE."""
    data, design = _sample(2000, 1)
    fit = bayes_logistic_rr("y ~ x", data, design, prior_scale=10.0, draws=300, warmup=300)
    mle = logistic_rr("y ~ x", data, design)
    assert isinstance(fit, BayesLogisticRRResult)
    for term in ("Intercept", "x"):
        se = float(mle.bse[term])
        assert abs(fit.params[term] - float(mle.params[term])) < 0.25 * se, term
        assert fit.sd(term) == pytest.approx(se, rel=0.2), term
    # Diagnostics are reported for every parameter and the run converged.
    assert set(fit.r_hat) == set(fit.ess) == {"Intercept", "x"}
    assert all(r <= RHAT_LIMIT for r in fit.r_hat.values())
    assert all(e > 100 for e in fit.ess.values())
    assert fit.divergences == 0 and fit.converged
    assert fit.draws["x"].shape == (2, 300)
    text = str(fit)
    assert "R-hat" in text and "ESS" in text and "divergences: 0" in text
    d = fit.to_dict()
    assert d["converged"] and set(d["parameters"]) == {"Intercept", "x"}
    assert pickle.loads(pickle.dumps(fit)).to_dict() == d


def test_random_intercepts_pool_the_groups() -> None:
    """Random intercepts by school: tau and one intercept per school are sampled, the run
    converges (target_accept 0.9 avoids the divergences of the funnel near tau = 0)."""
    data, design = _sample(600, 2, groups=6)
    fit = bayes_logistic_rr("y ~ x", data, design, groups="school", draws=300, warmup=300, seed=3)
    assert fit.group_labels == tuple(f"s{g}" for g in range(6))
    assert {"tau", *(f"u[s{g}]" for g in range(6))} <= set(fit.r_hat)
    assert fit.converged
    assert fit.mean("tau") > 0
    lo, hi = fit.interval("tau", 0.95)
    assert 0 < lo < hi
    assert "random intercepts by 'school' (6 groups)" in str(fit)
    # Each school's intercept is the common one plus u: pooled, its mean over the schools
    # stays near 0 (the common intercept carries the average).
    means = [fit.mean(f"u[s{g}]") for g in range(6)]
    assert abs(float(np.mean(means))) < fit.mean("tau")


def test_a_short_run_warns_that_it_did_not_converge() -> None:
    """Ten draws per chain cannot mix (R-hat far above 1.01 with this seed): the fit warns,
    says so in its table, and still returns its diagnostics."""
    data, design = _sample(100, 4)
    assert issubclass(SamplerWarning, ConvergenceWarning)
    assert issubclass(SamplerWarning, RuntimeWarning)
    with pytest.warns(SamplerWarning, match="did not clearly converge"):
        fit = bayes_logistic_rr("y ~ x", data, design, draws=10, warmup=10)
    assert not fit.converged
    assert max(fit.r_hat.values()) > RHAT_LIMIT
    assert "WARNING" in str(fit)


def test_the_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    data, design = _sample(50, 5)
    monkeypatch.setitem(sys.modules, "numpyro", None)
    with pytest.raises(ImportError, match=r"pip install 'deniable\[bayes\]'"):
        bayes_logistic_rr("y ~ x", data, design)


def test_bad_input_is_refused_before_sampling() -> None:
    data, design = _sample(50, 6)
    with pytest.raises(ParameterError, match="`prior_scale` must be in"):
        bayes_logistic_rr("y ~ x", data, design, prior_scale=0)
    with pytest.raises(ParameterError, match="`chains` must be"):
        bayes_logistic_rr("y ~ x", data, design, chains=0)
    with pytest.raises(ParameterError, match="`target_accept` must be in"):
        bayes_logistic_rr("y ~ x", data, design, target_accept=1.0)
    with pytest.raises(ParameterError, match="`chain_method` must be one of"):
        bayes_logistic_rr("y ~ x", data, design, chain_method="threads")
    with pytest.raises(ParameterTypeError, match="`design` must be a one-group binary design"):
        bayes_logistic_rr("y ~ x", data, Categorical(k=3, p_truthful=0.7))
    with pytest.raises(DataError, match="`groups` names column 'class'"):
        bayes_logistic_rr("y ~ x", data, Warner(0.8), groups="class")
    with pytest.raises(DataError, match="`formula` names column 'z'"):
        bayes_logistic_rr("y ~ z", data, design)
