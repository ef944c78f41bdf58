"""Regression with randomized answers: ``logistic_rr`` and ``linear_rr``.

Checked against things computed here, independently of the code under test:

* closed forms: the intercept-only logistic fit reproduces the design's moment estimate and
  plug-in SE, its three information matrices coincide, its log-likelihood is
  ``n [l ln l + (1 - l) ln(1 - l)]``; with a direct channel (``P1 = 1, P0 = 0``) the fit is
  an ordinary logistic regression (IRLS written below) and the linear model is OLS with
  ``sigma^2 = RSS / n``, ``pi = mean(Z)`` and the textbook SEs;
* the likelihoods written out below (``rr_loglik``, ``mixture_loglik``): the fitted ``llf``
  and the analytic information matrices against their finite-difference Hessians;
* seeded simulations with stated tolerances and false-alarm rates.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from deniable.designs import (
    Categorical,
    Custom,
    ForcedResponse,
    Kuk,
    TwoCoin,
    UnrelatedQuestion,
    Warner,
)
from deniable.estimation import linear_rr, logistic_rr
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

Z975 = 1.959963984540054

# --------------------------------------------------------------------------- helpers


def expit(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


def rr_loglik(beta: Any, X: Any, y: Any, p1: Any, p0: Any) -> float:
    """The randomized-response logistic log-likelihood, written out directly."""
    lam = p0 + (p1 - p0) * expit(X @ beta)
    return float(np.sum(y * np.log(lam) + (1 - y) * np.log(1 - lam)))


def mixture_logliks(theta: Any, X: Any, y: Any, R: Any, p1: Any, p0: Any) -> Any:
    """Per respondent: the linear model with a randomized binary predictor, summed over the
    hidden Z."""
    k = X.shape[1]
    beta, gamma, sigma, pi = theta[:k], theta[k], theta[k + 1], theta[k + 2]
    mu = X @ beta
    f1 = pi * np.where(R == 1, p1, 1 - p1) * stats.norm.pdf(y, mu + gamma, sigma)
    f0 = (1 - pi) * np.where(R == 1, p0, 1 - p0) * stats.norm.pdf(y, mu, sigma)
    return np.log(f0 + f1)


def mixture_loglik(theta: Any, X: Any, y: Any, R: Any, p1: Any, p0: Any) -> float:
    return float(np.sum(mixture_logliks(theta, X, y, R, p1, p0)))


def num_scores(f: Any, x: Any, h: float = 1e-5) -> Any:
    """Per-observation gradients of the vector function ``f`` by central differences
    (step ``h * max(1, |x_j|)``): an ``n x m`` matrix."""
    x = np.asarray(x, dtype=float)
    cols = []
    for j in range(x.size):
        step = h * max(1.0, abs(x[j]))
        e = np.zeros_like(x)
        e[j] = step
        cols.append((f(x + e) - f(x - e)) / (2 * step))
    return np.column_stack(cols)


def num_hessian(f: Any, x: Any, h: float = 1e-4) -> Any:
    """Central second differences, step ``h * max(1, |x_i|)``."""
    x = np.asarray(x, dtype=float)
    m = x.size
    H = np.zeros((m, m))
    steps = h * np.maximum(1.0, np.abs(x))
    for i in range(m):
        for j in range(i, m):
            ei = np.eye(m)[i] * steps[i]
            ej = np.eye(m)[j] * steps[j]
            H[i, j] = H[j, i] = (
                f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)
            ) / (4 * steps[i] * steps[j])
    return H


def irls_logistic(X: Any, y: Any) -> tuple[Any, Any]:
    """Ordinary logistic regression by iteratively reweighted least squares; (beta, cov)."""
    beta = np.zeros(X.shape[1])
    for _ in range(100):
        p = expit(X @ beta)
        W = p * (1 - p)
        info = X.T @ (X * W[:, None])
        step = np.linalg.solve(info, X.T @ (y - p))
        beta = beta + step
        if np.max(np.abs(step)) < 1e-13:
            break
    p = expit(X @ beta)
    return beta, np.linalg.inv(X.T @ (X * (p * (1 - p))[:, None]))


def simulate_logistic(design: Any, beta: Any, n: int, seed: int, direct_share: float = 0.0) -> Any:
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = rng.integers(0, 2, size=n)
    X = np.column_stack([np.ones(n), x1, x2])
    truth = rng.random(n) < expit(X @ np.asarray(beta))
    y = design.randomize(truth, rng=rng).astype(int)
    dq = (rng.random(n) < direct_share).astype(int)
    y = np.where(dq == 1, truth.astype(int), y)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "dq": dq})


def simulate_linear(design: Any, n: int, seed: int, coef: Any, sigma: float, pi: float) -> Any:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    z = rng.random(n) < pi
    y = coef[0] + coef[1] * x + coef[2] * z + sigma * rng.normal(size=n)
    return pd.DataFrame({"y": y, "x": x, "Z": design.randomize(z, rng=rng).astype(int)}), z


DESIGNS = [
    ForcedResponse(1 / 6, 1 / 6),
    Warner(0.3),  # P1 < P0: a "yes" points away from the sensitive answer
    UnrelatedQuestion(0.7, 0.3),
    ForcedResponse(0.2, 0.0),  # epsilon = inf, P1 = 1: a "no" reveals a non-carrier
]
IDS = ["forced", "warner-0.3", "unrelated", "forced-inf"]


# --------------------------------------------------------------------------- logistic


@pytest.mark.parametrize("design", DESIGNS, ids=IDS)
def test_intercept_only_reproduces_moment_estimate_and_se(design: Any) -> None:
    rng = np.random.default_rng(11)
    truth = rng.random(3000) < 0.3
    y = design.randomize(truth, rng=rng).astype(int)
    fit = logistic_rr("y ~ 1", pd.DataFrame({"y": y}), design)
    est = design.estimate(y)
    assert 0 < est.value < 1
    prev = fit.prevalence()
    assert prev.value == pytest.approx(est.value, abs=1e-9)
    assert expit(fit.params["Intercept"]) == pytest.approx(est.value, abs=1e-9)
    # delta method: se(pi) = p(1-p) se(b0) equals the plug-in SE sqrt(l(1-l)/n)/|P1-P0|
    assert prev.se == pytest.approx(est.se, rel=1e-7)
    for se in ("observed", "expected", "opg"):  # identical for a saturated Bernoulli model
        assert fit.with_se(se).bse["Intercept"] == pytest.approx(fit.bse["Intercept"], rel=1e-7)
    lam = y.mean()
    n = y.size
    assert fit.llf == pytest.approx(
        n * (lam * math.log(lam) + (1 - lam) * math.log(1 - lam)), rel=1e-10
    )
    # logit-scale interval: expit(logit(pi) -+ z se / (pi (1 - pi)))
    eta, s = math.log(est.value / (1 - est.value)), est.se / (est.value * (1 - est.value))
    assert prev.lower == pytest.approx(expit(eta - Z975 * s), rel=1e-7)
    assert prev.upper == pytest.approx(expit(eta + Z975 * s), rel=1e-7)


def test_direct_channel_is_ordinary_logistic_regression() -> None:
    df = simulate_logistic(Custom(1.0, 0.0), [-0.5, 1.0, -0.7], 2000, seed=5)
    X = np.column_stack([np.ones(len(df)), df.x1, df.x2])
    beta, cov = irls_logistic(X, df.y.to_numpy(float))
    fit = logistic_rr("y ~ x1 + x2", df, Custom(1.0, 0.0))
    assert np.allclose(fit.params.to_numpy(), beta, atol=1e-8)
    for se in ("observed", "expected"):  # canonical link: both are X' W X
        assert np.allclose(fit.with_se(se).bse.to_numpy(), np.sqrt(np.diag(cov)), rtol=1e-7)
    # every respondent asked directly: the design no longer matters
    all_direct = logistic_rr("y ~ x1 + x2", df.assign(dq=1), Warner(0.8), direct="dq")
    assert np.allclose(all_direct.params.to_numpy(), beta, atol=1e-8)
    assert all_direct.direct_test is None
    assert any("direct group" in note for note in all_direct.notes)


@pytest.mark.parametrize("design", DESIGNS, ids=IDS)
def test_llf_and_information_match_the_written_likelihood(design: Any) -> None:
    df = simulate_logistic(design, [-0.4, 0.6, 0.3], 800, seed=2, direct_share=0.25)
    fit = logistic_rr("y ~ x1 + x2", df, design, direct="dq")
    X = np.column_stack([np.ones(len(df)), df.x1, df.x2])
    y = df.y.to_numpy(float)
    direct = df.dq.to_numpy() == 1
    p1 = np.where(direct, 1.0, design.p_yes_given_1)
    p0 = np.where(direct, 0.0, design.p_yes_given_0)
    beta = fit.params.to_numpy()
    assert fit.llf == pytest.approx(rr_loglik(beta, X, y, p1, p0), rel=1e-12)
    H = num_hessian(lambda b: rr_loglik(b, X, y, p1, p0), beta)
    cov_num = np.linalg.inv(-H)
    assert np.allclose(fit.with_se("observed").cov_params().to_numpy(), cov_num, rtol=1e-4)
    # the MLE: the gradient of the written likelihood vanishes
    g = [
        (rr_loglik(beta + e, X, y, p1, p0) - rr_loglik(beta - e, X, y, p1, p0)) / 2e-6
        for e in np.eye(3) * 1e-6
    ]
    assert np.max(np.abs(g)) < 1e-4
    # no other point nearby is better
    rng = np.random.default_rng(0)
    for _ in range(20):
        assert rr_loglik(beta + rng.normal(scale=0.01, size=3), X, y, p1, p0) < fit.llf
    # opg and expected from their definitions
    lam = p0 + (p1 - p0) * expit(X @ beta)
    dlam = (p1 - p0) * expit(X @ beta) * (1 - expit(X @ beta))
    score = (y - lam) / (lam * (1 - lam)) * dlam
    opg = np.linalg.inv(X.T @ (X * (score**2)[:, None]))
    fisher = np.linalg.inv(X.T @ (X * (dlam**2 / (lam * (1 - lam)))[:, None]))
    assert np.allclose(fit.with_se("opg").cov_params().to_numpy(), opg, rtol=1e-8)
    assert np.allclose(fit.with_se("expected").cov_params().to_numpy(), fisher, rtol=1e-8)


@pytest.mark.parametrize("design", DESIGNS[:3], ids=IDS[:3])
def test_recovers_known_coefficients(design: Any) -> None:
    # n = 6000; each coefficient within 4 SE of the truth: false alarm ~6.3e-5 per check
    truth = np.array([-1.0, 0.8, 0.5])
    df = simulate_logistic(design, truth, 6000, seed=21)
    fit = logistic_rr("y ~ x1 + x2", df, design)
    assert fit.converged
    assert np.all(np.abs(fit.params.to_numpy() - truth) < 4 * fit.bse.to_numpy())
    ci = fit.conf_int()
    assert list(ci.columns) == [0, 1]
    assert np.allclose(ci[0], fit.params - Z975 * fit.bse)
    assert np.allclose(ci[1], fit.params + Z975 * fit.bse)


def test_three_standard_errors_agree_asymptotically() -> None:
    # n = 30000: the three estimates of the same asymptotic covariance differ by O(n^-1/2)
    # relative terms; they must agree within 5% (seeded, deterministic check)
    design = ForcedResponse(1 / 6, 1 / 6)
    df = simulate_logistic(design, [-1.0, 0.8, 0.5], 30000, seed=4)
    fit = logistic_rr("y ~ x1 + x2", df, design)
    obs = fit.bse.to_numpy()
    for se in ("expected", "opg"):
        other = fit.with_se(se)
        assert other.se_type == se
        assert np.allclose(other.bse.to_numpy(), obs, rtol=0.05)
        assert not np.array_equal(other.bse.to_numpy(), obs)


def test_standard_errors_match_the_spread_of_estimates() -> None:
    # 150 fits, n = 1500: empirical SD of the slope within 25% of the mean observed SE
    # (the SD of a 150-sample SD is ~6% of it: a 4-sigma band, false alarm ~6e-5)
    design = TwoCoin()
    slopes, ses = [], []
    for seed in range(150):
        df = simulate_logistic(design, [-0.5, 0.8, 0.0], 1500, seed=1000 + seed)
        fit = logistic_rr("y ~ x1", df, design)
        slopes.append(fit.params["x1"])
        ses.append(fit.bse["x1"])
    assert np.std(slopes, ddof=1) == pytest.approx(np.mean(ses), rel=0.25)
    # and the estimates are centred on the truth: |mean - 0.8| < 4 SD / sqrt(150)
    # (false alarm ~6e-5)
    assert abs(np.mean(slopes) - 0.8) < 4 * np.std(slopes) / math.sqrt(150)


def test_lr_test_closed_form_and_size_under_null() -> None:
    design = ForcedResponse(0.2, 0.1)
    df = simulate_logistic(design, [-0.5, 0.7, 0.0], 1000, seed=9)
    full = logistic_rr("y ~ x1 + x2", df, design)
    small = logistic_rr("y ~ x1", df, design)
    lr = full.lr_test(small)
    assert lr.df == 1
    assert lr.statistic == pytest.approx(2 * (full.llf - small.llf), rel=1e-12)
    assert lr.pvalue == pytest.approx(stats.chi2.sf(lr.statistic, 1), rel=1e-12)
    assert small.lr_test(full) == lr  # order does not matter
    # size: 400 data sets under H0 (x2 has no effect), n = 400, alpha = 0.05.
    # rejections ~ Binomial(400, 0.05): mean 20, SD 4.36; 4-sigma band [3, 38]
    rejections = 0
    for seed in range(400):
        df = simulate_logistic(design, [-0.5, 0.7, 0.0], 400, seed=5000 + seed)
        a = logistic_rr("y ~ x1 + x2", df, design)
        b = logistic_rr("y ~ x1", df, design)
        rejections += a.lr_test(b).pvalue < 0.05
    assert 3 <= rejections <= 38


@pytest.mark.slow
def test_lr_test_size_large() -> None:
    # 3000 data sets: rejections ~ Binomial(3000, 0.05), mean 150, SD 11.9; band [102, 198]
    design = TwoCoin()
    rejections = 0
    for seed in range(3000):
        df = simulate_logistic(design, [-0.5, 0.7, 0.0], 500, seed=90000 + seed)
        a = logistic_rr("y ~ x1 + x2", df, design)
        b = logistic_rr("y ~ x1", df, design)
        rejections += a.lr_test(b).pvalue < 0.05
    assert 102 <= rejections <= 198


def test_lr_test_rejects_models_that_are_not_nested() -> None:
    design = TwoCoin()
    df = simulate_logistic(design, [-0.5, 0.7, 0.3], 600, seed=1)
    a = logistic_rr("y ~ x1", df, design)
    b = logistic_rr("y ~ x2", df, design)
    c = logistic_rr("y ~ x1 + x2", df, design)
    with pytest.raises(ParameterError, match="different number of parameters"):
        a.lr_test(b)
    with pytest.raises(ParameterError, match="not nested"):
        logistic_rr("y ~ 0 + x2", df, design).lr_test(a)
    with pytest.raises(ParameterError, match="same respondents"):
        c.lr_test(logistic_rr("y ~ x1", df.iloc[:500], design))
    with pytest.raises(ParameterError, match="same respondents"):
        c.lr_test(logistic_rr("y ~ x1", df, Warner(0.8)))
    with pytest.raises(ParameterTypeError, match="RegressionResult"):
        c.lr_test("y ~ x1")  # type: ignore[arg-type]


def test_direct_group_test_detects_evasion_and_keeps_its_size() -> None:
    design = ForcedResponse(1 / 6, 1 / 6)
    n = 4000
    # honest answers in both groups: the LR test of "no change" must not reject (at 1e-4,
    # its false-alarm rate)
    df = simulate_logistic(design, [-0.8, 0.6, 0.4], n, seed=33, direct_share=0.4)
    fit = logistic_rr("y ~ x1 + x2", df, design, direct="dq")
    t = fit.direct_test
    assert t is not None and t.n_direct == int(df.dq.sum()) and t.n_direct + t.n_randomized == n
    assert t.lr.pvalue > 1e-4
    # half of the carriers asked directly deny: the logit shift is negative and detected
    rng = np.random.default_rng(34)
    evasive = df.copy()
    deny = (evasive.dq == 1) & (evasive.y == 1) & (rng.random(n) < 0.5)
    evasive.loc[deny, "y"] = 0
    fit2 = logistic_rr("y ~ x1 + x2", evasive, design, direct="dq")
    t2 = fit2.direct_test
    assert t2 is not None and t2.delta < 0 and t2.lr.pvalue < 1e-6
    # the test equals an LR test between the formulas with and without the indicator
    big = logistic_rr("y ~ x1 + x2 + dq", evasive, design, direct="dq")
    assert big.direct_test is not None
    assert big.direct_test.lr.statistic == pytest.approx(t2.lr.statistic, rel=1e-6)
    assert big.params["dq"] == pytest.approx(t2.delta, abs=1e-6)
    assert big.lr_test(fit2).statistic == pytest.approx(t2.lr.statistic, rel=1e-6)
    assert t2.se == pytest.approx(big.bse["dq"], rel=1e-6)
    d = fit2.to_dict()
    assert d["direct"] == "dq" and d["direct_test"]["pvalue"] == t2.lr.pvalue
    assert "Direct questioning" in fit2.summary()


def test_predict_and_prevalence() -> None:
    design = TwoCoin()
    df = simulate_logistic(design, [-0.5, 0.8, 0.4], 3000, seed=8)
    fit = logistic_rr("y ~ x1 + x2", df, design)
    new = pd.DataFrame({"x1": [0.0, 1.0], "x2": [0, 1]})
    pred = fit.predict(new)
    X = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    eta = X @ fit.params.to_numpy()
    V = fit.cov_params().to_numpy()
    se_eta = np.sqrt(np.einsum("ij,jk,ik->i", X, V, X))
    assert np.allclose(pred["prevalence"], expit(eta))
    assert np.allclose(pred["lower"], expit(eta - Z975 * se_eta))
    assert np.allclose(pred["upper"], expit(eta + Z975 * se_eta))
    assert np.allclose(pred["se"], expit(eta) * (1 - expit(eta)) * se_eta)
    inside = fit.predict()
    assert len(inside) == len(df) and inside.index.equals(df.index)
    prev = fit.prevalence()
    assert prev.value == pytest.approx(float(inside["prevalence"].mean()), rel=1e-12)
    assert prev.lower < prev.value < prev.upper
    # over other rows: mean of their predictions; SE by the delta method written out here
    other = fit.prevalence(0.9, data=new)
    assert other.value == pytest.approx(float(pred["prevalence"].mean()), rel=1e-12)
    p = expit(eta)
    g = (X * (p * (1 - p))[:, None]).mean(axis=0)
    assert other.se == pytest.approx(math.sqrt(g @ V @ g), rel=1e-10)
    assert other.level == 0.9
    with pytest.raises(DataError, match="prediction"):
        fit.predict(pd.DataFrame({"x1": [0.0]}))


@pytest.mark.slow
def test_predicted_prevalence_interval_coverage() -> None:
    # 400 fits: coverage of the 95% interval for the mean prevalence ~ Binomial(400, 0.95),
    # SD 4.4 (1.1%); accept [0.90, 0.99] (beyond 4 SD: false alarm ~1e-4)
    design = ForcedResponse(1 / 6, 1 / 6)
    beta = np.array([-1.0, 0.8, 0.5])
    hits = 0
    for seed in range(400):
        df = simulate_logistic(design, beta, 1000, seed=7000 + seed)
        fit = logistic_rr("y ~ x1 + x2", df, design)
        X = np.column_stack([np.ones(len(df)), df.x1, df.x2])
        target = float(expit(X @ beta).mean())
        prev = fit.prevalence()
        hits += prev.lower <= target <= prev.upper
    assert 0.90 <= hits / 400 <= 0.99


def test_result_api_summary_and_json() -> None:
    design = UnrelatedQuestion(0.5, 0.0)  # epsilon = inf: never printed as a number
    df = simulate_logistic(design, [-0.3, 0.5, 0.2], 1500, seed=3)
    df.loc[[0, 5], "x1"] = np.nan
    fit = logistic_rr("y ~ x1 + C(x2)", df, design, se="opg")
    assert fit.nobs == 1498 and fit.n_dropped == 2
    assert list(fit.params.index) == ["Intercept", "x1", "C(x2)[T.1]"]
    assert fit.se_type == "opg"
    assert np.allclose(fit.tvalues, fit.params / fit.bse)
    assert np.allclose(fit.pvalues, 2 * stats.norm.sf(np.abs(fit.params / fit.bse)))
    assert fit.aic == pytest.approx(2 * 3 - 2 * fit.llf, rel=1e-12)
    assert fit.bic == pytest.approx(3 * math.log(1498) - 2 * fit.llf, rel=1e-12)
    text = fit.summary()
    for needle in (
        "coef",
        "std err",
        "P>|z|",
        "[0.025",
        "0.975]",
        "C(x2)[T.1]",
        "outer product",
        "Epsilon:       inf",
        "2 rows with missing values",
    ):
        assert needle in text
    assert max(len(line) for line in text.splitlines()) <= 80
    d = json.loads(json.dumps(fit.to_dict(), allow_nan=False))
    assert d["epsilon"] == "inf" and d["se_type"] == "opg" and d["nobs"] == 1498
    assert [c["term"] for c in d["coefficients"]] == list(fit.params.index)
    assert d["coefficients"][1]["se"] == pytest.approx(fit.bse["x1"], rel=1e-12)
    with pytest.raises(ParameterError, match="`se` must be one of"):
        fit.with_se("sandwich")


def header_value(text: str, label: str) -> str:
    """The value printed right of ``label`` in a summary header."""
    line = next(x for x in text.splitlines() if label in x)
    return line.split(label, 1)[1].split()[0]


def test_degrees_of_freedom_follow_statsmodels() -> None:
    # statsmodels: df_model = regressors excluding the constant, df_resid = nobs - all
    # mean-model coefficients (constant included); counted by hand for each formula
    design = ForcedResponse(1 / 6, 1 / 6)
    df = simulate_logistic(design, [-0.3, 0.5, 0.2], 800, seed=5)
    df.loc[[3], "x1"] = np.nan  # dropped where x1 is used: nobs 799, else 800
    cases = [
        ("y ~ x1 + C(x2)", 799, 2, 3),  # Intercept, x1, C(x2)[T.1]: 3 coefficients, 1 constant
        ("y ~ 1", 800, 0, 1),  # the constant alone
        ("y ~ 0 + x1", 799, 1, 1),  # no constant
        ("y ~ 0 + C(x2)", 800, 1, 2),  # both levels: an implied constant, as statsmodels counts
    ]
    for formula, nobs, df_model, n_coef in cases:
        fit = logistic_rr(formula, df, design)
        assert fit.nobs == nobs
        assert (fit.df_model, fit.df_resid) == (df_model, nobs - n_coef), formula
        assert fit.k_params == n_coef
        text = fit.summary()
        assert header_value(text, "Df model:") == str(df_model), formula
        assert header_value(text, "Df residuals:") == str(nobs - n_coef), formula
        assert header_value(text, "Parameters:") == str(n_coef), formula
        d = fit.to_dict()
        assert (d["df_model"], d["df_resid"], d["k_params"]) == (df_model, nobs - n_coef, n_coef)
    # linear: Intercept, x and the randomized Z are mean coefficients; sigma and pi are not
    ldf, _ = simulate_linear(Warner(0.8), 400, seed=6, coef=(1.0, 0.5, 1.0), sigma=1.0, pi=0.3)
    lin = linear_rr("y ~ x", ldf, Warner(0.8), predictor="Z")
    assert (lin.df_model, lin.df_resid, lin.k_params) == (2, 400 - 3, 5)
    text = lin.summary()
    assert header_value(text, "Df model:") == "2"
    assert header_value(text, "Df residuals:") == "397"
    assert header_value(text, "Parameters:") == "5"
    # AIC still counts every parameter
    assert lin.aic == pytest.approx(2 * 5 - 2 * lin.llf, rel=1e-12)


def test_boundary_mle_is_flagged() -> None:
    # fewer yes reports than P(yes | 0) implies: no finite MLE of the intercept
    design = ForcedResponse(0.3, 0.1)
    df = pd.DataFrame({"y": [1] * 20 + [0] * 80})
    with pytest.warns(RuntimeWarning, match="boundary"):
        fit = logistic_rr("y ~ 1", df, design)
    assert fit.prevalence().value < 1e-9
    assert any("boundary" in note for note in fit.notes)


# --------------------------------------------------------------------------- linear


def test_linear_with_direct_channel_is_ols() -> None:
    rng = np.random.default_rng(12)
    n = 1200
    x = rng.normal(size=n)
    z = (rng.random(n) < 0.35).astype(int)
    y = 0.5 + 1.5 * z - 0.8 * x + 1.3 * rng.normal(size=n)
    df = pd.DataFrame({"y": y, "x": x, "Z": z})
    fit = linear_rr("y ~ Z + x", df, Custom(1.0, 0.0), predictor="Z")
    X = np.column_stack([np.ones(n), x, z])
    b = np.linalg.lstsq(X, y, rcond=None)[0]
    s2 = float(np.mean((y - X @ b) ** 2))
    assert list(fit.params.index) == ["Intercept", "x", "Z"]
    assert np.allclose(fit.params.to_numpy(), b, atol=1e-8)
    assert fit.sigma == pytest.approx(math.sqrt(s2), rel=1e-8)
    pi = z.mean()
    assert fit.prevalence().value == pytest.approx(pi, abs=1e-9)
    assert np.allclose(fit.bse.to_numpy(), np.sqrt(np.diag(s2 * np.linalg.inv(X.T @ X))))
    assert fit.prevalence().se == pytest.approx(math.sqrt(pi * (1 - pi) / n), rel=1e-9)
    anc = {row[0]: row for row in fit._ancillary_rows(0.95)}
    assert anc["sigma"][2] == pytest.approx(math.sqrt(s2 / (2 * n)), rel=1e-9)
    # expected information for known Z: E over Z ~ Bernoulli(pi) of x~ x~' / sigma^2
    Xe = np.column_stack([np.ones(n), x])
    info = np.zeros((3, 3))
    info[:2, :2] = Xe.T @ Xe
    info[:2, 2] = info[2, :2] = pi * Xe.sum(axis=0)
    info[2, 2] = pi * n
    cov = np.linalg.inv(info / s2)
    assert np.allclose(fit.with_se("expected").bse.to_numpy(), np.sqrt(np.diag(cov)), rtol=1e-5)


def test_linear_llf_and_information_match_the_written_likelihood() -> None:
    design = Warner(0.8)
    df, _ = simulate_linear(design, 700, seed=4, coef=(1.0, 0.5, 1.5), sigma=1.0, pi=0.4)
    fit = linear_rr("y ~ x", df, design, predictor="Z")
    X = np.column_stack([np.ones(len(df)), df.x])
    y, R = df.y.to_numpy(), df.Z.to_numpy()
    p1, p0 = np.full(len(df), 0.8), np.full(len(df), 0.2)
    theta = fit.theta
    assert theta.size == 5
    assert fit.llf == pytest.approx(mixture_loglik(theta, X, y, R, p1, p0), rel=1e-12)
    H = num_hessian(lambda t: mixture_loglik(t, X, y, R, p1, p0), theta, h=1e-4)
    assert np.allclose(fit.with_se("observed").cov, np.linalg.inv(-H), rtol=1e-4, atol=1e-9)
    rng = np.random.default_rng(1)
    for _ in range(20):
        other = theta + rng.normal(scale=0.01, size=5)
        assert mixture_loglik(other, X, y, R, p1, p0) < fit.llf


@pytest.mark.parametrize("direct_share", [0.0, 0.3], ids=["randomized", "with-direct"])
def test_linear_opg_is_the_outer_product_of_numerical_scores(direct_share: float) -> None:
    # OPG covariance (sum_i s_i s_i')^-1 with s_i the finite-difference gradient of
    # respondent i's log-likelihood (written above, independently of the code) at the MLE;
    # central differences are accurate to ~1e-9 here, so the tolerance is tight
    design = Warner(0.8)
    df, z = simulate_linear(design, 800, seed=21, coef=(1.0, 0.5, 1.5), sigma=1.2, pi=0.35)
    rng = np.random.default_rng(22)
    direct = (rng.random(len(df)) < direct_share).astype(int)
    df = df.assign(D=direct, Z=np.where(direct == 1, z.astype(int), df.Z))
    fit = linear_rr("y ~ x", df, design, predictor="Z", direct="D" if direct_share else None)
    X = np.column_stack([np.ones(len(df)), df.x])
    y, R = df.y.to_numpy(), df.Z.to_numpy()
    p1 = np.where(direct == 1, 1.0, 0.8)
    p0 = np.where(direct == 1, 0.0, 0.2)
    S = num_scores(lambda t: mixture_logliks(t, X, y, R, p1, p0), fit.theta)
    assert np.abs(S.sum(axis=0)).max() < 1e-4  # the MLE: the scores sum to ~0
    opg = np.linalg.inv(S.T @ S)
    got = fit.with_se("opg")
    assert np.allclose(got.cov, opg, rtol=1e-6, atol=0)
    assert np.allclose(got.bse.to_numpy(), np.sqrt(np.diag(opg))[:3], rtol=1e-6)
    # and it is not the observed or expected covariance (the check can tell them apart)
    assert not np.allclose(fit.with_se("observed").cov, opg, rtol=1e-3)


def test_linear_recovers_coefficients_sigma_and_prevalence() -> None:
    # n = 5000, each parameter within 4 SE of the truth: false alarm ~6.3e-5 per check
    design = ForcedResponse(0.15, 0.15)
    df, _ = simulate_linear(design, 5000, seed=17, coef=(2.0, -0.5, 1.0), sigma=1.5, pi=0.25)
    fit = linear_rr("y ~ x", df, design, predictor="Z")
    assert fit.converged
    truth = np.array([2.0, -0.5, 1.0])
    assert np.all(np.abs(fit.params.to_numpy() - truth) < 4 * fit.bse.to_numpy())
    rows = {r[0]: r for r in fit._ancillary_rows(0.95)}
    assert abs(rows["sigma"][1] - 1.5) < 4 * rows["sigma"][2]
    prev = fit.prevalence()
    assert abs(prev.value - 0.25) < 4 * prev.se
    assert prev.lower < prev.value < prev.upper
    # the three SEs agree within 10% at this n (seeded)
    for se in ("expected", "opg"):
        assert np.allclose(fit.with_se(se).bse.to_numpy(), fit.bse.to_numpy(), rtol=0.10)
    text = fit.summary()
    assert "sigma" in text and "P(Z=1)" in text
    d = json.loads(json.dumps(fit.to_dict(), allow_nan=False))
    assert d["predictor"] == "Z" and d["prevalence"]["estimate"] == pytest.approx(
        prev.value, rel=1e-12
    )
    assert [a["name"] for a in d["ancillary"]] == ["sigma", "P(Z=1)"]
    # nested linear models
    small = linear_rr("y ~ 1", df, design, predictor="Z")
    lr = fit.lr_test(small)
    assert lr.df == 1 and lr.statistic == pytest.approx(2 * (fit.llf - small.llf), rel=1e-12)


@pytest.mark.slow
def test_linear_standard_errors_match_the_spread() -> None:
    # 200 fits: empirical SD of gamma-hat within 20% of the mean observed SE (the SD of a
    # 200-sample SD is 1/sqrt(398) = 5% of it: a 4-sigma band, false alarm ~6e-5)
    design = Warner(0.8)
    est, ses = [], []
    for seed in range(200):
        df, _ = simulate_linear(design, 1500, 300 + seed, (1.0, 0.5, 1.0), 1.0, 0.3)
        fit = linear_rr("y ~ x", df, design, predictor="Z")
        est.append(fit.params["Z"])
        ses.append(fit.bse["Z"])
    assert np.std(est, ddof=1) == pytest.approx(np.mean(ses), rel=0.2)


# --------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def frame() -> Any:
    return simulate_logistic(TwoCoin(), [-0.5, 0.5, 0.5], 300, seed=1)


def test_bad_input_logistic(frame: Any) -> None:
    d = TwoCoin()
    with pytest.raises(DataError, match="`formula` names column 'x3', which is not in the data"):
        logistic_rr("y ~ x1 + x3", frame, d)
    with pytest.raises(DataError, match="the outcome 'x1' must hold 0/1 values, got"):
        logistic_rr("x1 ~ x2", frame, d)
    with pytest.raises(DataError, match="the outcome 'y' must hold 0/1 values, got 2"):
        logistic_rr("y ~ x1", frame.assign(y=frame.y * 2), d)
    with pytest.raises(DataError, match="one numeric column"):
        logistic_rr("y ~ x1", frame.assign(y=np.where(frame.y == 1, "yes", "no")), d)
    with pytest.raises(ParameterError, match="`se` must be one of 'observed', 'expected', 'opg'"):
        logistic_rr("y ~ x1", frame, d, se="robust")
    with pytest.raises(ParameterError, match="outcome left of '~'"):
        logistic_rr("x1 + x2", frame, d)
    with pytest.raises(ParameterError, match="cannot be used"):
        logistic_rr("y ~ x1 +", frame, d)
    with pytest.raises(ParameterTypeError, match="`formula` must be a string"):
        logistic_rr(3, frame, d)  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`data` must be a pandas DataFrame"):
        logistic_rr("y ~ x1", [1, 2, 3], d)
    with pytest.raises(ParameterTypeError, match="one-group binary design"):
        logistic_rr("y ~ x1", frame, Categorical(k=3, p_truthful=0.5))  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="3 report values"):
        logistic_rr("y ~ x1", frame, Kuk(0.7, 0.3, draws=2))
    with pytest.raises(DataError, match="`direct` names column 'nope'"):
        logistic_rr("y ~ x1", frame, d, direct="nope")
    with pytest.raises(DataError, match="the direct-questioning column 'x1' must hold 0/1"):
        logistic_rr("y ~ x2", frame, d, direct="x1")
    text = frame.assign(dq=np.where(frame.dq == 1, "yes", "no"))
    with pytest.raises(DataError, match="column 'dq' must hold 0/1 values, got 'no'"):
        logistic_rr("y ~ x1", text, d, direct="dq")
    as_objects = logistic_rr("y ~ x1", frame.assign(dq=frame.dq.astype(object)), d, direct="dq")
    assert as_objects.llf == logistic_rr("y ~ x1", frame, d, direct="dq").llf
    with pytest.raises(DataError, match="collinear: 'x3'"):
        logistic_rr("y ~ x1 + x3", frame.assign(x3=2 * frame.x1), d)
    with pytest.raises(DataError, match="more rows than coefficients"):
        logistic_rr("y ~ x1 + x2", frame.iloc[:3], d)
    with pytest.raises(ParameterError, match="`tol` must be in"):
        logistic_rr("y ~ x1", frame, d, tol=0)
    # a mapping of columns works like a DataFrame
    as_dict = {c: frame[c].to_numpy() for c in frame.columns}
    assert logistic_rr("y ~ x1", as_dict, d).llf == logistic_rr("y ~ x1", frame, d).llf


def test_missing_inputs_are_dropped_but_transform_nans_raise(frame: Any) -> None:
    d = TwoCoin()
    df = frame.assign(s=np.exp(frame.x1))  # s > 0: np.log(s) is x1 again
    base = logistic_rr("y ~ np.log(s)", df, d)
    assert base.n_dropped == 0 and base.nobs == 300
    # a missing input (NaN or None) is dropped and counted
    gaps = df.copy()
    gaps.loc[[2, 7], "s"] = None  # stored as NaN in a float column
    gaps.loc[[11], "s"] = np.nan
    fit = logistic_rr("y ~ np.log(s)", gaps, d)
    assert (fit.nobs, fit.n_dropped) == (297, 3)
    assert "3 rows with missing values were dropped" in fit.summary()
    # present inputs the transform cannot take: 3 negative and 1 zero -> NaN and -inf; one
    # missing input beside them is not counted among them
    bad = df.copy()
    bad.loc[[0, 4, 9], "s"] = -1.0
    bad.loc[[5], "s"] = 0.0
    bad.loc[[6], "s"] = np.nan
    with pytest.raises(DataError) as err:
        logistic_rr("y ~ x2 + np.log(s)", bad, d)
    msg = str(err.value)
    assert msg.startswith("the covariate 'np.log(s)' of the formula is NaN or infinite in 4 rows")
    assert "whose input columns are not missing" in msg and "log of a value <= 0" in msg
    with pytest.raises(DataError, match=r"'np.sqrt\(s\)' of the formula is NaN in 3 rows"):
        logistic_rr("y ~ np.sqrt(s)", bad, d)
    # a transform of the outcome of the linear model, and an infinite input value
    lin = df.assign(w=np.exp(frame.x1) + 1, Z=frame.dq)
    lin.loc[[1], "w"] = -2.0
    with pytest.raises(
        DataError, match=r"the outcome 'np.log\(w\)' of the formula is NaN in 1 row "
    ):
        linear_rr("np.log(w) ~ x1", lin, Warner(0.8), predictor="Z")
    with pytest.raises(DataError, match="the covariate 'x1' of the formula is infinite in 2 rows"):
        logistic_rr("y ~ x1", frame.assign(x1=frame.x1.where(frame.index > 1, np.inf)), d)
    # predictions on new data: a missing covariate and a transform's NaN are told apart
    with pytest.raises(DataError, match="missing values in the covariates: 1 rows"):
        base.predict(pd.DataFrame({"s": [1.0, np.nan]}))
    with pytest.raises(DataError, match=r"'np.log\(s\)' of the formula is NaN in 1 row "):
        base.predict(pd.DataFrame({"s": [1.0, -1.0]}))
    with pytest.raises(DataError, match=r"'np.log\(s\)' of the formula is infinite in 1 row "):
        base.predict(pd.DataFrame({"s": [0.0, 2.0]}))
    assert base.predict(pd.DataFrame({"s": [1.0, 2.0]})).shape == (2, 4)


def test_bad_input_linear() -> None:
    design = Warner(0.8)
    df, _ = simulate_linear(design, 300, seed=2, coef=(1.0, 0.5, 1.0), sigma=1.0, pi=0.3)
    with pytest.raises(DataError, match="`predictor` names column 'W'"):
        linear_rr("y ~ x", df, design, predictor="W")
    with pytest.raises(DataError, match="the randomized predictor 'x' must hold 0/1"):
        linear_rr("y ~ 1", df, design, predictor="x")
    with pytest.raises(ParameterError, match="only as a plain term"):
        linear_rr("y ~ x + x:Z", df, design, predictor="Z")
    with pytest.raises(ParameterError, match="is the outcome"):
        linear_rr("Z ~ x", df, design, predictor="Z")
    with pytest.raises(ParameterError, match="different columns"):
        linear_rr("y ~ x", df, design, predictor="Z", direct="Z")
    with pytest.raises(DataError, match="must be numeric"):
        linear_rr("y ~ x", df.assign(y="a"), design, predictor="Z")
    with pytest.raises(ParameterError, match="`se` must be one of"):
        linear_rr("y ~ x", df, design, predictor="Z", se="hc0")
    with pytest.raises(ParameterTypeError, match="`predictor` must be a column name"):
        linear_rr("y ~ x", df, design, predictor=1)  # type: ignore[arg-type]
    # the predictor in the formula or not: the same model
    a = linear_rr("y ~ x", df, design, predictor="Z")
    b = linear_rr("y ~ Z + x", df, design, predictor="Z")
    assert np.allclose(a.theta, b.theta) and list(a.params.index) == list(b.params.index)


def test_summary_shows_undefined_cells_as_n_a(monkeypatch: pytest.MonkeyPatch) -> None:
    # a degenerate fit has no standard error: z, P>|z| and the interval are undefined and
    # shown as "n/a" beside it, never as "nan"
    design = Warner(0.8)
    df = simulate_logistic(design, [-0.3, 0.5, 0.2], 800, seed=5)
    fit = logistic_rr("y ~ x1", df, design)
    nan_se = np.full(len(fit.terms), np.nan)
    monkeypatch.setattr(type(fit), "_se", lambda self: nan_se)
    text = fit.summary()
    assert "nan" not in text
    row = next(line for line in text.splitlines() if line.startswith("x1"))
    assert row.split()[2:] == ["n/a"] * 5
