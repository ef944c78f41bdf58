"""Mixed-effects regression with a randomized outcome (``mixed_logistic_rr``).

Statistical checks use fixed seeds; each states its false-alarm rate (the chance that a
correct implementation fails it on a fresh seed).
"""

from __future__ import annotations

import json
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, special, stats

from deniable import Categorical, Custom, ForcedResponse, Warner
from deniable.estimation import (
    MixedRRResult,
    logistic_rr,
    mixed_logistic_rr,
)
from deniable.estimation._mixed_lik import MarginalLikelihood
from deniable.estimation._regression_logit import logit_loglik
from deniable.exceptions import ConvergenceWarning, DataError, ParameterError, ParameterTypeError

FR = ForcedResponse(1 / 6, 1 / 6)


def _simulate(
    seed: int,
    *,
    groups: int,
    per_group: int,
    beta: tuple[float, float] = (-1.0, 0.5),
    sd: float = 0.8,
    design: object = FR,
    link: str = "logit",
    slope_sd: float = 0.0,
) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = groups * per_group
    school = np.repeat(np.arange(groups), per_group)
    x = rng.normal(size=n)
    b = rng.normal(0, sd, groups)
    s = rng.normal(0, slope_sd, groups) if slope_sd else np.zeros(groups)
    eta = beta[0] + beta[1] * x + b[school] + s[school] * x
    p = {
        "logit": special.expit,
        "probit": special.ndtr,
        "cloglog": lambda e: -np.expm1(-np.exp(e)),
    }[link](eta)
    truth = rng.random(n) < p
    y = design.randomize(truth, rng=rng)  # type: ignore[attr-defined]
    return pd.DataFrame({"y": y, "x": x, "school": school}), b


def _fit(*args: object, **kwargs: object) -> MixedRRResult:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no convergence warning expected
        return mixed_logistic_rr(*args, **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the likelihood itself


def _brute_loglik(df: pd.DataFrame, beta: np.ndarray, sd: float, p1: float, p0: float) -> float:
    """ln L by adaptive numerical integration (scipy's quad) of each group's likelihood."""
    total = 0.0
    for _, g in df.groupby("school"):
        eta0 = beta[0] + beta[1] * g["x"].to_numpy()
        y = g["y"].to_numpy()

        def f(b: float, eta0: np.ndarray = eta0, y: np.ndarray = y) -> float:
            pr = special.expit(eta0 + sd * b)
            lam = p1 * pr + p0 * (1 - pr)
            return float(np.exp(np.sum(np.where(y == 1, np.log(lam), np.log1p(-lam))))) * float(
                stats.norm.pdf(b)
            )

        val, _ = integrate.quad(f, -12, 12, epsabs=0, epsrel=1e-12, limit=200)
        total += math.log(val)
    return total


def _lik(df: pd.DataFrame, p1: float, p0: float, n_agq: int) -> MarginalLikelihood:
    n = len(df)
    X = np.column_stack([np.ones(n), df["x"].to_numpy()])
    g = df["school"].to_numpy().astype(np.intp)
    return MarginalLikelihood(
        X,
        np.ones((n, 1)),
        g,
        int(g.max()) + 1,
        df["y"].to_numpy().astype(float),
        np.full(n, p1),
        np.full(n, p0),
        "logit",
        n_agq,
    )


def test_aghq_with_many_nodes_is_the_integral() -> None:
    # small groups (6 rows): AGHQ with 30 nodes equals numerical integration to 1e-8,
    # Laplace is only an approximation (a visible difference) - deterministic, no alarm rate
    df, _ = _simulate(1, groups=8, per_group=6)
    beta, sd = np.array([-0.7, 0.4]), 1.3
    ref = _brute_loglik(df, beta, sd, FR.p_yes_given_1, FR.p_yes_given_0)
    agq = _lik(df, FR.p_yes_given_1, FR.p_yes_given_0, 30).loglik(beta, np.array([[sd]]))
    lap = _lik(df, FR.p_yes_given_1, FR.p_yes_given_0, 1).loglik(beta, np.array([[sd]]))
    assert agq == pytest.approx(ref, abs=1e-8)
    assert abs(lap - ref) > 1e-4


def test_zero_variance_likelihood_is_the_fixed_effects_likelihood() -> None:
    df, _ = _simulate(2, groups=10, per_group=30)
    beta = np.array([-0.3, 0.9])
    X = np.column_stack([np.ones(len(df)), df["x"].to_numpy()])
    y = df["y"].to_numpy().astype(float)
    n = len(df)
    ref = logit_loglik(X, y, np.full(n, 5 / 6), np.full(n, 1 / 6), beta)
    for n_agq in (1, 9):
        got = _lik(df, 5 / 6, 1 / 6, n_agq).loglik(beta, np.zeros((1, 1)))
        assert got == pytest.approx(ref, abs=1e-9)


def _grid_loglik(df: pd.DataFrame, beta: np.ndarray, sd: float) -> float:
    """ln L of a logistic GLMM (no randomization) by the trapezoid rule on a fine grid of
    the random intercept (4001 points on [-10, 10] standard deviations)."""
    grid = np.linspace(-10, 10, 4001)
    logw = stats.norm.logpdf(grid) + math.log(grid[1] - grid[0])
    total = 0.0
    for _, g in df.groupby("school"):
        eta = (beta[0] + beta[1] * g["x"].to_numpy())[:, None] + sd * grid[None, :]
        y = g["y"].to_numpy()[:, None]
        ll = np.where(y == 1, -np.logaddexp(0, -eta), -np.logaddexp(0, eta)).sum(axis=0)
        total += float(special.logsumexp(ll + logw))
    return total


def test_no_randomization_matches_brute_force_glmm() -> None:
    # p = 1 (ForcedResponse(0, 0): the report is the answer): an ordinary random-intercept
    # logistic GLMM.  The ML estimate by Nelder-Mead on the grid-integrated likelihood is the
    # reference; AGHQ with 25 nodes must find the same maximum.  Deterministic.
    design = ForcedResponse(0, 0)
    df, _ = _simulate(3, groups=12, per_group=10, design=design, beta=(-0.5, 0.8), sd=1.0)
    beta, sd = np.array([-0.2, 0.5]), 0.9
    assert _grid_loglik(df, beta, sd) == pytest.approx(_brute_loglik(df, beta, sd, 1.0, 0.0))

    def negll(t: np.ndarray) -> float:
        return -_grid_loglik(df, t[:2], math.exp(t[2]))

    ref = optimize.minimize(
        negll, np.array([-0.5, 0.8, 0.0]), method="Nelder-Mead",
        options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 4000},
    )  # fmt: skip
    fit = _fit("y ~ x", df, design, random="(1 | school)", method="agq", n_agq=25)
    assert fit.params.to_numpy() == pytest.approx(ref.x[:2], abs=2e-4)
    assert float(fit.sd[0]) == pytest.approx(math.exp(ref.x[2]), abs=2e-4)
    assert fit.llf == pytest.approx(-ref.fun, abs=1e-6)


# ---------------------------------------------------------------- statistical recovery


def test_recovers_fixed_effects_and_variance() -> None:
    # 60 schools x 150 pupils, forced response.  Each check is a 4-SE two-sided band
    # (normal approximation): false-alarm rate about 6e-5 per check, 2e-4 for the three.
    df, b = _simulate(11, groups=60, per_group=150)
    fit = _fit("y ~ x", df, FR, random="(1 | school)")
    assert fit.converged
    for term, truth in (("Intercept", -1.0), ("x", 0.5)):
        assert abs(fit.params[term] - truth) < 4 * fit.bse[term]
    vc = fit.variance_components()[0]
    se_log = vc.se / vc.estimate
    assert abs(math.log(vc.estimate) - math.log(0.8)) < 4 * se_log
    assert vc.lower < vc.estimate < vc.upper
    # the conditional modes follow the true school effects (correlation > 0.7 with 150
    # pupils a school: its expected value is about 0.9; false alarm well below 1e-4)
    modes = fit.random_effects()["Intercept"].to_numpy()
    assert np.corrcoef(modes, b)[0, 1] > 0.7
    assert fit.lr_random is not None and fit.lr_random.pvalue < 1e-6


@pytest.mark.parametrize("link", ["probit", "cloglog"])
def test_other_links_recover_their_coefficients(link: str) -> None:
    # 4-SE bands as above: false-alarm rate about 1e-4 per link
    df, _ = _simulate(21, groups=50, per_group=120, link=link, beta=(-0.6, 0.4), sd=0.5)
    fit = _fit("y ~ x", df, Warner(0.8), random="(1 | school)", link=link)
    for term, truth in (("Intercept", -0.6), ("x", 0.4)):
        assert abs(fit.params[term] - truth) < 4 * fit.bse[term]
    assert fit.model == f"mixed-{link}-rr"


def test_laplace_and_aghq_agree_for_large_groups() -> None:
    # 400 rows a group: the Laplace error is O(1/n_j); both estimates agree to a small
    # fraction of their SE.  Deterministic given the seed.
    df, _ = _simulate(31, groups=20, per_group=400)
    lap = _fit("y ~ x", df, FR, random="(1 | school)")
    agq = _fit("y ~ x", df, FR, random="(1 | school)", method="agq", n_agq=12)
    diff = np.abs(lap.params - agq.params) / agq.bse
    assert float(diff.max()) < 0.05
    assert abs(float(lap.sd[0] - agq.sd[0])) < 0.05 * agq.variance_components()[0].se
    assert agq.method == "agq" and agq.n_agq == 12


def test_random_slope_recovered() -> None:
    # intercepts (sd 0.8) and slopes (sd 0.5) by school; 4-SE bands: false alarm ~2e-4
    df, _ = _simulate(41, groups=80, per_group=150, slope_sd=0.5, design=Warner(0.85))
    fit = _fit("y ~ x", df, Warner(0.85), random="(1 + x | school)")
    assert fit.random_names == ("Intercept", "x")
    comps = {c.name: c for c in fit.variance_components()}
    for name, truth in (("sd(Intercept|school)", 0.8), ("sd(x|school)", 0.5)):
        c = comps[name]
        assert abs(math.log(c.estimate / truth)) < 4 * c.se / c.estimate
    assert abs(fit.params["x"] - 0.5) < 4 * fit.bse["x"]
    assert fit.k_params == 5
    assert fit.random_effects().shape == (80, 4)


def test_per_item_designs_in_long_format() -> None:
    # two items per respondent, each with its own design; the respondent is the group.
    # 4-SE bands: false alarm ~1e-4.
    rng = np.random.default_rng(51)
    n = 3000
    designs = {"drugs": FR, "tax": Warner(0.8)}
    b = rng.normal(0, 1.0, n)
    rows = []
    for k, (item, d) in enumerate(designs.items()):
        eta = -0.5 + 0.7 * k + b
        truth = rng.random(n) < special.expit(eta)
        rows.append(
            pd.DataFrame(
                {"y": d.randomize(truth, rng=rng), "tax": float(k), "item": item, "id": range(n)}
            )
        )
    df = pd.concat(rows, ignore_index=True)
    fit = _fit("y ~ tax", df, designs, random="(1 | id)", item="item")
    assert abs(fit.params["Intercept"] + 0.5) < 4 * fit.bse["Intercept"]
    assert abs(fit.params["tax"] - 0.7) < 4 * fit.bse["tax"]
    np.testing.assert_array_equal(fit.data.p1[df["item"] == "tax"], 0.8)  # type: ignore[union-attr]
    out = fit.to_dict()
    assert [d["item"] for d in out["designs"]] == ["drugs", "tax"]
    assert "Item tax:" in fit.summary()
    # the top level never shows one item's channel or epsilon as every answer's
    assert out["epsilon"] == max(FR.epsilon, Warner(0.8).epsilon)
    assert out["p_yes_given_1"] is None and out["design"].startswith("per item")


def test_per_item_epsilon_infinite_anywhere_is_infinite_at_the_top() -> None:
    # one item asked directly (epsilon infinite): the top-level epsilon must not be the
    # other item's finite one
    rng = np.random.default_rng(52)
    n = 400
    designs = {"a": FR, "b": Custom(1.0, 0.0)}
    b = rng.normal(0, 0.5, n)
    parts = [
        pd.DataFrame(
            {
                "y": d.randomize(rng.random(n) < special.expit(b - 0.5), rng=rng),
                "item": item,
                "id": range(n),
            }
        )
        for item, d in designs.items()
    ]
    df = pd.concat(parts, ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = mixed_logistic_rr("y ~ 1", df, designs, random="(1 | id)", item="item")
    out = json.loads(json.dumps(fit.to_dict()))
    assert out["epsilon"] == "inf"
    assert "∞" in str(fit.table())


def test_zero_variance_gives_the_fixed_effects_fit() -> None:
    # every school holds the same pupils (the same covariates and reports): nothing varies
    # between schools, the variance estimate is 0 and the fixed effects are logistic_rr's.
    one, _ = _simulate(61, groups=1, per_group=300, sd=0.0)
    df = pd.concat([one.assign(school=s) for s in range(8)], ignore_index=True)
    with pytest.warns(ConvergenceWarning, match="singular"):
        fit = mixed_logistic_rr("y ~ x", df, FR, random="(1 | school)")
    ref = logistic_rr("y ~ x", df, FR)
    assert fit.params.to_numpy() == pytest.approx(ref.params.to_numpy(), abs=1e-5)
    assert fit.bse.to_numpy() == pytest.approx(ref.bse.to_numpy(), rel=1e-3)
    assert fit.llf == pytest.approx(ref.llf, abs=1e-6)
    assert float(fit.sd[0]) < 1e-3
    assert math.isnan(fit.variance_components()[0].se)
    assert fit.lr_random is not None and fit.lr_random.pvalue > 0.4


# ---------------------------------------------------------------- results and warnings


def test_result_prints_and_serializes() -> None:
    df, _ = _simulate(71, groups=20, per_group=60)
    fit = _fit("y ~ x", df, FR, random="(1 | school)")
    text = str(fit)
    assert "sd(Intercept|school)" in text and "ML, Laplace" in text
    assert "50:50 mixture" in text
    table = str(fit.table())
    assert "Random effects" in table and "ε" in table and "Fixed effects" in table
    out = json.loads(json.dumps(fit.to_dict()))
    assert out["n_groups"] == 20 and out["method"] == "laplace"
    assert out["variance_components"][0]["name"] == "sd(Intercept|school)"
    assert out["k_params"] == 3
    assert fit.aic == pytest.approx(2 * 3 - 2 * fit.llf)
    again = pickle.loads(pickle.dumps(fit))
    assert again.params.equals(fit.params) and str(again.table()) == table


def test_lr_test_of_fixed_effects_needs_the_same_random_part() -> None:
    df, _ = _simulate(73, groups=20, per_group=60)
    full = _fit("y ~ x", df, FR, random="(1 | school)")
    small = _fit("y ~ 1", df, FR, random="(1 | school)")
    test = full.lr_test(small)
    assert test.df == 1 and test.statistic == pytest.approx(2 * (full.llf - small.llf))
    agq = _fit("y ~ 1", df, FR, random="(1 | school)", method="agq", n_agq=5)
    with pytest.raises(ParameterError, match=r"`other` must have the same random term"):
        full.lr_test(agq)
    assert full.to_dict()["deviance"] == pytest.approx(-2 * full.llf)


def test_infinite_epsilon_design_is_never_printed_finite() -> None:
    design = Custom(1.0, 0.0)  # direct questioning: epsilon is infinite
    df, _ = _simulate(72, groups=15, per_group=40, design=design)
    fit = _fit("y ~ x", df, design, random="(1 | school)")
    assert "∞" in str(fit.table())
    assert "inf" in fit.summary()


def test_optimizer_stopping_short_warns() -> None:
    df, _ = _simulate(81, groups=20, per_group=60)
    with pytest.warns(ConvergenceWarning, match="optimizer stopped"):
        fit = mixed_logistic_rr("y ~ x", df, FR, random="(1 | school)", max_iter=1)
    assert not fit.converged
    assert any("optimizer" in note for note in fit.notes)


# ---------------------------------------------------------------- bad input

_DF, _ = _simulate(91, groups=5, per_group=20)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"random": "(1 | town)"}, DataError, r"`random` .* names column 'town'"),
        ({"random": "1 | school"}, ParameterError, r"`random` must be one random term"),
        ({"random": "(1 | school) + (1 | town)"}, ParameterError, r"one grouping factor"),
        ({"random": "(log(x) | school)"}, ParameterError, r"`random` must be one random"),
        ({"random": "(0 | school)"}, ParameterError, r"no random effect"),
        ({"random": 3}, ParameterTypeError, r"`random` must be a string"),
        ({"method": "mcmc"}, ParameterError, r"`method`"),
        ({"link": "cauchit"}, ParameterError, r"`link`"),
        ({"n_agq": 5}, ParameterError, r"`n_agq` is for method='agq'"),
        ({"method": "agq", "n_agq": 0}, ParameterError, r"`n_agq`"),
        ({"random": "(1 + x | school)", "method": "agq"}, ParameterError, r"one scalar"),
        ({"item": "school"}, ParameterError, r"`item` .* needs `design` as a mapping"),
    ],
)
def test_bad_input_raises_one_clear_error(
    kwargs: dict[str, object], error: type[Exception], pattern: str
) -> None:
    args = {"random": "(1 | school)", **kwargs}
    with pytest.raises(error, match=pattern):
        mixed_logistic_rr("y ~ x", _DF, FR, **args)  # type: ignore[arg-type]


def test_one_group_is_refused() -> None:
    with pytest.raises(DataError, match=r"`random` .* at least 2 groups, got 1"):
        mixed_logistic_rr("y ~ x", _DF.assign(school=1), FR, random="(1 | school)")


def test_design_without_binary_channel_is_refused() -> None:
    with pytest.raises(ParameterTypeError, match=r"`design` must be a one-group binary design"):
        mixed_logistic_rr("y ~ x", _DF, Categorical(3, 0.7), random="(1 | school)")


def test_item_labels_without_design_are_refused() -> None:
    df = _DF.assign(item=np.where(_DF.index % 2, "a", "b"))
    with pytest.raises(DataError, match=r"`item` column holds label 'b' with no design"):
        mixed_logistic_rr("y ~ x", df, {"a": FR}, random="(1 | school)", item="item")
    with pytest.raises(ParameterError, match=r"`item` must name the column"):
        mixed_logistic_rr("y ~ x", df, {"a": FR}, random="(1 | school)")


def test_text_slope_column_is_refused() -> None:
    df = _DF.assign(z=["a"] * len(_DF))
    with pytest.raises(DataError, match=r"slope column 'z' must be numeric"):
        mixed_logistic_rr("y ~ x", df, FR, random="(1 + z | school)")
