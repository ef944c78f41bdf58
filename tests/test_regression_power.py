"""regression_power: the Wald closed form against the binomial closed form, the simulation
against the closed form, sample size, seeds and bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from deniable import ForcedResponse, Warner
from deniable.estimation import regression_power
from deniable.exceptions import ParameterError, ParameterTypeError

FR = ForcedResponse(1 / 6, 1 / 6)


@pytest.fixture(scope="module")
def covariates() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"x": rng.normal(size=2000), "g": rng.integers(0, 3, size=2000)})


def test_intercept_only_wald_se_is_the_binomial_closed_form(covariates: pd.DataFrame) -> None:
    # one prevalence pi: var(pi_hat) = lambda (1 - lambda) / (n c^2) (Warner 1965), and the
    # logit's SE is that over pi (1 - pi) by the delta method
    design, n, b0 = Warner(0.8), 500, -0.7
    res = regression_power("~ 1", covariates, {"Intercept": b0}, design, n, term="Intercept",
                           simulations=0)  # fmt: skip
    pi = 1 / (1 + math.exp(-b0))
    c = design.p_yes_given_1 - design.p_yes_given_0
    lam = design.p_yes_given_0 + c * pi
    se = math.sqrt(lam * (1 - lam) / (n * c * c)) / (pi * (1 - pi))
    assert res.wald_se == pytest.approx(se, rel=1e-12)
    z = stats.norm.ppf(0.975)
    expected = stats.norm.cdf(abs(b0) / se - z) + stats.norm.cdf(-abs(b0) / se - z)
    assert res.wald_power == pytest.approx(expected, rel=1e-12)
    assert res.power is None and res.simulations == 0


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_simulated_power_agrees_with_the_closed_form(covariates: pd.DataFrame, link: str) -> None:
    # 300 seeded surveys: |simulated - Wald| within 3.5 Monte Carlo SEs (false alarm about
    # 5e-4 if the closed form were exact) plus 0.04 for the asymptotic approximation at
    # n = 1500
    slope = {"logit": 0.25, "probit": 0.15}[link]  # probit coefficients are ~1/1.7 of logit
    coefs = {"Intercept": -0.8, "x": slope, "C(g)[T.1]": 0.2, "C(g)[T.2]": -0.1}
    res = regression_power("~ x + C(g)", covariates, coefs, FR, 1500, term="x", link=link,
                           simulations=300, seed=7)  # fmt: skip
    assert res.power is not None and res.mc_se is not None
    assert 0.3 < res.wald_power < 0.95
    assert abs(res.power - res.wald_power) < 3.5 * res.mc_se + 0.04
    assert res.mc_se == pytest.approx(math.sqrt(res.power * (1 - res.power) / 300))
    again = regression_power("~ x + C(g)", covariates, coefs, FR, 1500, term="x", link=link,
                             simulations=300, seed=7)  # fmt: skip
    assert again.power == res.power and again.seed == 7


def test_sample_size_reaches_the_power(covariates: pd.DataFrame) -> None:
    coefs = {"Intercept": -1.0, "x": 0.3}
    res = regression_power("~ x", covariates, coefs, FR, 100, term="x", simulations=0)
    n = res.sample_size(0.8)
    at = regression_power("~ x", covariates, coefs, FR, n, term="x", simulations=0)
    below = regression_power("~ x", covariates, coefs, FR, n - 5, term="x", simulations=0)
    assert at.wald_power >= 0.8 > below.wald_power
    # a noisier design needs more respondents
    noisy = regression_power("~ x", covariates, coefs, Warner(0.65), 100, term="x",
                             simulations=0)  # fmt: skip
    assert noisy.sample_size(0.8) > n


def test_without_a_seed_the_seed_used_is_kept(covariates: pd.DataFrame) -> None:
    res = regression_power("~ x", covariates, {"Intercept": 0.0, "x": 1.0}, FR, 200, term="x",
                           simulations=3)  # fmt: skip
    assert isinstance(res.seed, int)
    assert "seed" in str(res) and res.to_dict()["seed"] == res.seed


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"term": "z"}, ParameterError, r"`term` must be one of the formula's terms 'Intercept', "
                                        r"'x', got 'z'"),
        ({"coefficients": {"Intercept": 0.1, "x": 0.0}}, ParameterError, "other than 0"),
        ({"coefficients": {"x": 0.3}}, ParameterError, r"`coefficients` must name exactly"),
        ({"coefficients": [0.1, 0.3]}, ParameterTypeError, r"`coefficients` must be a mapping"),
        ({"coefficients": {"Intercept": 0.1, "x": math.inf}}, ParameterError, "finite"),
        ({"formula": "y ~ x"}, ParameterError, r"`formula` must be a right-hand side"),
        ({"covariates": {"x": [1, 2]}}, ParameterTypeError, r"`covariates` must be a pandas"),
        ({"link": "logistic"}, ParameterError, r"`link` must be one of"),
        ({"n": 1}, ParameterError, r"`n`"),
        ({"alpha": 1.5}, ParameterError, r"`alpha`"),
        ({"simulations": -1}, ParameterError, r"`simulations`"),
    ],
)  # fmt: skip
def test_bad_input_names_the_parameter(
    covariates: pd.DataFrame, kwargs: dict, error: type, pattern: str
) -> None:
    args = {"formula": "~ x", "covariates": covariates,
            "coefficients": {"Intercept": 0.1, "x": 0.3}, "design": FR, "n": 100, "term": "x",
            "simulations": 0} | kwargs  # fmt: skip
    with pytest.raises(error, match=pattern):
        regression_power(**args)
