"""Majority decisions: closed forms, brute-force enumeration, identities, simulation, errors."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.designs import (
    BinaryDesign,
    Categorical,
    Custom,
    ForcedResponse,
    Kuk,
    Mangat,
    TwoCoin,
    Warner,
)
from deniable.estimation import (
    MajorityDecision,
    decide_majority,
    majority_decision,
    majority_threshold,
    simulate_majority,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

DESIGNS = [
    TwoCoin(),
    Warner(0.3),  # P1 < P0: "no" points to carriers
    ForcedResponse(0.2, 0.1),  # asymmetric: P0 + P1 = 1.1
    Custom(0.75, 0.125),
    Mangat(0.5),  # P1 = 1: epsilon infinite, still a valid decision
]


# --- independent reference implementations (enumeration, written from the definitions) ----


def _rule(design: BinaryDesign, yes: int, n: int, c: float) -> bool:
    """The decision from its definition, with exact rational P0 + P1 for the centre."""
    p1 = Fraction(design.p_yes_given_1).limit_denominator(10**6)
    p0 = Fraction(design.p_yes_given_0).limit_denominator(10**6)
    centre = n * (p0 + p1) / 2
    lam_b = float((p0 + p1) / 2)
    shift = c * math.sqrt(n * lam_b * (1 - lam_b))
    if p1 > p0:
        return yes - centre > shift
    return centre - yes > shift


def _enumerate_fixed(design: BinaryDesign, n: int, k: int, c: float) -> float:
    """P(decide) for truth (1,..,1,0,..,0) with k ones: sum over all 2^n report vectors."""
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    total = 0.0
    for reports in itertools.product((0, 1), repeat=n):
        prob = 1.0
        for i, r in enumerate(reports):
            p = p1 if i < k else p0
            prob *= p if r else 1 - p
        if _rule(design, sum(reports), n, c):
            total += prob
    return total


def _enumerate_iid(design: BinaryDesign, n: int, pi: float, c: float) -> float:
    """P(decide) under iid sampling: sum over all truth vectors and all report vectors."""
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    total = 0.0
    for truth in itertools.product((0, 1), repeat=n):
        p_truth = math.prod(pi if t else 1 - pi for t in truth)
        for reports in itertools.product((0, 1), repeat=n):
            prob = p_truth
            for t, r in zip(truth, reports, strict=True):
                p = p1 if t else p0
                prob *= p if r else 1 - p
            if _rule(design, sum(reports), n, c):
                total += prob
    return total


def _binomial_weights(n: int, p: Fraction) -> list[int]:
    """``P(Bin(n, p) = k) * q**n`` for k = 0..n, ``p = a / q``: exact integers."""
    a, q = p.numerator, p.denominator
    return [math.comb(n, k) * a**k * (q - a) ** (n - k) for k in range(n + 1)]


def _binomial_tail(n: int, p: Fraction, m: int) -> Fraction:
    """P(Bin(n, p) > m), exactly."""
    return Fraction(sum(_binomial_weights(n, p)[m + 1 :]), p.denominator**n)


# --- closed forms by hand ---------------------------------------------------------------------


def test_two_coin_n3_closed_forms() -> None:
    # Two fair coins: P1 = 3/4, P0 = 1/4, lambda_b = 1/2, threshold 3/2: decide iff #yes >= 2.
    d = TwoCoin()
    assert majority_threshold(d, 3) == 1.5
    # iid, pi = 1/2: lambda = 1/2, P(Bin(3, 1/2) >= 2) = 4/8.
    assert majority_decision(d, 3, prevalence=0.5).p_decide_majority == pytest.approx(
        0.5, rel=1e-12
    )
    # iid, pi = 1: lambda = 3/4, 3 (3/4)^2 (1/4) + (3/4)^3 = 54/64 = 27/32.
    assert majority_decision(d, 3, prevalence=1.0).p_decide_majority == pytest.approx(
        27 / 32, rel=1e-12
    )
    # fixed K = 2: A ~ Bin(2, 3/4), B ~ Bin(1, 1/4); P(A + B >= 2) = 9/16 + (6/16)(1/4) = 21/32.
    fixed = majority_decision(d, 3, true_yes=2)
    assert fixed.is_majority
    assert fixed.p_decide_majority == pytest.approx(21 / 32, abs=1e-15)
    assert fixed.error_probability == pytest.approx(11 / 32, abs=1e-15)
    assert fixed.false_negative_rate == pytest.approx(11 / 32, abs=1e-15)
    # FP at K = floor(3/2) = 1: (3/4)(1 - (3/4)^2) + (1/4)(1/4)^2 = 21/64 + 1/64 = 11/32.
    assert fixed.false_positive_rate == pytest.approx(11 / 32, abs=1e-15)
    # iid, not a majority: FP at pi = 1/2 is 1/2; FN at pi = (1 + 1)/3 = 2/3, lambda = 7/12:
    # P(#yes <= 1) = (5/12)^3 + 3 (7/12)(5/12)^2 = 650/1728 = 325/864.
    low = majority_decision(d, 3, prevalence=0.2)
    assert not low.is_majority
    assert low.false_positive_rate == pytest.approx(0.5, abs=1e-15)
    assert low.false_negative_rate == pytest.approx(325 / 864, abs=1e-15)
    assert low.report_probability == pytest.approx(0.25 + 0.2 / 2, rel=1e-12)


def test_two_coin_n3_eight_report_vectors() -> None:
    # iid pi = 0.8: lambda = 1/4 + 0.8/2 = 0.65; list the 8 report vectors by hand.
    lam = 0.65
    total = 0.0
    for reports in itertools.product((0, 1), repeat=3):
        if sum(reports) >= 2:
            total += math.prod(lam if r else 1 - lam for r in reports)
    d = majority_decision(TwoCoin(), 3, prevalence=0.8)
    assert d.p_decide_majority == pytest.approx(total, abs=1e-15)
    assert d.error_probability == pytest.approx(1 - total, abs=1e-15)
    assert d.is_majority


@pytest.mark.parametrize("design", DESIGNS, ids=repr)
@pytest.mark.parametrize("offset", [0.0, 0.7, -0.4])
def test_fixed_population_matches_brute_force(design: BinaryDesign, offset: float) -> None:
    for n in range(1, 7):
        for k in range(n + 1):
            got = majority_decision(design, n, true_yes=k, offset=offset)
            want = _enumerate_fixed(design, n, k, offset)
            assert got.p_decide_majority == pytest.approx(want, abs=1e-13)
            assert got.is_majority == (2 * k > n)
            assert got.error_probability == pytest.approx(
                1 - want if 2 * k > n else want, abs=1e-13
            )
            assert got.false_positive_rate == pytest.approx(
                _enumerate_fixed(design, n, n // 2, offset), abs=1e-13
            )
            fn_k = k if 2 * k > n else n // 2 + 1
            assert got.false_negative_rate == pytest.approx(
                1 - _enumerate_fixed(design, n, fn_k, offset), abs=1e-13
            )


@pytest.mark.parametrize("design", DESIGNS, ids=repr)
def test_iid_matches_brute_force(design: BinaryDesign) -> None:
    for n in (1, 2, 4, 5):
        for pi in (0.0, 0.3, 0.5, 0.9):
            got = majority_decision(design, n, prevalence=pi, offset=0.3)
            assert got.p_decide_majority == pytest.approx(
                _enumerate_iid(design, n, pi, 0.3), abs=1e-13
            )


def test_decide_majority_against_rule() -> None:
    for design in DESIGNS:
        for n in (1, 7, 20):
            for c in (0.0, 1.0, -0.5):
                for yes in range(n + 1):
                    assert decide_majority(design, yes, n, c) == _rule(design, yes, n, c)


def test_a_decisions_verdict_is_the_rule_and_is_right_compares_it_with_the_truth() -> None:
    for design in DESIGNS:
        for n in (1, 7, 20):
            for c in (0.0, 1.0, -0.5):
                for k in (0, n // 2, n // 2 + 1, n):
                    decision = majority_decision(design, n, true_yes=k, offset=c)
                    for yes in range(n + 1):
                        verdict = decision.decide(yes)
                        assert verdict == _rule(design, yes, n, c)
                        assert decision.is_right(yes) == (verdict == (2 * k > n))
    # the iid decision's truth is its prevalence
    assert majority_decision(TwoCoin(), 10, prevalence=0.7).is_right(8)
    assert not majority_decision(TwoCoin(), 10, prevalence=0.7).is_right(3)


@pytest.mark.parametrize("yes", [-1, 11, 2.5, "3", True])
def test_a_verdict_needs_a_count_of_yes_reports_in_0_to_n(yes: object) -> None:
    decision = majority_decision(TwoCoin(), 10, prevalence=0.5)
    with pytest.raises((ParameterError, ParameterTypeError), match="`yes`"):
        decision.decide(yes)  # type: ignore[arg-type]
    with pytest.raises((ParameterError, ParameterTypeError), match="`yes`"):
        decision.is_right(yes)  # type: ignore[arg-type]


def test_tie_is_not_a_majority_and_rounding_is_snapped() -> None:
    # Warner(0.7): P0 + P1 = 0.7 + 0.30000000000000004 in floats; the threshold is exactly 5.
    assert majority_threshold(Warner(0.7), 10) == 5.0
    assert not decide_majority(Warner(0.7), 5, 10)
    assert decide_majority(Warner(0.7), 6, 10)
    # Forced response 0.2 / 0.1: n (0.2 + 0.9) / 2 = 11 at n = 20; 11 "yes" is a tie.
    assert majority_threshold(ForcedResponse(0.2, 0.1), 20) == 11.0
    assert not decide_majority(ForcedResponse(0.2, 0.1), 11, 20)
    assert decide_majority(ForcedResponse(0.2, 0.1), 12, 20)
    # Forced response 0.1 / 0.3: P1 = 0.7, P0 = 0.1 and 5 (0.7 + 0.1) / 2 is 1.9999999999999998
    # in floats; mathematically it is 2, and 2 "yes" of 5 is a tie, not a majority.
    design = ForcedResponse(0.1, 0.3)
    assert majority_threshold(design, 5) == 2.0
    assert not decide_majority(design, 2, 5)
    # P(decide) = P(Bin(5, lambda) >= 3), lambda = 0.1 + 0.6 pi
    lam = 0.1 + 0.6 * 0.4
    want = sum(math.comb(5, j) * lam**j * (1 - lam) ** (5 - j) for j in range(3, 6))
    got = majority_decision(design, 5, prevalence=0.4).p_decide_majority
    assert got == pytest.approx(want, rel=1e-12)


# --- identities -------------------------------------------------------------------------------


@pytest.mark.parametrize("design", DESIGNS, ids=repr)
def test_iid_is_the_binomial_mixture_of_fixed_populations(design: BinaryDesign) -> None:
    # iid sampling = draw K ~ Bin(n, pi), then a fixed population with K carriers.
    n, pi = 30, 0.55
    for c in (0.0, 1.5):
        ks = np.arange(n + 1)
        fixed = [
            majority_decision(design, n, true_yes=int(k), offset=c).p_decide_majority for k in ks
        ]
        mix = float(np.dot(stats.binom.pmf(ks, n, pi), fixed))
        iid = majority_decision(design, n, prevalence=pi, offset=c).p_decide_majority
        assert iid == pytest.approx(mix, rel=1e-12)


def test_iid_and_fixed_agree_at_unanimous_truths() -> None:
    # K = n carriers is exactly iid sampling with prevalence 1 (and K = 0 with prevalence 0).
    for design in DESIGNS:
        for n in (1, 17, 400):
            for k, pi in ((n, 1.0), (0, 0.0)):
                a = majority_decision(design, n, true_yes=k, offset=0.5)
                b = majority_decision(design, n, prevalence=pi, offset=0.5)
                assert a.p_decide_majority == pytest.approx(b.p_decide_majority, rel=1e-12)
                assert a.error_probability == pytest.approx(b.error_probability, rel=1e-10)
                assert a.report_probability == pytest.approx(b.report_probability, rel=1e-12)


def test_fixed_population_against_full_convolution() -> None:
    # Direct convolution of the two pmfs (numpy's convolve sums non-negative products, so even
    # tiny tails keep their relative accuracy).
    for design, n, k in ((ForcedResponse(0.2, 0.1), 300, 170), (TwoCoin(), 2000, 1900)):
        p1, p0 = design.p_yes_given_1, design.p_yes_given_0
        pmf = np.convolve(
            stats.binom.pmf(np.arange(k + 1), k, p1),
            stats.binom.pmf(np.arange(n - k + 1), n - k, p0),
        )
        t = n * (p0 + p1) / 2
        cut = math.floor(t)
        d = majority_decision(design, n, true_yes=k)
        assert d.p_decide_majority == pytest.approx(pmf[cut + 1 :].sum(), rel=1e-10)
        assert d.error_probability == pytest.approx(pmf[: cut + 1].sum(), rel=1e-9)
    # the second case has a tiny error (about 1e-200): computed, not lost to 1 - p
    assert 0 < majority_decision(TwoCoin(), 2000, true_yes=1900).error_probability < 1e-100


def test_warner_below_half_mirrors_warner_above_half() -> None:
    # Warner(0.3) reports "yes" exactly when Warner(0.7) would report "no".
    n = 10
    assert majority_threshold(Warner(0.3), n, 1.0) == pytest.approx(5 - math.sqrt(2.5), rel=1e-12)
    assert majority_threshold(Warner(0.7), n, 1.0) == pytest.approx(5 + math.sqrt(2.5), rel=1e-12)
    # 5 - 1.5811 = 3.419: decide iff #yes <= 3
    assert decide_majority(Warner(0.3), 3, n, 1.0)
    assert not decide_majority(Warner(0.3), 4, n, 1.0)
    for pi in (0.2, 0.5, 0.8):
        lo = majority_decision(Warner(0.3), n, prevalence=pi, offset=1.0)
        hi = majority_decision(Warner(0.7), n, prevalence=pi, offset=1.0)
        assert lo.p_decide_majority == pytest.approx(hi.p_decide_majority, rel=1e-12)
        # lambda = 0.7 - 0.4 pi (the share of yes); decide iff Bin(10, lambda) <= 3
        lam = 0.7 - 0.4 * pi
        assert lo.report_probability == pytest.approx(lam, rel=1e-12)
        assert lo.p_decide_majority == pytest.approx(stats.binom.cdf(3, n, lam), rel=1e-12)
    assert "<" in lo.decision_rule and ">" in hi.decision_rule


# --- behaviour in n and in the offset ---------------------------------------------------------


def test_error_decreases_with_n_and_respects_hoeffding() -> None:
    design, pi = TwoCoin(), 0.6  # lambda = 0.55, lambda_b = 0.5
    errors = [
        majority_decision(design, n, prevalence=pi).error_probability
        for n in (25, 101, 401, 1601, 6401)
    ]
    assert all(a > b for a, b in itertools.pairwise(errors))
    for n in (25, 101, 401, 1601, 6401):
        bound = math.exp(-2 * n * 0.05**2)  # Hoeffding (1963) at c = 0
        assert majority_decision(design, n, prevalence=pi).error_probability <= bound
    fixed = [
        majority_decision(design, n, true_yes=3 * n // 5).error_probability
        for n in (25, 100, 400, 1600)
    ]
    assert all(a > b for a, b in itertools.pairwise(fixed))


def test_offset_trades_false_positives_for_false_negatives() -> None:
    design, n = ForcedResponse(0.2, 0.1), 2000
    for kw in ({"prevalence": 0.52}, {"true_yes": 1040}):
        ds = [majority_decision(design, n, offset=c, **kw) for c in (0.0, 1.0, 2.0, 3.0)]
        fp = [d.false_positive_rate for d in ds]
        fn = [d.false_negative_rate for d in ds]
        assert all(a > b for a, b in itertools.pairwise(fp))
        assert all(a < b for a, b in itertools.pairwise(fn))
    # iid at the boundary the count is Bin(n, lambda_b): FP rate ~ 1 - Phi(c) for large n
    # (continuity and skewness corrections are O(1/sqrt(n lambda_b (1 - lambda_b))) ~ 0.005).
    for c in (0.0, 1.0, 2.0):
        d = majority_decision(design, 40_000, prevalence=0.3, offset=c)
        assert d.false_positive_rate == pytest.approx(stats.norm.sf(c), abs=0.01)


def test_asymmetric_design_uses_the_noisy_threshold() -> None:
    design, n = ForcedResponse(0.2, 0.1), 1000  # P1 = 0.9, P0 = 0.2
    assert majority_threshold(design, n) == pytest.approx(n * (0.2 + 0.9) / 2, rel=1e-12)
    assert majority_threshold(design, n) == 550.0
    # At prevalence 1/2 the count is centred on the threshold: error about 1/2 (the atom at
    # 550 has mass ~ 1 / sqrt(2 pi n 0.55 0.45) = 0.025).
    iid = majority_decision(design, n, prevalence=0.5)
    fixed = majority_decision(design, n, true_yes=500)
    # Exactly, in rationals: 500 of 1000 is no majority, so the error is P(#yes > 550);
    # iid: #yes ~ Bin(1000, 11/20); fixed: Bin(500, 9/10) + Bin(500, 1/5) (convolved)
    assert iid.error_probability == pytest.approx(
        float(_binomial_tail(n, Fraction(11, 20), 550)), rel=1e-12
    )
    carriers = _binomial_weights(500, Fraction(9, 10))
    above = list(itertools.accumulate(reversed(_binomial_weights(500, Fraction(1, 5)))))[::-1]
    above.append(0)  # above[m] * 5**500 = P(Bin(500, 1/5) >= m)
    count = sum(a * above[min(max(551 - i, 0), 501)] for i, a in enumerate(carriers))
    tail = Fraction(count, 10**500 * 5**500)
    assert fixed.error_probability == pytest.approx(float(tail), rel=1e-12)
    assert not iid.is_majority and not fixed.is_majority
    # The naive threshold n/2 would call a majority almost surely at prevalence 1/2.
    assert stats.binom.sf(500, n, 0.55) > 0.99


def test_large_population_is_exact_and_fast() -> None:
    # n = 10^6, K = 500_500: #yes = Bin(K, 3/4) + Bin(n - K, 1/4), mean n/2 + K/2 - n/4,
    # variance n * 3/16; the normal approximation is good to ~1e-3 here.
    n, k = 10**6, 500_500
    d = majority_decision(TwoCoin(), n, true_yes=k, offset=1.0)
    sd = math.sqrt(n * 3 / 16)
    mean = 0.75 * k + 0.25 * (n - k)
    thr = n / 2 + 1.0 * math.sqrt(n / 4)
    assert d.p_decide_majority == pytest.approx(stats.norm.sf((thr + 0.5 - mean) / sd), abs=2e-3)
    assert d.p_decide_majority + d.error_probability == pytest.approx(1.0, abs=1e-12)


# --- simulation -------------------------------------------------------------------------------

SIM_CASES = [
    (TwoCoin(), 101, {"prevalence": 0.6}, 0.0),
    (Warner(0.3), 60, {"prevalence": 0.45}, 0.5),
    (ForcedResponse(0.2, 0.1), 500, {"true_yes": 260}, 1.0),
    (Mangat(0.5), 40, {"true_yes": 20}, -0.5),
    (Custom(0.75, 0.125), 1000, {"prevalence": 0.5}, 0.0),
]


@pytest.mark.parametrize(("design", "n", "truth", "offset"), SIM_CASES)
def test_simulation_agrees_with_exact(
    design: BinaryDesign, n: int, truth: dict[str, float], offset: float
) -> None:
    trials = 40_000
    exact = majority_decision(design, n, offset=offset, **truth).p_decide_majority  # type: ignore[arg-type]
    sim = simulate_majority(design, n, offset=offset, trials=trials, seed=20240611, **truth)  # type: ignore[arg-type]
    # 4.5-sigma binomial band: false alarm ~7e-6 per check (plus 1/trials for tiny p)
    band = 4.5 * math.sqrt(exact * (1 - exact) / trials) + 1 / trials
    assert abs(sim - exact) <= band


def test_simulation_is_seeded() -> None:
    a = simulate_majority(TwoCoin(), 51, prevalence=0.55, trials=500, seed=9)
    b = simulate_majority(TwoCoin(), 51, prevalence=0.55, trials=500, seed=9)
    assert a == b
    assert 0.0 <= simulate_majority(TwoCoin(), 5, prevalence=0.5, trials=10) <= 1.0


# --- results ----------------------------------------------------------------------------------


def test_to_dict_table_and_str() -> None:
    d = majority_decision(ForcedResponse(0.2, 0.1), 400, prevalence=0.6, offset=1.0)
    out = d.to_dict()
    json.dumps(out)
    for key in (
        "design",
        "parameters",
        "n",
        "offset",
        "threshold",
        "population",
        "prevalence",
        "true_yes",
        "lambda",
        "p_decide_majority",
        "is_majority",
        "error_probability",
        "false_positive_rate",
        "false_negative_rate",
    ):
        assert key in out
    assert out["design"] == "forced"
    assert out["parameters"] == {"forced_yes": 0.2, "forced_no": 0.1}
    assert out["lambda"] == pytest.approx(0.2 + 0.6 * 0.7, rel=1e-12)
    assert out["threshold"] == pytest.approx(220 + math.sqrt(400 * 0.55 * 0.45), rel=1e-12)
    assert out["true_yes"] is None and out["population"] == "iid"
    text = str(d)
    assert text == str(d.table())
    assert "P(decide majority)" in text and "prevalence 1/2" in text
    fixed = majority_decision(TwoCoin(), 9, true_yes=3)
    assert "K = 4" in str(fixed.table()) and "K = 5" in str(fixed.table())
    assert fixed.to_dict()["true_yes"] == 3 and fixed.prevalence == pytest.approx(1 / 3, rel=1e-12)
    assert fixed.false_negative_prevalence == pytest.approx(5 / 9, rel=1e-12)
    assert fixed.false_positive_prevalence == pytest.approx(4 / 9, rel=1e-12)
    assert isinstance(fixed, MajorityDecision)


def test_to_dict_states_where_the_error_rates_are_evaluated() -> None:
    """The false-negative rate of a non-majority truth is taken at the smallest majority,
    (floor(n/2) + 1) / n; at a majority truth, at that truth.  The false-positive rate at 1/2
    (iid) or floor(n/2) / n (fixed).  to_dict() carries both prevalences."""
    iid = majority_decision(TwoCoin(), 100, prevalence=0.3).to_dict()
    assert iid["false_negative_prevalence"] == pytest.approx(51 / 100, rel=1e-12)
    assert iid["false_positive_prevalence"] == 0.5
    majority = majority_decision(TwoCoin(), 100, prevalence=0.7).to_dict()
    assert majority["false_negative_prevalence"] == pytest.approx(0.7, rel=1e-12)
    fixed = majority_decision(TwoCoin(), 9, true_yes=3).to_dict()
    assert fixed["false_negative_prevalence"] == pytest.approx(5 / 9, rel=1e-12)
    assert fixed["false_positive_prevalence"] == pytest.approx(4 / 9, rel=1e-12)
    json.dumps(fixed)


def test_kuk_with_one_draw_is_a_binary_design() -> None:
    d = majority_decision(Kuk(0.8, 0.3), 50, prevalence=0.7)
    ref = majority_decision(Custom(0.8, 0.3), 50, prevalence=0.7)
    assert d.p_decide_majority == pytest.approx(ref.p_decide_majority, rel=1e-12)


# --- invalid inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"n": 0, "prevalence": 0.5},
            ParameterError,
            r"`n` must be an integer in \[1, (inf|2\*\*62)\]( \(.*\))?, got 0",
        ),
        ({"n": 2.5, "prevalence": 0.5}, ParameterTypeError, "`n` must be an integer"),
        ({"n": "10", "prevalence": 0.5}, ParameterTypeError, "`n` must be an integer"),
        (
            {"n": 10, "prevalence": -0.1},
            ParameterError,
            r"`prevalence` must be in \[0, 1\], got -0.1",
        ),
        (
            {"n": 10, "prevalence": 1.5},
            ParameterError,
            r"`prevalence` must be in \[0, 1\], got 1.5",
        ),
        ({"n": 10, "prevalence": math.nan}, ParameterError, "`prevalence` must be a number"),
        ({"n": 10, "prevalence": "0.5"}, ParameterTypeError, "`prevalence` must be a real"),
        (
            {"n": 10, "true_yes": -1},
            ParameterError,
            r"`true_yes` must be an integer in \[0, 10\], got -1",
        ),
        (
            {"n": 10, "true_yes": 11},
            ParameterError,
            r"`true_yes` must be an integer in \[0, 10\], got 11",
        ),
        ({"n": 10, "true_yes": 2.5}, ParameterTypeError, "`true_yes` must be an integer"),
        ({"n": 10}, ParameterError, "`prevalence`.*`true_yes`.*got neither"),
        (
            {"n": 10, "prevalence": 0.5, "true_yes": 5},
            ParameterError,
            "`prevalence`.*`true_yes`.*got both",
        ),
        (
            {"n": 10, "prevalence": 0.5, "offset": math.inf},
            ParameterError,
            "`offset` must be a finite real number, got inf",
        ),
        (
            {"n": 10, "prevalence": 0.5, "offset": math.nan},
            ParameterError,
            "`offset` must be a number",
        ),
        (
            {"n": 10, "prevalence": 0.5, "offset": "1"},
            ParameterTypeError,
            "`offset` must be a real",
        ),
    ],
)
def test_invalid_inputs(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        majority_decision(TwoCoin(), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(error, match=match):
        simulate_majority(TwoCoin(), trials=10, seed=1, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["warner", None, 0.75, Categorical(3, 0.5)])
def test_design_must_be_binary(bad: object) -> None:
    for call in (
        lambda: majority_decision(bad, 10, prevalence=0.5),  # type: ignore[arg-type]
        lambda: majority_threshold(bad, 10),  # type: ignore[arg-type]
        lambda: decide_majority(bad, 3, 10),  # type: ignore[arg-type]
        lambda: simulate_majority(bad, 10, prevalence=0.5, trials=10, seed=1),  # type: ignore[arg-type]
    ):
        with pytest.raises(ParameterTypeError, match="`design` must be a BinaryDesign"):
            call()


def test_kuk_with_several_draws_is_rejected() -> None:
    design = Kuk(0.8, 0.3, draws=3)
    with pytest.raises(ParameterError, match=r"`draws` must be 1.*draws = 3"):
        majority_decision(design, 10, prevalence=0.5)
    with pytest.raises(ParameterError, match="`draws`"):
        majority_threshold(design, 10)
    with pytest.raises(ParameterError, match="`draws`"):
        decide_majority(design, 2, 10)
    with pytest.raises(ParameterError, match="`draws`"):
        simulate_majority(design, 10, prevalence=0.5, trials=10, seed=1)


def test_invalid_threshold_decide_and_simulation_arguments() -> None:
    with pytest.raises(ParameterError, match=r"`n` must be an integer in \[1, inf\], got 0"):
        majority_threshold(TwoCoin(), 0)
    with pytest.raises(ParameterError, match="`offset` must be a finite real number, got -inf"):
        majority_threshold(TwoCoin(), 10, -math.inf)
    with pytest.raises(DataError, match=r"`yes` must be in \[0, n\] = \[0, 10\], got 11"):
        decide_majority(TwoCoin(), 11, 10)
    with pytest.raises(ParameterError, match=r"`yes` must be an integer in \[0, inf\], got -1"):
        decide_majority(TwoCoin(), -1, 10)
    with pytest.raises(ParameterTypeError, match="`yes` must be an integer"):
        decide_majority(TwoCoin(), 2.5, 10)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`offset` must be a finite"):
        decide_majority(TwoCoin(), 3, 10, math.inf)
    trials_0 = r"`trials` must be an integer in \[1, 10\*\*6\] \(.*\), got 0"
    with pytest.raises(ParameterError, match=trials_0):
        simulate_majority(TwoCoin(), 10, prevalence=0.5, trials=0)
    with pytest.raises(ParameterError, match=r"`seed` must be an integer in \[0, inf\], got -1"):
        simulate_majority(TwoCoin(), 10, prevalence=0.5, seed=-1)
    with pytest.raises(ParameterTypeError, match="`seed` must be an integer"):
        simulate_majority(TwoCoin(), 10, prevalence=0.5, seed="x")  # type: ignore[arg-type]


# --- each public entry point checks its inputs once ------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda d: majority_decision(d, 400, prevalence=0.6, offset=1.0),
        lambda d: majority_decision(d, 400, true_yes=230, offset=1.0),
        lambda d: simulate_majority(d, 400, prevalence=0.6, offset=1.0, trials=10, seed=1),
        lambda d: majority_threshold(d, 400, offset=1.0),
        lambda d: decide_majority(d, 230, 400, offset=1.0),
    ],
    ids=["decision-iid", "decision-fixed", "simulate", "threshold", "decide"],
)
def test_inputs_are_checked_once_at_the_public_entry_point(
    call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before 1.0, n went back and forth between the two modules and was checked five times
    from deniable.common import validation
    from deniable.estimation import _majority_rule

    design = ForcedResponse(0.2, 0.1)
    checked: list[str] = []
    depth = [0]  # probability() calls real(): count the outer check only
    for name in ("integer", "real", "probability"):
        original = getattr(validation, name)

        def spy(arg: str, *a: Any, _f: Any = original, **kw: Any) -> Any:
            if depth[0] == 0:
                checked.append(arg)
            depth[0] += 1
            try:
                return _f(arg, *a, **kw)
            finally:
                depth[0] -= 1

        monkeypatch.setattr(validation, name, spy)
    designs: list[Any] = []
    original_check = _majority_rule.check_design

    def check_design(d: Any) -> Any:
        designs.append(d)
        return original_check(d)

    monkeypatch.setattr(_majority_rule, "check_design", check_design)
    call(design)
    assert designs == [design]
    assert checked.count("n") == 1 and checked.count("offset") == 1
    assert len(checked) == len(set(checked))  # no argument is checked twice
