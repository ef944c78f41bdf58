"""Each design against closed forms derived from its paper, and every invalid parameter.

The channel of a binary design is the pair ``P1 = P(yes | 1)``, ``P0 = P(yes | 0)``; its
epsilon is ``max(|ln(P1 / P0)|, |ln((1 - P1) / (1 - P0))|)`` and the moment estimator is
``(lambda_hat - P0) / (P1 - P0)``.  The expected values below are written from the papers'
descriptions of each randomizing device, not from the code.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.designs import (
    BiasedCoin,
    Binary,
    Categorical,
    Crosswise,
    Custom,
    Design,
    ForcedResponse,
    Kuk,
    Mangat,
    Mirrored,
    Tally,
    Triangular,
    TwoCoin,
    UnrelatedQuestion,
    Warner,
    channel_epsilon,
    design_parameters,
    make_design,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.randomness import probability_threshold, uniform_below

LN3 = math.log(3)


def binary_eps(p1: float, p0: float) -> float:
    """Epsilon of a binary channel, written out (inf when a report is impossible for one answer)."""
    ratios = []
    for a, b in ((p1, p0), (1 - p1, 1 - p0)):
        if (a == 0) != (b == 0):
            return math.inf
        if a > 0:
            ratios.append(abs(math.log(a / b)))
    return max(ratios)


def assert_binary(design: Any, p1: float, p0: float, eps: float) -> None:
    assert design.p_yes_given_1 == pytest.approx(p1, abs=1e-15)
    assert design.p_yes_given_0 == pytest.approx(p0, abs=1e-15)
    np.testing.assert_allclose(design.channel, [[1 - p0, 1 - p1], [p0, p1]], atol=1e-15)
    if math.isinf(eps):
        assert design.epsilon == math.inf
    else:
        assert design.epsilon == pytest.approx(eps, rel=1e-12)


# --- Warner, mirrored, crosswise --------------------------------------------------------------


@pytest.mark.parametrize("p", [0.75, 0.25, 0.6, 0.9, 0.01])
def test_warner_closed_form(p: float) -> None:
    # Warner (1965): answer "I have A" with probability p, "I do not have A" otherwise
    assert_binary(Warner(p), p, 1 - p, abs(math.log(p / (1 - p))))


def test_warner_three_quarters_is_ln3() -> None:
    assert Warner(0.75).epsilon == pytest.approx(LN3, rel=1e-15)
    assert Warner(0.25).epsilon == pytest.approx(LN3, rel=1e-15)


@pytest.mark.parametrize("p", [0.7, 0.2])
def test_warner_estimator(p: float) -> None:
    # Warner's estimator written as in RRreg: (lambda + p - 1) / (2p - 1)
    est = Warner(p).estimate(yes=420, n=1000)
    assert est.value == pytest.approx((0.42 + p - 1) / (2 * p - 1), rel=1e-13)
    # Warner's variance: lambda (1 - lambda) / (n (2p - 1)^2)
    assert est.se == pytest.approx(math.sqrt(0.42 * 0.58 / (1000 * (2 * p - 1) ** 2)), rel=1e-13)


@pytest.mark.parametrize("p", [0.7, 0.35])
def test_mirrored_has_warners_channel(p: float) -> None:
    assert np.array_equal(Mirrored(p).channel, np.asarray(Warner(p).channel))
    assert Mirrored(p).epsilon == Warner(p).epsilon
    assert Mirrored(p).name == "mirrored"


@pytest.mark.parametrize("p", [0.2, 0.85])
def test_crosswise_closed_form(p: float) -> None:
    # Yu, Tian & Tang (2008): report 1 = "same answer to both"; a carrier's answers agree
    # iff the innocuous answer is yes (prob p), a non-carrier's iff it is no (1 - p)
    assert_binary(Crosswise(p), p, 1 - p, abs(math.log(p / (1 - p))))


# --- coins -------------------------------------------------------------------------------------


def test_two_fair_coins() -> None:
    # Dwork & Roth (2014), sec. 3.2: heads -> truth; tails -> second coin answers
    assert_binary(TwoCoin(), 0.75, 0.25, LN3)


@pytest.mark.parametrize(("t", "yes"), [(0.3, 0.8), (0.9, 0.1), (0.5, 1.0), (1.0, 0.5)])
def test_two_coin_closed_form(t: float, yes: float) -> None:
    p1 = t + (1 - t) * yes
    p0 = (1 - t) * yes
    assert_binary(TwoCoin(p_truthful=t, p_yes=yes), p1, p0, binary_eps(p1, p0))


@pytest.mark.parametrize("q", [0.25, 0.1, 0.9])
def test_biased_coin_closed_form_and_estimator(q: float) -> None:
    d = BiasedCoin(q)
    assert_binary(d, 1 - q, q, abs(math.log((1 - q) / q)))
    est = d.estimate(yes=333, n=1000)
    assert est.value == pytest.approx((0.333 - q) / (1 - 2 * q), rel=1e-13)


# --- binary mechanism and its two calibrations ------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, LN3, 5.0, 20.0])
def test_binary_exact_calibration_is_exactly_eps(eps: float) -> None:
    d = Binary(eps)
    t = math.exp(eps) / (1 + math.exp(eps))
    assert d.p_yes_given_1 == pytest.approx(t, rel=1e-15)
    # computed directly as 1 / (1 + e^eps), not as 1 - t (which loses ~1e-8 relative at 20)
    assert d.p_yes_given_0 == pytest.approx(1 / (1 + math.exp(eps)), rel=1e-15)
    assert d.epsilon == eps


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.0, 6.0])
def test_binary_half_calibration_is_only_half_eps_for_one_bit(eps: float) -> None:
    # truth with e^(eps/2) / (1 + e^(eps/2)): the likelihood ratio of one report is e^(eps/2)
    d = Binary(eps, calibration="half")
    t = math.exp(eps / 2) / (1 + math.exp(eps / 2))
    assert d.p_yes_given_1 == pytest.approx(t, rel=1e-15)
    assert d.epsilon == pytest.approx(eps / 2, rel=1e-15)
    assert math.log(d.p_yes_given_1 / d.p_yes_given_0) == pytest.approx(eps / 2, rel=1e-12)
    assert channel_epsilon(d.channel) == pytest.approx(eps / 2, rel=1e-12)
    assert d.nominal_epsilon == eps
    assert d.parameters() == {"epsilon": eps, "calibration": "half"}


def test_binary_repr_round_trips() -> None:
    d = Binary(1.5, calibration="half")
    assert repr(d) == "Binary(epsilon=1.5, calibration='half')  # true epsilon 0.75"
    assert repr(Binary(1.5)) == "Binary(epsilon=1.5, calibration='exact')"
    assert eval(repr(d), {"Binary": Binary}) == d


# --- forced response, unrelated question -----------------------------------------------------


def test_forced_quarter_quarter() -> None:
    # "both heads: yes; both tails: no; otherwise the truth"
    assert_binary(ForcedResponse(0.25, 0.25), 0.75, 0.25, LN3)


@pytest.mark.parametrize(("fy", "fn"), [(1 / 6, 1 / 6), (0.1, 0.3), (0.4, 0.05)])
def test_forced_closed_form(fy: float, fn: float) -> None:
    # Boruch (1971): P(yes | 1) = truthful + forced yes = 1 - fn; P(yes | 0) = fy
    d = ForcedResponse(fy, fn)
    eps = max(math.log((1 - fn) / fy), math.log((1 - fy) / fn))
    assert_binary(d, 1 - fn, fy, eps)
    est = d.estimate(yes=400, n=1000)
    assert est.value == pytest.approx((0.4 - fy) / (1 - fy - fn), rel=1e-13)


@pytest.mark.parametrize(("fy", "fn"), [(0.0, 0.2), (0.2, 0.0), (0.0, 0.0)])
def test_forced_with_a_missing_forced_answer_has_infinite_epsilon(fy: float, fn: float) -> None:
    assert ForcedResponse(fy, fn).epsilon == math.inf


@pytest.mark.parametrize(("p", "q"), [(0.7, 0.3), (0.4, 0.9), (0.5, 0.0), (0.5, 1.0), (1.0, 0.3)])
def test_unrelated_question_closed_form(p: float, q: float) -> None:
    # Greenberg et al. (1969): sensitive question with prob p, else an innocuous one (yes: q)
    p1, p0 = p + (1 - p) * q, (1 - p) * q
    d = UnrelatedQuestion(p, q)
    assert_binary(d, p1, p0, binary_eps(p1, p0))
    if 0 < q < 1 and p < 1:
        assert math.isfinite(d.epsilon)
    else:
        assert d.epsilon == math.inf
    est = d.estimate(yes=500, n=1000)
    assert est.value == pytest.approx((0.5 - (1 - p) * q) / p, rel=1e-13)


# --- Kuk -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("t1", "t2"), [(0.7, 0.3), (0.8, 0.4), (0.25, 0.6)])
@pytest.mark.parametrize("draws", [1, 2, 3, 10])
def test_kuk_epsilon_composes_over_draws(t1: float, t2: float, draws: int) -> None:
    # Kuk (1990): one card from a deck with red share t1 (carriers) or t2; the k-draw ratio of
    # r red cards is (t1/t2)^r ((1-t1)/(1-t2))^(k-r), extreme at r = 0 or k
    one = max(abs(math.log(t1 / t2)), abs(math.log((1 - t1) / (1 - t2))))
    d = Kuk(t1, t2, draws=draws)
    assert d.epsilon == pytest.approx(draws * one, rel=1e-12)
    assert channel_epsilon(d.channel) == pytest.approx(draws * one, rel=1e-12)
    r = np.arange(draws + 1)
    np.testing.assert_allclose(
        np.asarray(d.channel)[:, 1], stats.binom.pmf(r, draws, t1), atol=1e-15
    )
    np.testing.assert_allclose(
        np.asarray(d.channel)[:, 0], stats.binom.pmf(r, draws, t2), atol=1e-15
    )


def test_kuk_one_draw_is_a_binary_design() -> None:
    assert_binary(Kuk(0.7, 0.3), 0.7, 0.3, math.log(7 / 3))


@pytest.mark.parametrize(("t1", "t2"), [(1.0, 0.3), (0.7, 0.0)])
def test_kuk_with_a_one_colour_deck_has_infinite_epsilon(t1: float, t2: float) -> None:
    assert Kuk(t1, t2).epsilon == math.inf
    assert Kuk(t1, t2, draws=3).epsilon == math.inf


def test_kuk_moment_estimator_for_several_draws() -> None:
    d = Kuk(0.8, 0.4, draws=3)
    counts = (100, 250, 400, 250)  # red counts 0..3
    mean_red = (250 + 2 * 400 + 3 * 250) / 1000
    est = d.estimate(Tally(counts))
    assert est.value == pytest.approx((mean_red / 3 - 0.4) / 0.4, rel=1e-13)


@pytest.mark.parametrize(("t1", "t2", "draws"), [(0.7, 0.3, 3), (0.25, 0.6, 5)])
def test_kuk_realized_channel_has_the_stated_epsilon(t1: float, t2: float, draws: int) -> None:
    # the randomizer draws each card with the 53-bit thresholds (theta2, theta1)
    thr2, thr1 = Kuk(t1, t2, draws=draws).thresholds()
    r1, r2 = thr1 / 2**53, thr2 / 2**53
    r = np.arange(draws + 1)
    realized = np.column_stack([stats.binom.pmf(r, draws, r2), stats.binom.pmf(r, draws, r1)])
    assert channel_epsilon(realized) == pytest.approx(Kuk(t1, t2, draws=draws).epsilon, rel=1e-9)


# --- designs with a deterministic path --------------------------------------------------------


@pytest.mark.parametrize("p", [0.7, 0.3, 1.0])
def test_mangat_closed_form(p: float) -> None:
    # Mangat (1994): carriers always say yes; non-carriers tell the truth ("no") with prob p
    d = Mangat(p)
    assert_binary(d, 1.0, 1 - p, math.inf)
    est = d.estimate(yes=600, n=1000)
    assert est.value == pytest.approx(1 - (1 - 0.6) / p, rel=1e-13)


@pytest.mark.parametrize("p", [0.3, 0.0, 0.9])
def test_triangular_closed_form(p: float) -> None:
    # Yu, Tian & Tang (2008): "no to both" (report 0) is only possible for non-carriers
    d = Triangular(p)
    assert_binary(d, 1.0, p, math.inf)
    est = d.estimate(yes=600, n=1000)
    assert est.value == pytest.approx(1 - (1 - 0.6) / (1 - p), rel=1e-13)


# --- custom ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("p1", "p0"), [(0.6, 0.1), (0.2, 0.9), (1.0, 0.3), (0.5, 0.0)])
def test_custom_closed_form(p1: float, p0: float) -> None:
    d = Custom(p1, p0)
    assert_binary(d, p1, p0, binary_eps(p1, p0))
    assert d.parameters() == {"p_yes_given_1": p1, "p_yes_given_0": p0}
    assert repr(d) == f"Custom(p_yes_given_1={p1!r}, p_yes_given_0={p0!r})"


def test_custom_matches_named_designs() -> None:
    assert np.array_equal(Custom(0.75, 0.25).channel, np.asarray(TwoCoin().channel))
    assert Custom(0.75, 0.25).epsilon == pytest.approx(LN3, rel=1e-15)


# --- categorical -----------------------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 3, 4, 10])
@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_k_rr_closed_form(k: int, eps: float) -> None:
    # k-ary RR (Kairouz, Oh & Viswanath 2016; Wang et al. 2017): report the truth with
    # e^eps / (e^eps + k - 1), every other category with 1 / (e^eps + k - 1)
    d = Categorical.from_epsilon(eps, k=k)
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    other = 1 / (math.exp(eps) + k - 1)
    expected = np.full((k, k), other) + np.eye(k) * (keep - other)
    np.testing.assert_allclose(d.channel, expected, rtol=1e-13)
    assert d.epsilon == pytest.approx(eps, rel=1e-12)
    assert d.epsilon == pytest.approx(math.log(keep / other), rel=1e-12)


def test_k_rr_with_two_categories_is_the_binary_mechanism() -> None:
    np.testing.assert_allclose(
        Categorical.from_epsilon(1.3, k=2).channel, np.asarray(Binary(1.3).channel), rtol=1e-13
    )


@pytest.mark.parametrize(
    ("truth", "forced"), [(0.6, (0.2, 0.3, 0.5)), (0.3, (0.1, 0.1, 0.8)), (0.9, (0.5, 0.25, 0.25))]
)
def test_categorical_forced_closed_form(truth: float, forced: tuple[float, ...]) -> None:
    d = Categorical(k=3, p_truthful=truth, forced=forced)
    f = np.array(forced)
    np.testing.assert_allclose(d.channel, truth * np.eye(3) + (1 - truth) * f[:, None])
    # report r is likeliest from truth r: (truth + (1 - truth) f_r) / ((1 - truth) f_r)
    assert d.epsilon == pytest.approx(math.log(1 + truth / ((1 - truth) * min(forced))), rel=1e-12)


@pytest.mark.parametrize(
    ("truth", "forced"), [(0.5, (0.5, 0.5, 0.0)), (1.0, None), (1.0, (0.2, 0.3, 0.5))]
)
def test_categorical_infinite_epsilon(truth: float, forced: tuple[float, ...] | None) -> None:
    assert Categorical(k=3, p_truthful=truth, forced=forced).epsilon == math.inf


def test_categorical_estimator_closed_form() -> None:
    d = Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5))
    counts = (250, 300, 450)
    lam = np.array(counts) / 1000
    expected = (lam - 0.4 * np.array([0.2, 0.3, 0.5])) / 0.6
    np.testing.assert_allclose(d.estimate(Tally(counts)).values, expected, rtol=1e-13)


@pytest.mark.parametrize(
    "design",
    [
        Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)),
        Categorical(k=4, p_truthful=0.5),
        Categorical(k=5, p_truthful=0.3),
        Categorical.from_epsilon(2.0, k=7),
    ],
    ids=["forced", "uniform-4", "uniform-5", "k-rr-7"],
)
def test_categorical_realized_channel_has_the_stated_epsilon(design: Categorical) -> None:
    """Rebuild the channel the randomizer implements from its 53-bit thresholds."""
    keep_t, cum_t = design.thresholds()
    keep = keep_t / 2**53
    assert keep <= design.p_truthful  # rounded toward privacy
    k = design.k
    if design.forced is None:
        # uniform_below keeps b = 64 - bit_length(k) bits u and returns floor(u k / 2**b)
        # (the top bits when k is a power of two): category j gets the u in
        # [ceil(j 2**b / k), ceil((j + 1) 2**b / k))
        b = 64 - k.bit_length() if k & (k - 1) else k.bit_length() - 1
        edges = [-(-j * 2**b // k) for j in range(k + 1)]
        f = np.array([(edges[j + 1] - edges[j]) / 2**b for j in range(k)])
        words = np.random.default_rng(0).integers(0, 2**64, 200_000, dtype=np.uint64)
        freq = np.bincount(uniform_below(words, k).astype(np.int64), minlength=k) / words.size
        # 5 sigma: false alarm ~6e-7 per value
        assert np.abs(freq - f).max() < 5 * math.sqrt(0.25 / words.size)
    else:
        assert cum_t is not None
        cum = [probability_threshold(min(c, 1.0)) for c in np.cumsum(design.forced)[:-1]]
        assert cum == cum_t
        f = np.diff(np.array([0, *cum, 2**53], dtype=float)) / 2**53
    realized = keep * np.eye(k) + (1 - keep) * f[:, None]
    assert channel_epsilon(realized) == pytest.approx(design.epsilon, rel=1e-9)


# --- from_epsilon -----------------------------------------------------------------------------

FROM_EPSILON: list[tuple[str, Callable[[float], Design]]] = [
    ("warner", Warner.from_epsilon),
    ("two-coin", TwoCoin.from_epsilon),
    ("biased-coin", BiasedCoin.from_epsilon),
    ("binary", Binary.from_epsilon),
    ("binary-half", lambda e: Binary.from_epsilon(2 * e, calibration="half")),
    ("forced", ForcedResponse.from_epsilon),
    ("unrelated", UnrelatedQuestion.from_epsilon),
    ("unrelated-q0.2", lambda e: UnrelatedQuestion.from_epsilon(e, q=0.2)),
    ("categorical-2", lambda e: Categorical.from_epsilon(e, k=2)),
    ("categorical-5", lambda e: Categorical.from_epsilon(e, k=5)),
]


@pytest.mark.parametrize(("name", "make"), FROM_EPSILON, ids=[n for n, _ in FROM_EPSILON])
@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, LN3, 4.0, 10.0])
def test_from_epsilon_round_trips(name: str, make: Callable[[float], Design], eps: float) -> None:
    d = make(eps)
    assert d.epsilon == pytest.approx(eps, rel=1e-12)
    assert channel_epsilon(d.channel) == pytest.approx(eps, rel=1e-11)


def test_from_epsilon_picks_the_documented_parameters() -> None:
    e = math.exp(1.0)
    assert Warner.from_epsilon(1.0).p == pytest.approx(e / (1 + e), rel=1e-15)
    assert BiasedCoin.from_epsilon(1.0).q == pytest.approx(1 / (1 + e), rel=1e-15)
    assert TwoCoin.from_epsilon(1.0).p_truthful == pytest.approx((e - 1) / (e + 1), rel=1e-15)
    assert ForcedResponse.from_epsilon(1.0).forced_yes == pytest.approx(1 / (1 + e), rel=1e-15)
    assert Categorical.from_epsilon(1.0, k=4).p_truthful == pytest.approx(
        (e - 1) / (e + 3), rel=1e-15
    )
    # unrelated question with q = 1/2 is two fair-ish coins: p = tanh(eps / 2)
    assert UnrelatedQuestion.from_epsilon(1.0).p == pytest.approx(math.tanh(0.5), rel=1e-12)


@pytest.mark.parametrize("q", [0.5, 0.2, 0.9])
@pytest.mark.parametrize("eps", [0.05, 1.0, 6.0])
def test_unrelated_from_epsilon_never_exceeds_the_request(q: float, eps: float) -> None:
    d = UnrelatedQuestion.from_epsilon(eps, q=q)
    assert d.q == q
    assert d.epsilon <= eps
    assert d.epsilon == pytest.approx(eps, rel=1e-12)
    assert Warner.from_epsilon(LN3).p == pytest.approx(0.75, rel=1e-15)


@pytest.mark.parametrize(("name", "make"), FROM_EPSILON, ids=[n for n, _ in FROM_EPSILON])
@pytest.mark.parametrize(
    ("eps", "error"),
    [
        (0.0, ParameterError),
        (-1.0, ParameterError),
        (math.inf, ParameterError),
        (math.nan, ParameterError),
        ("1", ParameterTypeError),
        (True, ParameterTypeError),
    ],
)
def test_from_epsilon_rejects_bad_epsilon(
    name: str, make: Callable[[Any], Design], eps: Any, error: type[Exception]
) -> None:
    if name == "binary-half" and eps is True:
        # the test's wrapper computes 2 * epsilon, turning True into the valid 2: check the
        # constructor itself rejects the bool
        with pytest.raises(ParameterTypeError, match="`epsilon`"):
            Binary(True, calibration="half")  # type: ignore[arg-type]
        return
    with pytest.raises(error, match="`epsilon`"):
        make(eps)


# --- invalid parameters -----------------------------------------------------------------------

NAN = math.nan

INVALID: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("warner-half", lambda: Warner(0.5), ParameterError, "`p`"),
    ("warner-0", lambda: Warner(0), ParameterError, "`p`"),
    ("warner-1", lambda: Warner(1), ParameterError, "`p`"),
    ("warner-big", lambda: Warner(1.5), ParameterError, "`p`"),
    ("warner-neg", lambda: Warner(-0.2), ParameterError, "`p`"),
    ("warner-nan", lambda: Warner(NAN), ParameterError, "`p`"),
    ("warner-str", lambda: Warner("0.7"), ParameterTypeError, "`p`"),  # type: ignore[arg-type]
    ("warner-bool", lambda: Warner(True), ParameterTypeError, "`p`"),
    ("warner-none", lambda: Warner(None), ParameterTypeError, "`p`"),  # type: ignore[arg-type]
    ("mirrored-half", lambda: Mirrored(0.5), ParameterError, "`p`"),
    ("crosswise-half", lambda: Crosswise(0.5), ParameterError, "`p`"),
    ("crosswise-1", lambda: Crosswise(1.0), ParameterError, "`p`"),
    ("two-coin-truth-0", lambda: TwoCoin(p_truthful=0), ParameterError, "`p_truthful`"),
    ("two-coin-yes", lambda: TwoCoin(p_yes=1.5), ParameterError, "`p_yes`"),
    ("two-coin-str", lambda: TwoCoin(p_truthful="a"), ParameterTypeError, "`p_truthful`"),  # type: ignore[arg-type]
    ("biased-half", lambda: BiasedCoin(0.5), ParameterError, "`q`"),
    ("biased-0", lambda: BiasedCoin(0.0), ParameterError, "`q`"),
    ("biased-nan", lambda: BiasedCoin(NAN), ParameterError, "`q`"),
    ("binary-0", lambda: Binary(0), ParameterError, "`epsilon`"),
    ("binary-neg", lambda: Binary(-1), ParameterError, "`epsilon`"),
    ("binary-inf", lambda: Binary(math.inf), ParameterError, "`epsilon`"),
    ("binary-str", lambda: Binary("1"), ParameterTypeError, "`epsilon`"),  # type: ignore[arg-type]
    ("binary-cal", lambda: Binary(1, calibration="double"), ParameterError, "`calibration`"),
    (
        "forced-sum",
        lambda: ForcedResponse(0.5, 0.5),
        ParameterError,
        "`forced_yes` \\+ `forced_no`",
    ),
    (
        "forced-sum2",
        lambda: ForcedResponse(0.7, 0.4),
        ParameterError,
        "`forced_yes` \\+ `forced_no`",
    ),
    ("forced-neg", lambda: ForcedResponse(-0.1, 0.2), ParameterError, "`forced_yes`"),
    ("forced-big", lambda: ForcedResponse(0.1, 1.2), ParameterError, "`forced_no`"),
    ("forced-bool", lambda: ForcedResponse(False, 0.2), ParameterTypeError, "`forced_yes`"),
    ("unrelated-p0", lambda: UnrelatedQuestion(0, 0.5), ParameterError, "`p`"),
    ("unrelated-q", lambda: UnrelatedQuestion(0.5, 1.1), ParameterError, "`q`"),
    ("kuk-equal", lambda: Kuk(0.5, 0.5), ParameterError, "`theta1` and `theta2`"),
    ("kuk-theta", lambda: Kuk(1.5, 0.5), ParameterError, "`theta1`"),
    ("kuk-draws-0", lambda: Kuk(0.7, 0.3, draws=0), ParameterError, "`draws`"),
    ("kuk-draws-big", lambda: Kuk(0.7, 0.3, draws=1001), ParameterError, "`draws`"),
    ("kuk-draws-frac", lambda: Kuk(0.7, 0.3, draws=1.5), ParameterTypeError, "`draws`"),  # type: ignore[arg-type]
    ("kuk-draws-bool", lambda: Kuk(0.7, 0.3, draws=True), ParameterTypeError, "`draws`"),
    ("kuk-draws-str", lambda: Kuk(0.7, 0.3, draws="3"), ParameterTypeError, "`draws`"),  # type: ignore[arg-type]
    ("mangat-0", lambda: Mangat(0), ParameterError, "`p`"),
    ("mangat-big", lambda: Mangat(1.2), ParameterError, "`p`"),
    ("triangular-1", lambda: Triangular(1.0), ParameterError, "`p`"),
    ("triangular-neg", lambda: Triangular(-0.1), ParameterError, "`p`"),
    ("custom-equal", lambda: Custom(0.3, 0.3), ParameterError, "`p_yes_given_1` and"),
    ("custom-range", lambda: Custom(1.2, 0.1), ParameterError, "`p_yes_given_1`"),
    ("custom-nan", lambda: Custom(0.2, NAN), ParameterError, "`p_yes_given_0`"),
    ("categorical-k1", lambda: Categorical(k=1, p_truthful=0.5), ParameterError, "`k`"),
    ("categorical-kstr", lambda: Categorical(k="3", p_truthful=0.5), ParameterTypeError, "`k`"),  # type: ignore[arg-type]
    ("categorical-kbool", lambda: Categorical(k=True, p_truthful=0.5), ParameterTypeError, "`k`"),
    ("categorical-kfrac", lambda: Categorical(k=2.5, p_truthful=0.5), ParameterTypeError, "`k`"),  # type: ignore[arg-type]
    ("categorical-truth", lambda: Categorical(k=3, p_truthful=0.0), ParameterError, "`p_truthful`"),
    (
        "categorical-sum",
        lambda: Categorical(k=3, p_truthful=0.5, forced=(0.5, 0.4, 0.2)),
        ParameterError,
        "`forced` must sum to 1",
    ),
    (
        "categorical-len",
        lambda: Categorical(k=3, p_truthful=0.5, forced=(0.5, 0.5)),
        ParameterError,
        "`forced` must have",
    ),
    (
        "categorical-neg",
        lambda: Categorical(k=3, p_truthful=0.5, forced=(0.6, -0.1, 0.5)),
        ParameterError,
        "`forced\\[1\\]`",
    ),
    (
        "categorical-forced-scalar",
        lambda: Categorical(k=3, p_truthful=0.5, forced=0.5),  # type: ignore[arg-type]
        ParameterTypeError,
        "`forced` must be a sequence",
    ),
    (
        "categorical-forced-str",
        lambda: Categorical(k=3, p_truthful=0.5, forced="0.5"),  # type: ignore[arg-type]
        ParameterTypeError,
        "`forced` must be a sequence",
    ),
    # probabilities below the randomizer's 2**-53 resolution would be drawn as 0: a report
    # meant to be unlikely becomes impossible and the stated finite epsilon false
    ("warner-tiny", lambda: Warner(1e-20), ParameterError, "`p`"),
    ("biased-tiny", lambda: BiasedCoin(1e-20), ParameterError, "`q`"),
    # from_epsilon names its own parameter, with the largest epsilon the randomizer can draw
    ("biased-from-huge", lambda: BiasedCoin.from_epsilon(40.0), ParameterError, "`epsilon`"),
    ("binary-huge", lambda: Binary(40.0), ParameterError, "`epsilon`"),
    ("binary-half-huge", lambda: Binary(80.0, "half"), ParameterError, "`epsilon`"),
    ("forced-tiny-yes", lambda: ForcedResponse(1e-20, 0.5), ParameterError, "`forced_yes`"),
    ("forced-tiny-no", lambda: ForcedResponse(0.5, 1e-20), ParameterError, "`forced_no`"),
    ("unrelated-tiny", lambda: UnrelatedQuestion(0.5, 1e-20), ParameterError, "q`"),
    (
        "two-coin-tiny",
        lambda: TwoCoin(p_truthful=1 - 2**-30, p_yes=2**-30),
        ParameterError,
        "p_yes`",
    ),
    ("kuk-tiny", lambda: Kuk(1e-20, 0.5), ParameterError, "`theta1`"),
    ("custom-tiny", lambda: Custom(0.5, 1e-20), ParameterError, "`p_yes_given_0`"),
    (
        "categorical-tiny",
        lambda: Categorical(k=3, p_truthful=0.5, forced=(1e-20, 0.5, 0.5)),
        ParameterError,
        "`forced\\[0\\]`",
    ),
]


@pytest.mark.parametrize(
    ("make", "error", "named"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_parameters_raise_naming_the_parameter(
    make: Callable[[], object], error: type[Exception], named: str
) -> None:
    with pytest.raises(error, match=named) as info:
        make()
    assert "got" in str(info.value)  # the value received is part of the message


def test_error_message_format() -> None:
    with pytest.raises(ParameterError) as info:
        Warner(0.5)
    assert str(info.value) == "`p` must be in (0, 1) and not 0.5, got 0.5."
    with pytest.raises(ParameterTypeError) as info2:
        Warner("x")  # type: ignore[arg-type]
    assert str(info2.value) == "`p` must be a real number, got str 'x'."


def test_errors_are_standard_exceptions_too() -> None:
    with pytest.raises(ValueError):
        Warner(0.5)
    with pytest.raises(TypeError):
        Warner("0.7")  # type: ignore[arg-type]


@pytest.mark.parametrize("eps", [36.0, 72.0])
def test_binary_accepts_the_largest_representable_epsilon(eps: float) -> None:
    d = Binary(eps, calibration="exact" if eps < 37 else "half")
    assert d.p_yes_given_0 >= 2**-53
    assert d.thresholds()[0] >= 1


def test_tiny_but_representable_probabilities_are_accepted() -> None:
    assert Warner(2**-53).p == 2**-53
    assert ForcedResponse(2**-40, 0.5).epsilon == pytest.approx(
        max(math.log(0.5 / 2**-40), math.log((1 - 2**-40) / 0.5)), rel=1e-12
    )


# --- from_epsilon at the edges of what floats and the randomizer represent ------------------

#: ln(2**53 - 1): one bit with probabilities 2**-53 and 1 - 2**-53, the largest epsilon the
#: 53-bit randomizer can draw for one report.
MAX_BIT = math.log(2.0**53 - 1)


def _up(x: float, toward: float) -> float:
    """The next float after ``x`` toward ``toward`` (one step less private or more)."""
    return float(np.nextafter(x, toward))


#: (name, from_epsilon, the parameter it sets, the design one float step less private)
NUDGE: list[tuple[str, Callable[[float], Design], Callable[[Any], Design]]] = [
    ("warner", Warner.from_epsilon, lambda d: Warner(_up(d.p, 1.0))),
    ("crosswise", Crosswise.from_epsilon, lambda d: Crosswise(_up(d.p, 1.0))),
    (
        "two-coin",
        TwoCoin.from_epsilon,
        lambda d: TwoCoin(p_truthful=_up(d.p_truthful, 1.0), p_yes=0.5),
    ),
    ("biased-coin", BiasedCoin.from_epsilon, lambda d: BiasedCoin(_up(d.q, 0.0))),
    (
        "forced",
        ForcedResponse.from_epsilon,
        lambda d: ForcedResponse(_up(d.forced_yes, 0.0), _up(d.forced_no, 0.0)),
    ),
    (
        "unrelated",
        lambda e: UnrelatedQuestion.from_epsilon(e, q=0.2),
        lambda d: UnrelatedQuestion(_up(d.p, 1.0), 0.2),
    ),
    (
        "kuk-3",
        lambda e: Kuk.from_epsilon(e, draws=3),
        lambda d: Kuk(_up(d.theta1, 1.0), 1 - _up(d.theta1, 1.0), draws=3),
    ),
    (
        "categorical-4",
        lambda e: Categorical.from_epsilon(e, k=4),
        lambda d: Categorical(k=4, p_truthful=_up(d.p_truthful, 1.0)),
    ),
]


@pytest.mark.parametrize(("make", "nudge"), [c[1:] for c in NUDGE], ids=[c[0] for c in NUDGE])
@pytest.mark.parametrize("eps", [0.3, 20.0, 30.0, 36.0])
def test_from_epsilon_is_the_closest_design_not_above_the_request(
    make: Callable[[float], Design], nudge: Callable[[Any], Design], eps: float
) -> None:
    """The returned parameter is the float with the largest epsilon not above the request:
    one float step less private exceeds it (or is no longer a valid design).  Near 1 floats
    are 2**-53 apart, so e.g. Warner at 30 lands 1.7e-4 below, never above."""
    d = make(eps)
    assert 0 < d.epsilon <= eps
    try:
        step = nudge(d)
    except ParameterError:
        return
    assert step.epsilon > eps


@pytest.mark.parametrize("start", [0.5, 0.5 + 2**-53, 0.6, 0.99, 1 - 2**-53, 1.0])
@pytest.mark.parametrize("eps", [1e-6, 0.7, 25.0])
def test_the_search_does_not_depend_on_its_starting_point(start: float, eps: float) -> None:
    """``design_for_epsilon`` finds the same float from any start: an invalid one at either
    end (0.5: uninformative, 1.0: p = 1 is rejected) falls back and searches from there."""
    from deniable.designs._from_epsilon import design_for_epsilon, expit

    found = design_for_epsilon(
        Warner, eps, start, neutral=0.5, extreme=1.0, fallback=expit(1.0), context="'warner'"
    )
    assert found == Warner.from_epsilon(eps)
    assert found.epsilon <= eps < Warner(_up(found.p, 1.0)).epsilon


@pytest.mark.parametrize(("eps", "below"), [(30.0, 2e-4), (36.0, 0.37)])
def test_warner_near_one_never_overstates(eps: float, below: float) -> None:
    # the closed form's p rounded up to 30.001 and 36.044 before
    d = Warner.from_epsilon(eps)
    assert eps - below <= d.epsilon <= eps
    assert d.epsilon == abs(math.log(d.p / (1 - d.p)))


@pytest.mark.parametrize(
    ("make", "limit"),
    [
        (lambda: TwoCoin.from_epsilon(40.0), "36.7368"),  # truth rounded to 1: direct questions
        (lambda: Warner.from_epsilon(37.0), "36.7368"),
        (lambda: Kuk.from_epsilon(37.0), "36.7368"),  # decks 1.0 / 0.0 before
        (lambda: Kuk.from_epsilon(700.0, 3), "110.21"),  # 3 draws of 36.7368
        (lambda: Categorical.from_epsilon(60.0, k=4), "38.123"),  # ln(1 + 4 (2**53 - 1))
        (lambda: BiasedCoin.from_epsilon(800.0), "36.7368"),  # OverflowError before
        (lambda: ForcedResponse.from_epsilon(800.0), "36.7368"),
        (lambda: Categorical.from_epsilon(800.0, k=4), "38.123"),
        (lambda: UnrelatedQuestion.from_epsilon(1e6, q=0.3), "36"),
        (lambda: Binary.from_epsilon(1e6), "36.7368"),
    ],
)
def test_from_epsilon_past_the_resolution_names_epsilon_and_the_largest(
    make: Callable[[], Design], limit: str
) -> None:
    with pytest.raises(ParameterError, match=r"^`epsilon` must be at most") as info:
        make()
    assert limit in str(info.value)
    top = float(str(info.value).split("at most ")[1].split()[0])
    assert top <= MAX_BIT * 3 + 1e-9


def test_from_epsilon_largest_bound_is_attainable() -> None:
    # the bound quoted by the error is a valid request, and its design is at most it
    for make in (Warner.from_epsilon, TwoCoin.from_epsilon, BiasedCoin.from_epsilon):
        with pytest.raises(ParameterError) as info:
            make(40.0)
        top = float(str(info.value).split("at most ")[1].split()[0])
        d = make(top)
        assert top - 0.7 <= d.epsilon <= top


@pytest.mark.parametrize(
    "make",
    [
        lambda: TwoCoin.from_epsilon(1e-300),  # truth 5e-301: P(yes|1) = P(yes|0) = 0.5
        lambda: Warner.from_epsilon(1e-17),
        lambda: BiasedCoin.from_epsilon(1e-20),
        lambda: Kuk.from_epsilon(1e-17, draws=3),
        lambda: Categorical.from_epsilon(1e-300, k=4),
        lambda: UnrelatedQuestion.from_epsilon(1e-300),
        lambda: Binary.from_epsilon(1e-17),
    ],
)
def test_from_epsilon_below_the_resolution_names_epsilon(make: Callable[[], Design]) -> None:
    with pytest.raises(ParameterError, match=r"^`epsilon` must be at least"):
        make()


# --- uninformative after float rounding: rejected at construction ----------------------------

UNINFORMATIVE: list[tuple[str, Callable[[], Design], str]] = [
    ("binary", lambda: Binary(1e-17), "`epsilon`"),
    ("binary-20", lambda: Binary(1e-20), "`epsilon`"),
    ("binary-half", lambda: Binary(1e-17, calibration="half"), "`epsilon`"),
    ("two-coin", lambda: TwoCoin(p_truthful=1e-20), "p_truthful=1e-20"),
    ("unrelated", lambda: UnrelatedQuestion(1e-20, 0.5), "p=1e-20"),
    ("mangat", lambda: Mangat(1e-20), "p=1e-20"),  # P(yes | 0) = 1 - 1e-20 rounds to 1
    # (forced response: 1 - forced_no is exact, so P(yes | 1) = P(yes | 0) only when the
    # forcing probabilities sum to 1, which its own check already rejects)
    # distinct floats closer than 2**-53: the randomizer's thresholds would collapse
    ("custom", lambda: Custom(0.3, float(np.nextafter(0.3, 1))), "resolution"),
    ("kuk", lambda: Kuk(0.3, float(np.nextafter(0.3, 1))), "resolution"),
    ("two-coin-near", lambda: TwoCoin(p_truthful=2**-54), "p_truthful"),
]


@pytest.mark.parametrize(
    ("make", "named"), [c[1:] for c in UNINFORMATIVE], ids=[c[0] for c in UNINFORMATIVE]
)
def test_uninformative_after_rounding_is_rejected_at_construction(
    make: Callable[[], Design], named: str
) -> None:
    """A channel whose columns are equal after float rounding (P(yes | 1) == P(yes | 0)) or
    whose thresholds collapse at 2**-53 would divide by zero in the estimator: ParameterError
    at construction, naming the parameters and their values."""
    with pytest.raises(ParameterError) as info:
        make()
    assert named in str(info.value)


def test_every_binary_design_checks_its_channel_at_construction() -> None:
    """Construction is where ZeroDivisionError used to come from later (estimate, randomize)."""
    with pytest.raises(ParameterError):
        Binary(1e-20).estimate(yes=5, n=10)


# --- exact complements: the channel states the design's epsilon ------------------------------


@pytest.mark.parametrize(
    ("design", "expected"),
    [
        (Binary(30.0), 30.0),
        (Binary(36.0), 36.0),
        (Binary(60.0, calibration="half"), 30.0),
        (BiasedCoin(1e-10), math.log((1 - 1e-10) / 1e-10)),
        (ForcedResponse(1e-12, 1e-12), math.log((1 - 1e-12) / 1e-12)),
        (Warner(1e-12), math.log((1 - 1e-12) / 1e-12)),
    ],
    ids=["binary-30", "binary-36", "binary-half-60", "biased", "forced", "warner-small-p"],
)
def test_small_probabilities_keep_their_precision_in_the_channel(
    design: Design, expected: float
) -> None:
    """``1 - (1 - q)`` rounds q to a multiple of 2**-53 (6e-4 relative at 1e-13): the channel
    takes each complement from the design's own formula instead."""
    assert design.epsilon == pytest.approx(expected, rel=1e-12)
    assert channel_epsilon(design.channel) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(np.asarray(design.channel).sum(axis=0), 1.0, rtol=0, atol=1e-15)


# --- Kuk: draws --------------------------------------------------------------------------------


def test_kuk_draws_whose_channel_underflows_are_rejected() -> None:
    # 0.1**400 = 1e-400 underflows to 0: channel epsilon inf while 400 ln 9 = 878.9
    with pytest.raises(ParameterError, match="`draws`") as info:
        Kuk(0.9, 0.1, draws=400)
    top = math.floor(math.log(2.2250738585072014e-308) / math.log(0.1))  # 0.1**k >= 2**-1022
    assert f"[1, {top}]" in str(info.value) and "got 400" in str(info.value)
    d = Kuk(0.9, 0.1, draws=top)
    assert np.all(np.asarray(d.channel) > 0)
    assert d.epsilon == pytest.approx(top * math.log(9), rel=1e-12)
    assert channel_epsilon(d.channel) == pytest.approx(d.epsilon, rel=1e-9)


def test_kuk_draws_cap_is_1000() -> None:
    assert Kuk(0.5, 0.5 + 2**-8, draws=1000).draws == 1000
    with pytest.raises(ParameterError, match=r"`draws` must be an integer in \[1, 1000\]"):
        Kuk(0.5, 0.5 + 2**-8, draws=1001)


@pytest.mark.parametrize("draws", [1, 2, 50, 307])
def test_kuk_epsilon_equals_its_channel_epsilon(draws: int) -> None:
    d = Kuk(0.9, 0.1, draws=draws)
    assert channel_epsilon(d.channel) == pytest.approx(d.epsilon, rel=1e-9)


# --- frozen, equality ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("design", "field"),
    [
        (Warner(0.75), "p"),
        (TwoCoin(), "p_truthful"),
        (Binary(1.0), "nominal_epsilon"),
        (Kuk(0.7, 0.3, draws=2), "draws"),
        (Categorical(k=3, p_truthful=0.5), "k"),
        (Custom(0.6, 0.1), "yes_given_1"),
    ],
)
def test_designs_are_frozen(design: Design, field: str) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(design, field, 0.6)


def test_designs_compare_and_hash_by_value() -> None:
    assert Warner(0.75) == Warner(3 / 4)
    assert hash(Warner(0.75)) == hash(Warner(3 / 4))
    assert Warner(0.75) != Mirrored(0.75)
    assert Kuk(0.7, 0.3, draws=2.0) == Kuk(0.7, 0.3, draws=2)  # type: ignore[arg-type]
    assert Categorical(k=3, p_truthful=0.5, forced=[0.2, 0.3, 0.5]) == Categorical(  # type: ignore[arg-type]
        k=3, p_truthful=0.5, forced=(0.2, 0.3, 0.5)
    )


# --- make_design -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("warner", {"p": "3/4"}, Warner(0.75)),
        ("warner", {"p": 0.75}, Warner(0.75)),
        ("mirrored", {"p": "0.3"}, Mirrored(0.3)),
        ("two-coin", {}, TwoCoin()),
        ("two-coin", {"p_truthful": "1/2", "p_yes": "1/3"}, TwoCoin(0.5, 1 / 3)),
        ("forced", {"forced_yes": "1/6", "forced_no": "1/3"}, ForcedResponse(1 / 6, 1 / 3)),
        ("kuk", {"theta1": "0.7", "theta2": "0.3", "draws": "3"}, Kuk(0.7, 0.3, 3)),
        ("binary", {"epsilon": "1"}, Binary(1.0)),
        ("binary", {"epsilon": "2", "calibration": "half"}, Binary(2.0, "half")),
        ("custom", {"p_yes_given_1": "0.6", "p_yes_given_0": "1e-1"}, Custom(0.6, 0.1)),
        (
            "categorical",
            {"k": "3", "p_truthful": "0.5", "forced": "0.2,0.3,0.5"},
            Categorical(3, 0.5, (0.2, 0.3, 0.5)),
        ),
        ("categorical", {"k": 4, "p_truthful": "1/2"}, Categorical(4, 0.5)),
    ],
)
def test_make_design_parses_values(name: str, params: dict[str, Any], expected: Design) -> None:
    assert make_design(name, params) == expected


def test_make_design_unknown_design() -> None:
    with pytest.raises(ParameterError, match=r"`design` must be one of .*warner.*got 'nope'"):
        make_design("nope", {})


def test_make_design_unknown_parameter() -> None:
    with pytest.raises(ParameterError, match="got unknown 'x'"):
        make_design("warner", {"p": "0.7", "x": "1"})


def test_make_design_missing_parameter() -> None:
    with pytest.raises(ParameterError, match="needs parameter p"):
        make_design("warner", {})
    with pytest.raises(ParameterError, match="needs parameters theta1, theta2"):
        make_design("kuk", {})


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"p": "abc"}, ParameterTypeError),
        ({"p": "1/0"}, ParameterTypeError),
        ({"p": "nan"}, ParameterError),
        ({"p": "0.5"}, ParameterError),
        ({"p": "2/4"}, ParameterError),
    ],
)
def test_make_design_bad_values(params: dict[str, str], error: type[Exception]) -> None:
    with pytest.raises(error, match="`p`"):
        make_design("warner", params)


def test_design_parameters() -> None:
    assert list(design_parameters("warner")) == ["p"]
    assert list(design_parameters("kuk")) == ["theta1", "theta2", "draws"]
    assert list(design_parameters("binary")) == ["epsilon", "calibration"]
    with pytest.raises(ParameterError, match="`design`"):
        design_parameters("nope")


# --- Tally -----------------------------------------------------------------------------------


def test_tally_counts_and_merges() -> None:
    t = Tally.from_reports([0, 1, 1, 0, 1])
    assert t.counts.tolist() == [2, 3] and t.n == 5 and t.yes == 3
    assert Tally.binary(3, 5) == t
    assert Tally.from_reports([2, 0, 2], size=3).counts.tolist() == [1, 0, 2]
    assert Tally.from_reports(np.array([True, False, True])).counts.tolist() == [1, 2]
    assert Tally((1, 2)) + Tally((3, 4)) == Tally((4, 6))


@pytest.mark.parametrize(
    ("make", "error", "named"),
    [
        (lambda: Tally((5,)), DataError, "`counts`"),
        (lambda: Tally((-1, 2)), ParameterError, "`counts\\[0\\]`"),
        (lambda: Tally((1.5, 2)), ParameterTypeError, "`counts\\[0\\]`"),  # type: ignore[arg-type]
        (lambda: Tally.binary(6, 5), DataError, "`yes`"),
        (lambda: Tally.binary(-1, 5), ParameterError, "`yes`"),
        (lambda: Tally.binary(0, 0), ParameterError, "`n`"),
        (lambda: Tally((1, 2)) + Tally((1, 2, 3)), DataError, "cannot add"),
        (lambda: Tally((1, 2, 3)).yes, DataError, "`yes`"),
        (lambda: Tally.from_reports([0, 3], size=3), DataError, "`reports`"),
    ],
)
def test_tally_errors(make: Callable[[], object], error: type[Exception], named: str) -> None:
    with pytest.raises(error, match=named):
        make()


def test_tally_add_other_types_is_a_type_error() -> None:
    assert Tally((1, 2)).__add__((1, 2)) is NotImplemented
    with pytest.raises(TypeError):
        _ = Tally((1, 2)) + 1


def test_binary_estimate_needs_data_or_counts() -> None:
    d = TwoCoin()
    with pytest.raises(DataError):
        d.estimate()
    with pytest.raises(DataError):
        d.estimate([0, 1], yes=1, n=2)
    with pytest.raises(DataError, match="`yes`"):
        d.estimate(yes=3, n=2)


def test_categorical_estimate_needs_data() -> None:
    with pytest.raises(DataError):
        Categorical(k=3, p_truthful=0.5).estimate()
