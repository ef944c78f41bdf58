"""deniable.sampling: replicate designs and weights computed (post-stratification, raking,
trimming), checked against samplics and closed forms."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from _sampling_data import clustered_sample
from deniable.designs import Categorical, Warner
from deniable.exceptions import DataError, ParameterError
from deniable.sampling import SampleDesign, debiased_reports, survey_estimate, survey_ratio

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


def test_replicate_designs_estimate_domains_and_frequencies() -> None:
    # JKn reproduces the Taylor variance to first order for domain means and frequencies
    # (Wolter 2007, ch. 4): within 5% on 40 PSUs here, deterministic (seeded data)
    from deniable.sampling import as_replicate

    stratum, psu, weights, reports = clustered_sample(seed=67)
    design = SampleDesign(weights=weights, strata=stratum, psu=psu)
    rep = as_replicate(design, "JKn")
    d = Warner(0.8)
    dom = stratum < 4
    taylor = survey_estimate(d, reports, design, domain=dom)
    jack = survey_estimate(d, reports, rep, domain=dom)
    assert jack.value == pytest.approx(taylor.value, rel=1e-12)
    assert jack.se == pytest.approx(taylor.se, rel=0.05)
    assert "replicate-weights design" in jack.exact_reason
    mech = Categorical.from_epsilon(2.0, k=3)
    cats = mech.randomize(np.random.default_rng(4).choice(3, reports.size), rng=6)
    ft, fj = survey_estimate(mech, cats, design), survey_estimate(mech, cats, rep)
    np.testing.assert_allclose(fj.values, ft.values, rtol=1e-12)
    np.testing.assert_allclose(fj.se, ft.se, rtol=0.05)
    assert "JKn replicates" in str(fj)
