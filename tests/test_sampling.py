"""deniable.sampling: the design object, Taylor variances and design-based RR estimates,
checked against closed forms derived here and against samplics (a dev dependency)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

from deniable.designs import Categorical, ForcedResponse, UnrelatedUnknown, Warner
from deniable.exceptions import DataError, ParameterError
from deniable.oracles import OUE
from deniable.sampling import (
    SampleDesign,
    debiased_reports,
    survey_by,
    survey_estimate,
    survey_ratio,
)


def samplics_taylor(param: str):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():  # samplics warns on import that it is archived
        warnings.simplefilter("ignore")
        from samplics.estimation import TaylorEstimator
        from samplics.utils.types import PopParam
    return TaylorEstimator(getattr(PopParam, param))


def clustered_sample(seed: int = 3, strata: int = 8, psus: int = 5, size: int = 12):
    """A stratified clustered weighted sample of Warner reports: (design parts, reports)."""
    rng = np.random.default_rng(seed)
    n = strata * psus * size
    stratum = np.repeat(np.arange(strata), psus * size)
    psu = np.tile(np.repeat(np.arange(psus), size), strata)  # labels repeat across strata
    cluster_effect = rng.normal(0, 1, strata * psus)[np.repeat(np.arange(strata * psus), size)]
    truth = (rng.random(n) < 1 / (1 + np.exp(1 - cluster_effect))).astype(int)
    weights = rng.uniform(1, 4, n)
    reports = Warner(0.8).randomize(truth, rng=seed)
    return stratum, psu, weights, reports


def test_binary_se_is_samplics_se_of_the_weighted_report_mean_over_p1_minus_p0() -> None:
    stratum, psu, weights, reports = clustered_sample()
    pop = {h: 5 + h for h in range(8)}  # population PSUs per stratum, N_h >= n_h = 5
    fpc = np.array([pop[h] for h in stratum])
    design = SampleDesign(weights=weights, strata=stratum, psu=psu, fpc=fpc)
    d = Warner(0.8)
    est = survey_estimate(d, reports, design)
    ref = samplics_taylor("mean")
    # samplics nests PSUs only by label: make them unique, and give it the factor 1 - f_h
    ref.estimate(reports.astype(float), weights, stratum=stratum, psu=stratum * 100 + psu,
                 fpc={h: 1 - 5 / pop[h] for h in pop})  # fmt: skip
    slope = d.p_yes_given_1 - d.p_yes_given_0
    assert est.lambda_hat == pytest.approx(float(ref.point_est), rel=1e-12)
    assert est.se == pytest.approx(float(ref.stderror) / slope, rel=1e-10)
    assert est.se_report == pytest.approx(float(ref.stderror), rel=1e-10)
    assert est.df == 8 * 5 - 8
    # the Hajek estimate is the channel's inverse of the weighted share of yes reports
    assert est.value == pytest.approx((float(ref.point_est) - d.p_yes_given_0) / slope)


def test_domain_se_matches_samplics_domain_on_the_full_design() -> None:
    stratum, psu, weights, reports = clustered_sample(seed=5)
    design = SampleDesign(weights=weights, strata=stratum, psu=psu)
    # some PSUs lie wholly outside the domain: the full design still counts them (as zeros)
    dom = (psu < 2) & (np.arange(reports.size) % 3 > 0)
    d = Warner(0.8)
    est = survey_estimate(d, reports, design, domain=dom)
    ref = samplics_taylor("mean")
    ref.estimate(reports.astype(float), weights, stratum=stratum, psu=stratum * 100 + psu,
                 domain=dom.astype(int))  # fmt: skip
    assert est.lambda_hat == pytest.approx(float(ref.point_est[1]), rel=1e-12)
    assert est.se_report == pytest.approx(float(ref.stderror[1]), rel=1e-10)
    by = survey_by(d, reports, design, dom)
    assert by[True].se == pytest.approx(est.se, rel=1e-12)  # type: ignore[union-attr]
    # not the SE of the subset analysed as if it were the whole sample
    sub = SampleDesign(weights=weights[dom], strata=stratum[dom], psu=psu[dom])
    assert survey_estimate(d, reports[dom], sub).se != pytest.approx(est.se, rel=1e-6)


def test_ratio_matches_samplics() -> None:
    stratum, psu, weights, reports = clustered_sample(seed=7)
    x = np.random.default_rng(1).uniform(1, 3, reports.size)
    design = SampleDesign(weights=weights, strata=stratum, psu=psu)
    y = debiased_reports(Warner(0.8), reports)
    est = survey_ratio(y, x, design)
    ref = samplics_taylor("ratio")
    ref.estimate(y, weights, x=x, stratum=stratum, psu=stratum * 100 + psu)
    assert est.value == pytest.approx(float(ref.point_est), rel=1e-12)
    assert est.se == pytest.approx(float(ref.stderror), rel=1e-10)


def test_total_is_horvitz_thompson_with_its_taylor_se() -> None:
    stratum, psu, weights, reports = clustered_sample(seed=9)
    design = SampleDesign(weights=weights, strata=stratum, psu=psu)
    d = Warner(0.8)
    est = survey_estimate(d, reports, design)
    y = (reports - d.p_yes_given_0) / (d.p_yes_given_1 - d.p_yes_given_0)
    ref = samplics_taylor("total")
    ref.estimate(y, weights, stratum=stratum, psu=stratum * 100 + psu)
    assert est.total == pytest.approx(float(np.sum(weights * y)), rel=1e-12)
    assert est.se_total == pytest.approx(float(ref.stderror), rel=1e-10)


def test_unclustered_unstratified_taylor_is_n_over_n_minus_1_times_with_replacement() -> None:
    # closed form: one PSU per respondent, one stratum: V = n/(n-1) sum w_i^2 (y_i - ybar)^2
    # / (sum w)^2 for the Hajek mean of y (the with-replacement variance times n/(n-1))
    rng = np.random.default_rng(11)
    n = 500
    w = rng.uniform(0.5, 5, n)
    d = ForcedResponse(forced_yes=0.15, forced_no=0.15)
    reports = d.randomize((rng.random(n) < 0.2).astype(int), rng=1)
    est = survey_estimate(d, reports, SampleDesign(weights=w))
    lam = np.sum(w * reports) / np.sum(w)
    var_lam = n / (n - 1) * np.sum(w**2 * (reports - lam) ** 2) / np.sum(w) ** 2
    slope = d.p_yes_given_1 - d.p_yes_given_0
    assert est.se == pytest.approx(math.sqrt(var_lam) / slope, rel=1e-12)
    assert est.df == n - 1


def test_simple_random_sample_reproduces_the_designs_own_estimate() -> None:
    # equal weights, no strata or clusters: the value is the design's own estimate, the SE its
    # unbiased-convention SE (divides by n - 1), and the exact interval is the design's
    d = Warner(0.75)
    reports = d.randomize(np.r_[np.ones(300, int), np.zeros(700, int)], rng=4)
    plain = d.estimate(reports)
    est = survey_estimate(d, reports, SampleDesign(weights=np.full(1000, 3.0)))
    assert isinstance(est.value, float)
    assert est.value == pytest.approx(plain.value, rel=1e-12)
    assert est.se == pytest.approx(plain.se_unbiased, rel=1e-12)
    assert est.deff == pytest.approx(1000 / 999, rel=1e-12)
    assert "exact" in est.interval_methods
    assert est.ci(0.9, "exact") == pytest.approx(plain.ci(0.9, "exact"), rel=1e-12)
    assert est.total == pytest.approx(3000 * plain.value, rel=1e-12)


def test_exact_interval_only_where_valid_and_the_result_says_why() -> None:
    stratum, psu, weights, reports = clustered_sample()
    d = Warner(0.8)
    cases = {
        "weights differ": SampleDesign(weights=weights),
        "clustered": SampleDesign(psu=stratum * 100 + psu),
        "stratified": SampleDesign(strata=stratum),
    }
    for why, design in cases.items():
        est = survey_estimate(d, reports, design)
        assert "exact" not in est.interval_methods
        assert why in est.exact_reason
        with pytest.raises(ParameterError, match=why):
            est.ci(method="exact")
        assert why in str(est) and "exact_reason" in est.to_dict()
        kg = est.ci(method="korn-graubard")
        assert 0 <= kg.low < est.value < kg.high <= 1


def test_korn_graubard_matches_a_hand_computation() -> None:
    # R's svyciprop(method = "beta"): n* = lam (1 - lam) / V * (t_{n-1} / t_df)^2, then
    # Clopper-Pearson at n*, here mapped through the design's channel
    from scipy import stats

    stratum, psu, weights, reports = clustered_sample(seed=13)
    d = Warner(0.8)
    est = survey_estimate(d, reports, SampleDesign(weights=weights, strata=stratum, psu=psu))
    lam, var, n, df = est.lambda_hat, est.se_report**2, est.n, est.df  # type: ignore[operator]
    n_eff = lam * (1 - lam) / var * (stats.t.ppf(0.025, n - 1) / stats.t.ppf(0.025, df)) ** 2
    lo = stats.beta.ppf(0.025, n_eff * lam, n_eff * (1 - lam) + 1)
    hi = stats.beta.ppf(0.975, n_eff * lam + 1, n_eff * (1 - lam))
    got = est.ci(0.95, "korn-graubard")
    assert got.low == pytest.approx((lo - 0.2) / 0.6, rel=1e-10)
    assert got.high == pytest.approx((hi - 0.2) / 0.6, rel=1e-10)
    t = stats.t.ppf(0.975, df)
    assert est.ci(0.95, "t") == pytest.approx((est.value - t * est.se, est.value + t * est.se))


def lonely_design(rule: str) -> tuple[SampleDesign, np.ndarray]:
    # strata A (PSUs 1, 2), B (PSUs 1, 2, 3) and C (one PSU): y is the report
    strata = np.array(list("AAAABBBBBBCC"))
    psu = np.array([1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 1, 1])
    w = np.array([1.0, 2, 1, 3, 2, 2, 1, 1, 4, 1, 2, 2])
    return SampleDesign(weights=w, strata=strata, psu=psu, lonely_psu=rule), w


def test_lonely_psu_fail_names_the_stratum() -> None:
    with pytest.raises(DataError, match=r"stratum 'C' has only one PSU.*'certainty'.*'average'"):
        lonely_design("fail")


@pytest.mark.parametrize("rule", ["certainty", "remove", "adjust", "average"])
def test_lonely_psu_rules_against_a_hand_computation(rule: str) -> None:
    design, w = lonely_design(rule)
    r = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1])
    d = Warner(0.8)
    est = survey_estimate(d, r, design)
    lam = np.sum(w * r) / np.sum(w)
    z = w * (r - lam) / np.sum(w)  # linearized scores of the weighted share
    totals = {"A": [z[0:2].sum(), z[2:4].sum()], "B": [z[4:6].sum(), z[6:8].sum(), z[8:10].sum()]}
    var = sum(len(t) / (len(t) - 1) * np.sum((np.array(t) - np.mean(t)) ** 2)
              for t in totals.values())  # fmt: skip
    if rule == "adjust":  # the lonely PSU centred at 0 (the scores of a share sum to 0)
        var += z[10:12].sum() ** 2
    if rule == "average":
        var *= 3 / 2
    assert est.se_report == pytest.approx(math.sqrt(var), rel=1e-12)
    assert est.df == 6 - 3


def test_fpc_multiplies_each_stratum_by_one_minus_f() -> None:
    stratum, psu, weights, reports = clustered_sample(strata=2)
    base = SampleDesign(weights=weights, strata=stratum, psu=psu)
    half = SampleDesign(weights=weights, strata=stratum, psu=psu, fpc=np.full(stratum.size, 10))
    d = Warner(0.8)
    assert survey_estimate(d, reports, half).se == pytest.approx(
        survey_estimate(d, reports, base).se * math.sqrt(0.5), rel=1e-12
    )


def test_categorical_and_oracle_frequencies_under_a_simple_random_sample() -> None:
    rng = np.random.default_rng(17)
    values = rng.choice(4, size=2000, p=[0.1, 0.2, 0.3, 0.4])
    for mech in (Categorical.from_epsilon(1.5, k=4), OUE.from_epsilon(1.5, k=4)):
        reports = mech.randomize(values, rng=2)
        plain = mech.estimate(mech.tally(reports))
        est = survey_estimate(mech, reports, SampleDesign(weights=np.full(2000, 2.0)))
        np.testing.assert_allclose(est.values, plain.values, rtol=1e-12)
        np.testing.assert_allclose(est.se, plain.se_unbiased, rtol=1e-10)
        np.testing.assert_allclose(est.totals, 4000 * plain.values, rtol=1e-12)
        cat = est.category(2)
        assert cat.ci(0.95, "exact") == pytest.approx(plain.category(2).ci(0.95, "exact"))


def test_categorical_frequencies_match_samplics_per_category() -> None:
    stratum, psu, weights, _ = clustered_sample(seed=19)
    mech = Categorical.from_epsilon(2.0, k=3)
    reports = mech.randomize(np.random.default_rng(3).choice(3, stratum.size), rng=5)
    est = survey_estimate(mech, reports, SampleDesign(weights=weights, strata=stratum, psu=psu))
    slope = mech.p_truthful
    for j in range(3):
        ref = samplics_taylor("mean")
        ref.estimate((reports == j).astype(float), weights, stratum=stratum,
                     psu=stratum * 100 + psu)  # fmt: skip
        assert est.lambda_hat[j] == pytest.approx(float(ref.point_est), rel=1e-12)
        assert est.se[j] == pytest.approx(float(ref.stderror) / slope, rel=1e-10)


def test_two_group_design_weighted_shares() -> None:
    rng = np.random.default_rng(23)
    design_rr = UnrelatedUnknown(p1=0.7, p2=0.3)
    n = 4000
    types = design_rr.types((rng.random(n) < 0.3).astype(int), unrelated=rng.random(n) < 0.5)
    reports = design_rr.randomize(types, rng=4)
    plain = design_rr.estimate(reports)
    est = survey_estimate(design_rr, reports, SampleDesign(weights=np.ones(n)))
    assert est.value == pytest.approx(plain.estimates["prevalence"].value, rel=1e-12)
    # per-group SEs with n_g - 1 against the design's (n - 1 over the whole sample): close
    assert est.se == pytest.approx(plain.estimates["prevalence"].se_unbiased, rel=2e-3)
    w = rng.uniform(1, 3, n)
    weighted = survey_estimate(design_rr, reports, SampleDesign(weights=w))
    g2 = reports >= 2
    yes = reports % 2
    lam = [np.sum(w[~g2] * yes[~g2]) / w[~g2].sum(), np.sum(w[g2] * yes[g2]) / w[g2].sum()]
    c, m = design_rr.linear_system()
    assert weighted.value == pytest.approx(float((np.linalg.inv(m) @ (np.array(lam) - c))[0]))


def test_t_interval_covers_at_its_level_over_stratified_clustered_samples() -> None:
    # A finite population of 20 strata x 30 clusters of 15; each run draws 6 clusters per
    # stratum without replacement (fpc), weights N_h / n_h, fresh Warner reports.  2,000
    # runs: coverage of the 95% t interval in [0.93, 0.97] fails by chance with probability
    # below 1e-4 (binomial, sd 0.0049); the Taylor variance is approximate, so a true
    # coverage near 0.95 is what this checks.
    rng = np.random.default_rng(2026)
    h_n, c_n, size, take = 20, 30, 15, 6
    effect = rng.normal(0, 0.8, (h_n, c_n))
    prob = 1 / (1 + np.exp(1.0 - effect - np.linspace(-1, 1, h_n)[:, None]))
    truth = (rng.random((h_n, c_n, size)) < prob[..., None]).astype(int)
    target = truth.mean()
    d = Warner(0.8)
    strata = np.repeat(np.arange(h_n), take * size)
    psu = np.tile(np.repeat(np.arange(take), size), h_n)
    design = SampleDesign(weights=np.full(strata.size, c_n / take), strata=strata, psu=psu,
                          fpc=np.full(strata.size, c_n))  # fmt: skip
    covered = 0
    runs = 2000
    for _ in range(runs):
        chosen = np.argsort(rng.random((h_n, c_n)), axis=1)[:, :take]
        sample = np.take_along_axis(truth, chosen[..., None], axis=1).reshape(-1)
        est = survey_estimate(d, d.randomize(sample, rng=rng), design)
        covered += est.ci(0.95, "t").covers(target)
    assert 0.93 <= covered / runs <= 0.97


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weights": [1.0, 0.0, 2.0]}, r"`weights` must be finite and > 0.*got 0.0 at row 1"),
        ({"weights": [1.0, -2.0, 2.0]}, r"`weights` must be finite and > 0.*got -2.0"),
        ({"weights": [1.0, np.nan, 2.0]}, r"`weights` must be finite and > 0.*got nan"),
        (
            {"weights": [1.0, 2.0, 2.0], "strata": [1, 2]},
            r"`strata` must have one entry per respondent \(3\), got 2",
        ),
        ({"weights": [1.0, 2.0, 2.0], "psu": [1, 2, 3, 4]}, r"`psu` must have one entry.*got 4"),
        (
            {"strata": [1.0, np.nan, 1.0]},
            r"`strata` must have a label for every respondent, got nan at row 1",
        ),
        ({"psu": ["a", None, "b"]}, r"`psu` must have a label.*None at row 1"),
        ({"strata": [1, 1, 2, 2], "fpc": [5, 5, 1, 1]}, r"N_h = 1 < n_h = 2 in stratum 2"),
        (
            {"strata": [1, 1, 2, 2], "fpc": [5, 6, 9, 9]},
            r"same on every row of a stratum.*stratum 1",
        ),
        (
            {"weights": [1.0, 2.0], "lonely_psu": "skip"},
            r"`lonely_psu` must be one of 'fail'.*got 'skip'",
        ),
        ({}, r"needs at least one of `weights`"),
    ],
)
def test_bad_design_input_is_refused_naming_the_parameter(kwargs: dict, match: str) -> None:
    with pytest.raises((DataError, ParameterError), match=match):
        SampleDesign(**kwargs)


def test_bad_estimate_input_is_refused() -> None:
    design = SampleDesign(weights=[1.0, 2.0, 3.0])
    with pytest.raises(
        DataError, match=r"`reports` must have one entry per respondent of the design \(3\), got 2"
    ):
        survey_estimate(Warner(0.8), [1, 0], design)
    with pytest.raises(DataError, match=r"`domain` must hold at least one respondent"):
        survey_estimate(Warner(0.8), [1, 0, 1], design, domain=[False, False, False])
    with pytest.raises(DataError, match=r"`domain` must be a 1-D boolean array"):
        survey_estimate(Warner(0.8), [1, 0, 1], design, domain=[0.5, 1, 1])
    with pytest.raises(TypeError, match=r"`design` must be a SampleDesign or a ReplicateDesign"):
        survey_estimate(Warner(0.8), [1, 0, 1], {"weights": [1, 2, 3]})
    with pytest.raises(DataError, match=r"`denominator` must be finite, got nan at row 2"):
        survey_ratio(np.ones(3), [1.0, 1.0, np.nan], design)


def test_results_print_and_convert() -> None:
    stratum, psu, weights, reports = clustered_sample()
    design = SampleDesign(weights=weights, strata=stratum, psu=psu)
    est = survey_estimate(Warner(0.8), reports, design)
    data = est.to_dict()
    assert data["variance_method"] == "Taylor linearization" and data["df"] == 32
    assert set(data) >= {"ci_t", "ci_wald", "ci_korn_graubard", "deff", "total", "se_total"}
    assert "Taylor linearization" in str(est)
    by = survey_by(Warner(0.8), reports, design, stratum % 2)
    assert len(by.to_dict()["domains"]) == 2 and "domain" in str(by)


# ---- replicate designs


def samplics_replicate(method: str, coefs: np.ndarray, y, w, reps, x=None):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from samplics.estimation import ReplicateEstimator
        from samplics.utils.types import PopParam, RepMethod
    param = PopParam.ratio if x is not None else PopParam.mean
    ref = ReplicateEstimator(getattr(RepMethod, method), param)
    ref.estimate(y, w, reps, x=x, rep_coefs=coefs)
    return ref


def test_jk1_weights_and_se_match_samplics() -> None:
    _, psu, weights, reports = clustered_sample(seed=29, strata=1, psus=30, size=6)
    from deniable.sampling import as_replicate

    design = SampleDesign(weights=weights, psu=psu)
    rep = as_replicate(design, "JK1")
    assert rep.replicates == 30 and rep.df == 29
    assert rep.scale == pytest.approx(29 / 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from samplics.utils.types import RepMethod
        from samplics.weighting import ReplicateWeight
    jk = ReplicateWeight(RepMethod.jackknife, strat=False)
    with warnings.catch_warnings():  # samplics calls a pandas API pandas deprecates
        warnings.simplefilter("ignore")
        table = jk.replicate(weights, psu)
    ref_reps = np.asarray(table.iloc[:, -30:], dtype=float)  # the 30 replicate columns
    np.testing.assert_allclose(np.sort(rep.replicate_weights, axis=1), np.sort(ref_reps, axis=1))
    d = Warner(0.8)
    est = survey_estimate(d, reports, rep)
    ref = samplics_replicate("jackknife", np.full(30, 29 / 30), reports.astype(float), weights,
                             rep.replicate_weights)  # fmt: skip
    assert est.se_report == pytest.approx(float(ref.stderror), rel=1e-10)
    # the delete-one-PSU jackknife of a ratio equals its Taylor variance to first order
    taylor = survey_estimate(d, reports, design)
    assert est.se == pytest.approx(taylor.se, rel=0.05)


def test_bootstrap_and_fay_se_match_samplics_on_the_same_replicates() -> None:
    from deniable.sampling import ReplicateDesign, as_replicate

    stratum, psu, weights, reports = clustered_sample(seed=31, strata=10, psus=2, size=10)
    design = SampleDesign(weights=weights, strata=stratum, psu=psu)
    d = Warner(0.8)
    boot = as_replicate(design, "bootstrap", replicates=100, seed=5)
    assert boot.scale == pytest.approx(1 / 99)
    est = survey_estimate(d, reports, boot)
    ref = samplics_replicate("bootstrap", np.full(100, 1 / 99), reports.astype(float), weights,
                             boot.replicate_weights)  # fmt: skip
    assert est.se_report == pytest.approx(float(ref.stderror), rel=1e-10)
    fay = as_replicate(design, "Fay", rho=0.5)
    assert fay.replicates == 16 and fay.scale == pytest.approx(1 / (16 * 0.25))
    est = survey_estimate(d, reports, fay)
    ref = samplics_replicate("brr", np.full(16, 1 / (16 * 0.25)), reports.astype(float),
                             weights, fay.replicate_weights)  # fmt: skip
    assert est.se_report == pytest.approx(float(ref.stderror), rel=1e-10)
    # BRR with a full Hadamard matrix reproduces the Taylor variance of a total exactly
    # (two PSUs per stratum, no fpc): (theta_r - theta)^2 averages to the stratum sums
    brr = as_replicate(design, "BRR", mse=True)
    y = debiased_reports(d, reports)
    t_brr = survey_estimate(d, reports, brr).se_total
    t_lin = survey_estimate(d, reports, design).se_total
    assert t_brr == pytest.approx(t_lin, rel=1e-10)
    assert y.shape == reports.shape
    assert isinstance(brr, ReplicateDesign)


def test_jkn_equals_taylor_for_a_total() -> None:
    # JKn of a linear estimator (a total) reproduces the Taylor variance exactly (Wolter 2007,
    # sec. 4.5): replicate (h, j) moves the total by n_h/(n_h-1) (zbar_h - z_hj) - ...
    from deniable.sampling import as_replicate

    stratum, psu, weights, reports = clustered_sample(seed=37)
    design = SampleDesign(weights=weights, strata=stratum, psu=psu)
    rep = as_replicate(design, "JKn", mse=True)
    d = Warner(0.8)
    assert survey_estimate(d, reports, rep).se_total == pytest.approx(
        survey_estimate(d, reports, design).se_total, rel=1e-10
    )
    assert rep.df == 8 * 5 - 8  # rank - 1: the strata's columns add to multiples of w


def test_bad_replicate_input_is_refused() -> None:
    from deniable.sampling import ReplicateDesign, as_replicate

    w = np.ones(4)
    with pytest.raises(
        DataError, match=r"`replicate_weights` must be a 2-D numeric array.*got shape \(4,\)"
    ):
        ReplicateDesign(np.ones(4), w)
    with pytest.raises(DataError, match=r"one row per respondent \(4.*got 3 rows"):
        ReplicateDesign(np.ones((3, 5)), w)
    with pytest.raises(DataError, match=r"`replicate_weights` must be finite and >= 0"):
        ReplicateDesign(np.full((4, 3), -1.0), w)
    with pytest.raises(ParameterError, match=r"`method` must be one of 'JK1'.*got 'jack'"):
        ReplicateDesign(np.ones((4, 3)), w, method="jack")
    with pytest.raises(ParameterError, match=r"`rscales` must be given for method 'JKn'"):
        ReplicateDesign(np.ones((4, 3)), w, method="JKn")
    with pytest.raises(ParameterError, match=r"`rho` must be given for method 'Fay'"):
        ReplicateDesign(np.ones((4, 3)), w, method="Fay")
    with pytest.raises(ParameterError, match=r"'JK1' is for an unstratified design, got 2 strata"):
        as_replicate(SampleDesign(strata=[1, 1, 2, 2]), "JK1")
    with pytest.raises(DataError, match=r"exactly 2 PSUs in every stratum, got 3 in stratum 1"):
        as_replicate(SampleDesign(strata=[1, 1, 1, 2, 2]), "BRR")
    with pytest.raises(
        DataError, match=r"`reports` must have one entry per respondent of the design \(4\)"
    ):
        survey_estimate(Warner(0.8), [1, 0], ReplicateDesign(np.ones((4, 3)), w))


# ---- weighting


def test_post_stratify_meets_the_population_counts() -> None:
    from deniable.sampling import post_stratify

    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    g = np.array(["a", "a", "b", "b", "b"])
    out = post_stratify(SampleDesign(weights=w), g, {"a": 30, "b": 70})
    np.testing.assert_allclose(out.weights, [10, 20, 70 * 3 / 12, 70 * 4 / 12, 70 * 5 / 12])
    shares = post_stratify(SampleDesign(weights=w), g, {"a": 0.5, "b": 0.5})
    np.testing.assert_allclose(shares.weights[:2].sum(), 7.5)
    with pytest.raises(DataError, match=r"no respondent in the sample \(\['c'\]\)"):
        post_stratify(SampleDesign(weights=w), g, {"a": 1, "b": 2, "c": 3})
    with pytest.raises(DataError, match=r"got none for 'b'"):
        post_stratify(SampleDesign(weights=w), g, {"a": 1})


def test_rake_two_margins_converges_to_both_and_to_the_closed_form() -> None:
    # Closed form: raking keeps the sample table's odds ratios (Deming & Stephan 1940).  With
    # equal starting weights and cell counts n_ij = a_i b_j (odds ratios 1), the raked cell
    # totals are the independence fit R_i C_j / N, so each weight is R_i C_j / (N n_ij).
    from deniable.sampling import kish_deff, rake

    a, b = [3, 2], [1, 2, 3]
    sex, age = [], []
    for i, s_ in enumerate("fm"):
        for j, g in enumerate(("young", "mid", "old")):
            sex += [s_] * (a[i] * b[j])
            age += [g] * (a[i] * b[j])
    sex_a, age_a = np.array(sex), np.array(age)
    sex_t = {"f": 5100.0, "m": 4900.0}
    age_t = {"young": 3000.0, "mid": 4000.0, "old": 3000.0}
    out = rake(SampleDesign(weights=np.ones(sex_a.size)),
               {"sex": (sex_a, sex_t), "age": (age_a, age_t)}, tolerance=1e-12)  # fmt: skip
    for i, s_ in enumerate("fm"):
        for j, g in enumerate(("young", "mid", "old")):
            cell = (sex_a == s_) & (age_a == g)
            expect = sex_t[s_] * age_t[g] / 10000.0 / (a[i] * b[j])
            np.testing.assert_allclose(out.weights[cell], expect, rtol=1e-10)
    w = out.weights
    assert kish_deff(w) == pytest.approx(w.size * np.sum(w**2) / w.sum() ** 2)
    # shares give the same weights scaled to the starting total
    shares = rake(SampleDesign(weights=np.ones(sex_a.size)),
                  {"sex": (sex_a, {"f": 0.51, "m": 0.49}),
                   "age": (age_a, {"young": 0.3, "mid": 0.4, "old": 0.3})})  # fmt: skip
    np.testing.assert_allclose(shares.weights, w * sex_a.size / 10000.0, rtol=1e-7)


def test_rake_refuses_inconsistent_margins_and_says_when_it_does_not_converge() -> None:
    from deniable.sampling import rake

    sex = np.array(["f", "m", "m"])
    age = np.array(["y", "y", "o"])
    design = SampleDesign(weights=np.ones(3))
    with pytest.raises(DataError, match=r"must add to the same population total.*sex: 10.*age: 12"):
        rake(design, {"sex": (sex, {"f": 5, "m": 5}), "age": (age, {"y": 6, "o": 6})})
    # every f is y: f = 9 and y = 1 cannot both hold, so raking cannot converge
    tight = {"sex": (sex, {"f": 9, "m": 1}), "age": (age, {"y": 1, "o": 9})}
    with pytest.raises(DataError, match=r"raking did not converge: after 20 iterations"):
        rake(design, tight, max_iterations=20)
    with pytest.warns(RuntimeWarning, match=r"raking did not converge"):
        rake(design, tight, max_iterations=20, on_failure="warn")


def test_trim_weights_keeps_the_total_and_the_bounds() -> None:
    from deniable.sampling import trim_weights

    w = np.array([1.0, 1.0, 1.0, 1.0, 16.0])
    out = trim_weights(SampleDesign(weights=w), upper=6.0)
    assert out.weights.sum() == pytest.approx(20.0)
    assert out.weights.max() <= 6.0 + 1e-12
    np.testing.assert_allclose(out.weights, [3.5, 3.5, 3.5, 3.5, 6.0])
    with pytest.raises(DataError, match=r"cannot keep the weight total 20"):
        trim_weights(SampleDesign(weights=w), upper=3.0)
    with pytest.raises(ParameterError, match=r"`lower` must be below `upper`"):
        trim_weights(SampleDesign(weights=w), lower=5, upper=4)


def test_weighting_a_replicate_design_adjusts_every_replicate() -> None:
    from deniable.sampling import as_replicate, post_stratify

    _, psu, weights, _ = clustered_sample(seed=43, strata=1, psus=10, size=5)
    rep = as_replicate(SampleDesign(weights=weights, psu=psu), "JK1")
    g = np.arange(weights.size) % 2
    out = post_stratify(rep, g, {0: 100.0, 1: 300.0})
    sums = np.array([[out.replicate_weights[g == k, r].sum() for r in range(10)] for k in (0, 1)])
    np.testing.assert_allclose(sums, [[100.0] * 10, [300.0] * 10])


def test_labels_of_any_kind_and_range_give_the_same_design() -> None:
    # small-range integers take a sort-free path; strings and huge integers np.unique's
    stratum, psu, weights, reports = clustered_sample(seed=47)
    d = Warner(0.8)
    base = survey_estimate(d, reports, SampleDesign(weights=weights, strata=stratum, psu=psu))
    for s_lab, p_lab in (
        (np.char.add("s", stratum.astype(str)), np.char.add("p", psu.astype(str))),
        (stratum.astype(np.int64) * 10**15 - 7, psu * 10**12),
        (stratum - 3, psu.astype(np.uint8)),
    ):
        other = survey_estimate(d, reports, SampleDesign(weights=weights, strata=s_lab, psu=p_lab))
        assert other.se == pytest.approx(base.se, rel=1e-12)
        assert other.df == base.df


def test_every_mechanism_is_estimated_or_refused_clearly(mechanism: Any) -> None:
    # Under an equal-weight simple random sample the design-based value is the mechanism's
    # own moment estimate, whatever the mechanism; those without a per-report de-biasing
    # (noise, numeric means, memoized binary RR) are refused naming what is supported.
    k = getattr(mechanism, "n_truths", 2) or 2
    values = np.random.default_rng(1).integers(0, min(k, 64), 400)
    reports = mechanism.randomize(values, rng=3)
    design = SampleDesign(weights=np.full(len(reports), 2.0))
    plain = mechanism.estimate(mechanism.tally(reports))
    try:
        est = survey_estimate(mechanism, reports, design)
    except DataError as exc:
        assert "must be a binary design" in str(exc)
        assert not hasattr(plain, "slope") and not hasattr(plain, "estimates")
        return
    if hasattr(plain, "estimates"):  # two-group
        expect: Any = plain.estimates["prevalence"].value
    else:
        expect = plain.values if hasattr(plain, "values") else plain.value
    got = est.values if hasattr(est, "values") else est.value
    np.testing.assert_allclose(got, expect, rtol=1e-9, atol=1e-12)


def test_lonely_psu_adjust_centres_a_total_at_zero_as_r_does() -> None:
    # R's survey:::onestrat leaves a lonely PSU's total uncentred under "adjust"; for a
    # Horvitz-Thompson total (scores w y that do not sum to 0) that is its square times 1 - f
    design, w = lonely_design("adjust")
    r = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1])
    d = Warner(0.8)
    y = (r - 0.2) / 0.6
    z = w * y
    totals = {"A": [z[0:2].sum(), z[2:4].sum()], "B": [z[4:6].sum(), z[6:8].sum(), z[8:10].sum()]}
    var = sum(len(t) / (len(t) - 1) * np.sum((np.array(t) - np.mean(t)) ** 2)
              for t in totals.values())  # fmt: skip
    var += z[10:12].sum() ** 2
    assert survey_estimate(d, r, design).se_total == pytest.approx(math.sqrt(var), rel=1e-12)


def test_pandas_series_are_read_by_value_and_results_pickle() -> None:
    import pickle

    import pandas as pd

    stratum, psu, weights, reports = clustered_sample(seed=53)
    frame = pd.DataFrame({"w": weights, "s": stratum.astype(str), "p": psu, "r": reports})
    design = SampleDesign(weights=frame["w"], strata=frame["s"], psu=frame["p"])
    est = survey_estimate(Warner(0.8), frame["r"], design)
    base = survey_estimate(
        Warner(0.8), reports, SampleDesign(weights=weights, strata=stratum, psu=psu)
    )
    assert est.se == pytest.approx(base.se, rel=1e-12)
    assert pickle.loads(pickle.dumps(est)) == est
    frame.loc[3, "s"] = None
    with pytest.raises(
        DataError, match=r"`strata` must have a label for every respondent, got (None|nan) at row 3"
    ):
        SampleDesign(weights=frame["w"], strata=frame["s"], psu=frame["p"])
    freq = survey_by(Categorical.from_epsilon(1.0, k=3), reports, design, stratum % 2)
    assert "Estimates by domain" in str(freq)
    assert len(freq.to_dict()["domains"]) == 2


def test_post_stratified_taylor_variance_against_the_closed_form() -> None:
    # Simple random sample post-stratified to known counts N_g, weights N_g / n_g: the
    # linearized variance of the mean is n/(n-1) sum_g (N_g/n_g)^2 sum_{i in g} (y_i -
    # ybar_g)^2 / N^2 (the residuals from each post-stratum's mean; Sarndal et al. 1992)
    from deniable.sampling import post_stratify

    rng = np.random.default_rng(59)
    n = 900
    g = rng.choice(3, n, p=[0.2, 0.3, 0.5])
    d = Warner(0.8)
    reports = d.randomize((rng.random(n) < np.array([0.1, 0.3, 0.6])[g]).astype(int), rng=2)
    counts = {0: 3000.0, 1: 3000.0, 2: 4000.0}
    design = post_stratify(SampleDesign(weights=np.ones(n)), g, counts)
    est = survey_estimate(d, reports, design)
    y = debiased_reports(d, reports)
    var = 0.0
    for k, big_n in counts.items():
        yk = y[g == k]
        var += (big_n / yk.size) ** 2 * np.sum((yk - yk.mean()) ** 2)
    var *= n / (n - 1) / 10000.0**2
    assert est.se == pytest.approx(math.sqrt(var), rel=1e-10)
    unadjusted = survey_estimate(d, reports, SampleDesign(weights=design.weights))
    assert est.se < unadjusted.se  # the known counts remove the between-cell variance


def test_calibrated_margins_have_no_variance_and_trimming_drops_them() -> None:
    from deniable.sampling import post_stratify, rake, trim_weights

    stratum, psu, weights, reports = clustered_sample(seed=61)
    base = SampleDesign(weights=weights, strata=stratum, psu=psu)
    sex = np.where(np.arange(reports.size) % 3 == 0, "f", "m")
    age = np.random.default_rng(2).choice(["y", "o"], reports.size)
    raked = rake(base, {"sex": (sex, {"f": 0.5, "m": 0.5}), "age": (age, {"y": 0.4, "o": 0.6})},
                 tolerance=1e-12)  # fmt: skip
    for labels, level in ((sex, "f"), (age, "y")):
        share = survey_ratio((labels == level).astype(float), np.ones(reports.size), raked)
        assert share.se < 1e-9  # a calibrated margin is known, not estimated
        assert survey_ratio((labels == level).astype(float), np.ones(reports.size), base).se > 1e-3
    one = rake(base, {"sex": (sex, {"f": 300.0, "m": 700.0})})
    ps = post_stratify(base, sex, {"f": 300.0, "m": 700.0})
    d = Warner(0.8)
    assert survey_estimate(d, reports, one).se == pytest.approx(
        survey_estimate(d, reports, ps).se, rel=1e-9
    )
    trimmed = trim_weights(ps, upper=float(np.quantile(ps.weights, 0.9)))
    assert trimmed.calibration == ()
    share = survey_ratio((sex == "f").astype(float), np.ones(reports.size), trimmed)
    assert share.se > 1e-3
