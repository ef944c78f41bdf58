"""Joint estimation of several randomized-response items (deniable.estimation.joint_estimate):
closed forms, the MLE against the moment estimator, the survey design, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.designs import (
    Categorical,
    Custom,
    ForcedResponse,
    Kuk,
    StochasticLieDetector,
    Warner,
)
from deniable.estimation import JointEstimate, joint_estimate
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.sampling import SampleDesign, as_replicate, survey_estimate, survey_ratio

DIRECT = Custom(1.0, 0.0)  # no randomization: the report is the answer


def _two_items(seed: int, n: int, p: float = 0.8, prev: float = 0.3):
    """Two dependent binary answers (P(x2 = 1 | x1) = 0.6 or 0.2), Warner(p) reports."""
    rng = np.random.default_rng(seed)
    x1 = (rng.random(n) < prev).astype(int)
    x2 = (rng.random(n) < np.where(x1 == 1, 0.6, 0.2)).astype(int)
    w = Warner(p)
    return w, x1, x2, w.randomize(x1, rng=rng), w.randomize(x2, rng=rng)


def _warner_inverse(p: float) -> np.ndarray:
    # the inverse of [[p, 1-p], [1-p, p]] by hand: [[p, -(1-p)], [-(1-p), p]] / (2p - 1)
    return np.array([[p, -(1 - p)], [-(1 - p), p]]) / (2 * p - 1)


def test_two_warner_items_invert_the_kronecker_channel_by_hand() -> None:
    w, _, _, r1, r2 = _two_items(1, 500, p=0.7)
    est = joint_estimate([w, w], [r1, r2])
    freq = np.array([np.mean((r1 == a) & (r2 == b)) for a in (0, 1) for b in (0, 1)])
    inv = _warner_inverse(0.7)
    # the 4x4 inverse of kron(P, P), entry by entry: inv[a, c] * inv[b, d]
    hand = np.array(
        [[inv[a, c] * inv[b, d] for c in (0, 1) for d in (0, 1)] for a in (0, 1) for b in (0, 1)]
    )
    assert est.values == pytest.approx(hand @ freq, abs=1e-12)
    # multinomial delta method: A^-1 (diag(lambda) - lambda lambda^T) A^-T / n
    cov = hand @ (np.diag(freq) - np.outer(freq, freq)) @ hand.T / 500
    assert est.covariance == pytest.approx(cov, abs=1e-12)
    assert est.cells == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert est.values.sum() == pytest.approx(1.0)


def test_without_randomization_the_estimate_is_the_raw_joint_share() -> None:
    rng = np.random.default_rng(2)
    x1, x2 = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    est = joint_estimate([DIRECT, DIRECT], [x1, x2])
    freq = np.array([np.mean((x1 == a) & (x2 == b)) for a in (0, 1) for b in (0, 1)])
    assert est.values == pytest.approx(freq, abs=1e-12)
    assert est.se == pytest.approx(np.sqrt(freq * (1 - freq) / 300), abs=1e-12)
    assert est.mle == pytest.approx(freq, abs=1e-8)


def test_margins_are_the_single_item_estimates() -> None:
    w, _, _, r1, r2 = _two_items(3, 400)
    est = joint_estimate([w, w], [r1, r2])
    first = est.marginal([0])
    single = w.estimate(w.tally(r1))
    assert first.values[1] == pytest.approx(single.value, abs=1e-12)
    assert np.sqrt(first.covariance[1, 1]) == pytest.approx(single.se, rel=1e-9)


def test_three_items_of_different_designs() -> None:
    rng = np.random.default_rng(4)
    n = 3000
    cat = Categorical(3, 0.7)
    fr = ForcedResponse(0.1, 0.15)
    kuk = Kuk(0.7, 0.3, 3)
    x = [rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 2, n)]
    reports = [m.randomize(xi, rng=rng) for m, xi in zip((cat, fr, kuk), x, strict=True)]
    est = joint_estimate([cat, fr, kuk], reports)
    assert est.shape == (3, 2, 2) and est.k == 12
    assert est.values.sum() == pytest.approx(1.0)
    assert est.mle is not None and est.mle.sum() == pytest.approx(1.0)
    # the pair (0, 1) of a three-item joint is the joint of those two items alone
    pair = joint_estimate([cat, fr], reports[:2])
    sub = est.marginal((0, 1))
    assert sub.values == pytest.approx(pair.values, abs=1e-12)
    assert sub.covariance == pytest.approx(pair.covariance, abs=1e-12)
    assert sub.mle == pytest.approx(pair.mle, abs=1e-6)


def test_mle_equals_the_moment_estimate_inside_the_simplex() -> None:
    w, _, _, r1, r2 = _two_items(5, 4000)
    est = joint_estimate([w, w], [r1, r2])
    assert (est.values > 0).all()
    assert est.mle == pytest.approx(est.values, abs=1e-8)
    # and its observed-information covariance is the delta method's there
    assert est.mle_covariance == pytest.approx(est.covariance, rel=1e-5, abs=1e-12)
    assert not est.mle_boundary


def test_mle_stays_in_the_simplex_when_the_moment_estimate_leaves_it() -> None:
    # a rare joint cell: P(x1 = 1, x2 = 1) = 0 in truth; with few respondents the moment
    # estimate of that cell goes negative for this seed
    rng = np.random.default_rng(6)
    n = 150
    x1 = (rng.random(n) < 0.3).astype(int)
    x2 = np.where(x1 == 1, 0, (rng.random(n) < 0.3).astype(int))
    w = Warner(0.75)
    est = joint_estimate([w, w], [w.randomize(x1, rng=rng), w.randomize(x2, rng=rng)])
    assert est.values.min() < 0
    assert any("leaves the simplex" in note for note in est.notes)
    assert est.mle is not None and est.mle.min() >= 0 and est.mle.sum() == pytest.approx(1)
    assert est.mle_boundary == (3,)
    assert np.isnan(est.mle_covariance[3, 3])  # type: ignore[index]
    assert any("boundary" in note for note in est.notes)
    # the MLE's log-likelihood beats every other point of the simplex tried
    a = np.kron(np.asarray(w.channel), np.asarray(w.channel))
    lam = est.report_shares
    assert lam is not None

    def ll(pi: np.ndarray) -> float:
        return float(lam @ np.log(a @ pi))

    for other in np.random.default_rng(0).dirichlet(np.ones(4), 200):
        assert ll(est.mle) >= ll(other) - 1e-9


def _clustered(seed: int = 7, clusters: int = 40, size: int = 15):
    rng = np.random.default_rng(seed)
    n = clusters * size
    psu = np.repeat(np.arange(clusters), size)
    effect = rng.normal(0, 1.0, clusters)[psu]
    x1 = (rng.random(n) < 1 / (1 + np.exp(1 - effect))).astype(int)
    x2 = (rng.random(n) < 1 / (1 + np.exp(0.5 - effect - x1))).astype(int)
    w = Warner(0.8)
    weights = rng.uniform(1, 3, n)
    return w, psu, weights, w.randomize(x1, rng=rng), w.randomize(x2, rng=rng)


def test_design_estimate_is_the_survey_ratio_of_the_joint_indicator() -> None:
    w, psu, weights, r1, r2 = _clustered()
    design = SampleDesign(weights=weights, psu=psu)
    est = joint_estimate([w, w], [r1, r2], design=design)
    # cell (1, 1): the de-biased indicators' product, through sampling's public ratio
    y1 = (r1 - 0.2) / 0.6
    y2 = (r2 - 0.2) / 0.6
    ref = survey_ratio(y1 * y2, np.ones(r1.size), design)
    assert est.values[3] == pytest.approx(ref.value, abs=1e-12)
    assert est.se[3] == pytest.approx(ref.se, rel=1e-9)
    assert est.df == design.df
    # a margin is sampling's own design-based estimate of the item
    margin = survey_estimate(w, r2, design)
    first = est.marginal([1])
    assert first.values[1] == pytest.approx(margin.value, abs=1e-12)
    assert first.se[1] == pytest.approx(margin.se, rel=1e-9)
    # the MLE (pseudo-likelihood) equals the moment estimate inside; its sandwich too
    assert (est.values > 0).all()
    assert est.mle == pytest.approx(est.values, abs=1e-7)
    assert est.mle_covariance == pytest.approx(est.covariance, rel=1e-4, abs=1e-12)


def test_design_se_agrees_with_the_jk1_replicate_se() -> None:
    w, psu, weights, r1, r2 = _clustered(seed=8, clusters=60)
    design = SampleDesign(weights=weights, psu=psu)
    taylor = joint_estimate([w, w], [r1, r2], design=design)
    jk1 = joint_estimate([w, w], [r1, r2], design=as_replicate(design, "JK1"))
    assert jk1.values == pytest.approx(taylor.values, abs=1e-12)
    # linearization and the delete-one-PSU jackknife of a ratio agree to O(1/#PSUs)
    assert jk1.se == pytest.approx(taylor.se, rel=0.05)
    assert "JK1" in jk1.variance_method
    # clustering inflates the SE over simple random sampling of as many respondents
    srs = joint_estimate([w, w], [r1, r2])
    assert (taylor.se > srs.se).all()


def test_table_and_dict() -> None:
    w, _, _, r1, r2 = _two_items(9, 200)
    est = joint_estimate([w, w], [r1, r2])
    assert isinstance(est, JointEstimate)
    text = str(est)
    assert "(1, 1)" in text and "MLE" in text
    data = est.to_dict()
    assert data["cells"] == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert len(data["mle_ci"]) == 4
    assert est.as_array().shape == (2, 2)


def test_oracle_items_have_a_moment_estimate_but_no_mle() -> None:
    from deniable.oracles import OUE

    rng = np.random.default_rng(10)
    oue = OUE.from_epsilon(1.0, k=3)
    x = rng.integers(0, 3, 500)
    w = Warner(0.8)
    est = joint_estimate([oue, w], [oue.randomize(x, rng=rng), w.randomize(x % 2, rng=rng)])
    assert est.shape == (3, 2)
    assert est.mle is None
    assert any("no MLE" in note for note in est.notes)
    with pytest.raises(ParameterError, match="`estimator` 'mle' is not available"):
        est.ci(estimator="mle")


# ---------------------------------------------------------------- bad input


def test_items_of_different_lengths_are_refused() -> None:
    w = Warner(0.8)
    with pytest.raises(DataError, match=r"`reports` must hold one report per respondent.*99"):
        joint_estimate([w, w], [np.zeros(100, int), np.zeros(99, int)])


def test_fewer_than_two_items_are_refused() -> None:
    w = Warner(0.8)
    with pytest.raises(DataError, match=r"`mechanisms` must hold at least 2 items.*got 1"):
        joint_estimate([w], [[0, 1]])
    with pytest.raises(ParameterTypeError, match="`mechanisms` must be a list"):
        joint_estimate(w, [[0, 1]])
    with pytest.raises(ParameterTypeError, match="`reports` must be a list of 2 arrays"):
        joint_estimate([w, w], iter([[0, 1], [1, 0]]))
    with pytest.raises(DataError, match=r"`reports` must hold one array of reports per item"):
        joint_estimate([w, w], [[0, 1]])


def test_a_singular_channel_is_refused() -> None:
    almost = Custom(0.5 + 1e-13, 0.5)  # the reports carry almost nothing
    with pytest.raises(ParameterError, match=r"`mechanisms\[0\]`.*invertible channel"):
        joint_estimate([almost, Warner(0.8)], [[0, 1], [1, 0]])


def test_a_design_of_other_rows_is_refused() -> None:
    w = Warner(0.8)
    with pytest.raises(DataError, match=r"`design` must have one row per respondent.*3 rows"):
        joint_estimate([w, w], [[0, 1], [1, 0]], design=SampleDesign(weights=[1.0, 2.0, 3.0]))
    with pytest.raises(ParameterTypeError, match="`design` must be a SampleDesign"):
        joint_estimate([w, w], [[0, 1], [1, 0]], design="srs")  # type: ignore[arg-type]


def test_bad_reports_and_unsupported_designs_name_the_item() -> None:
    w = Warner(0.8)
    with pytest.raises(DataError, match=r"`mechanisms\[1\]` \(.warner.\): `reports`.*got one"):
        joint_estimate([w, w], [[0, 1], [1, 2]])
    sld = StochasticLieDetector(0.3, 0.7)
    with pytest.raises(DataError, match=r"`mechanisms\[0\]` \('sld'\) must be a one-group design"):
        joint_estimate([sld, w], [[0, 1], [1, 0]])


def test_reports_as_columns_of_an_array_or_a_data_frame() -> None:
    import pandas as pd

    w = Warner(0.8)
    _, _, _, r1, r2 = _two_items(23, 100)
    by_list = joint_estimate([w, w], [r1, r2])
    by_array = joint_estimate([w, w], np.column_stack([r1, r2]))
    by_frame = joint_estimate([w, w], pd.DataFrame({"drugs": r1, "sex": r2}))
    assert by_array.values == pytest.approx(by_list.values, abs=0)
    assert by_frame.values == pytest.approx(by_list.values, abs=0)
    # two respondents, two items: columns are items, not rows
    square = joint_estimate([DIRECT, DIRECT], np.array([[0, 1], [0, 1]]))
    assert square.as_array().tolist() == [[0.0, 1.0], [0.0, 0.0]]


def test_the_k_ary_oracle_has_an_mle() -> None:
    from deniable.oracles import GRR

    rng = np.random.default_rng(24)
    grr = GRR(3, 0.7)
    x = rng.integers(0, 3, 2000)
    w = Warner(0.8)
    est = joint_estimate([grr, w], [grr.randomize(x, rng=rng), w.randomize(x % 2, rng=rng)])
    assert est.mle is not None and est.mle.min() >= 0
    assert est.mle.sum() == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(
    p1=st.floats(0.55, 0.95),
    p2=st.floats(0.05, 0.45),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_moment_estimate_maps_back_to_the_report_shares(
    p1: float, p2: float, seed: int
) -> None:
    # A pi_hat = lambda_hat for any reports: the estimator inverts the Kronecker channel
    rng = np.random.default_rng(seed)
    w1, w2 = Warner(p1), Warner(p2)
    reports = [rng.integers(0, 2, 50), rng.integers(0, 2, 50)]
    est = joint_estimate([w1, w2], reports)
    a = np.kron(np.asarray(w1.channel), np.asarray(w2.channel))
    assert est.report_shares is not None
    assert a @ est.values == pytest.approx(est.report_shares, abs=1e-9)
