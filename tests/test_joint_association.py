"""Association measures and tests of independence for two randomized-response items:
closed forms without randomization, Fox & Tracy's correction, seeded simulations of the
odds ratio's coverage and the Wald test's size, the survey design, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from deniable.designs import Categorical, Custom, Warner
from deniable.estimation import association, independence_test, joint_estimate
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.oracles import OUE
from deniable.sampling import SampleDesign

DIRECT = Custom(1.0, 0.0)  # no randomization: the report is the answer


def _dependent(rng: np.random.Generator, n: int, design: Warner):
    x1 = (rng.random(n) < 0.3).astype(int)
    x2 = (rng.random(n) < np.where(x1 == 1, 0.6, 0.2)).astype(int)
    return design.randomize(x1, rng=rng), design.randomize(x2, rng=rng)


def test_without_randomization_the_measures_are_the_sample_ones() -> None:
    rng = np.random.default_rng(11)
    x1 = (rng.random(400) < 0.4).astype(int)
    x2 = (rng.random(400) < np.where(x1 == 1, 0.5, 0.25)).astype(int)
    n = np.array([[np.sum((x1 == a) & (x2 == b)) for b in (0, 1)] for a in (0, 1)])
    result = association(joint_estimate([DIRECT, DIRECT], [x1, x2]))
    odds = result["odds_ratio"]
    assert odds.value == pytest.approx(n[1, 1] * n[0, 0] / (n[1, 0] * n[0, 1]), rel=1e-9)
    assert odds.se == pytest.approx(math.sqrt(np.sum(1 / n)), rel=1e-5)  # Woolf (1955)
    z = stats.norm.ppf(0.975)
    assert odds.ci.low == pytest.approx(odds.value * math.exp(-z * odds.se), rel=1e-9)
    risk1, risk0 = n[1, 1] / n[1].sum(), n[0, 1] / n[0].sum()
    assert result["risk_difference"].value == pytest.approx(risk1 - risk0, rel=1e-9)
    # the SE of a difference of two independent binomial proportions
    se_rd = math.sqrt(risk1 * (1 - risk1) / n[1].sum() + risk0 * (1 - risk0) / n[0].sum())
    assert result["risk_difference"].se == pytest.approx(se_rd, rel=1e-5)
    assert result["relative_risk"].value == pytest.approx(risk1 / risk0, rel=1e-9)
    phi = np.corrcoef(x1, x2)[0, 1]
    assert result["correlation"].value == pytest.approx(phi, rel=1e-9)
    assert result["report_correlation"].value == pytest.approx(phi, rel=1e-9)
    assert result["cramers_v"].value == pytest.approx(abs(phi), rel=1e-9)


def test_the_corrected_correlation_is_fox_and_tracys() -> None:
    w = Warner(0.75)
    r1, r2 = _dependent(np.random.default_rng(12), 3000, w)
    result = association(joint_estimate([w, w], [r1, r2]))
    # Fox & Tracy (1984): the reports' covariance over the slopes, over the true SDs
    slope = w.p_yes_given_1 - w.p_yes_given_0
    cov_r = np.mean(r1 * r2) - r1.mean() * r2.mean()
    pi1 = (r1.mean() - w.p_yes_given_0) / slope
    pi2 = (r2.mean() - w.p_yes_given_0) / slope
    fox_tracy = cov_r / slope**2 / math.sqrt(pi1 * (1 - pi1) * pi2 * (1 - pi2))
    assert result["correlation"].value == pytest.approx(fox_tracy, rel=1e-9)
    # the reports' own correlation is attenuated toward 0
    reports = np.corrcoef(r1, r2)[0, 1]
    assert result["report_correlation"].value == pytest.approx(reports, rel=1e-9)
    assert 0 < reports < result["correlation"].value


def test_odds_ratio_interval_covers_the_truth() -> None:
    # true OR = (0.6 / 0.4) / (0.2 / 0.8) = 6; 400 samples of 2,000 with Warner(0.8).
    # Coverage of the 95% log-scale interval within [0.92, 0.98]: +-2.75 binomial SDs,
    # a false alarm about 0.6% of the time for an exact 95% interval.
    rng = np.random.default_rng(13)
    w = Warner(0.8)
    covered = 0
    for _ in range(400):
        r1, r2 = _dependent(rng, 2000, w)
        ci = association(joint_estimate([w, w], [r1, r2]))["odds_ratio"].ci
        covered += ci.low <= 6.0 <= ci.high
    assert 0.92 <= covered / 400 <= 0.98


def test_wald_test_holds_its_size_and_independence_holds_in_expectation() -> None:
    # 2,000 samples of 800 respondents with independent items (prevalences 0.3 and 0.4),
    # Warner(0.8).  Rejections at 5% within [0.035, 0.065]: +-3.1 binomial SDs, a false
    # alarm about 0.2% of the time.  The mean interaction contrast p11 - p1. p.1 is 0
    # within 4 standard errors of the mean (false alarm < 1e-4).
    rng = np.random.default_rng(14)
    w = Warner(0.8)
    rejected = 0
    contrasts = []
    for _ in range(2000):
        x1 = (rng.random(800) < 0.3).astype(int)
        x2 = (rng.random(800) < 0.4).astype(int)
        joint = joint_estimate([w, w], [w.randomize(x1, rng=rng), w.randomize(x2, rng=rng)])
        rejected += independence_test(joint).p_value < 0.05
        t = joint.as_array()
        contrasts.append(t[1, 1] - t[1].sum() * t[:, 1].sum())
    assert 0.035 <= rejected / 2000 <= 0.065
    c = np.asarray(contrasts)
    assert abs(c.mean()) <= 4 * c.std() / math.sqrt(c.size)


def test_the_three_tests_agree_on_a_large_sample() -> None:
    w = Warner(0.8)
    r1, r2 = _dependent(np.random.default_rng(15), 4000, w)
    joint = joint_estimate([w, w], [r1, r2])
    wald = independence_test(joint)
    rao_scott = independence_test(joint, method="rao-scott")
    lr = independence_test(joint, method="lr")
    assert wald.reference == rao_scott.reference == lr.reference == "chi2(1)"
    assert rao_scott.statistic == pytest.approx(wald.statistic, rel=1e-9)  # deltas are 1
    assert lr.statistic == pytest.approx(wald.statistic, rel=0.1)
    assert wald.p_value == pytest.approx(stats.chi2.sf(wald.statistic, 1))
    assert wald.p_value < 1e-6


def test_categorical_items_give_cramers_v_and_a_test_on_their_contrasts() -> None:
    rng = np.random.default_rng(16)
    cat = Categorical(3, 0.8)
    x1 = rng.integers(0, 3, 3000)
    x2 = (x1 + (rng.random(3000) < 0.5)) % 3  # strongly dependent
    joint = joint_estimate([cat, cat], [cat.randomize(x1, rng=rng), cat.randomize(x2, rng=rng)])
    result = association(joint)
    assert [m.name for m in result.measures] == ["cramers_v"]
    assert 0.4 < result["cramers_v"].value <= 1
    assert any("biased upward" in note for note in result.notes)
    test = independence_test(joint)
    assert test.reference == "chi2(4)" and test.p_value < 1e-6


def test_under_a_design_the_tests_use_the_design_df_and_deltas() -> None:
    rng = np.random.default_rng(17)
    n, clusters = 1200, 40
    psu = np.repeat(np.arange(clusters), n // clusters)
    effect = rng.normal(0, 1, clusters)[psu]
    x1 = (rng.random(n) < 1 / (1 + np.exp(1 - effect))).astype(int)
    x2 = (rng.random(n) < 1 / (1 + np.exp(1 - effect))).astype(int)  # both follow the PSU
    w = Warner(0.8)
    r1, r2 = w.randomize(x1, rng=rng), w.randomize(x2, rng=rng)
    design = SampleDesign(psu=psu)
    joint = joint_estimate([w, w], [r1, r2], design=design)
    wald = independence_test(joint)
    f = design.df
    assert wald.reference == f"F(1, {f})"
    raw = joint.values[3] - (joint.values[2] + joint.values[3]) * (
        joint.values[1] + joint.values[3]
    )
    assert wald.statistic > 0 and raw > 0
    rs = independence_test(joint, method="rao-scott")
    assert rs.deltas[0] > 0 and rs.deltas[0] != pytest.approx(1, abs=0.05)  # the design counts
    srs = independence_test(joint_estimate([w, w], [r1, r2]))
    # first order: the SRS statistic (same randomization) divided by the design effect
    assert rs.statistic == pytest.approx(srs.statistic / rs.deltas[0], rel=1e-6)
    # the adjusted Wald of one contrast: W * (f - d + 1) / (f d) = W for d = 1
    assert wald.statistic == pytest.approx(srs.statistic / rs.deltas[0], rel=1e-6)
    assert wald.p_value == pytest.approx(stats.f.sf(wald.statistic, 1, f))


def test_too_few_design_df_for_the_contrasts_says_so() -> None:
    rng = np.random.default_rng(18)
    cat = Categorical(3, 0.8)
    x1, x2 = rng.integers(0, 3, 600), rng.integers(0, 3, 600)
    design = SampleDesign(psu=np.repeat(np.arange(4), 150))  # df = 3 < 4 contrasts
    joint = joint_estimate([cat, cat], [cat.randomize(x1, rng=rng), cat.randomize(x2, rng=rng)],
                           design=design)  # fmt: skip
    test = independence_test(joint)
    assert math.isnan(test.p_value)
    assert "method='rao-scott'" in test.notes[0]
    assert math.isfinite(independence_test(joint, method="rao-scott").p_value)


def test_results_print_and_convert() -> None:
    w = Warner(0.8)
    joint = joint_estimate([w, w], list(_dependent(np.random.default_rng(19), 500, w)))
    assert "odds ratio" in str(association(joint))
    data = association(joint).to_dict()
    assert data["measures"][0]["name"] == "odds_ratio" and data["measures"][0]["se_scale"] == "log"
    assert "chi2(1)" in str(independence_test(joint))
    assert independence_test(joint, method="rao-scott").to_dict()["second_order"]["df"] == 1


def test_bad_input_names_the_parameter() -> None:
    w = Warner(0.8)
    joint = joint_estimate([w, w], list(_dependent(np.random.default_rng(20), 300, w)))
    with pytest.raises(ParameterTypeError, match="`joint` must be a JointEstimate"):
        association("table")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`items` must be a pair"):
        association(joint, items=(0,))
    with pytest.raises(ParameterError, match="`estimator` must be one of"):
        association(joint, estimator="bayes")
    with pytest.raises(ParameterError, match="`method` must be one of 'wald', 'rao-scott', 'lr'"):
        independence_test(joint, method="fisher")
    with pytest.raises(ParameterError, match="`items` must be an integer in"):
        independence_test(joint, items=(0, 2))
    rng = np.random.default_rng(21)
    oue = OUE.from_epsilon(1.0, k=3)
    x = rng.integers(0, 3, 300)
    mixed = joint_estimate([oue, w], [oue.randomize(x, rng=rng), w.randomize(x % 2, rng=rng)])
    with pytest.raises(ParameterError, match="`method` 'lr' needs the EM fits"):
        independence_test(mixed, method="lr")
    assert math.isfinite(independence_test(mixed).statistic)  # the Wald test works


def test_design_based_tests_hold_their_size_on_a_clustered_sample() -> None:
    # 600 samples of 40 clusters x 20 respondents; each item follows its own cluster
    # effect (intra-cluster correlation), the items are independent.  Rejections at 5%
    # of the adjusted Wald F and the first-order Rao-Scott test within [0.024, 0.076]:
    # +-2.9 binomial SDs each, a false alarm about 0.4% of the time per test.
    rng = np.random.default_rng(22)
    w = Warner(0.8)
    clusters, size = 40, 20
    psu = np.repeat(np.arange(clusters), size)
    design = SampleDesign(psu=psu)
    rejected = {"wald": 0, "rao-scott": 0}
    for _ in range(600):
        e1, e2 = rng.normal(0, 1, (2, clusters))
        x1 = (rng.random(psu.size) < 1 / (1 + np.exp(1 - e1[psu]))).astype(int)
        x2 = (rng.random(psu.size) < 1 / (1 + np.exp(0.5 - e2[psu]))).astype(int)
        reports = [w.randomize(x1, rng=rng), w.randomize(x2, rng=rng)]
        joint = joint_estimate([w, w], reports, design=design)
        for method in rejected:
            rejected[method] += independence_test(joint, method=method).p_value < 0.05
    for method, count in rejected.items():
        assert 0.024 <= count / 600 <= 0.076, method


def test_mle_measures_on_the_boundary_have_no_valid_se() -> None:
    # the true P(x1 = 1, x2 = 1) is 0; with this seed the MLE puts that cell on the boundary
    rng = np.random.default_rng(6)
    x1 = (rng.random(150) < 0.3).astype(int)
    x2 = np.where(x1 == 1, 0, (rng.random(150) < 0.3).astype(int))
    w = Warner(0.75)
    joint = joint_estimate([w, w], [w.randomize(x1, rng=rng), w.randomize(x2, rng=rng)])
    moment = association(joint)
    assert math.isnan(moment["odds_ratio"].value)  # a negative cell: not defined
    assert any("use estimator='mle'" in note for note in moment.notes)
    mle = association(joint, estimator="mle")
    assert mle["risk_difference"].value < 0
    assert math.isnan(mle["risk_difference"].se)
    assert any("boundary" in note for note in mle.notes)
