"""Probit and complementary log-log links for the randomized outcome: closed-form
derivatives, recovery by simulation, and the ordinary GLM when nothing is randomized."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, ndtr

from deniable import ForcedResponse, logistic_rr
from deniable.estimation import LINKS
from deniable.estimation._regression_logit import (
    logit_information,
    logit_loglik,
    logit_scores,
)
from deniable.sampling import SampleDesign

# The inverse links, written here from their definitions.
INVERSE = {
    "logit": expit,
    "probit": ndtr,
    "cloglog": lambda eta: 1 - np.exp(-np.exp(eta)),
}


def _arrays(seed: int, n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=n), rng.integers(0, 2, size=n)])
    y = rng.integers(0, 2, size=n).astype(float)
    p1 = np.full(n, 0.8)
    p0 = np.full(n, 0.15)
    return X, y, p1, p0


@pytest.mark.parametrize("link", LINKS)
def test_score_and_information_are_the_derivatives_of_the_likelihood(link: str) -> None:
    X, y, p1, p0 = _arrays(1)
    beta = np.array([-0.4, 0.5, -0.3])
    h = 1e-5
    k = beta.size

    def ll(b: np.ndarray) -> float:
        return logit_loglik(X, y, p1, p0, b, link=link)

    grad = np.array([(ll(beta + h * e) - ll(beta - h * e)) / (2 * h) for e in np.eye(k)])
    np.testing.assert_allclose(logit_scores(X, y, p1, p0, beta, link=link).sum(0), grad, rtol=1e-6)
    hess = np.array(
        [
            [
                (
                    ll(beta + h * (a + b))
                    - ll(beta + h * (a - b))
                    - ll(beta - h * (a - b))
                    + ll(beta - h * (a + b))
                )
                / (4 * h * h)
                for b in np.eye(k)
            ]
            for a in np.eye(k)
        ]
    )
    info = logit_information(X, y, p1, p0, beta, link=link)
    np.testing.assert_allclose(info["observed"], -hess, rtol=1e-4)
    # the expected information is the observed one averaged over the reports:
    # E[-H] = lambda (-H | y = 1) + (1 - lambda) (-H | y = 0), lambda from the model
    lam = p1 * INVERSE[link](X @ beta) + p0 * (1 - INVERSE[link](X @ beta))
    ones, zeros = np.ones_like(y), np.zeros_like(y)
    expected = (
        logit_information(X, ones, p1, p0, beta, link=link, weights=lam)["observed"]
        + logit_information(X, zeros, p1, p0, beta, link=link, weights=1 - lam)["observed"]
    )
    np.testing.assert_allclose(info["expected"], expected, rtol=1e-10)


@pytest.mark.parametrize("link", LINKS)
def test_data_simulated_under_each_link_recover_the_coefficients(link: str) -> None:
    # |estimate - truth| < 4 SE for each of 2 coefficients: false-alarm rate about 1.3e-4
    # per link under the asymptotic normal distribution; the seed is fixed.
    rng = np.random.default_rng({"logit": 21, "probit": 22, "cloglog": 23}[link])
    n = 20000
    design = ForcedResponse(1 / 6, 1 / 6)
    x = rng.normal(size=n)
    beta = np.array([-0.8, 0.6])
    truth = rng.random(n) < INVERSE[link](beta[0] + beta[1] * x)
    df = pd.DataFrame({"y": design.randomize(truth, rng=rng), "x": x})
    fit = logistic_rr("y ~ x", df, design, link=link)
    assert fit.converged and fit.link == link
    z = (fit.params.to_numpy() - beta) / fit.bse.to_numpy()
    assert np.all(np.abs(z) < 4), z
    # and the link matters: the logit fit to probit data has another scale
    if link == "probit":
        other = logistic_rr("y ~ x", df, design)
        assert abs(other.params["x"] / fit.params["x"] - 1.7) < 0.15


@pytest.mark.parametrize("link", LINKS)
def test_without_randomization_the_fit_is_statsmodels_glm(link: str) -> None:
    import statsmodels.api as sm  # a dependency of samplics, a dev dependency

    links = {
        "logit": sm.families.links.Logit(),
        "probit": sm.families.links.Probit(),
        "cloglog": sm.families.links.CLogLog(),
    }
    rng = np.random.default_rng(3)
    n = 3000
    x, g = rng.normal(size=n), rng.integers(0, 3, size=n)
    df = pd.DataFrame({"y": (rng.random(n) < 0.3 + 0.2 * (x > 0)).astype(int), "x": x, "g": g})
    direct = ForcedResponse(0, 0)  # P(yes | 1) = 1, P(yes | 0) = 0: no randomization
    fit = logistic_rr("y ~ x + C(g)", df, direct, link=link)
    X = np.column_stack([np.ones(n), x, g == 1, g == 2]).astype(float)
    glm = sm.GLM(df["y"].to_numpy(), X, family=sm.families.Binomial(link=links[link]))
    ref = glm.fit(tol=1e-12)
    np.testing.assert_allclose(fit.params.to_numpy(), ref.params, rtol=1e-7, atol=1e-9)
    # statsmodels' IRLS covariance is the inverse expected information
    np.testing.assert_allclose(fit.with_se("expected").bse.to_numpy(), ref.bse, rtol=1e-6)
    assert fit.llf == pytest.approx(ref.llf, rel=1e-10)


def test_other_links_work_under_a_design_and_predict_on_their_scale() -> None:
    rng = np.random.default_rng(5)
    n = 2000
    design = ForcedResponse(1 / 6, 1 / 6)
    x = rng.normal(size=n)
    truth = rng.random(n) < ndtr(-0.5 + 0.7 * x)
    df = pd.DataFrame({"y": design.randomize(truth, rng=rng), "x": x})
    sd = SampleDesign(weights=rng.uniform(1, 2, n), strata=np.arange(n) % 4)
    fit = logistic_rr("y ~ x", df, design, link="cloglog", sample_design=sd)
    assert fit.model == "cloglog-rr" and fit.sampling is not None
    pred = fit.predict(pd.DataFrame({"x": [0.0, 1.0]}))
    eta = fit.params["Intercept"] + fit.params["x"] * np.array([0.0, 1.0])
    np.testing.assert_allclose(pred["prevalence"], 1 - np.exp(-np.exp(eta)), rtol=1e-12)
    assert np.all(pred["lower"] < pred["prevalence"]) and np.all(pred["prevalence"] < pred["upper"])
