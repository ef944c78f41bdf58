"""Logistic RR regression under a survey design: weighted pseudo-likelihood, the
design-based sandwich (observed and expected bread), replicate refits, t intervals with the
design's degrees of freedom, and bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

from deniable import ForcedResponse, Warner, logistic_rr
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.sampling import SampleDesign, as_replicate

FR = ForcedResponse(1 / 6, 1 / 6)


def _clustered(seed: int, psus: int = 40, size: int = 30) -> tuple[pd.DataFrame, SampleDesign]:
    """A clustered sample with unequal weights: a PSU effect in both the covariate and the
    prevalence, so the design effect is well above 1."""
    rng = np.random.default_rng(seed)
    psu = np.repeat(np.arange(psus), size)
    u = rng.normal(scale=0.6, size=psus)[psu]
    x = rng.normal(size=psus * size) + u
    w = rng.uniform(1, 3, size=psus)[psu] * rng.uniform(0.8, 1.2, size=psus * size)
    truth = rng.random(psus * size) < expit(-1 + 0.8 * x + u)
    df = pd.DataFrame({"y": FR.randomize(truth, rng=rng), "x": x})
    return df, SampleDesign(weights=w, psu=psu)


def _loglik_terms(beta: np.ndarray, X: np.ndarray, y: np.ndarray, p1: float, p0: float):
    """Each respondent's RR log-likelihood, written here from the model, not the package."""
    p = expit(X @ beta)
    lam = p1 * p + p0 * (1 - p)
    return y * np.log(lam) + (1 - y) * np.log(1 - lam)


def test_equal_weights_one_psu_each_is_the_hc0_sandwich() -> None:
    # With equal weights, no strata and each respondent a PSU, the design-based sandwich is
    # n / (n - 1) times White's HC0 sandwich H^-1 (sum s s') H^-1 of the unweighted fit;
    # here H and s are finite differences of a likelihood written in this test.
    rng = np.random.default_rng(11)
    n = 600
    design = Warner(0.75)
    x1, x2 = rng.normal(size=n), rng.integers(0, 2, size=n)
    truth = rng.random(n) < expit(-0.5 + 0.9 * x1 - 0.7 * x2)
    df = pd.DataFrame({"y": design.randomize(truth, rng=rng), "x1": x1, "x2": x2})
    fit = logistic_rr("y ~ x1 + x2", df, design, sample_design=SampleDesign(weights=np.ones(n)))
    plain = logistic_rr("y ~ x1 + x2", df, design)
    np.testing.assert_allclose(fit.params, plain.params, rtol=1e-7, atol=1e-9)
    X = np.column_stack([np.ones(n), x1, x2]).astype(float)
    y = df["y"].to_numpy(dtype=float)
    beta = plain.params.to_numpy()
    k, h = 3, 1e-5
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    S = np.empty((n, k))
    H = np.empty((k, k))
    for j in range(k):
        e = np.zeros(k)
        e[j] = h
        up, down = _loglik_terms(beta + e, X, y, p1, p0), _loglik_terms(beta - e, X, y, p1, p0)
        S[:, j] = (up - down) / (2 * h)
        for i in range(k):
            f = np.zeros(k)
            f[i] = h
            H[i, j] = (
                _loglik_terms(beta + e + f, X, y, p1, p0).sum()
                - _loglik_terms(beta + e - f, X, y, p1, p0).sum()
                - _loglik_terms(beta - e + f, X, y, p1, p0).sum()
                + _loglik_terms(beta - e - f, X, y, p1, p0).sum()
            ) / (4 * h * h)
    Hinv = np.linalg.inv(-H)
    hc0 = Hinv @ (S.T @ S) @ Hinv
    np.testing.assert_allclose(fit.cov_params().to_numpy(), n / (n - 1) * hc0, rtol=2e-4)
    assert fit.se_type == "observed"
    assert fit.sampling is not None and fit.sampling.df == n - 1 + 1 - k


def test_sandwich_agrees_with_a_delete_one_psu_jackknife_by_refitting() -> None:
    # JK1 by refitting without each PSU in turn (the estimate does not depend on the scale
    # of the weights, so the jackknife's P / (P - 1) factor needs no refit of its own).
    # Both estimate the same design variance; they agree to first order, and with 40 PSUs
    # the observed-bread sandwich is within 5% of the jackknife (checked on 6 seeds: 0.4% to
    # 2.9%); this seed is fixed, so the test is deterministic.
    df, sd = _clustered(0)
    fit = logistic_rr("y ~ x", df, FR, sample_design=sd)
    psu = sd.psu_index
    thetas = []
    for g in range(sd.n_psu):
        keep = psu != g
        part = SampleDesign(weights=sd.weights[keep], psu=psu[keep])
        thetas.append(logistic_rr("y ~ x", df[keep], FR, sample_design=part).params.to_numpy())
    th = np.array(thetas)
    jk = np.sqrt((sd.n_psu - 1) / sd.n_psu * ((th - th.mean(0)) ** 2).sum(0))
    np.testing.assert_allclose(fit.bse.to_numpy(), jk, rtol=0.05)
    # the design effect is real: the model-based SE is far smaller
    naive = logistic_rr("y ~ x", df, FR).bse.to_numpy()
    assert np.all(fit.bse.to_numpy() > 1.05 * naive)
    # a replicate design built by deniable.sampling refits the same way
    rep = logistic_rr("y ~ x", df, FR, sample_design=as_replicate(sd, "JK1"))
    assert rep.se_type == "replicate"
    np.testing.assert_allclose(rep.bse.to_numpy(), jk, rtol=1e-6)


def test_expected_bread_is_offered_named_and_differs_under_the_rr_link() -> None:
    df, sd = _clustered(1)
    fit = logistic_rr("y ~ x", df, FR, sample_design=sd, bread="expected")
    assert fit.se_type == "expected"
    assert "expected information" in fit.se_description
    obs = fit.with_se("observed")
    assert "observed information" in obs.se_description
    assert not np.allclose(fit.bse, obs.bse, rtol=1e-3)
    assert "bread" in fit.summary() and "t with 38 degrees of freedom" in fit.summary()


def test_intervals_use_t_with_the_design_degrees_of_freedom() -> None:
    df, _ = _clustered(2)
    rng = np.random.default_rng(2)
    strata = np.repeat(np.arange(4), 300)
    psu = np.repeat(np.arange(40), 30)
    sd = SampleDesign(weights=rng.uniform(1, 2, 1200), strata=strata, psu=psu)
    fit = logistic_rr("y ~ x", df, FR, sample_design=sd)
    df_t = 40 - 4 + 1 - 2  # R's svyglm: degf(design) + 1 - #coefficients
    assert fit.sampling is not None and fit.sampling.df == df_t
    ci = fit.conf_int(level=0.9).to_numpy()
    half = (ci[:, 1] - ci[:, 0]) / 2
    np.testing.assert_allclose(half, stats.t.ppf(0.95, df_t) * fit.bse.to_numpy(), rtol=1e-12)
    t = fit.params.to_numpy() / fit.bse.to_numpy()
    np.testing.assert_allclose(fit.pvalues, 2 * stats.t.sf(np.abs(t), df_t), rtol=1e-12)
    out = fit.to_dict()
    assert out["sample_design"]["df"] == df_t and out["aic"] == "nan"  # JSON has no NaN


def test_fpc_scales_the_variance_by_one_minus_the_sampling_fraction() -> None:
    df, sd = _clustered(3)
    with_fpc = SampleDesign(weights=sd.weights, psu=sd.psu_index, fpc=np.full(sd.n, 160))
    a = logistic_rr("y ~ x", df, FR, sample_design=sd).cov_params().to_numpy()
    b = logistic_rr("y ~ x", df, FR, sample_design=with_fpc).cov_params().to_numpy()
    np.testing.assert_allclose(b, (1 - 40 / 160) * a, rtol=1e-9)


def test_dropped_rows_stay_in_the_design_as_a_domain() -> None:
    df, sd = _clustered(4)
    holed = df.copy()
    holed.loc[holed.index[:45], "x"] = np.nan  # the first PSU and half the next
    fit = logistic_rr("y ~ x", holed, FR, sample_design=sd)
    assert fit.nobs == sd.n - 45 and fit.n_dropped == 45
    assert fit.sampling is not None and fit.sampling.df == sd.df + 1 - 2
    # the same rows alone, as their own design, give the same coefficients
    keep = holed["x"].notna().to_numpy()
    part = SampleDesign(weights=sd.weights[keep], psu=sd.psu_index[keep])
    alone = logistic_rr("y ~ x", holed[keep], FR, sample_design=part)
    np.testing.assert_allclose(fit.params, alone.params, rtol=1e-8)
    assert list(fit.predict().index) == list(holed.index[keep])


def test_weights_change_the_estimate_as_a_pseudo_likelihood() -> None:
    # integer weights give the fit to the data with each row repeated that many times
    rng = np.random.default_rng(6)
    n = 400
    x = rng.normal(size=n)
    df = pd.DataFrame({"y": FR.randomize(rng.random(n) < expit(x), rng=rng), "x": x})
    w = rng.integers(1, 4, size=n)
    fit = logistic_rr("y ~ x", df, FR, sample_design=SampleDesign(weights=w.astype(float)))
    repeated = logistic_rr("y ~ x", df.loc[df.index.repeat(w)], FR)
    np.testing.assert_allclose(fit.params, repeated.params, rtol=1e-7)


def test_a_stratum_with_one_psu_follows_the_lonely_psu_rule() -> None:
    df, _ = _clustered(5)
    strata = np.repeat([0, 0, 1] + [2] * 37, 30)  # stratum 1 holds one PSU
    psu = np.repeat(np.arange(40), 30)
    with pytest.raises(DataError, match=r"only one PSU.*lonely_psu"):
        SampleDesign(strata=strata, psu=psu)
    removed = logistic_rr(
        "y ~ x", df, FR, sample_design=SampleDesign(strata=strata, psu=psu, lonely_psu="remove")
    )
    adjusted = logistic_rr(
        "y ~ x", df, FR, sample_design=SampleDesign(strata=strata, psu=psu, lonely_psu="adjust")
    )
    assert np.all(adjusted.bse.to_numpy() > removed.bse.to_numpy())


def test_design_fits_refuse_what_needs_a_likelihood() -> None:
    df, sd = _clustered(7)
    fit = logistic_rr("y ~ x", df, FR, sample_design=sd)
    small = logistic_rr("y ~ 1", df, FR, sample_design=sd)
    with pytest.raises(ParameterError, match="pseudo-likelihood"):
        fit.lr_test(small)
    assert math.isnan(fit.aic) and math.isnan(fit.bic)
    df["direct"] = (np.arange(len(df)) % 5 == 0).astype(int)
    with_direct = logistic_rr("y ~ x", df, FR, sample_design=sd, direct="direct")
    assert with_direct.direct_test is None
    assert any("design-based t test" in note for note in with_direct.notes)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"sample_design": "w"}, ParameterTypeError, r"`sample_design` must be .*SampleDesign"),
        (
            {"sample_design": SampleDesign(weights=np.ones(7))},
            DataError,
            r"`sample_design` must have one respondent per row of `data` \(1200 rows\), got "
            r"a design of 7",
        ),
        ({"bread": "expected"}, ParameterError, r"`bread` applies to a fit under"),
        (
            {"sample_design": SampleDesign(weights=np.ones(1200)), "bread": "hessian"},
            ParameterError,
            r"`bread` must be one of 'observed', 'expected', got 'hessian'",
        ),
        (
            {"sample_design": SampleDesign(weights=np.ones(1200)), "se": "opg"},
            ParameterError,
            r"`se` chooses a model-based standard error.*got se='opg'",
        ),
        ({"link": "cauchit"}, ParameterError, r"`link` must be one of 'logit', 'probit'"),
    ],
)
def test_bad_input_names_the_parameter(kwargs: dict, error: type, pattern: str) -> None:
    df, _ = _clustered(8)
    with pytest.raises(error, match=pattern):
        logistic_rr("y ~ x", df, FR, **kwargs)


def test_bread_with_a_replicate_design_is_refused() -> None:
    df, sd = _clustered(9)
    with pytest.raises(ParameterError, match="`bread` applies to a SampleDesign"):
        logistic_rr("y ~ x", df, FR, sample_design=as_replicate(sd, "JK1"), bread="observed")


def test_zero_or_negative_weights_are_refused_naming_weights() -> None:
    for bad in (0.0, -1.0):
        w = np.ones(10)
        w[3] = bad
        with pytest.raises(DataError, match=r"`weights` must be finite and > 0.*row 3"):
            SampleDesign(weights=w)


def test_replicate_refits_that_do_not_converge_are_reported() -> None:
    df, sd = _clustered(10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = logistic_rr("y ~ x", df, FR, sample_design=as_replicate(sd, "JK1"), max_iter=1)
    messages = [str(w.message) for w in caught]
    assert any("replicate refits did not reach the tolerance" in m for m in messages)
    assert fit.sampling is not None and fit.sampling.failed > 0
