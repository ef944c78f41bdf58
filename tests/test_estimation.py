"""Estimators, standard errors, intervals and variances against hand formulas, an independent
library route (``scipy.stats.binomtest``) and seeded simulation with stated false-alarm rates.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import math
import pickle
from typing import Any

import numpy as np
import pytest
from scipy import optimize, stats

from deniable.designs import (
    BinaryDesign,
    Categorical,
    Custom,
    ForcedResponse,
    Kuk,
    KukMultiDraw,
    KukSingleDraw,
    Mangat,
    Tally,
    TwoCoin,
    UnrelatedQuestion,
    Warner,
    make_design,
)
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.results import Estimate

BINARY = [
    TwoCoin(),
    Warner(0.2),
    ForcedResponse(1 / 6, 1 / 3),
    UnrelatedQuestion(0.6, 0.3),
    Mangat(0.7),
]
BINARY_IDS = ["two-coin", "warner-0.2", "forced", "unrelated", "mangat"]


def map_clip(lo: float, hi: float, d: BinaryDesign) -> tuple[float, float]:
    """An interval for lambda mapped to one for the prevalence, then clipped to [0, 1]."""
    s = d.p_yes_given_1 - d.p_yes_given_0
    a, b = sorted(((lo - d.p_yes_given_0) / s, (hi - d.p_yes_given_0) / s))
    return min(max(a, 0.0), 1.0), min(max(b, 0.0), 1.0)


# --- point estimate and standard errors ------------------------------------------------------


@pytest.mark.parametrize("d", BINARY, ids=BINARY_IDS)
@pytest.mark.parametrize(("yes", "n"), [(412, 1000), (3, 17), (50, 51)])
def test_standard_errors_in_both_conventions(d: BinaryDesign, yes: int, n: int) -> None:
    lam = yes / n
    s = d.p_yes_given_1 - d.p_yes_given_0
    est = d.estimate(yes=yes, n=n)
    assert est.value == pytest.approx((lam - d.p_yes_given_0) / s, rel=1e-13, abs=1e-15)
    assert est.lambda_hat == lam
    assert est.n == n
    # plug-in (divides by n), printed by default; unbiased (divides by n - 1), as in RRreg
    assert est.se == pytest.approx(math.sqrt(lam * (1 - lam) / (n * s * s)), rel=1e-13)
    assert est.se_unbiased == pytest.approx(
        math.sqrt(lam * (1 - lam) / ((n - 1) * s * s)), rel=1e-13
    )
    assert est.se_convention.startswith("plug-in")
    assert est.bounded == min(max(est.value, 0.0), 1.0)


def test_one_report_has_no_unbiased_se() -> None:
    est = TwoCoin().estimate(yes=1, n=1)
    assert math.isnan(est.se_unbiased)
    assert est.to_dict()["se_unbiased"] == "nan"


def test_moment_estimate_may_leave_the_unit_interval_and_bounded_does_not() -> None:
    est = TwoCoin().estimate(yes=100, n=1000)  # lambda_hat 0.1 < P0 = 0.25
    assert est.value == pytest.approx(-0.3, rel=1e-12)
    assert est.bounded == 0.0
    lo, hi = est.ci(method="exact")
    assert 0.0 <= lo <= hi <= 1.0
    lo_w, _ = est.ci(method="wald")
    assert lo_w < 0  # Wald is not clipped


# --- intervals -------------------------------------------------------------------------------


@pytest.mark.parametrize("d", BINARY, ids=BINARY_IDS)
@pytest.mark.parametrize(("yes", "n"), [(412, 1000), (3, 17), (0, 40), (40, 40), (1, 1)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_exact_and_wilson_intervals_match_scipy(
    d: BinaryDesign, yes: int, n: int, level: float
) -> None:
    est = d.estimate(yes=yes, n=n)
    bt = stats.binomtest(yes, n)
    for method in ("exact", "wilson"):
        ref = bt.proportion_ci(confidence_level=level, method=method)
        expected = map_clip(float(ref.low), float(ref.high), d)
        got = est.ci(level, method)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12), method
        assert 0.0 <= got[0] <= got[1] <= 1.0


@pytest.mark.parametrize("d", BINARY, ids=BINARY_IDS)
def test_wald_interval(d: BinaryDesign) -> None:
    est = d.estimate(yes=300, n=800)
    z = stats.norm.ppf(0.975)
    assert est.ci() == pytest.approx((est.value - z * est.se, est.value + z * est.se), rel=1e-13)
    z90 = stats.norm.ppf(0.95)
    assert est.ci(0.9, "wald") == pytest.approx(
        (est.value - z90 * est.se, est.value + z90 * est.se), rel=1e-13
    )


def test_yes_zero_and_yes_n_edges() -> None:
    d = TwoCoin()  # P1 = 3/4, P0 = 1/4
    n = 40
    zero = d.estimate(yes=0, n=n)
    assert zero.value == pytest.approx(-0.5, rel=1e-12) and zero.bounded == 0.0 and zero.se == 0.0
    # Clopper-Pearson with no successes: [0, 1 - (alpha/2)^(1/n)]; mapped and clipped
    hi_lam = 1 - 0.025 ** (1 / n)
    assert zero.ci(0.95, "exact") == pytest.approx(
        (0.0, max(0.0, (hi_lam - 0.25) / 0.5)), rel=1e-12
    )
    full = d.estimate(yes=n, n=n)
    assert full.value == pytest.approx(1.5, rel=1e-12) and full.bounded == 1.0 and full.se == 0.0
    lo_lam = 0.025 ** (1 / n)
    assert full.ci(0.95, "exact") == pytest.approx(
        (min(1.0, (lo_lam - 0.25) / 0.5), 1.0), rel=1e-12
    )


def test_negative_slope_designs_map_intervals_in_order() -> None:
    d = Warner(0.2)  # P1 < P0: the map from lambda reverses the interval
    est = d.estimate(yes=700, n=1000)
    lo, hi = est.ci(method="exact")
    assert lo < est.value < hi


def test_exact_interval_is_at_least_as_wide_as_wilson_here() -> None:
    est = TwoCoin().estimate(yes=412, n=1000)
    (lo_e, hi_e), (lo_w, hi_w) = est.ci(method="exact"), est.ci(method="wilson")
    assert hi_e - lo_e > hi_w - lo_w


def _coverage(design: BinaryDesign, pi: float, n: int, surveys: int, seed: int) -> dict[str, float]:
    """Share of simulated surveys whose intervals contain ``pi``.  A survey's "yes" count is
    Binomial(n, lambda) -- the report distribution of n iid respondents."""
    gen = np.random.default_rng(seed)
    lam = design.report_probability(pi)
    hits = {"wald": 0, "exact": 0, "wilson": 0}
    for yes in gen.binomial(n, lam, size=surveys):
        est = design.estimate(yes=int(yes), n=n)
        for m in hits:
            lo, hi = est.ci(0.95, m)
            hits[m] += lo <= pi <= hi
    return {m: h / surveys for m, h in hits.items()}


def test_exact_interval_covers_at_least_95_percent() -> None:
    """Clopper-Pearson never undercovers; 2000 surveys: 3-sigma MC band (0.0146),
    one-sided false alarm ~1.3e-3."""
    surveys = 2000
    band = 3 * math.sqrt(0.95 * 0.05 / surveys)
    for design, pi in ((TwoCoin(), 0.3), (ForcedResponse(0.2, 0.1), 0.05)):
        cov = _coverage(design, pi, n=150, surveys=surveys, seed=17)
        assert cov["exact"] >= 0.95 - band, cov


def test_wald_and_wilson_cover_about_95_percent_for_large_n() -> None:
    """n = 5000, 2000 surveys: 4-sigma MC band (0.0195) around 0.95, false alarm ~6e-5
    per check (Wald's own error at this n is far smaller)."""
    surveys = 2000
    band = 4 * math.sqrt(0.95 * 0.05 / surveys)
    cov = _coverage(TwoCoin(), 0.3, n=5000, surveys=surveys, seed=23)
    assert abs(cov["wald"] - 0.95) <= band, cov
    assert abs(cov["wilson"] - 0.95) <= band, cov


@pytest.mark.slow
@pytest.mark.parametrize(
    "design", [TwoCoin(), Warner(0.8), UnrelatedQuestion(0.6, 0.3), Mangat(0.6)]
)
@pytest.mark.parametrize("pi", [0.02, 0.3, 0.9])
def test_coverage_with_the_real_randomizer(design: BinaryDesign, pi: float) -> None:
    """Surveys drawn with randomize(): exact >= 95% (3-sigma band, one-sided false alarm
    ~1.3e-3 per case) over 4000 surveys of n = 300."""
    surveys, n = 4000, 300
    gen = np.random.default_rng(31)
    truth = (gen.random((surveys, n)) < pi).astype(np.uint8)
    reports = design.randomize(truth.ravel(), rng=gen).reshape(surveys, n)
    hits = 0
    for row in reports:
        lo, hi = design.estimate(row).ci(0.95, "exact")
        hits += lo <= pi <= hi
    assert hits / surveys >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / surveys)


# --- variance: iid vs fixed population -------------------------------------------------------


@pytest.mark.parametrize("d", BINARY, ids=BINARY_IDS)
@pytest.mark.parametrize("pi", [0.0, 0.3, 1.0])
def test_variance_hand_formulas(d: BinaryDesign, pi: float) -> None:
    n = 1000
    p1, p0 = d.p_yes_given_1, d.p_yes_given_0
    s2 = (p1 - p0) ** 2
    lam = p0 + pi * (p1 - p0)
    assert d.variance(pi, n) == pytest.approx(lam * (1 - lam) / (n * s2), rel=1e-13, abs=1e-300)
    k = round(pi * n)
    fixed = (k * p1 * (1 - p1) + (n - k) * p0 * (1 - p0)) / (n * n * s2)
    assert d.variance(pi, n, population="fixed") == pytest.approx(fixed, rel=1e-13, abs=1e-300)
    # a fixed population removes the sampling part: never more variable than iid
    assert d.variance(pi, n, population="fixed") <= d.variance(pi, n) * (1 + 1e-12)


def _sample_variance_band(replicates: int) -> float:
    """Relative 5-sigma band of a sample variance of ~normal estimates: 5 sqrt(2 / (R - 1));
    two-sided false alarm ~6e-7."""
    return 5 * math.sqrt(2 / (replicates - 1))


@pytest.mark.parametrize("population", ["iid", "fixed"])
@pytest.mark.parametrize(
    "design", [TwoCoin(), ForcedResponse(0.2, 0.1), Kuk(0.8, 0.4, draws=3)], ids=str
)
def test_variance_against_simulation(design: Any, population: str) -> None:
    reps, n, pi = 4000, 500, 0.3
    gen = np.random.default_rng(41)
    if population == "iid":
        truth = (gen.random(reps * n) < pi).astype(np.uint8)
    else:
        one = np.zeros(n, dtype=np.uint8)
        one[: round(pi * n)] = 1
        truth = np.tile(one, reps)
    reports = design.randomize(truth, rng=gen).reshape(reps, n)
    k = getattr(design, "draws", 1)
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    estimates = (reports.mean(axis=1) / k - p0) / (p1 - p0)
    assert design.estimate(reports[0]).value == pytest.approx(estimates[0], rel=1e-12)
    expected = design.variance(pi, n, population=population)
    assert estimates.var(ddof=1) == pytest.approx(expected, rel=_sample_variance_band(reps))
    # the mean is unbiased for pi: 5-sigma band, false alarm ~6e-7
    assert abs(estimates.mean() - pi) < 5 * math.sqrt(expected / reps)


def test_iid_and_fixed_variances_differ_and_simulation_tells_them_apart() -> None:
    d = TwoCoin()
    assert d.variance(0.3, 500) / d.variance(0.3, 500, population="fixed") > 1.2


def test_kuk_variance_for_several_draws_hand_formula() -> None:
    # R = red cards of one respondent: Var(R) = k E[t(1 - t)] + k^2 pi (1 - pi) (t1 - t2)^2
    t1, t2, k, pi, n = 0.8, 0.4, 3, 0.3, 500
    var_r = k * (pi * t1 * (1 - t1) + (1 - pi) * t2 * (1 - t2)) + k * k * pi * (1 - pi) * 0.16
    d = Kuk(t1, t2, draws=k)
    assert d.variance(pi, n) == pytest.approx(var_r / (n * k * k * 0.16), rel=1e-13)
    fixed = (150 * t1 * (1 - t1) + 350 * t2 * (1 - t2)) / (n * n * k * 0.16)
    assert d.variance(pi, n, population="fixed") == pytest.approx(fixed, rel=1e-13)
    # more draws, less variance; one draw is the binary formula
    assert Kuk(t1, t2, draws=10).variance(pi, n) < d.variance(pi, n) < Kuk(t1, t2).variance(pi, n)


@pytest.mark.parametrize(
    ("args", "error", "named"),
    [
        ((1.2, 100), ParameterError, "`prevalence`"),
        ((0.3, 0), ParameterError, "`n`"),
        ((0.3, 2.5), ParameterTypeError, "`n`"),
        ((0.3, 100, "bogus"), ParameterError, "`population`"),
        ((0.333, 100, "fixed"), ParameterError, "whole number"),
    ],
)
def test_variance_errors(args: tuple[Any, ...], error: type[Exception], named: str) -> None:
    pi, n, *pop = args
    with pytest.raises(error, match=named):
        TwoCoin().variance(pi, n, population=pop[0] if pop else "iid")


# --- relative efficiency ---------------------------------------------------------------------


@pytest.mark.parametrize("d", [*BINARY, Kuk(0.8, 0.4, draws=3)], ids=[*BINARY_IDS, "kuk-3"])
@pytest.mark.parametrize("pi", [0.0, 0.1, 0.5, 0.9])
def test_relative_efficiency(d: BinaryDesign, pi: float) -> None:
    n = 777
    direct = pi * (1 - pi) / n  # variance of the direct-questioning share
    assert d.relative_efficiency(pi) == pytest.approx(direct / d.variance(pi, n), abs=1e-15)
    if d.n_reports == 2:
        s = d.p_yes_given_1 - d.p_yes_given_0
        lam = d.p_yes_given_0 + pi * s
        assert d.relative_efficiency(pi) == pytest.approx(
            pi * (1 - pi) * s * s / (lam * (1 - lam)), abs=1e-15
        )
    assert 0.0 <= d.relative_efficiency(pi) <= 1.0


def test_direct_questioning_has_relative_efficiency_one() -> None:
    assert Custom(1.0, 0.0).relative_efficiency(0.3) == pytest.approx(1.0, rel=1e-12)


# --- Kuk: moment and maximum likelihood ------------------------------------------------------


def _kuk_loglik(design: Kuk, counts: np.ndarray, pi: float) -> float:
    ch = np.asarray(design.channel)
    mix = pi * ch[:, 1] + (1 - pi) * ch[:, 0]
    used = counts > 0
    return float((counts[used] * np.log(mix[used])).sum())


def _kuk_reports(design: Kuk, pi: float, n: int, seed: int) -> np.ndarray:
    gen = np.random.default_rng(seed)
    return design.randomize((gen.random(n) < pi).astype(np.uint8), rng=gen)


def test_kuk_moment_se_hand_formula() -> None:
    d = Kuk(0.8, 0.4, draws=3)
    counts = np.array([100, 250, 400, 250])
    r = np.arange(4)
    n = counts.sum()
    mean = (counts * r).sum() / n
    var_plugin = (counts * (r - mean) ** 2).sum() / n
    est = d.estimate(Tally(tuple(int(c) for c in counts)))
    assert est.se == pytest.approx(math.sqrt(var_plugin / n) / (3 * 0.4), rel=1e-13)
    assert est.se_unbiased == pytest.approx(
        math.sqrt(var_plugin * n / (n - 1) / n) / (3 * 0.4), rel=1e-13
    )


def test_kuk_model_se_is_rreg_formula_and_the_design_variance_at_the_estimate() -> None:
    # RRreg (danheck/RRreg, R/RRuni_models.R, RRuni.Kuk; Heck & Moshagen 2018):
    # piSE = sqrt(phi (1 - phi) / (rep n (p1 - p2)^2) + (1 - 1/rep) pi (1 - pi) / n) with
    # phi = pi p1 + (1 - pi) p2 (older releases); the current one divides by rep n - 1, n - 1
    d = Kuk(0.8, 0.4, draws=3)
    counts = (100, 250, 400, 250)
    n, k, dd = 1000, 3, 0.4
    lam = (250 + 2 * 400 + 3 * 250) / (n * k)
    pi = (lam - 0.4) / dd
    phi = pi * 0.8 + (1 - pi) * 0.4
    est = d.estimate(Tally(counts), se="model")
    assert est.value == pytest.approx(pi, rel=1e-14)
    n_form = math.sqrt(phi * (1 - phi) / (k * n * dd**2) + (1 - 1 / k) * pi * (1 - pi) / n)
    n1_form = math.sqrt(
        phi * (1 - phi) / ((k * n - 1) * dd**2) + (1 - 1 / k) * pi * (1 - pi) / (n - 1)
    )
    assert est.se == pytest.approx(n_form, rel=1e-13)
    assert est.se_unbiased == pytest.approx(n1_form, rel=1e-13)
    assert est.se_convention.startswith("model-based")
    # it is the design's exact iid variance evaluated at the estimate
    assert est.se == pytest.approx(math.sqrt(d.variance(pi, n)), rel=1e-13)
    # the default is the empirical SE, unchanged
    assert d.estimate(Tally(counts)).se == d.estimate(Tally(counts), se="empirical").se
    assert d.estimate(Tally(counts)).se != est.se


def test_kuk_standard_errors_side_by_side() -> None:
    d = Kuk(0.8, 0.4, draws=3)
    tally = Tally((100, 250, 400, 250))
    ses = d.standard_errors(tally)
    emp, model = d.estimate(tally), d.estimate(tally, se="model")
    mle = d.estimate(tally, method="mle")
    assert (ses.empirical, ses.empirical_unbiased) == (emp.se, emp.se_unbiased)
    assert (ses.model, ses.model_unbiased) == (model.se, model.se_unbiased)
    assert ses.observed_information == mle.se and ses.mle == mle.value
    assert ses.moment == emp.value and ses.n == 1000
    assert set(ses.to_dict()) == {
        "n", "moment", "mle", "empirical", "empirical_unbiased", "model", "model_unbiased",
        "observed_information",
    }  # fmt: skip
    assert "SE (model, RRreg, n - 1)" in str(ses)
    with pytest.raises(ParameterError, match="`se` must be one of 'empirical', 'model'"):
        d.estimate(tally, se="bootstrap")


def test_kuk_model_and_empirical_se_agree_when_the_design_holds() -> None:
    # seeded; both estimate sqrt(Var(pi_hat)) = 0.0096 here and differ by O(n^-1/2) relative:
    # the sampling SD of the empirical variance's ratio is ~ sqrt(2 / n) = 0.6 %, so 3 % is
    # five of them (false-alarm rate far below 1e-6)
    d = Kuk(0.8, 0.4, draws=3)
    tally = d.tally(_kuk_reports(d, 0.3, 50_000, seed=11))
    ses = d.standard_errors(tally)
    truth = math.sqrt(d.variance(0.3, 50_000))
    assert ses.empirical == pytest.approx(truth, rel=0.03)
    assert ses.model == pytest.approx(truth, rel=0.03)
    # the MLE is efficient: its SE is below the moment estimator's
    assert ses.observed_information < ses.model


def test_kuk_forms() -> None:
    one, three = Kuk(0.7, 0.3), Kuk(0.7, 0.3, draws=3)
    assert type(one) is KukSingleDraw and type(three) is KukMultiDraw
    assert isinstance(one, BinaryDesign) and not isinstance(three, BinaryDesign)
    assert isinstance(one, Kuk) and isinstance(three, Kuk)
    assert one.n_reports == 2 and three.n_reports == 4
    # the class follows draws, however the design is made
    assert type(KukSingleDraw(0.7, 0.3, 3)) is KukMultiDraw
    assert type(KukMultiDraw(0.7, 0.3)) is KukSingleDraw
    assert type(dataclasses.replace(one, draws=3)) is KukMultiDraw
    assert dataclasses.replace(one, draws=3) == three
    assert type(make_design("kuk", {"theta1": 0.7, "theta2": 0.3, "draws": 3})) is KukMultiDraw
    assert pickle.loads(pickle.dumps(three)) == three
    assert copy.deepcopy(one) == one
    # keys and reports are those of the one Kuk class before 1.0
    assert three.key.startswith('kuk{"draws":3,"theta1":"3152519739159347/4503599627370496"')
    assert list(inspect.signature(Kuk).parameters) == ["theta1", "theta2", "draws"]
    assert (
        Kuk.from_epsilon(1.0, draws=3).draws == 3 and type(Kuk.from_epsilon(1.0)) is KukSingleDraw
    )
    with pytest.raises(ParameterTypeError, match="`draws`"):
        Kuk(0.7, 0.3, draws=True)  # type: ignore[arg-type]


def test_kuk_mle_maximises_the_likelihood_and_is_close_to_the_moment() -> None:
    d = Kuk(0.8, 0.4, draws=3)
    reports = _kuk_reports(d, 0.3, 200_000, seed=5)
    tally = d.tally(reports)
    mle = d.estimate(tally, method="mle")
    moment = d.estimate(tally)
    assert mle.method == "mle" and moment.method == "moment"
    # both consistent for 0.3: their gap is far below either SE (~0.002)
    assert abs(mle.value - moment.value) < moment.se
    counts = np.asarray(tally.counts, dtype=float)
    grid = np.linspace(0, 1, 10_001)
    best = max(_kuk_loglik(d, counts, float(p)) for p in grid)
    assert _kuk_loglik(d, counts, mle.value) >= best - 1e-9
    # observed information SE is smaller than the moment SE (the MLE uses all counts)
    assert mle.se <= moment.se * 1.001


def test_kuk_likelihood_interval() -> None:
    d = Kuk(0.8, 0.4, draws=3)
    tally = d.tally(_kuk_reports(d, 0.3, 3000, seed=6))
    mle = d.estimate(tally, method="mle")
    counts = np.asarray(tally.counts, dtype=float)
    lo, hi = mle.ci(0.95, "likelihood")
    assert lo < mle.value < hi
    drop = stats.chi2.ppf(0.95, 1) / 2
    top = _kuk_loglik(d, counts, mle.value)
    for end in (lo, hi):
        assert _kuk_loglik(d, counts, end) == pytest.approx(top - drop, abs=1e-6)
    assert "likelihood" in mle.interval_methods
    # close to the Wald interval at this n
    assert lo == pytest.approx(mle.ci()[0], abs=0.01) and hi == pytest.approx(mle.ci()[1], abs=0.01)


def test_kuk_mle_at_the_boundary() -> None:
    d = Kuk(0.8, 0.4, draws=3)
    tally = Tally((600, 300, 90, 10))  # fewer reds than even non-carriers give
    mle = d.estimate(tally, method="mle")
    assert mle.value == 0.0
    lo, hi = mle.ci(0.95, "likelihood")
    assert lo == 0.0 < hi < 0.1


def test_kuk_mle_with_impossible_reports_raises_no_warning() -> None:
    d = Kuk(1.0, 0.3, draws=3)  # carriers always draw 3 reds: fewer reveals a non-carrier
    tally = d.tally(_kuk_reports(d, 0.5, 1000, seed=7))
    mle = d.estimate(tally, method="mle")  # warnings are errors in this suite
    lo, hi = mle.ci(0.95, "likelihood")
    assert lo < mle.value < hi


def test_kuk_one_draw_mle_is_the_clipped_moment() -> None:
    d = Kuk(0.7, 0.3)
    for yes, n in ((420, 1000), (200, 1000), (800, 1000)):
        mle = d.estimate(yes=yes, n=n, method="mle")
        moment = d.estimate(yes=yes, n=n)
        assert mle.value == pytest.approx(moment.bounded, abs=1e-7)


def test_kuk_mle_se_matches_simulation_spread() -> None:
    """300 surveys of n = 2000: the sample SD of the MLE has relative SE ~ 1/sqrt(2 * 300)
    = 4.1%; a 15% band is ~3.6 sigma (two-sided false alarm ~3e-4)."""
    d = Kuk(0.8, 0.4, draws=3)
    values, ses = [], []
    for seed in range(300):
        est = d.estimate(d.tally(_kuk_reports(d, 0.3, 2000, seed=1000 + seed)), method="mle")
        values.append(est.value)
        ses.append(est.se)
    assert float(np.std(values, ddof=1)) == pytest.approx(float(np.mean(ses)), rel=0.15)


def test_kuk_several_draws_bounded_is_the_mixture_mle_not_the_clipped_moment() -> None:
    """With k > 1 the likelihood of the counts is not a function of their mean, so the bounded
    MLE is not clip(moment).  The MLE is found here on a grid of 10^6 + 1 points (then refined
    by the stationarity of the log-likelihood), independently of the design's optimiser."""
    d = Kuk(0.7, 0.3, draws=3)
    counts = np.array([400.0, 100.0, 50.0, 150.0])
    tally = Tally((400, 100, 50, 150))
    moment = d.estimate(tally)
    # moment: mean red count 650/700 -> (0.3095 - 0.3) / 0.4 = 1/42
    assert moment.value == pytest.approx((650 / 700 / 3 - 0.3) / 0.4, rel=1e-12)
    grid = np.linspace(0, 1, 1_000_001)
    ch = np.asarray(d.channel)
    mix = grid[:, None] * ch[:, 1] + (1 - grid[:, None]) * ch[:, 0]
    best = float(grid[np.argmax(np.log(mix) @ counts)])

    def score(p: float) -> float:
        m = p * ch[:, 1] + (1 - p) * ch[:, 0]
        return float((counts * (ch[:, 1] - ch[:, 0]) / m).sum())

    root = optimize.brentq(score, best - 1e-5, best + 1e-5, xtol=1e-14)
    assert root == pytest.approx(0.226837, abs=1e-6)
    assert moment.bounded == pytest.approx(root, abs=1e-8)
    assert d.estimate(tally, method="mle").value == pytest.approx(root, abs=1e-8)
    # the headline value stays the unbiased moment estimate
    assert moment.value == pytest.approx(1 / 42, rel=1e-12)


def test_kuk_mle_se_convention_has_no_n_minus_1_version() -> None:
    d = Kuk(0.8, 0.4, draws=3)
    mle = d.estimate(Tally((100, 250, 400, 250)), method="mle")
    assert math.isnan(mle.se_unbiased)
    assert "observed information" in mle.se_convention and "no n - 1" in mle.se_convention
    assert mle.to_dict()["se_unbiased"] == "nan"
    one = Kuk(0.7, 0.3).estimate(yes=420, n=1000, method="mle")
    assert math.isnan(one.se_unbiased)


# --- notes: an interval outside the design's range of report shares ---------------------------


def test_interval_outside_the_channel_gets_a_note() -> None:
    """Warner(0.7), 10 yes of 100: the exact 95% interval for lambda, [0.049, 0.176], lies
    below P(yes | 0) = 0.3, so the prevalence interval clips to [0, 0]; it is kept, and the
    estimate says why."""
    d = Warner(0.7)
    est = d.estimate(yes=10, n=100)
    lam_hi = stats.beta.ppf(0.975, 11, 90)
    assert lam_hi < 0.3
    assert est.ci(0.95, "exact") == (0.0, 0.0)
    assert len(est.notes) == 1
    note = est.notes[0]
    assert "below P(yes|0)" in note and "unlikely under this design" in note
    assert "non-compliance" in note and "exact" in note and "wilson" in note
    row = est.to_dict()
    assert row["notes"] == [note]
    assert note in " ".join(str(est.table()).split())  # (wrapped in the text)
    # above P(yes | 1): all 100 say yes, P1 = 0.7
    high = d.estimate(yes=100, n=100)
    assert high.ci(0.95, "exact") == (1.0, 1.0)
    assert len(high.notes) == 1 and "above P(yes|1)" in high.notes[0]


def test_notes_follow_the_level() -> None:
    # 22 of 100 with P0 = 0.3: the 95% exact interval for lambda reaches 0.3, the 50% one not
    d = Warner(0.7)
    est = d.estimate(yes=22, n=100)
    assert est.notes == ()
    assert est.to_dict()["notes"] == []
    assert stats.beta.ppf(0.75, 23, 78) < 0.3 < stats.beta.ppf(0.975, 23, 78)
    assert len(est.notes_at(0.5)) == 1
    assert est.to_dict(0.5)["notes"] == list(est.notes_at(0.5))


def test_no_note_for_ordinary_data() -> None:
    est = TwoCoin().estimate(yes=400, n=1000)
    assert est.notes == () and "note" not in str(est.table())


def test_kuk_several_draws_need_counts_not_yes_n() -> None:
    with pytest.raises(ParameterError, match="counts of red cards"):
        Kuk(0.8, 0.4, draws=3).estimate(yes=3, n=10)


def test_kuk_bad_method() -> None:
    with pytest.raises(ParameterError, match="`method`"):
        Kuk(0.8, 0.4).estimate(yes=3, n=10, method="bayes")


# --- Categorical -----------------------------------------------------------------------------

CAT = Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5))
CAT_PI = np.array([0.5, 0.3, 0.2])


def test_categorical_unbiased_and_covariance_against_simulation() -> None:
    """2000 surveys of n = 1000.  Means: 5-sigma band (false alarm ~6e-7 per category).
    Variances: 5 sqrt(2/R) relative band; covariances: 5-sigma absolute band."""
    reps, n = 2000, 1000
    gen = np.random.default_rng(53)
    truth = gen.choice(3, size=reps * n, p=CAT_PI)
    reports = CAT.randomize(truth, rng=gen).reshape(reps, n)
    lam_true = np.asarray(CAT.channel) @ CAT_PI
    cov_true = (np.diag(lam_true) - np.outer(lam_true, lam_true)) / (n * CAT.p_truthful**2)
    counts = np.stack([np.bincount(r, minlength=3) for r in reports])
    values = np.stack([CAT.estimate(Tally(tuple(int(c) for c in row))).values for row in counts])
    sd = np.sqrt(np.diag(cov_true))
    assert np.all(np.abs(values.mean(axis=0) - CAT_PI) < 5 * sd / math.sqrt(reps))
    emp = np.cov(values, rowvar=False)
    band = _sample_variance_band(reps)
    np.testing.assert_allclose(np.diag(emp), np.diag(cov_true), rtol=band)
    # off-diagonal: SE of a sample covariance ~ sqrt((s_i^2 s_j^2 + c_ij^2) / R)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        se = math.sqrt((cov_true[i, i] * cov_true[j, j] + cov_true[i, j] ** 2) / reps)
        assert abs(emp[i, j] - cov_true[i, j]) < 5 * se
    # the reported plug-in covariance is that formula at lambda_hat
    est = CAT.estimate(Tally(tuple(int(c) for c in counts[0])))
    lam = counts[0] / n
    np.testing.assert_allclose(
        est.covariance, (np.diag(lam) - np.outer(lam, lam)) / (n * 0.36), rtol=1e-13
    )
    np.testing.assert_allclose(est.covariance_unbiased, est.covariance * n / (n - 1), rtol=1e-13)
    np.testing.assert_allclose(est.se, np.sqrt(np.diag(est.covariance)), rtol=1e-13)


def _cat_loglik(design: Categorical, counts: np.ndarray, pi: np.ndarray) -> float:
    mix = np.asarray(design.channel) @ pi
    used = counts > 0
    return float((counts[used] * np.log(mix[used])).sum())


def _scipy_simplex_mle(design: Categorical, counts: np.ndarray) -> np.ndarray:
    """Maximise the likelihood over the simplex with SLSQP: an independent route."""
    k = design.k
    res = optimize.minimize(
        lambda x: -_cat_loglik(design, counts, np.clip(x, 0, 1)),
        np.full(k, 1 / k),
        method="SLSQP",
        bounds=[(0, 1)] * k,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    x = np.clip(np.asarray(res.x, dtype=float), 0, 1)
    return np.asarray(x / x.sum(), dtype=float)


@pytest.mark.parametrize(
    ("design", "counts"),
    [
        (Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)), (250, 300, 450)),  # inside
        (Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)), (30, 300, 670)),  # outside
        (Categorical(k=3, p_truthful=0.05), (320, 330, 350)),  # inside, a weak design
        (Categorical(k=3, p_truthful=0.05), (300, 330, 370)),  # outside
        (Categorical(k=3, p_truthful=0.1), (300, 330, 370)),  # on the boundary
        (Categorical(k=4, p_truthful=0.3), (0, 0, 10, 90)),
        (Categorical(k=3, p_truthful=0.5, forced=(0.5, 0.5, 0.0)), (10, 60, 30)),
        (Categorical(k=3, p_truthful=0.5, forced=(0.5, 0.5, 0.0)), (40, 60, 0)),
    ],
)
def test_categorical_bounded_mle(design: Categorical, counts: tuple[int, ...]) -> None:
    est = design.estimate(Tally(counts))
    b = est.bounded
    assert b.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(b >= 0)
    c = np.asarray(counts, dtype=float)
    ref = _scipy_simplex_mle(design, c)
    assert _cat_loglik(design, c, b) >= _cat_loglik(design, c, ref) - 1e-9
    np.testing.assert_allclose(b, ref, atol=2e-4)
    if np.all(est.values >= 0):
        np.testing.assert_allclose(b, est.values, rtol=0, atol=1e-12)


def test_categorical_category_is_the_report_j_or_not_design() -> None:
    counts = (250, 300, 450)
    est = CAT.estimate(Tally(counts))
    for j in range(3):
        cat = est.category(j)
        fj = CAT.forced_distribution[j]
        as_binary = Custom(0.6 + 0.4 * fj, 0.4 * fj).estimate(yes=counts[j], n=1000)
        assert cat.value == pytest.approx(est.values[j], rel=1e-13)
        assert cat.value == pytest.approx(as_binary.value, rel=1e-13)
        assert cat.ci(0.95, "exact") == pytest.approx(as_binary.ci(0.95, "exact"), rel=1e-13)
        assert cat.parameter == f"share of {j}"
    assert est.ci().shape == (3, 2)
    np.testing.assert_allclose(est.ci(0.9, "wilson")[1], est.category(1).ci(0.9, "wilson"))
    with pytest.raises(ParameterError, match="`j`"):
        est.category(3)


def test_categorical_to_dict_and_table() -> None:
    est = CAT.estimate(Tally((250, 300, 450)))
    d = est.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["n"] == 1000 and len(d["estimate"]) == 3 and len(d["ci_exact"]) == 3
    table = str(est.table())
    assert "CI (exact)" in table and str(est) == table
    assert est.table().column("category") == ["0", "1", "2"]


# --- the Estimate object ---------------------------------------------------------------------


def test_estimate_to_dict_is_plain_json() -> None:
    est = ForcedResponse(0.2, 0.1).estimate(yes=345, n=1000)
    d = est.to_dict(0.9)
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert d["level"] == 0.9
    assert d["se_convention"] == "plug-in: divides by n"
    assert set(d) >= {"estimate", "estimate_bounded", "se", "se_unbiased", "ci_exact", "ci_wilson"}
    assert d["ci_exact"] == list(est.ci(0.9, "exact"))


def test_estimate_to_dict_handles_infinities() -> None:
    est = Estimate(value=0.5, bounded=0.5, se=math.inf, se_unbiased=math.nan, n=3)
    d = est.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert d["se"] == "inf" and d["se_unbiased"] == "nan"
    assert d["ci_wald"] == ["-inf", "inf"]
    assert "Infinity" not in text


def test_estimate_table_prints() -> None:
    est = TwoCoin().estimate(yes=400, n=1000)
    table = str(est.table())
    assert str(est) == table
    for label in (
        "SE (plug-in: divides by n)",
        "SE (unbiased: divides by n - 1)",
        "95% CI (wald)",
        "95% CI (exact)",
        "95% CI (wilson)",
        "share of yes reports",
        "0.300000",
    ):
        assert label in table
    assert "90% CI (exact)" in str(est.table(0.9))


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1, math.nan])
def test_bad_level(level: float) -> None:
    est = TwoCoin().estimate(yes=400, n=1000)
    for method in est.interval_methods:
        with pytest.raises(ParameterError, match="`level`"):
            est.ci(level, method)


def test_bad_level_type_and_method() -> None:
    est = TwoCoin().estimate(yes=400, n=1000)
    with pytest.raises(ParameterTypeError, match="`level`"):
        est.ci("0.95")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`method` must be one of 'wald', 'exact', 'wilson'"):
        est.ci(0.95, "bogus")
    with pytest.raises(ParameterError, match="`method`"):
        est.ci(0.95, "likelihood")  # offered by Kuk's MLE only
    assert est.interval_methods == ("wald", "exact", "wilson")
