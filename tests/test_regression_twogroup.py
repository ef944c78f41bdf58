"""Two-group designs as regression outcomes (SLD, cheater detection, unrelated question with
unknown prevalence): derivatives, recovery by simulation, the intercept-only fit against the
design's own estimator, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, ndtr

from deniable import logistic_rr
from deniable.designs import (
    CheaterDetection,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    UnrelatedUnknown,
    Warner,
)
from deniable.estimation._regression_twogroup import _kind, _Model
from deniable.exceptions import DataError, ParameterError

DESIGNS = {
    "uq": (UnrelatedUnknown(0.7, 0.3), 0.4),
    "sld": (StochasticLieDetector(2 / 12, 10 / 12), 0.8),
    "cdm": (CheaterDetection(0.3, 0.7), 0.1),
    "cdm-sym": (SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1), 0.1),
}


def _sample(name: str, seed: int, n: int, beta=(-0.5, 0.8)) -> pd.DataFrame:
    """Reports simulated from the regression model: prevalence expit(b0 + b1 x), the
    nuisance parameter constant."""
    design, nu = DESIGNS[name]
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, size=n)
    g = rng.integers(1, 3, size=n)
    pi = expit(beta[0] + beta[1] * x)
    u = rng.random(n)
    carrier = (u < pi).astype(int)
    if name == "uq":
        types = design.types(carrier, unrelated=(rng.random(n) < nu).astype(int))
    elif name == "sld":
        types = design.types(carrier, honest=(rng.random(n) < nu).astype(int))
    else:  # honest carriers pi, cheaters nu, honest non-carriers the rest
        types = design.types(carrier, cheater=((u >= pi) & (u < pi + nu)).astype(int))
    reports = design.randomize(types, group=g, rng=rng)
    return pd.DataFrame({"y": reports % 2, "x": x, "grp": g})


@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
@pytest.mark.parametrize("name", list(DESIGNS))
def test_score_hessian_and_expected_information_are_exact(name: str, link: str) -> None:
    design, _ = DESIGNS[name]
    df = _sample(name, 1, 300)
    X = np.column_stack([np.ones(300), df["x"]])
    y = df["y"].to_numpy(float)
    c, M = design.linear_system()
    idx = (df["grp"].to_numpy() == 2).astype(int)
    model = _Model(X, y, c[idx], M[idx, 0], M[idx, 1], _kind(design), link)
    theta = np.array([-0.3, 0.4, -1.2])
    h = 1e-5
    E3 = np.eye(3)

    def ll(t: np.ndarray) -> float:
        return float(model.pieces(t)[0].sum())

    grad = np.array([(ll(theta + h * e) - ll(theta - h * e)) / (2 * h) for e in E3])
    _, S, H, _ = model.pieces(theta)
    np.testing.assert_allclose(S.sum(0), grad, rtol=1e-6)

    def second(a: np.ndarray, b: np.ndarray, h: float = 1e-4) -> float:
        # h = 1e-4: rounding error ~ 1e-16 |ll| / h^2 ~ 1e-6, truncation ~ h^2 ~ 1e-8
        plus = ll(theta + h * (a + b)) + ll(theta - h * (a + b))
        return (plus - ll(theta + h * (a - b)) - ll(theta - h * (a - b))) / (4 * h * h)

    num = np.array([[second(a, b) for b in E3] for a in E3])
    np.testing.assert_allclose(H, num, rtol=1e-5, atol=1e-4)
    # E[-H] over the reports, row by row: lambda (-H | y = 1) + (1 - lambda) (-H | y = 0),
    # with lambda written here from the design's linear system
    inverse = {"logit": expit, "probit": ndtr, "cloglog": lambda e: 1 - np.exp(-np.exp(e))}
    pi, nu = inverse[link](X @ theta[:2]), expit(theta[2])
    phi2 = {"uq": nu + 0 * pi, "sld": pi * nu, "cdm": 1 - pi - nu, "cdm-sym": 1 - pi - nu}[name]
    lam = c[idx] + M[idx, 0] * pi + M[idx, 1] * phi2
    expected = np.zeros((3, 3))
    for i in range(0, 300, 7):  # every 7th row: enough rows, little time
        for answer, weight in ((1.0, lam[i]), (0.0, 1 - lam[i])):
            r = slice(i, i + 1)
            one = _Model(X[r], np.array([answer]), c[idx][r], M[idx, 0][r], M[idx, 1][r],
                         _kind(design), link)  # fmt: skip
            expected -= weight * one.pieces(theta)[2]
    rows = np.arange(0, 300, 7)
    part = _Model(X[rows], y[rows], c[idx][rows], M[idx, 0][rows], M[idx, 1][rows],
                  _kind(design), link)  # fmt: skip
    np.testing.assert_allclose(part.pieces(theta)[3], expected, rtol=1e-9)


@pytest.mark.parametrize("name", list(DESIGNS))
def test_simulated_data_recover_the_coefficients_and_the_nuisance(name: str) -> None:
    # |estimate - truth| < 4 SE for 3 parameters: false alarm about 2e-4 per design under
    # the asymptotic normal distribution; seeds fixed
    _, nu = DESIGNS[name]
    df = _sample(name, {"uq": 11, "sld": 12, "cdm": 13, "cdm-sym": 14}[name], 20000)
    fit = logistic_rr("y ~ x", df, DESIGNS[name][0], group="grp")
    assert fit.converged
    z = (fit.params.to_numpy() - [-0.5, 0.8]) / fit.bse.to_numpy()
    assert np.all(np.abs(z) < 4), z
    (label, est, se, lo, hi) = fit._ancillary_rows(0.95)[0]
    assert label == fit.nuisance and abs(est - nu) < 4 * se and lo < est < hi


@pytest.mark.parametrize("name", list(DESIGNS))
def test_intercept_only_fit_is_the_designs_own_estimate(name: str) -> None:
    # without covariates the MLE of (prevalence, nuisance) is the design's moment estimate
    # when that lies inside the parameter space
    design, _ = DESIGNS[name]
    df = _sample(name, 5, 4000)
    fit = logistic_rr("y ~ 1", df, design, group="grp")
    yes = (int(df.y[df.grp == 1].sum()), int(df.y[df.grp == 2].sum()))
    n = (int((df.grp == 1).sum()), int((df.grp == 2).sum()))
    est = design.estimate(yes=yes, n=n)
    assert fit.prevalence().value == pytest.approx(est.prevalence.value, rel=1e-7)
    assert fit.prevalence().se == pytest.approx(est.prevalence.se, rel=1e-5)


def test_bad_input() -> None:
    df = _sample("uq", 3, 200)
    design = DESIGNS["uq"][0]
    with pytest.raises(ParameterError, match=r"`group` must name the column"):
        logistic_rr("y ~ x", df, design)
    with pytest.raises(ParameterError, match=r"`group` applies to a two-group design"):
        logistic_rr("y ~ x", df, Warner(0.7), group="grp")
    bad = df.assign(grp=np.where(np.arange(200) == 7, 3, df.grp))
    with pytest.raises(DataError, match=r"`group` column 'grp' must hold .* 1 or 2, got 3"):
        logistic_rr("y ~ x", bad, design, group="grp")
    with pytest.raises(DataError, match=r"no respondent in group 2"):
        logistic_rr("y ~ x", df.assign(grp=1), design, group="grp")
    with pytest.raises(ParameterError, match=r"`direct` is not available with a two-group"):
        logistic_rr("y ~ x", df.assign(d=0), design, group="grp", direct="d")


def test_command_line_group_column(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from _cli import ENV_80, one_error
    from deniable.cli import app

    df = _sample("sld", 3, 3000)
    path = tmp_path / "sld.csv"
    df.to_csv(path, index=False)
    runner = CliRunner(env=ENV_80)
    args = ["regress", "--design", "sld", "-p", "p1=2/12", "-p", "p2=10/12", "--data",
            str(path), "-f", "y ~ x"]  # fmt: skip
    res = runner.invoke(app, [*args, "--group-column", "grp", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    fit = logistic_rr("y ~ x", df, DESIGNS["sld"][0], group="grp")
    np.testing.assert_allclose([c["coef"] for c in out["coefficients"]], fit.params, rtol=1e-10)
    assert out["nuisance"] == "honesty" and out["ancillary"][0]["name"] == "honesty"
    one_error(runner.invoke(app, args), "needs two groups", "--group-column")
    one_error(runner.invoke(app, [*args, "--group-column", "grp", "--weights", "x"]),
              "not available with a two-group design")  # fmt: skip
    warner = ["regress", "--design", "warner", "-p", "p=0.7", "--data", str(path), "-f",
              "y ~ x", "--group-column", "grp"]  # fmt: skip
    one_error(runner.invoke(app, warner), "`--group-column` applies to the two-group designs")
