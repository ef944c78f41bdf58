"""deniable.sampling: the design object, Taylor variances and design-based RR estimates,
checked against closed forms derived here and against samplics (a dev dependency)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from _sampling_data import clustered_sample, samplics_taylor
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
