"""Power and sample size (deniable.estimation._power and the `power` / `sample-size` CLI).

Closed forms used here, written out independently of the code (binary channel
P1 = P(yes | 1), P0 = P(yes | 0), d = P1 - P0, lambda(pi) = P0 + pi d):

* SE(pi) = sqrt(lambda (1 - lambda) / n) / |d|;
* one sample: greater Phi((D - z_(1-a) SE0) / SE1), less Phi((-D - z_(1-a) SE0) / SE1),
  two-sided Phi((D - z_(1-a/2) SE0) / SE1) + Phi((-D - z_(1-a/2) SE0) / SE1), D = pi1 - pi0;
* two samples: the same with SE0^2 = s(pi_bar)^2 (1/na + 1/nb), pi_bar the size-weighted
  mean, SE1^2 = s(pi_a)^2/na + s(pi_b)^2/nb;
* one-sided minimal n: power(n) >= t  <=>  sqrt(n) |D| >= z s0 + z_t s1, so
  n = ceil(((z s0 + z_t s1) / |D|)^2) with s = sqrt(n) SE;
* Kuk with k draws: Fisher information I(pi) = sum_r (b1_r - b0_r)^2 / (pi b1_r + (1-pi) b0_r),
  b_r binomial(k) probabilities of r red cards;
* unrelated question with unknown prevalence (p1, p2, unrelated prevalence q, group sizes
  n1, n2): pi_hat = ((1 - p2) l1 - (1 - p1) l2) / (p1 - p2), efficient variance
  ((1 - p2)^2 v1 + (1 - p1)^2 v2) / (p1 - p2)^2 with v_g = l_g (1 - l_g) / n_g; naive
  variance 1 / sum_g p_g^2 / v_g.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from _cases import DESIGN_CASES
from _cli import ENV_80, one_error, run, run_json
from deniable.designs import (
    BinaryDesign,
    Categorical,
    Custom,
    Design,
    ForcedResponse,
    Kuk,
    Mangat,
    StochasticLieDetector,
    TwoCoin,
    TwoGroupDesign,
    UnrelatedQuestion,
    UnrelatedUnknown,
    Warner,
)
from deniable.estimation import PowerResult, power, power_curve, sample_size, unit_variance
from deniable.estimation._power_exact import exact_power_table, randomized_power_bound
from deniable.exceptions import ParameterError, ParameterTypeError

ALTS = ("greater", "less", "two-sided")
PHI = stats.norm.cdf


def zq(p: float) -> float:
    return float(stats.norm.ppf(p))


def channel(d: Design) -> tuple[float, float]:
    """(P1, P0) of a binary design, or of "report 0 or not" for a categorical one."""
    if isinstance(d, Categorical):
        f0 = float(d.forced_distribution[0])
        return d.p_truthful + (1 - d.p_truthful) * f0, (1 - d.p_truthful) * f0
    assert isinstance(d, BinaryDesign)
    return d.p_yes_given_1, d.p_yes_given_0


def hand_s2(d: Design, pi: float) -> float:
    """n * Var(pi_hat): binary closed form, or Kuk's inverse Fisher information."""
    if isinstance(d, Kuk) and d.draws > 1:
        k = d.draws
        info = 0.0
        for r in range(k + 1):
            b1 = math.comb(k, r) * d.theta1**r * (1 - d.theta1) ** (k - r)
            b0 = math.comb(k, r) * d.theta2**r * (1 - d.theta2) ** (k - r)
            info += (b1 - b0) ** 2 / (pi * b1 + (1 - pi) * b0)
        return 1 / info
    p1, p0 = channel(d)
    lam = p0 + pi * (p1 - p0)
    return lam * (1 - lam) / (p1 - p0) ** 2


def hand_power(delta: float, se0: float, se1: float, alt: str, alpha: float) -> float:
    if alt == "two-sided":
        z = zq(1 - alpha / 2)
        return float(PHI((delta - z * se0) / se1) + PHI((-delta - z * se0) / se1))
    z = zq(1 - alpha)
    sign = 1 if alt == "greater" else -1
    return float(PHI((sign * delta - z * se0) / se1))


ONE_GROUP = [(i, f) for i, f in DESIGN_CASES if not isinstance(f(), TwoGroupDesign)]


def kwargs_for(d: Design) -> dict[str, Any]:
    return {"category": 0} if isinstance(d, Categorical) else {}


# --------------------------------------------------------------------------- closed forms


def test_warner_closed_form_by_hand() -> None:
    # Warner p = 0.7: d = 0.4; lambda(0.5) = 0.5, lambda(0.6) = 0.54; n = 1000
    # SE0 = sqrt(0.25 / 1000) / 0.4 = 0.0395285, SE1 = sqrt(0.2484 / 1000) / 0.4 = 0.0394018
    # greater: Phi((0.1 - 1.644854 * 0.0395285) / 0.0394018) = Phi(0.887806) = 0.812680
    r = power(Warner(0.7), 1000, 0.6, null=0.5, alternative="greater")
    assert r.se_null == pytest.approx(0.0395285, abs=1e-7)
    assert r.se_alternative == pytest.approx(0.0394018, abs=1e-7)
    assert r.power == pytest.approx(0.812680, abs=1e-6)
    # less, same numbers: Phi((-0.1 - 0.0650186) / 0.0394018) = Phi(-4.18809) = 1.41e-5
    less = power(Warner(0.7), 1000, 0.6, null=0.5, alternative="less")
    se0, se1 = math.sqrt(0.25 / 1000) / 0.4, math.sqrt(0.2484 / 1000) / 0.4
    assert less.power == pytest.approx(float(PHI((-0.1 - zq(0.95) * se0) / se1)), rel=1e-12)
    assert less.power == pytest.approx(float(PHI(-4.188092)), rel=5e-5)  # the rounded z above
    # two-sided: z = 1.959964; Phi((0.1 - 0.077474) / 0.0394018) + Phi(-4.50412) = 0.716237
    two = power(Warner(0.7), 1000, 0.6, null=0.5)
    assert two.power == pytest.approx(0.716237, abs=2e-6)


def test_direct_questioning_limit() -> None:
    # P1 = 1, P0 = 0: the one-proportion z-test, SE = sqrt(pi (1 - pi) / n)
    # n = 100, pi0 = 0.5, pi1 = 0.6: SE0 = 0.05, SE1 = 0.0489898
    # two-sided: Phi((0.1 - 0.0979982) / 0.0489898) + Phi((-0.1 - 0.0979982) / 0.0489898)
    #          = Phi(0.040862) + Phi(-4.041704) = 0.516297 + 0.0000265 = 0.516324
    for direct in (Custom(1.0, 0.0), Mangat(1.0), ForcedResponse(0.0, 0.0)):
        r = power(direct, 100, 0.6, null=0.5)
        assert r.se_null == pytest.approx(0.05, rel=1e-12)
        assert r.se_alternative == pytest.approx(math.sqrt(0.24) / 10, rel=1e-12)
        assert r.power == pytest.approx(0.516324, abs=2e-6)


@pytest.mark.parametrize(("case", "factory"), ONE_GROUP, ids=[i for i, _ in ONE_GROUP])
@pytest.mark.parametrize("alt", ALTS)
def test_power_matches_closed_form_for_every_design(case: str, factory: Any, alt: str) -> None:
    d = factory()
    n, pi0, pi1, alpha = 700, 0.2, 0.32, 0.1
    se0 = math.sqrt(hand_s2(d, pi0) / n)
    se1 = math.sqrt(hand_s2(d, pi1) / n)
    r = power(d, n, pi1, null=pi0, alternative=alt, alpha=alpha, **kwargs_for(d))
    assert r.se_null == pytest.approx(se0, rel=1e-9)
    assert r.se_alternative == pytest.approx(se1, rel=1e-9)
    assert r.power == pytest.approx(hand_power(pi1 - pi0, se0, se1, alt, alpha), rel=1e-9)
    assert r.to_dict()["epsilon"] == ("inf" if math.isinf(d.epsilon) else d.epsilon)


def test_kuk_several_draws_uses_fisher_information() -> None:
    d = Kuk(0.8, 0.4, draws=3)
    # the MLE's variance is below the moment estimator's (Kuk.variance)
    assert unit_variance(d, 0.3) < d.variance(0.3, 1)
    assert unit_variance(d, 0.3) == pytest.approx(hand_s2(d, 0.3), rel=1e-12)
    # one draw: the binary closed form
    assert unit_variance(Kuk(0.8, 0.4), 0.3) == pytest.approx(
        Kuk(0.8, 0.4).variance(0.3, 1), rel=1e-12
    )


def test_two_sample_closed_form_and_symmetry() -> None:
    d = TwoCoin()  # P1 = 3/4, P0 = 1/4, d = 1/2
    na, nb, pa, pb = 800, 600, 0.35, 0.25
    pooled = (na * pa + nb * pb) / (na + nb)

    def s2(pi: float) -> float:
        lam = 0.25 + pi / 2
        return lam * (1 - lam) / 0.25

    se0 = math.sqrt(s2(pooled) * (1 / na + 1 / nb))
    se1 = math.sqrt(s2(pa) / na + s2(pb) / nb)
    for alt in ALTS:
        r = power(d, na, pa, control=pb, n_control=nb, alternative=alt)
        assert r.test == "two-sample"
        assert (r.n, r.n_control) == (na, nb)
        assert r.se_null == pytest.approx(se0, rel=1e-12)
        assert r.se_alternative == pytest.approx(se1, rel=1e-12)
        assert r.power == pytest.approx(hand_power(pa - pb, se0, se1, alt, 0.05), rel=1e-12)
    # swapping the groups mirrors the alternative
    for alt, mirror in (("greater", "less"), ("less", "greater"), ("two-sided", "two-sided")):
        a = power(d, 900, 0.3, control=0.2, alternative=alt).power
        b = power(d, 900, 0.2, control=0.3, alternative=mirror).power
        assert a == pytest.approx(b, rel=1e-12)
    # equal groups, equal prevalences: the size alpha (one-sided) or alpha (two-sided)
    assert power(d, 500, 0.3, control=0.3, alternative="greater").power == pytest.approx(
        0.05, rel=1e-12
    )
    assert power(d, 500, 0.3, control=0.3).power == pytest.approx(0.05, rel=1e-12)


def _rr_se(pi: float, n: int, c: float, d: float) -> float:
    """R's rr, power.rr.test's se.f.rr for "forced-known" / "unrelated-known" (transcribed
    from rr's R/power.R; c, d from rrcd: c = p, d = p1 for the forced design):
    information = c^2 ((c pi + d)^-1 + (1 - c pi - d)^-1), se = sqrt(1 / information / n)."""
    info = c * c * (1 / (c * pi + d) + 1 / (1 - c * pi - d))
    return math.sqrt(1 / info / n)


@pytest.mark.parametrize("alt", ["greater", "two-sided"])
@pytest.mark.parametrize(
    ("pt", "pc", "pt0", "pc0"), [(0.3, 0.1, 0.1, 0.1), (0.45, 0.2, 0.25, 0.1), (0.2, 0.2, 0.3, 0.1)]
)
def test_two_sample_stated_null_is_rr_power_rr_test(
    alt: str, pt: float, pc: float, pt0: float, pc0: float
) -> None:
    # rr's power.rr.test(type = "two.sample") for the forced design of its documentation
    # example (p = 2/3 truthful, p1 = p0 = 1/6 forced, n respondents in each group):
    # presp = prespT - prespC, presp.null = prespT.null - prespC.null,
    # se = sqrt(se(prespT)^2 + se(prespC)^2), se.null = sqrt(se(prespT.null)^2 + se(prespC.null)^2),
    # one.sided: pnorm(presp.null + qnorm(1 - alpha) se.null, presp, se, lower.tail = FALSE);
    # two.sided: the two tails at qnorm(1 - alpha/2).  rr's one.sided is our "greater".
    d, n, c, dd, alpha = ForcedResponse(1 / 6, 1 / 6), 400, 2 / 3, 1 / 6, 0.01
    se = math.sqrt(_rr_se(pt, n, c, dd) ** 2 + _rr_se(pc, n, c, dd) ** 2)
    se0 = math.sqrt(_rr_se(pt0, n, c, dd) ** 2 + _rr_se(pc0, n, c, dd) ** 2)
    diff, diff0 = pt - pc, pt0 - pc0
    if alt == "greater":
        expect = 1 - PHI((diff0 + zq(1 - alpha) * se0 - diff) / se)
    else:
        z = zq(1 - alpha / 2)
        expect = PHI((diff0 - z * se0 - diff) / se) + 1 - PHI((diff0 + z * se0 - diff) / se)
    r = power(d, n, pt, control=pc, null=pt0, null_control=pc0, alternative=alt, alpha=alpha)
    assert r.null_hypothesis == "stated" and (r.null, r.null_control) == (pt0, pc0)
    assert r.se_null == pytest.approx(se0, rel=1e-12)
    assert r.se_alternative == pytest.approx(se, rel=1e-12)
    assert r.power == pytest.approx(float(expect), rel=1e-12)


def test_two_sample_stated_null_defaults_and_differs_from_pooled() -> None:
    d = TwoCoin()
    # rr: prespT.null defaults to prespC.null; here either stated value stands for both
    a = power(d, 800, 0.35, control=0.25, null_control=0.25)
    b = power(d, 800, 0.35, control=0.25, null=0.25)
    c = power(d, 800, 0.35, control=0.25, null=0.25, null_control=0.25)
    assert a == b == c and a.null_hypothesis == "stated"
    # stated SE0 at 0.25 in both groups, against the pooled prevalence 0.3 in both
    pooled = power(d, 800, 0.35, control=0.25)
    assert pooled.null_hypothesis == "pooled" and pooled.null is None
    lam0, lam_bar = 0.25 + 0.25 / 2, 0.25 + 0.3 / 2
    assert a.se_null == pytest.approx(math.sqrt(2 * lam0 * (1 - lam0) / 0.25 / 800), rel=1e-12)
    assert pooled.se_null == pytest.approx(
        math.sqrt(2 * lam_bar * (1 - lam_bar) / 0.25 / 800), rel=1e-12
    )
    assert a.se_alternative == pooled.se_alternative and a.power != pooled.power
    out = a.to_dict()
    assert (out["null"], out["null_control"], out["null_hypothesis"]) == (0.25, 0.25, "stated")
    assert pooled.to_dict()["null_hypothesis"] == "pooled"
    assert "null_control" not in power(d, 800, 0.35, null=0.25).to_dict()


def test_two_sample_stated_null_sample_size_is_minimal() -> None:
    d = Warner(0.7)
    kw = {"control": 0.2, "null": 0.25, "null_control": 0.1, "alternative": "greater"}
    for ratio in (1.0, 2.0, 1.5):
        r = sample_size(d, 0.8, 0.45, ratio=ratio, **kw)
        nb = r.n_control
        assert r.power >= 0.8 > r.power_previous  # type: ignore[operator]
        assert power(d, r.n, 0.45, n_control=nb, **kw).power == r.power
        assert r.search == ("scan" if ratio == 1.5 else "bisection")
    curve = power_curve(d, [10, 100, 1000], 0.45, **kw)
    assert curve[2] == power(d, 1000, 0.45, **kw).power


def test_power_at_the_null_is_alpha() -> None:
    for alt in ALTS:
        r = power(Warner(0.8), 300, 0.4, null=0.4, alternative=alt, alpha=0.01)
        assert r.power == pytest.approx(0.01, rel=1e-12)


@pytest.mark.parametrize(("case", "factory"), DESIGN_CASES)
def test_binary_count_is_read_off_the_channel(case: str, factory: Any) -> None:
    # what power asks of a design instead of its kind: the report probabilities of one
    # sufficient binary count, checked against the design's own channel matrix
    d = factory()
    if d.n_groups == 2:
        with pytest.raises(ParameterError, match="one group"):
            d.binary_count()
        return
    ch = np.asarray(d.channel)
    if d.n_reports > 2 and d.n_truths == 2:  # Kuk with several draws: the whole tally
        assert d.binary_count() is None
        return
    if d.n_truths > 2 or isinstance(d, Categorical):
        with pytest.raises(ParameterError, match="`category` must be given"):
            d.binary_count()
        for j in range(d.n_truths):
            p1, p0 = d.binary_count(category=j)
            others = np.delete(ch[j], j)
            assert p1 == pytest.approx(ch[j, j], abs=1e-15)
            assert others == pytest.approx(np.full(others.shape, p0), abs=1e-15)
        return
    assert d.binary_count() == pytest.approx((ch[1, 1], ch[1, 0]), abs=1e-15)
    with pytest.raises(ParameterError, match="`category` applies to design 'categorical' only"):
        d.binary_count(category=0)


# --------------------------------------------------------------------------- sample size


@pytest.mark.parametrize(("case", "factory"), ONE_GROUP, ids=[i for i, _ in ONE_GROUP])
def test_one_sided_sample_size_closed_form(case: str, factory: Any) -> None:
    d = factory()
    pi0, pi1, alpha, target = 0.2, 0.3, 0.05, 0.8
    s0, s1 = math.sqrt(hand_s2(d, pi0)), math.sqrt(hand_s2(d, pi1))
    root = (zq(1 - alpha) * s0 + zq(target) * s1) / (pi1 - pi0)
    expect = max(1, math.ceil(root * root))
    r = sample_size(d, target, pi1, null=pi0, alternative="greater", **kwargs_for(d))
    # the closed form is exact up to float rounding at an integer boundary
    assert abs(r.n - expect) <= 1, (r.n, expect)
    assert r.power >= target
    assert r.n == 1 or (r.power_previous is not None and r.power_previous < target)
    assert r.search == "bisection"


@pytest.mark.parametrize(
    ("design", "kw"),
    [
        (Warner(0.7), {"pi1": 0.4, "null": 0.5}),
        (Warner(0.3), {"pi1": 0.4, "null": 0.5, "alternative": "less"}),
        (ForcedResponse(0.2, 0.1), {"pi1": 0.3, "null": 0.05, "alpha": 0.01}),
        (UnrelatedQuestion(0.6, 0.3), {"pi1": 0.3, "control": 0.1, "ratio": 2}),
        (UnrelatedQuestion(0.6, 0.3), {"pi1": 0.3, "control": 0.1, "ratio": 1.5}),
        (Kuk(0.7, 0.3, draws=4), {"pi1": 0.3, "null": 0.1, "alternative": "greater"}),
        (Mangat(0.6), {"pi1": 0.3, "null": 0.2, "method": "exact"}),
        (Warner(0.75), {"pi1": 0.6, "null": 0.5, "method": "exact", "alternative": "greater"}),
    ],
)
def test_sample_size_is_minimal(design: Design, kw: dict[str, Any]) -> None:
    curve_kw = {k: x for k, x in kw.items() if k != "pi1"}
    pi1 = kw["pi1"]
    r = sample_size(design, 0.85, pi1, **curve_kw)
    got = power_curve(design, np.array([r.n - 1, r.n]), pi1, **curve_kw)
    assert got[1] >= 0.85 > got[0]
    assert r.power == pytest.approx(got[1], rel=1e-12)
    assert r.power_previous == pytest.approx(got[0], rel=1e-12)
    if kw.get("method") == "exact" or not float(kw.get("ratio", 1)).is_integer():
        # no monotonicity: check every smaller n
        assert r.search == "scan"
        assert (power_curve(design, np.arange(1, r.n), pi1, **curve_kw) < 0.85).all()


def test_normal_power_increases_with_n() -> None:
    # the monotonicity the bisection relies on (sample_size docstring)
    ns = np.arange(1, 5000)
    for alt in ALTS:
        pw = power_curve(ForcedResponse(0.25, 0.1), ns, 0.3, null=0.25, alternative=alt)
        if alt == "less":
            assert (np.diff(pw) <= 1e-15).all()
        else:
            assert (np.diff(pw) >= -1e-15).all()
    pw = power_curve(Warner(0.7), ns, 0.3, control=0.2, ratio=3)
    assert (np.diff(pw) >= -1e-15).all()


def test_rr_rule_stops_early() -> None:
    # R's rr (power.rr.test) takes the first n with |power(n) - target| < 0.01: here an n
    # below the minimal one whose power falls short of the target
    d, target = Warner(0.7), 0.8
    r = sample_size(d, target, 0.6, null=0.5)
    ns = np.arange(1, r.n + 1)
    pw = power_curve(d, ns, 0.6, null=0.5)
    rr_n = int(ns[np.flatnonzero(np.abs(target - pw) < 0.01)[0]])
    assert rr_n < r.n
    assert pw[rr_n - 1] < target


def test_exact_sample_size_sawtooth() -> None:
    # the exact power is not monotone: somewhere above the minimal n it dips below target
    d = Warner(0.75)
    r = sample_size(d, 0.8, 0.65, null=0.5, method="exact", alternative="greater")
    after = power_curve(d, np.arange(r.n, r.n + 200), 0.65, null=0.5, method="exact",
                        alternative="greater")  # fmt: skip
    assert after[0] >= 0.8
    assert (after < 0.8).any()


# --------------------------------------------------------------------------- exact test


def _exact_by_enumeration(
    n: int, lam0: float, lam1: float, tail: str, alpha: float
) -> tuple[int, int, float, float]:
    """Critical counts, size and power from exact rational binomial probabilities."""
    l0, l1, a = Fraction(lam0), Fraction(lam1), Fraction(alpha)
    p0 = [math.comb(n, y) * l0**y * (1 - l0) ** (n - y) for y in range(n + 1)]
    p1 = [math.comb(n, y) * l1**y * (1 - l1) ** (n - y) for y in range(n + 1)]
    side = a / 2 if tail == "both" else a
    lo, hi = -1, n + 1
    if tail in ("upper", "both"):
        hi = min(c for c in range(n + 2) if sum(p0[c:]) <= side)
    if tail in ("lower", "both"):
        lo = max(c for c in range(-1, n + 1) if sum(p0[: c + 1]) <= side)
    region = [y for y in range(n + 1) if y <= lo or y >= hi]
    return lo, hi, float(sum(p0[y] for y in region)), float(sum(p1[y] for y in region))


@pytest.mark.parametrize("tail", ["upper", "lower", "both"])
@pytest.mark.parametrize(("lam0", "lam1"), [(0.5, 0.62), (0.3, 0.2), (0.0, 0.1), (0.9, 1.0)])
def test_exact_power_matches_enumeration(tail: str, lam0: float, lam1: float) -> None:
    ns = np.arange(1, 41)
    pw, size, lo, hi = exact_power_table(ns, lam0, lam1, tail, 0.05)
    bound = randomized_power_bound(ns, lam0, lam1, tail, 0.05)
    for i, n in enumerate(ns):
        e_lo, e_hi, e_size, e_pw = _exact_by_enumeration(int(n), lam0, lam1, tail, 0.05)
        assert (int(lo[i]), int(hi[i])) == (e_lo, e_hi), n
        assert size[i] == pytest.approx(e_size, abs=1e-12)
        assert pw[i] == pytest.approx(e_pw, abs=1e-12)
        assert size[i] <= 0.05 + 1e-12
    assert (bound >= pw - 1e-12).all()
    toward = tail == "both" or (tail == "upper") == (lam1 > lam0)
    if toward:  # lambda1 on the rejecting side: the bound the exact search relies on
        assert (np.diff(bound) >= -1e-12).all()


def test_exact_tie_with_alpha_is_rejected() -> None:
    # n = 5, lambda0 = 1/2: P(Y = 5) = 1/32 exactly; at alpha = 1/32 the count 5 rejects
    _, _, lo, hi = exact_power_table([5], 0.5, 0.9, "upper", 1 / 32)
    assert (int(lo[0]), int(hi[0])) == (-1, 5)


def test_exact_categorical_uses_the_category_count() -> None:
    # category 1 of k = 3, truth 0.6, forced (0.2, 0.3, 0.5): the count of reports "1" is
    # Binomial(n, lambda) with lambda = 0.4 * 0.3 + 0.6 * pi
    d = Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5))
    r = power(d, 80, 0.35, null=0.2, method="exact", category=1, alternative="greater")
    lam0, lam1 = 0.12 + 0.6 * 0.2, 0.12 + 0.6 * 0.35
    assert r.critical_region is not None
    hi = r.critical_region[1]
    assert stats.binom.sf(hi - 1, 80, lam0) <= 0.05 < stats.binom.sf(hi - 2, 80, lam0)
    assert r.power == pytest.approx(float(stats.binom.sf(hi - 1, 80, lam1)), rel=1e-12)


def test_exact_result_fields() -> None:
    # Warner p = 0.25 has P1 < P0: "greater" prevalence means FEWER yes reports
    r = power(Warner(0.25), 60, 0.5, null=0.2, alternative="greater", method="exact")
    lo, hi = r.critical_region or (None, None)
    assert hi == 61 and lo is not None and lo >= 0
    lam0, lam1 = 0.75 - 0.5 * 0.2, 0.75 - 0.5 * 0.5
    assert r.size == pytest.approx(float(stats.binom.cdf(lo, 60, lam0)), rel=1e-12)
    assert r.power == pytest.approx(float(stats.binom.cdf(lo, 60, lam1)), rel=1e-12)
    assert r.size is not None and r.size <= 0.05
    d = r.to_dict()
    assert d["critical_region"] == {"at_most": lo, "at_least": 61}


# --------------------------------------------------------------------------- simulation


def _simulated_rejections(
    design: BinaryDesign, n: int, pi: float, trials: int, seed: int
) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    truth = (rng.random(n * trials) < pi).astype(np.uint8)
    reports = design.randomize(truth, rng=rng)
    return reports.reshape(trials, n).sum(axis=1)


def test_simulated_exact_test_rejection_rate() -> None:
    # rejection rate of the exact test over 4000 seeded surveys vs its exact power;
    # 4.5-sigma band: false alarm ~7e-6
    d, n, trials = Warner(0.75), 300, 4000
    r = power(d, n, 0.62, null=0.5, alternative="greater", method="exact")
    assert r.critical_region is not None
    yes = _simulated_rejections(d, n, 0.62, trials, seed=11)
    rate = float(np.mean(yes >= r.critical_region[1]))
    sd = math.sqrt(r.power * (1 - r.power) / trials)
    assert abs(rate - r.power) < 4.5 * sd


@pytest.mark.parametrize("alt", ALTS)
def test_simulated_wald_test_rejection_rate(alt: str) -> None:
    # the Wald test (null SE) over 3000 seeded surveys of n = 2000 vs the normal power.
    # 4.5-sigma band (false alarm ~7e-6) plus 0.015 for the normal approximation of a
    # binomial count (its largest point probability here is about 0.018)
    d, n, trials, pi0 = ForcedResponse(0.2, 0.1), 2000, 3000, 0.3
    pi1 = 0.335 if alt != "less" else 0.265
    r = power(d, n, pi1, null=pi0, alternative=alt, alpha=0.05)
    yes = _simulated_rejections(d, n, pi1, trials, seed=5)
    p1, p0 = 0.9, 0.2
    est = (yes / n - p0) / (p1 - p0)
    z = (est - pi0) / r.se_null
    if alt == "greater":
        reject = z > zq(0.95)
    elif alt == "less":
        reject = z < -zq(0.95)
    else:
        reject = np.abs(z) > zq(0.975)
    rate = float(reject.mean())
    sd = math.sqrt(r.power * (1 - r.power) / trials)
    assert abs(rate - r.power) < 4.5 * sd + 0.015


def test_simulated_two_sample_rejection_rate() -> None:
    # two-sample Wald test with the pooled null SE over 2500 seeded experiments;
    # 4.5-sigma band (false alarm ~7e-6) plus 0.015 for the normal approximation
    d, na, nb, trials = TwoCoin(), 1500, 1000, 2500
    r = power(d, na, 0.3, control=0.24, n_control=nb, alternative="greater")
    ya = _simulated_rejections(d, na, 0.3, trials, seed=21)
    yb = _simulated_rejections(d, nb, 0.24, trials, seed=22)
    diff = (ya / na - yb / nb) / 0.5
    rate = float(np.mean(diff / r.se_null > zq(0.95)))
    sd = math.sqrt(r.power * (1 - r.power) / trials)
    assert abs(rate - r.power) < 4.5 * sd + 0.015


# --------------------------------------------------------------------------- two groups


def uq_unknown_vars(
    p1: float, p2: float, pi: float, q: float, n1: float, n2: float
) -> tuple[float, float]:
    """(efficient, naive) variance of pi_hat for the unrelated question, unknown q."""
    l1, l2 = p1 * pi + (1 - p1) * q, p2 * pi + (1 - p2) * q
    v1, v2 = l1 * (1 - l1) / n1, l2 * (1 - l2) / n2
    efficient = ((1 - p2) ** 2 * v1 + (1 - p1) ** 2 * v2) / (p1 - p2) ** 2
    naive = 1 / (p1 * p1 / v1 + p2 * p2 / v2)
    return efficient, naive


def test_two_group_uses_efficient_variance() -> None:
    d = UnrelatedUnknown(0.7, 0.3)
    n, q = 1000, 0.4
    e0, k0 = uq_unknown_vars(0.7, 0.3, 0.2, q, 500, 500)
    e1, k1 = uq_unknown_vars(0.7, 0.3, 0.3, q, 500, 500)
    # by hand at pi = 0.2: l = (0.26, 0.34), efficient 1.4309 / n, naive 0.678461 / n
    assert e0 * n == pytest.approx(1.4309, rel=1e-9)
    assert k0 * n == pytest.approx(0.678461, rel=1e-6)  # six digits by hand
    r = power(d, n, 0.3, null=0.2, nuisance={"unrelated_prevalence": q})
    assert r.se_null == pytest.approx(math.sqrt(e0), rel=1e-9)
    assert r.se_alternative == pytest.approx(math.sqrt(e1), rel=1e-9)
    assert r.power == pytest.approx(
        hand_power(0.1, math.sqrt(e0), math.sqrt(e1), "two-sided", 0.05), rel=1e-9
    )
    assert r.se_null_known == pytest.approx(math.sqrt(k0), rel=1e-9)
    assert r.power_known == pytest.approx(
        hand_power(0.1, math.sqrt(k0), math.sqrt(k1), "two-sided", 0.05), rel=1e-9
    )
    assert r.power_known is not None and r.power_known > r.power
    out = r.to_dict()
    assert out["epsilon"] == "inf"
    assert out["nuisance"] == {"unrelated_prevalence": q}
    assert out["group_share"] == 0.5
    # an unequal split
    e_share = uq_unknown_vars(0.7, 0.3, 0.2, q, 300, 700)[0]
    r2 = power(d, n, 0.3, null=0.2, nuisance={"unrelated_prevalence": q}, share=0.3)
    assert r2.se_null == pytest.approx(math.sqrt(e_share), rel=1e-9)


def test_two_group_sample_size() -> None:
    d = UnrelatedUnknown(0.7, 0.3)
    kw = {"null": 0.2, "nuisance": {"unrelated_prevalence": 0.4}, "alternative": "greater"}
    r = sample_size(d, 0.9, 0.3, **kw)  # type: ignore[arg-type]
    e0 = uq_unknown_vars(0.7, 0.3, 0.2, 0.4, 0.5, 0.5)[0]
    e1 = uq_unknown_vars(0.7, 0.3, 0.3, 0.4, 0.5, 0.5)[0]
    root = (zq(0.95) * math.sqrt(e0) + zq(0.9) * math.sqrt(e1)) / 0.1
    assert abs(r.n - math.ceil(root * root)) <= 1
    assert r.power >= 0.9 > (r.power_previous or 0.0)
    k0 = uq_unknown_vars(0.7, 0.3, 0.2, 0.4, 0.5, 0.5)[1]
    k1 = uq_unknown_vars(0.7, 0.3, 0.3, 0.4, 0.5, 0.5)[1]
    root_k = (zq(0.95) * math.sqrt(k0) + zq(0.9) * math.sqrt(k1)) / 0.1
    assert r.n_known is not None and abs(r.n_known - math.ceil(root_k * root_k)) <= 1
    assert r.n_known < r.n
    # SLD: the nuisance has a default (honesty 1), reported as used
    s = sample_size(StochasticLieDetector(2 / 12, 10 / 12), 0.8, 0.3, null=0.2)
    assert s.result.nuisance == {"honesty": 1.0}
    assert s.n_known is not None and s.n_known <= s.n


def test_two_group_simulation_matches_efficient_power() -> None:
    # 2000 seeded surveys, 1000 respondents in each group: the Wald test with the efficient
    # null SE rejects at the efficient power, not at the naive one.
    # 4.5-sigma band (false alarm ~7e-6) plus 0.015 for the normal approximation
    d, m, q, trials = UnrelatedUnknown(0.7, 0.3), 1000, 0.4, 2000
    r = power(d, 2 * m, 0.25, null=0.2, nuisance={"unrelated_prevalence": q},
              alternative="greater")  # fmt: skip
    rng = np.random.default_rng(3)
    size = 2 * m * trials
    truth = (rng.random(size) < 0.25).astype(np.uint8)
    unrelated = (rng.random(size) < q).astype(np.uint8)
    group = np.tile(np.repeat([1, 2], m), trials)
    types = d.types(truth, unrelated=unrelated)
    reports = (d.randomize(types, group=group, rng=rng) % 2).reshape(trials, 2, m)
    lam = reports.mean(axis=2)
    est = (0.7 * lam[:, 0] - 0.3 * lam[:, 1]) / 0.4
    rate = float(np.mean((est - 0.2) / r.se_null > zq(0.95)))
    sd = math.sqrt(r.power * (1 - r.power) / trials)
    assert abs(rate - r.power) < 4.5 * sd + 0.015
    # power 0.586, naive power 0.849: the naive figure is 24 sigma away
    assert r.power_known is not None and abs(rate - r.power_known) > 0.2


# --------------------------------------------------------------------------- bad input


BAD = [
    (lambda: sample_size(Warner(0.7), 0.0, 0.6, null=0.5), ParameterError, "`power`"),
    (lambda: sample_size(Warner(0.7), 1.0, 0.6, null=0.5), ParameterError, "`power`"),
    (lambda: sample_size(Warner(0.7), 1.5, 0.6, null=0.5), ParameterError, "(0, 1)"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, alpha=0.0), ParameterError, "`alpha`"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, alpha=1.0), ParameterError, "`alpha`"),
    (lambda: sample_size(Warner(0.7), 0.8, 0.5, null=0.5), ParameterError, "must differ"),
    (lambda: sample_size(Warner(0.7), 0.8, 0.5, control=0.5), ParameterError, "`control`"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, alternative="bigger"), ParameterError,
     "'two-sided', 'greater', 'less'"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, method="bayes"), ParameterError, "`method`"),
    (lambda: power(Warner(0.7), 10, 0.6), ParameterError, "got neither"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, null_control=0.4), ParameterError,
     "`null_control` applies to a two-sample test"),
    (lambda: power(Warner(0.7), 10, 0.6, control=0.4, null_control=1.5), ParameterError,
     "`null_control`"),
    (lambda: sample_size(Warner(0.7), 0.8, 0.5, control=0.3, null=0.4, null_control=0.2),
     ParameterError, "must differ"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, n_control=5), ParameterError,
     "`n_control`"),
    (lambda: power(Warner(0.7), 0, 0.6, null=0.5), ParameterError, "`n`"),
    (lambda: power(Warner(0.7), 10, 1.2, null=0.5), ParameterError, "`prevalence`"),
    (lambda: power(Warner(0.7), 10, 0.6, null=-0.1), ParameterError, "`null`"),
    (lambda: power(Warner(0.7), 10, 0.6, control=0.4, method="exact"), ParameterError,
     "two-sample"),
    (lambda: power(Kuk(0.7, 0.3, draws=2), 10, 0.6, null=0.5, method="exact"),
     ParameterError, "3 report values"),
    (lambda: power(Categorical(k=3, p_truthful=0.5), 10, 0.6, null=0.5), ParameterError,
     "`category`"),
    (lambda: power(Categorical(k=3, p_truthful=0.5), 10, 0.6, null=0.5, category=3),
     ParameterError, "`category`"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, category=1), ParameterError,
     "`category`"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, share=0.5), ParameterError, "`share`"),
    (lambda: power(Warner(0.7), 10, 0.6, null=0.5, nuisance={"q": 1}), ParameterError,
     "`nuisance`"),
    (lambda: power(UnrelatedUnknown(0.7, 0.3), 10, 0.3, null=0.2), ParameterError,
     "unrelated_prevalence"),
    (lambda: power(UnrelatedUnknown(0.7, 0.3), 10, 0.3, null=0.2, share=1.0,
                   nuisance={"unrelated_prevalence": 0.3}), ParameterError, "`share`"),
    (lambda: power(UnrelatedUnknown(0.7, 0.3), 10, 0.3, null=0.2, method="exact",
                   nuisance={"unrelated_prevalence": 0.3}), ParameterError, "`method`"),
    (lambda: sample_size(Warner(0.7), 0.8, 0.4, null=0.5, alternative="greater"),
     ParameterError, "above `null`"),
    (lambda: sample_size(Warner(0.7), 0.8, 0.6, null=0.5, alternative="less"),
     ParameterError, "below `null`"),
    (lambda: sample_size(Warner(0.7), 0.8, 0.6, null=0.5, method="exact", max_n=50),
     ParameterError, "`max_n`"),
    (lambda: sample_size(Warner(0.7), 0.8, 0.6, control=0.5, ratio=0), ParameterError,
     "`ratio`"),
    (lambda: power("warner", 10, 0.6, null=0.5), ParameterTypeError, "`design`"),
    (lambda: power_curve(Warner(0.7), [0, 5], 0.6, null=0.5), ParameterError, "`n`"),
    (lambda: power_curve(Warner(0.7), [5], 0.6, null=0.5, known=True), ParameterError,
     "`known`"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "needle"), BAD, ids=[b[2] for b in BAD])
def test_bad_input_raises_named_error(call: Any, error: type[Exception], needle: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert needle in str(info.value)


# --------------------------------------------------------------------------- plots


def test_plot_png_and_svg(tmp_path: Path) -> None:
    from deniable.plotting import plot_power_curves

    lines = {f"ε = {e}": Warner.from_epsilon(e) for e in (0.5, 1.0, 2.0)}
    png = plot_power_curves(tmp_path / "c.png", lines, 0.3, 0.2, n_max=500, target=0.8)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = plot_power_curves(tmp_path / "c.svg", [Mangat(0.7)], 0.3, 0.2, n_max=300)
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    two = plot_power_curves(
        tmp_path / "two.pdf",
        {"unrelated, unknown q": UnrelatedUnknown(0.7, 0.3)},
        0.3,
        0.2,
        n_max=300,
        nuisance={"unrelated_prevalence": 0.4},
    )
    assert two.read_bytes()[:5] == b"%PDF-"
    with pytest.raises(ParameterError, match="`path`"):
        plot_power_curves(tmp_path / "c.jpg", Warner(0.7), 0.3, 0.2, n_max=10)


def test_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deniable.plotting import plot_power_curves

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'deniable\[plot\]'"):
        plot_power_curves(tmp_path / "c.png", Warner(0.7), 0.3, 0.2, n_max=10)


# --------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def runner() -> Any:
    return CliRunner(env=ENV_80)


def test_cli_power_json(runner: Any) -> None:
    out = run_json(runner, "power", "warner", "-p", "p=0.7", "--n", "1000", "--prevalence",
                   "0.6", "--null", "0.5", "--alternative", "greater")  # fmt: skip
    for key in ("power", "n", "se_null", "se_alternative", "alpha", "alternative", "design",
                "parameters", "epsilon"):  # fmt: skip
        assert key in out
    assert out["power"] == pytest.approx(0.812680, abs=1e-6)
    assert (out["n"], out["alpha"], out["alternative"]) == (1000, 0.05, "greater")
    assert out["design"] == "warner" and out["parameters"] == {"p": 0.7}
    assert out["epsilon"] == pytest.approx(math.log(7 / 3), rel=1e-12)
    inf = run_json(runner, "power", "mangat", "-p", "p=0.7", "--n", "50", "--prevalence",
                   "0.3", "--null", "0.1", "--exact")  # fmt: skip
    assert inf["epsilon"] == "inf"
    assert inf["method"] == "exact" and set(inf["critical_region"]) == {"at_most", "at_least"}
    two = run_json(runner, "power", "two-coin", "--n", "800", "--prevalence", "0.35",
                   "--control", "0.25", "--n-control", "600")  # fmt: skip
    assert two["test"] == "two-sample" and two["n_control"] == 600
    assert two["power"] == pytest.approx(
        power(TwoCoin(), 800, 0.35, control=0.25, n_control=600).power, rel=1e-12
    )
    assert two["null_hypothesis"] == "pooled" and two["null_control"] is None
    stated = run_json(runner, "power", "two-coin", "--n", "800", "--prevalence", "0.35",
                      "--control", "0.25", "--null-control", "0.25")  # fmt: skip
    assert stated["null_hypothesis"] == "stated"
    assert (stated["null"], stated["null_control"]) == (0.25, 0.25)
    assert stated["power"] == power(TwoCoin(), 800, 0.35, control=0.25, null_control=0.25).power
    size = run_json(runner, "sample-size", "two-coin", "--power", "0.8", "--prevalence", "0.35",
                    "--control", "0.25", "--null", "0.25", "--ratio", "2")  # fmt: skip
    expect = sample_size(TwoCoin(), 0.8, 0.35, control=0.25, null=0.25, ratio=2)
    assert (size["n"], size["n_control"]) == (expect.n, expect.n_control)


def test_cli_sample_size_json(runner: Any) -> None:
    out = run_json(runner, "sample-size", "custom", "-p", "p_yes_given_1=1", "-p",
                   "p_yes_given_0=0", "--power", "0.8", "--prevalence", "0.6", "--null",
                   "0.5", "--alternative", "greater")  # fmt: skip
    # ceil(((1.644854 * 0.5 + 0.841621 * sqrt(0.24)) / 0.1)^2) = ceil(152.47) = 153
    assert out["n"] == 153
    assert out["power"] >= 0.8 > out["power_previous"]
    assert out["target_power"] == 0.8 and out["search"] == "bisection"
    uq = run_json(runner, "sample-size", "unrelated-unknown", "-p", "p1=0.7", "-p", "p2=0.3",
                  "--power", "0.9", "--prevalence", "0.3", "--null", "0.2", "--nuisance",
                  "unrelated_prevalence=0.4", "--alternative", "greater")  # fmt: skip
    assert uq["n_known"] < uq["n"]
    assert uq["power_known"] > uq["power"] >= 0.9
    assert uq["epsilon"] == "inf"


def test_cli_human_output_and_plot(runner: Any, tmp_path: Path) -> None:
    path = tmp_path / "curve.png"
    result = run(runner, "power", "warner", "-p", "p=3/4", "--n", "400", "--prevalence",
                 "0.3", "--null", "0.2", "--plot", str(path), "--epsilons", "0.5,2")  # fmt: skip
    assert result.exit_code == 0, result.output
    expect = power(Warner(0.75), 400, 0.3, null=0.2).power
    assert f"power           │ {expect:.6f}" in result.stdout
    assert path.read_bytes()[:4] == b"\x89PNG"
    result = run(runner, "sample-size", "unrelated-unknown", "-p", "p1=0.7", "-p", "p2=0.3",
                 "--power", "0.8", "--prevalence", "0.3", "--null", "0.2", "--nuisance",
                 "unrelated_prevalence=0.4")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "∞" in result.stdout and "naive" in result.stdout


def test_cli_epsilons_rebuild_designs_that_need_more_than_epsilon(
    runner: Any, tmp_path: Path
) -> None:
    from deniable.plotting import epsilon_lines

    # categorical: from_epsilon(eps, k) with the k given by --param k=3
    lines = epsilon_lines(Categorical(k=3, p_truthful=0.6), [1.0, 2.0])
    assert list(lines) == ["categorical(k=3), ε = 1", "categorical(k=3), ε = 2"]
    for eps, d in zip((1.0, 2.0), lines.values(), strict=True):
        assert isinstance(d, Categorical) and d.k == 3
        # k-ary RR: truth = (e^eps - 1) / (e^eps + k - 1), so epsilon is exact
        assert d.p_truthful == pytest.approx(math.expm1(eps) / (math.exp(eps) + 2), rel=1e-12)
        assert d.epsilon == pytest.approx(eps, rel=1e-12)
    # kuk keeps its number of draws; warner needs nothing more
    kuk = epsilon_lines(Kuk(0.7, 0.3, draws=3), [1.5])
    assert [(d.draws, round(d.epsilon, 12)) for d in kuk.values()] == [(3, 1.5)]
    assert list(epsilon_lines(Warner(0.7), [1.0])) == ["warner, ε = 1"]

    # a from_epsilon needing a parameter the design does not have: the message names it
    class Spread(Warner):
        @classmethod
        def from_epsilon(cls, epsilon: float, spread: float) -> Warner:  # type: ignore[override]
            return Warner.from_epsilon(epsilon)

    with pytest.raises(ParameterError, match=r"needs `spread` besides ε.*spread=VALUE"):
        epsilon_lines(Spread(0.7), [1.0])
    forced = Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5))
    with pytest.raises(ParameterError, match="cannot be rebuilt per ε"):
        epsilon_lines(forced, [1.0])
    one_error(run(runner, "power", "categorical", "-p", "k=3", "-p", "p_truthful=0.6", "-p",
                  "forced=0.2,0.3,0.5", "--category", "0", "--n", "300", "--prevalence", "0.4",
                  "--null", "0.3", "--plot", str(tmp_path / "f.png"), "--epsilons", "1,2"),
              "`--epsilons`: design 'categorical' with `forced`")  # fmt: skip

    # through the CLI, with a plot (needs matplotlib)
    path = tmp_path / "categorical.png"
    out = run_json(runner, "power", "categorical", "-p", "k=3", "-p", "p_truthful=0.6",
                   "--category", "0", "--n", "300", "--prevalence", "0.4", "--null", "0.3",
                   "--plot", str(path), "--epsilons", "1,2")  # fmt: skip
    assert out["plot"] == str(path) and path.read_bytes()[:4] == b"\x89PNG"
    assert out["power"] == pytest.approx(
        power(Categorical(k=3, p_truthful=0.6), 300, 0.4, null=0.3, category=0).power, rel=1e-12
    )


CLI_BAD = [
    (("power", "warner", "-p", "p=0.7", "--prevalence", "0.6", "--null", "0.5"), "--n"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--null", "0.5"), "--prevalence"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6"), "neither"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6", "--null", "0.5",
      "--null-control", "0.4"), "`--null-control` applies to a two-sample test"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6", "--control", "0.5",
      "--null-control", "x"), "`--null-control` must be a number"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6", "--null", "0.5",
      "--alternative", "bigger"), "`alternative`"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6", "--null", "0.5",
      "--alpha", "1.5"), "`alpha`"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "x", "--null", "0.5"),
     "`--prevalence` must be a number"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6", "--null", "0.5",
      "--plot", "x.gif"), "`--plot`"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6", "--null", "0.5",
      "--epsilons", "1"), "--plot"),
    (("power", "mangat", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6", "--null", "0.5",
      "--plot", "x.png", "--epsilons", "1"), "from_epsilon"),
    (("power", "categorical", "-p", "k=3", "-p", "p_truthful=0.6", "-p", "forced=0.2,0.3,0.5",
      "--category", "0", "--n", "10", "--prevalence", "0.4", "--null", "0.3", "--plot",
      "x.png", "--epsilons", "1"), "`forced`"),
    (("power", "unrelated-unknown", "-p", "p1=0.7", "-p", "p2=0.3", "--n", "10",
      "--prevalence", "0.3", "--null", "0.2"), "unrelated_prevalence"),
    (("power", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.6", "--null", "0.5",
      "--nuisance", "q"), "NAME=VALUE"),
    (("sample-size", "warner", "-p", "p=0.7", "--prevalence", "0.6", "--null", "0.5"),
     "--power"),
    (("sample-size", "warner", "-p", "p=0.7", "--power", "1", "--prevalence", "0.6",
      "--null", "0.5"), "`power`"),
    (("sample-size", "warner", "-p", "p=0.7", "--power", "0.8", "--prevalence", "0.5",
      "--null", "0.5"), "must differ"),
    (("sample-size", "warner", "-p", "p=0.7", "--power", "0.8", "--prevalence", "0.6",
      "--null", "0.5", "--ratio", "2"), "`--ratio`"),
    (("sample-size", "warner", "-p", "p=0.5", "--power", "0.8", "--prevalence", "0.6",
      "--null", "0.5"), "`p`"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "needle"), CLI_BAD, ids=[" ".join(a) for a, _ in CLI_BAD])
def test_cli_bad_input_is_one_error_line(runner: Any, args: tuple[str, ...], needle: str) -> None:
    result = run(runner, *args)
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert result.stdout == ""
    assert needle in lines[0], (needle, lines[0])


def test_power_result_is_frozen() -> None:
    r = power(Warner(0.7), 10, 0.6, null=0.5)
    assert isinstance(r, PowerResult)
    with pytest.raises(AttributeError):
        r.power = 1.0  # type: ignore[misc]


def test_plot_n_bounds_are_powers_own(tmp_path: Path, runner: Any) -> None:
    # a fuzz run found `power --plot --plot-n-max <400 digits>` crashing in numpy.linspace;
    # the curve's n is bounded as power's n is (2**62), the CLI prints one error line, and
    # nothing is written
    from deniable.plotting import plot_power_curves

    with pytest.raises(ParameterError, match=r"^`n_max` must be an integer in \[1, 2\*\*62\]"):
        plot_power_curves(tmp_path / "c.svg", Warner(0.7), 0.3, 0.2, n_max=2**62 + 1)
    with pytest.raises(ParameterError, match=r"^`n_min` must be an integer in \[1, 2\*\*62\]"):
        plot_power_curves(tmp_path / "c.svg", Warner(0.7), 0.3, 0.2, n_min=2**63, n_max=2**63)
    out = tmp_path / "big.svg"
    result = run(runner, "power", "warner", "-p", "p=0.7", "--n", "1000", "--prevalence", "0.3",
                 "--null", "0.2", "--plot", str(out), "--plot-n-max", "9" * 400)  # fmt: skip
    one_error(result, "n_max")
    assert not out.exists()
