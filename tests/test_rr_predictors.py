"""Randomized-response items as predictors of logistic_rr (several at once, binary and
categorical): the reduction to the ordinary fit without randomization, recovery by
simulation, the exact score, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from deniable import ForcedResponse, Warner, logistic_rr
from deniable.designs import Categorical, StochasticLieDetector
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

OUT = ForcedResponse(1 / 6, 1 / 6)
DRUG, ALC = Warner(0.8), Categorical(3, 0.7)


def _sample(seed: int, n: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    drug = (rng.random(n) < 0.3).astype(int)
    alc = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    eta = -1 + 0.5 * x + 0.9 * drug + np.array([0.0, -0.6, 0.7])[alc]
    truth = rng.random(n) < expit(eta)
    reports = {"drug": DRUG.randomize(drug, rng=rng), "alc": ALC.randomize(alc, rng=rng)}
    df = pd.DataFrame({"y": OUT.randomize(truth, rng=rng), "x": x, **reports})
    return df, drug, alc


def test_without_randomization_of_the_predictor_it_is_the_ordinary_fit() -> None:
    # a predictor "randomized" with P(report = truth) = 1 is an observed covariate: the
    # likelihood factorizes, the coefficients and SEs are those of the plain fit with it
    df, drug, alc = _sample(1, 3000)
    exact = ForcedResponse(0, 0)
    observed = df.assign(drug=drug, alc=alc)
    fit = logistic_rr("y ~ x", observed, OUT, rr_predictors={"drug": exact})
    plain = logistic_rr("y ~ x + drug", observed, OUT)
    np.testing.assert_allclose(fit.params.to_numpy(), plain.params.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(fit.bse.to_numpy(), plain.bse.to_numpy(), rtol=1e-4)
    shares = fit.cell_shares()
    assert shares["P(drug=1)"] == pytest.approx(drug.mean(), abs=1e-7)
    assert list(fit.terms) == ["Intercept", "x", "drug[1]"]


def test_two_predictors_binary_and_categorical_are_recovered() -> None:
    # |estimate - truth| < 4 SE for each of 5 coefficients and 6 cell shares: false alarm
    # about 7e-4 under the asymptotic normal distribution; the seed is fixed
    df, drug, alc = _sample(2, 8000)
    fit = logistic_rr("y ~ x", df, OUT, rr_predictors={"drug": DRUG, "alc": ALC})
    assert fit.converged
    truth = np.array([-1, 0.5, 0.9, -0.6, 0.7])
    z = (fit.params.to_numpy() - truth) / fit.bse.to_numpy()
    assert np.all(np.abs(z) < 4), z
    joint = {f"P(drug={a}, alc={b})": np.mean((drug == a) & (alc == b))
             for a in (0, 1) for b in (0, 1, 2)}  # fmt: skip
    for name, est, se, lo, hi in fit._ancillary_rows(0.95):
        assert abs(est - joint[name]) < 4 * se and lo < est < hi
    # the naive fit on the randomized reports is attenuated towards 0
    naive = logistic_rr("y ~ x + drug + C(alc)", df, OUT)
    assert abs(naive.params["drug"]) < 0.6 * abs(fit.params["drug[1]"])
    assert 0 < fit.prevalence().value < 1


def test_bad_input() -> None:
    df, _, _ = _sample(3, 400)
    with pytest.raises(ParameterError, match=r"column 'drug' is also in the formula"):
        logistic_rr("y ~ x + drug", df, OUT, rr_predictors={"drug": DRUG})
    with pytest.raises(DataError, match=r"column 'alc' must hold reports 0 to 1, got 2"):
        logistic_rr("y ~ x", df, OUT, rr_predictors={"alc": DRUG})
    with pytest.raises(ParameterTypeError, match=r"must be a one-group design"):
        logistic_rr("y ~ x", df, OUT, rr_predictors={"drug": StochasticLieDetector(0.2, 0.8)})
    with pytest.raises(ParameterTypeError, match=r"`rr_predictors` must be a mapping"):
        logistic_rr("y ~ x", df, OUT, rr_predictors=["drug"])
    with pytest.raises(ParameterError, match=r"`se` must be one of 'observed', 'opg'"):
        logistic_rr("y ~ x", df, OUT, rr_predictors={"drug": DRUG}, se="expected")
    with pytest.raises(ParameterError, match=r"`direct` is not available with `rr_predictors`"):
        logistic_rr("y ~ x", df.assign(d=0), OUT, rr_predictors={"drug": DRUG}, direct="d")
    with pytest.raises(ParameterError, match=r"predict is not available"):
        logistic_rr("y ~ x", df, OUT, rr_predictors={"drug": DRUG}).predict()
