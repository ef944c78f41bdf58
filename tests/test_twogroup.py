"""Two-group designs: closed forms derived by hand, the published stochastic-lie-detector
example, epsilon, randomizers, bounded MLE, planning variances, bad input and the CLI.

Closed forms (lambda_g = share of "yes" in group g, v_g = lambda_g (1 - lambda_g) / n_g, or
/ (n_g - 1) for the unbiased convention).  Each design is lambda_g = c_g + M[g] @ phi; solving
the 2 x 2 system by Cramer's rule:

* unrelated-unknown, lambda_g = p_g pi + (1 - p_g) u:
  pi = ((1 - p2) l1 - (1 - p1) l2) / (p1 - p2),  u = (p2 l1 - p1 l2) / (p2 - p1);
* cdm, lambda_g = pi + f_g beta:
  beta = (l2 - l1) / (f2 - f1),  pi = (f2 l1 - f1 l2) / (f2 - f1),  gamma = 1 - pi - beta;
* cdm-symmetric, lambda_g = pi (1 - n_g) + beta f_g, D = (1 - n1) f2 - (1 - n2) f1:
  pi = (f2 l1 - f1 l2) / D,  beta = ((1 - n1) l2 - (1 - n2) l1) / D;
* sld, lambda_g = pi t + (1 - pi)(1 - p_g):
  pi = 1 - (l2 - l1) / (p1 - p2),  t = (l2 (1 - p1) - l1 (1 - p2)) / (l2 - l1 + p2 - p1).

A linear combination a1 l1 + a2 l2 has variance a1^2 v1 + a2^2 v2 (independent groups).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from typer.testing import CliRunner

from _cli import ENV_80 as ENV
from _cli import run, run_json
from deniable.designs import (
    DESIGNS,
    TWO_GROUP_DESIGNS,
    CheaterDetection,
    Design,
    ForcedResponse,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    Tally,
    TwoGroupDesign,
    UnrelatedQuestion,
    UnrelatedUnknown,
    Warner,
    group_counts,
    make_design,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

Z95 = 1.959963984540054

EXAMPLES: list[TwoGroupDesign] = [
    UnrelatedUnknown(0.7, 0.3),
    UnrelatedUnknown(0.25, 0.0),
    CheaterDetection(0.2, 0.6),
    CheaterDetection(0.0, 0.5),
    SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1),
    SymmetricCheaterDetection(0.2, 0.3, 0.1, 0.2),
    StochasticLieDetector(2 / 12, 10 / 12),
    StochasticLieDetector(0.7, 0.2),
]
IDS = [repr(d) for d in EXAMPLES]


def variances(yes: tuple[int, int], n: tuple[int, int], unbiased: bool = False) -> list[float]:
    return [y / m * (1 - y / m) / (m - unbiased) for y, m in zip(yes, n, strict=True)]


def lin_se(a1: float, a2: float, var: list[float]) -> float:
    return math.sqrt(a1 * a1 * var[0] + a2 * a2 * var[1])


# ------------------------------------------------------------------ closed forms


@pytest.mark.parametrize("unbiased", [False, True])
def test_unrelated_unknown_closed_form(unbiased: bool) -> None:
    p1, p2, yes, n = 0.7, 0.3, (310, 290), (500, 400)
    l1, l2 = yes[0] / n[0], yes[1] / n[1]
    est = UnrelatedUnknown(p1, p2).estimate(yes=yes, n=n)
    var = variances(yes, n, unbiased)
    a = ((1 - p2) / (p1 - p2), -(1 - p1) / (p1 - p2))
    b = (p2 / (p2 - p1), -p1 / (p2 - p1))
    assert est.prevalence.value == pytest.approx(a[0] * l1 + a[1] * l2, rel=1e-12)
    assert est["unrelated_prevalence"].value == pytest.approx(b[0] * l1 + b[1] * l2, rel=1e-12)
    se = "se_unbiased" if unbiased else "se"
    assert getattr(est.prevalence, se) == pytest.approx(lin_se(*a, var), rel=1e-12)
    assert getattr(est["unrelated_prevalence"], se) == pytest.approx(lin_se(*b, var), rel=1e-12)
    cov = est.covariance_unbiased if unbiased else est.covariance
    assert cov[0, 1] == pytest.approx(a[0] * b[0] * var[0] + a[1] * b[1] * var[1], rel=1e-12)
    lo, hi = est.prevalence.ci(0.95, "wald")
    half = Z95 * est.prevalence.se
    want = (est.prevalence.value - half, est.prevalence.value + half)
    assert (lo, hi) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("unbiased", [False, True])
def test_cdm_closed_form(unbiased: bool) -> None:
    f1, f2, yes, n = 0.2, 0.6, (340, 470), (1000, 900)
    l1, l2 = yes[0] / n[0], yes[1] / n[1]
    est = CheaterDetection(f1, f2).estimate(yes=yes, n=n)
    var = variances(yes, n, unbiased)
    d = f2 - f1
    # gamma = 1 - pi - beta = 1 + (1 - f2) l1 / d - (1 - f1) l2 / d
    forms = {
        "prevalence": (f2 / d, -f1 / d, 0.0),
        "beta": (-1 / d, 1 / d, 0.0),
        "cheating": ((1 - f2) / d, -(1 - f1) / d, 1.0),
    }
    se = "se_unbiased" if unbiased else "se"
    for name, (a1, a2, k) in forms.items():
        assert est[name].value == pytest.approx(a1 * l1 + a2 * l2 + k, rel=1e-12), name
        assert getattr(est[name], se) == pytest.approx(lin_se(a1, a2, var), rel=1e-12), name
    assert sum(est[k].value for k in est.parameters) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("unbiased", [False, True])
def test_cdm_symmetric_closed_form(unbiased: bool) -> None:
    f1, n1, f2, n2 = 0.1, 0.15, 0.3, 0.05
    yes, n = (300, 420), (1000, 1100)
    l1, l2 = yes[0] / n[0], yes[1] / n[1]
    est = SymmetricCheaterDetection(f1, n1, f2, n2).estimate(yes=yes, n=n)
    var = variances(yes, n, unbiased)
    d = (1 - n1) * f2 - (1 - n2) * f1
    pi = (f2 / d, -f1 / d)
    beta = (-(1 - n2) / d, (1 - n1) / d)
    gamma = (-pi[0] - beta[0], -pi[1] - beta[1])
    se = "se_unbiased" if unbiased else "se"
    for name, (a1, a2), k in (("prevalence", pi, 0), ("beta", beta, 0), ("cheating", gamma, 1)):
        assert est[name].value == pytest.approx(a1 * l1 + a2 * l2 + k, rel=1e-12), name
        assert getattr(est[name], se) == pytest.approx(lin_se(a1, a2, var), rel=1e-12), name


@pytest.mark.parametrize("unbiased", [False, True])
def test_sld_closed_form(unbiased: bool) -> None:
    p1, p2, yes, n = 0.3, 0.75, (520, 410), (800, 900)
    l1, l2 = yes[0] / n[0], yes[1] / n[1]
    est = StochasticLieDetector(p1, p2).estimate(yes=yes, n=n)
    var = variances(yes, n, unbiased)
    pi = 1 - (l2 - l1) / (p1 - p2)
    num, den = l2 * (1 - p1) - l1 * (1 - p2), l2 - l1 + p2 - p1
    t = num / den
    # derivatives of t = num / den: d/dl1 = (-(1 - p2) den + num) / den^2, d/dl2 likewise
    dt = ((-(1 - p2) * den + num) / den**2, ((1 - p1) * den - num) / den**2)
    se = "se_unbiased" if unbiased else "se"
    assert est.prevalence.value == pytest.approx(pi, rel=1e-12)
    assert est["honesty"].value == pytest.approx(t, rel=1e-12)
    assert getattr(est.prevalence, se) == pytest.approx(
        lin_se(1 / (p1 - p2), -1 / (p1 - p2), var), rel=1e-12
    )
    assert getattr(est["honesty"], se) == pytest.approx(lin_se(*dt, var), rel=1e-12)


def test_published_sld_minaret_example() -> None:
    # Heck & Moshagen (2018): minarets, p = 2/12 (n = 564, 373 yes), 10/12 (n = 692, 398 yes):
    # pi = 0.8707 (SE 0.0411), t = 0.6358 (SE 0.0173); RRreg divides by n - 1, and both
    # conventions round to the published SEs
    est = StochasticLieDetector(2 / 12, 10 / 12).estimate(yes=(373, 398), n=(564, 692))
    assert round(est.prevalence.value, 4) == 0.8707
    assert round(est["honesty"].value, 4) == 0.6358
    for se in ("se", "se_unbiased"):
        assert round(getattr(est.prevalence, se), 4) == 0.0411
        assert round(getattr(est["honesty"], se), 4) == 0.0173
    assert est.prevalence.bounded == est.prevalence.value  # inside the parameter space
    # swapping the groups' randomization probabilities gives different (wrong) numbers
    swapped = StochasticLieDetector(10 / 12, 2 / 12).estimate(yes=(373, 398), n=(564, 692))
    assert round(swapped.prevalence.value, 4) != 0.8707


# ------------------------------------------------------------------ exact intervals


def clopper_pearson(yes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    a = 1 - level
    lo = 0.0 if yes == 0 else float(stats.beta.ppf(a / 2, yes, n - yes + 1))
    hi = 1.0 if yes == n else float(stats.beta.ppf(1 - a / 2, yes + 1, n - yes))
    return lo, hi


def test_exact_intervals_where_one_group_decides() -> None:
    # Moors: p2 = 0, group 2 answers only the unrelated question: u = lambda_2
    est = UnrelatedUnknown(0.25, 0.0).estimate(yes=(40, 37), n=(100, 90))
    assert est["unrelated_prevalence"].ci(0.95, "exact") == pytest.approx(
        clopper_pearson(37, 90), rel=1e-12
    )
    assert "exact" not in est.prevalence.interval_methods
    # p1 = 1: group 1 answers only the sensitive question: pi = lambda_1
    est = UnrelatedUnknown(1.0, 0.4).estimate(yes=(40, 37), n=(100, 90))
    assert est.prevalence.ci(0.9, "exact") == pytest.approx(
        clopper_pearson(40, 100, 0.9), rel=1e-12
    )
    # CDM without forced "yes" in group 1: pi = lambda_1
    est = CheaterDetection(0.0, 0.5).estimate(yes=(30, 60), n=(100, 100))
    assert est.prevalence.ci(0.95, "exact") == pytest.approx(clopper_pearson(30, 100), rel=1e-12)
    assert "exact" not in est["beta"].interval_methods
    # symmetric CDM with forced_yes1 = 0: pi = lambda_1 / (1 - forced_no1)
    est = SymmetricCheaterDetection(0.0, 0.2, 0.3, 0.1).estimate(yes=(30, 60), n=(100, 100))
    lo, hi = clopper_pearson(30, 100)
    assert est.prevalence.ci(0.95, "exact") == pytest.approx((lo / 0.8, hi / 0.8), rel=1e-12)
    # the SLD never has one: both parameters need both groups
    est = StochasticLieDetector(1.0, 0.2).estimate(yes=(30, 60), n=(100, 100))
    assert all(e.interval_methods == ("wald",) for e in est.estimates.values())


# ------------------------------------------------------------------ bounded MLE


def loglik(
    design: TwoGroupDesign, lam: tuple[float, float], yes: tuple[int, int], n: tuple[int, int]
) -> float:
    out = 0.0
    for lg, y, m in zip(lam, yes, n, strict=True):
        if y:
            out += y * math.log(lg) if lg > 0 else -math.inf
        if m - y:
            out += (m - y) * math.log(1 - lg) if lg < 1 else -math.inf
    return out


def lam_uqt(p: tuple[float, float], pi: float, u: float) -> tuple[float, float]:
    return p[0] * pi + (1 - p[0]) * u, p[1] * pi + (1 - p[1]) * u


def test_mle_on_the_boundary_closed_forms() -> None:
    # CDM with beta_hat < 0: on the edge beta = 0 both groups share lambda = pi -> pooled share
    est = CheaterDetection(0.2, 0.6).estimate(yes=(400, 380), n=(1000, 1000))
    assert est["beta"].value < 0
    assert est.prevalence.bounded == pytest.approx(780 / 2000, abs=1e-7)
    assert est["beta"].bounded == pytest.approx(0.0, abs=1e-7)
    assert est["cheating"].bounded == pytest.approx(1 - 780 / 2000, abs=1e-7)
    # SLD with pi_hat > 1: on the edge pi = 1 both groups have lambda = t -> pooled share
    est = StochasticLieDetector(0.2, 0.8).estimate(yes=(700, 750), n=(1000, 1000))
    assert est.prevalence.value > 1
    assert est.prevalence.bounded == pytest.approx(1.0, abs=1e-7)
    assert est["honesty"].bounded == pytest.approx(1450 / 2000, abs=1e-7)


def test_mle_unrelated_unknown_matches_a_grid() -> None:
    p, yes, n = (0.7, 0.3), (100, 400), (1000, 1000)
    est = UnrelatedUnknown(*p).estimate(yes=yes, n=n)
    assert est.prevalence.value < 0  # moment estimate outside: the MLE is on pi = 0
    grid = np.linspace(0, 1, 200_001)
    ll = [loglik(UnrelatedUnknown(*p), lam_uqt(p, 0.0, u), yes, n) for u in grid]
    assert est.prevalence.bounded == pytest.approx(0.0, abs=1e-9)
    # the log-likelihood is concave in u: its maximiser lies within one grid step of the
    # grid's best point
    step = grid[1] - grid[0]
    assert est["unrelated_prevalence"].bounded == pytest.approx(grid[int(np.argmax(ll))], abs=step)
    assert est.log_likelihood == pytest.approx(max(ll), abs=1e-6)


@given(
    st.sampled_from(EXAMPLES),
    st.integers(1, 60), st.integers(1, 60), st.integers(0, 60), st.integers(0, 60),
)  # fmt: skip
def test_mle_beats_every_feasible_point(
    design: TwoGroupDesign, n1: int, n2: int, y1: int, y2: int
) -> None:
    y1, y2 = min(y1, n1), min(y2, n2)
    est = design.estimate(yes=(y1, y2), n=(n1, n2))
    rng = np.random.default_rng(y1 * 1000 + y2)
    best = est.log_likelihood
    for _ in range(40):
        lam = group_lambdas(design, random_truth(design, rng))
        assert loglik(design, lam, (y1, y2), (n1, n2)) <= best + 1e-7
    for e in est.estimates.values():
        assert math.isnan(e.bounded) or 0.0 <= e.bounded <= 1.0


# ------------------------------------------------------------------ channels invert


def type_shares(design: TwoGroupDesign, values: dict[str, float]) -> list[float]:
    """Shares of the respondent types implied by the parameters (independent derivation)."""
    pi = values["prevalence"]
    if isinstance(design, UnrelatedUnknown):
        u = values["unrelated_prevalence"]
        return [pi * u, pi * (1 - u), (1 - pi) * u, (1 - pi) * (1 - u)]
    if isinstance(design, StochasticLieDetector):
        t = values["honesty"]
        return [pi * t, pi * (1 - t), 1 - pi]
    gamma = values["cheating"]
    return [pi, values["beta"], gamma / 2, gamma / 2]


def group_lambdas(design: TwoGroupDesign, values: dict[str, float]) -> tuple[float, float]:
    shares = type_shares(design, values)
    out = [float(design.group_channel(g)[1] @ shares) for g in (1, 2)]
    return out[0], out[1]


def random_truth(design: TwoGroupDesign, rng: np.random.Generator) -> dict[str, float]:
    pi = float(rng.random())
    if isinstance(design, UnrelatedUnknown):
        return {"prevalence": pi, "unrelated_prevalence": float(rng.random())}
    if isinstance(design, StochasticLieDetector):
        return {"prevalence": pi, "honesty": float(rng.random())}
    beta = float(rng.random()) * (1 - pi)
    return {"prevalence": pi, "beta": beta, "cheating": 1 - pi - beta}


@given(st.sampled_from(EXAMPLES), st.integers(1, 500), st.integers(1, 500),
       st.floats(0, 1), st.floats(0, 1))  # fmt: skip
def test_moment_estimate_inverts_the_group_channels(
    design: TwoGroupDesign, n1: int, n2: int, a: float, b: float
) -> None:
    y1, y2 = round(a * n1), round(b * n2)
    est = design.estimate(yes=(y1, y2), n=(n1, n2))
    values = {k: e.value for k, e in est.estimates.items()}
    if any(math.isnan(x) for x in values.values()):
        assert isinstance(design, StochasticLieDetector) and abs(values["prevalence"]) <= 1e-12
        return
    lam = group_lambdas(design, values)
    assert lam == pytest.approx((y1 / n1, y2 / n2), abs=1e-9)


@pytest.mark.parametrize("design", EXAMPLES, ids=IDS)
def test_group_channels_are_stochastic(design: TwoGroupDesign) -> None:
    for g in (1, 2):
        ch = design.group_channel(g)
        assert ch.shape == (2, len(design.respondent_types))
        assert np.all(ch >= 0) and np.allclose(ch.sum(axis=0), 1.0, atol=0, rtol=1e-15)
    # the design's channel: report 2 (group - 1) + answer, groups weighted by group_share
    m = len(design.respondent_types)
    ch = np.asarray(design.channel)
    assert ch.shape == (4, m) == design.channel.shape
    w = design.group_share
    assert np.array_equal(ch[:2], w * design.group_channel(1))
    assert np.array_equal(ch[2:], (1 - w) * design.group_channel(2))
    assert np.allclose(ch.sum(axis=0), 1.0, atol=1e-15)
    assert np.abs(np.asarray(design.implemented_channel) - ch).max() <= 2.0**-52


# ------------------------------------------------------------------ epsilon


def brute_epsilon(
    design: TwoGroupDesign, implemented: bool = False, compliant: bool = False
) -> float:
    """max over groups, reports and types with different answers of P[r|i] / P[r|j], by
    enumeration (independent of deniable.designs.types_epsilon)."""
    worst = 1.0
    types = design.respondent_types
    for g in (1, 2):
        ch = design.implemented_group_channel(g) if implemented else design.group_channel(g)
        for r, i, j in itertools.product(range(2), range(len(types)), range(len(types))):
            if types[i].truth == types[j].truth:
                continue
            if compliant and not (types[i].compliant and types[j].compliant):
                continue
            a, b = ch[r, i], ch[r, j]
            if a > 0 and b == 0:
                return math.inf
            if b > 0:
                worst = max(worst, a / b)
    return math.log(worst)


@pytest.mark.parametrize("design", EXAMPLES, ids=IDS)
def test_epsilon_is_infinite_and_matches_the_types(design: TwoGroupDesign) -> None:
    assert design.epsilon == math.inf
    assert brute_epsilon(design) == math.inf
    assert brute_epsilon(design, implemented=True) == math.inf


@pytest.mark.parametrize("design", EXAMPLES, ids=IDS)
def test_epsilon_compliant_is_tight(design: TwoGroupDesign) -> None:
    eps = design.epsilon_compliant
    assert eps == pytest.approx(brute_epsilon(design, compliant=True), rel=1e-12)
    assert brute_epsilon(design, implemented=True, compliant=True) <= eps * (1 + 1e-12)


def test_epsilon_compliant_of_the_symmetric_cdm_is_forced_response() -> None:
    d = SymmetricCheaterDetection(0.1, 0.15, 0.3, 0.05)
    expected = max(ForcedResponse(0.1, 0.15).epsilon, ForcedResponse(0.3, 0.05).epsilon)
    assert d.epsilon_compliant == pytest.approx(expected, rel=1e-12)
    assert math.isfinite(d.epsilon_compliant) and d.epsilon == math.inf
    # tight: the worst compliant ratio equals e^eps, and a 1e-9 smaller eps is violated
    worst = math.exp(brute_epsilon(d, compliant=True))
    assert worst == pytest.approx(math.exp(d.epsilon_compliant), rel=1e-12)
    assert worst > math.exp(d.epsilon_compliant - 1e-9)
    assert CheaterDetection(0.2, 0.6).epsilon_compliant == math.inf  # forced "yes" only
    assert StochasticLieDetector(0.2, 0.6).epsilon_compliant == math.inf  # Mangat's structure


def test_unrelated_epsilon_at_a_coin_prevalence() -> None:
    d = UnrelatedUnknown(0.6, 0.2)
    for q in (0.1, 0.5, 0.9):
        expected = max(UnrelatedQuestion(0.6, q).epsilon, UnrelatedQuestion(0.2, q).epsilon)
        assert d.epsilon_at(q) == pytest.approx(expected, rel=1e-12)
        # tight: group 1's "yes" ratio (p + (1 - p) q) / ((1 - p) q) or "no" ratio reaches it
        ratios = [(0.6 + 0.4 * q) / (0.4 * q), (1 - 0.4 * q) / (1 - 0.6 - 0.4 * q)]
        assert d.epsilon_at(q) == pytest.approx(math.log(max(ratios)), rel=1e-12)
    assert d.epsilon_at(0.0) == math.inf and d.epsilon == math.inf


# ------------------------------------------------------------------ randomizer and tally


def answers(
    design: TwoGroupDesign, truth: Any, group: Any, rng: Any = None, **latent: Any
) -> np.ndarray:
    """The 0/1 randomized answers of respondents with the given truth, group and latent
    indicator (the report is 2 (group - 1) + answer)."""
    reports = design.randomize(design.types(truth, **latent), group=group, rng=rng)
    assert np.array_equal(reports // 2 + 1, np.broadcast_to(group, reports.shape))
    return reports % 2


def latent_kw(design: TwoGroupDesign, latent: np.ndarray) -> dict[str, Any]:
    if isinstance(design, UnrelatedUnknown):
        return {"unrelated": latent}
    if isinstance(design, StochasticLieDetector):
        return {"honest": latent}
    return {"cheater": latent}


def types_of(design: TwoGroupDesign, truth: np.ndarray, latent: np.ndarray) -> np.ndarray:
    """Type index of each respondent, from the documented meaning of the latent input."""
    if isinstance(design, UnrelatedUnknown):  # (carrier, u=1), (carrier, u=0), (non, 1), (non, 0)
        return np.where(truth == 1, np.where(latent == 1, 0, 1), np.where(latent == 1, 2, 3))
    if isinstance(design, StochasticLieDetector):  # honest carrier, lying carrier, non-carrier
        return np.where(truth == 1, np.where(latent == 1, 0, 1), 2)
    # honest carrier, honest non-carrier, cheating carrier, cheating non-carrier
    return np.where(latent == 1, np.where(truth == 1, 2, 3), np.where(truth == 1, 0, 1))


@pytest.mark.parametrize("design", EXAMPLES, ids=IDS)
def test_randomizer_realizes_each_group_channel(design: TwoGroupDesign) -> None:
    rng = np.random.default_rng(11)
    m = len(design.respondent_types)
    per = 4000
    n = 2 * m * per
    group = np.repeat([1, 2], m * per)
    kinds = np.tile(np.repeat(np.arange(m), per), 2)
    # find (truth, latent) pairs giving each type
    pairs = {int(types_of(design, np.array([x]), np.array([z]))[0]): (x, z)
             for x in (0, 1) for z in (0, 1)}  # fmt: skip
    truth = np.array([pairs[k][0] for k in range(m)])[kinds]
    latent = np.array([pairs[k][1] for k in range(m)])[kinds]
    assert np.array_equal(design.types(truth, **latent_kw(design, latent)), kinds)
    reports = answers(design, truth, group, rng, **latent_kw(design, latent))
    assert reports.dtype == np.uint8 and reports.size == n
    for g in (1, 2):
        for k in range(m):
            sel = (group == g) & (kinds == k)
            p = design.group_channel(g)[1, k]
            share = reports[sel].mean()
            if p in (0.0, 1.0):
                assert share == p  # a deterministic path is deterministic
            else:  # 4.5-sigma band: false alarm ~7e-6 per check
                assert abs(share - p) < 4.5 * math.sqrt(p * (1 - p) / per)


@pytest.mark.parametrize("design", EXAMPLES, ids=IDS)
def test_randomizer_uses_the_same_randomness_for_every_type(design: TwoGroupDesign) -> None:
    size = 1000
    group = np.tile([1, 2], size // 2)
    states = []
    for truth, latent in ((0, 0), (1, 1), (1, 0), (0, 1)):
        gen = np.random.default_rng(5)
        answers(design, np.full(size, truth), group, gen,
                **latent_kw(design, np.full(size, latent)))  # fmt: skip
        states.append(gen.bit_generator.state["state"]["state"])
    assert len(set(states)) == 1


def test_defaults_of_the_latent_inputs() -> None:
    group = np.array([1, 2] * 50)
    carriers = np.ones(100, dtype=np.uint8)
    # nobody cheats: honest carriers always say "yes" in the CDM
    assert answers(CheaterDetection(0.2, 0.6), carriers, group, 1).all()
    # all carriers honest in the SLD
    assert answers(StochasticLieDetector(0.2, 0.6), carriers, group, 1).all()
    # cheaters and lying carriers always say "no"
    cheat = answers(CheaterDetection(0.2, 0.6), carriers, group, 1, cheater=carriers)
    assert not cheat.any()
    liar = answers(StochasticLieDetector(0.2, 0.6), carriers, group, 1, honest=0 * carriers)
    assert not liar.any()


def test_tallies_add_and_estimates_agree() -> None:
    d = StochasticLieDetector(2 / 12, 10 / 12)
    rng = np.random.default_rng(3)
    truth = (rng.random(5000) < 0.6).astype(np.uint8)
    group = rng.integers(1, 3, 5000)
    reports = d.randomize(d.types(truth), group=group, rng=rng)
    assert np.array_equal(reports, d.encode(reports % 2, group))
    whole = d.tally(reports)
    parts = d.tally(reports[:1234]) + d.tally(reports[1234:])
    assert parts == whole == sum([d.tally(reports[:1234]), d.tally(reports[1234:])])
    assert whole.mechanism == d.key and whole.counts.size == 4
    y = tuple(int((reports[group == g] % 2).sum()) for g in (1, 2))
    n = tuple(int((group == g).sum()) for g in (1, 2))
    assert group_counts(whole) == (y, n)
    a = d.estimate(reports)
    b = d.estimate(whole)
    c = d.estimate(yes=y, n=n)
    per_group = (Tally(whole.counts[:2]), Tally(whole.counts[2:]))
    e = d.estimate(per_group)
    f = d.estimate(Tally(whole.counts))  # an unbound tally of 4 counts is bound
    assert a.prevalence.value == b.prevalence.value == c.prevalence.value == e.prevalence.value
    assert f.prevalence.value == a.prevalence.value and f.tally == whole
    assert d.tally_groups(y, n) == whole
    assert a.yes_counts == y and a.n_counts == n


# ------------------------------------------------------------------ simulation


TRUTHS: list[tuple[TwoGroupDesign, dict[str, float]]] = [
    (UnrelatedUnknown(0.7, 0.3), {"prevalence": 0.3, "unrelated_prevalence": 0.6}),
    (CheaterDetection(0.2, 0.6), {"prevalence": 0.3, "beta": 0.5, "cheating": 0.2}),
    (SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1),
     {"prevalence": 0.25, "beta": 0.6, "cheating": 0.15}),
    (StochasticLieDetector(2 / 12, 10 / 12), {"prevalence": 0.4, "honesty": 0.7}),
]  # fmt: skip


def simulate_population(
    design: TwoGroupDesign, truth: dict[str, float], n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    pi = truth["prevalence"]
    group = rng.integers(1, 3, n)
    if isinstance(design, UnrelatedUnknown):
        x = (rng.random(n) < pi).astype(np.uint8)
        latent = (rng.random(n) < truth["unrelated_prevalence"]).astype(np.uint8)
    elif isinstance(design, StochasticLieDetector):
        x = (rng.random(n) < pi).astype(np.uint8)
        latent = (rng.random(n) < truth["honesty"]).astype(np.uint8)
    else:  # honest carrier / honest non-carrier / cheater
        kind = rng.choice(3, size=n, p=[pi, truth["beta"], truth["cheating"]])
        x = ((kind == 0) | ((kind == 2) & (rng.random(n) < 0.5))).astype(np.uint8)
        latent = (kind == 2).astype(np.uint8)
    return x, group, latent_kw(design, latent)


@pytest.mark.parametrize(("design", "truth"), TRUTHS, ids=[d.name for d, _ in TRUTHS])
def test_simulation_recovers_the_parameters(
    design: TwoGroupDesign, truth: dict[str, float]
) -> None:
    rng = np.random.default_rng(2024)
    x, group, latent = simulate_population(design, truth, 400_000, rng)
    reports = design.randomize(design.types(x, **latent), group=group, rng=rng)
    est = design.estimate(reports)
    for name, value in truth.items():
        # 4.5-sigma band around the true parameter: false alarm ~7e-6 per check (plus the
        # population's own sampling, which the iid SE already includes)
        assert abs(est[name].value - value) < 4.5 * est[name].se, name


@pytest.mark.parametrize(("design", "truth"), TRUTHS, ids=[d.name for d, _ in TRUTHS])
def test_delta_se_matches_the_simulated_spread(
    design: TwoGroupDesign, truth: dict[str, float]
) -> None:
    rng = np.random.default_rng(7)
    n1, n2, reps = 1500, 2500, 1500
    lam = group_lambdas(design, truth)
    y1 = rng.binomial(n1, lam[0], reps)
    y2 = rng.binomial(n2, lam[1], reps)
    values = {k: [] for k in truth}  # type: dict[str, list[float]]
    covered = 0
    for a, b in zip(y1, y2, strict=True):
        est = design.estimate(yes=(int(a), int(b)), n=(n1, n2))
        for k in truth:
            values[k].append(est[k].value)
        lo, hi = est.prevalence.ci(0.95, "wald")
        covered += lo <= truth["prevalence"] <= hi
    sd = float(np.std(values["prevalence"], ddof=1))
    expected = math.sqrt(design.prevalence_variance(n1, n2, **truth))
    # the SD of 1500 normal draws has relative SE 1/sqrt(2 * 1499) = 1.8%: a 4.5-sigma band
    # is 8.2% (false alarm ~7e-6); the moment estimator of pi is linear, its variance exact
    assert abs(sd / expected - 1) < 0.082
    # Wald coverage: binomial SE sqrt(0.95 * 0.05 / 1500) = 0.0056; 4.5 sigma = 0.025
    assert abs(covered / reps - 0.95) < 0.025
    for k in truth:  # every parameter unbiased (t to first order): 4.5 sigma of the mean
        mean = float(np.mean(values[k]))
        assert abs(mean - truth[k]) < 4.5 * float(np.std(values[k])) / math.sqrt(reps) + 1e-3, k


# ------------------------------------------------------------------ planning variances


def fisher_inverse_00(
    grads: list[tuple[float, float]], lam: tuple[float, float], n: tuple[float, float]
) -> tuple[float, float]:
    """(I^-1)[0, 0] and 1 / I[0, 0] for two binomials with d lambda_g / d theta = grads[g]."""
    info = np.zeros((2, 2))
    for (d1, d2), lg, ng in zip(grads, lam, n, strict=True):
        g = np.array([d1, d2])
        info += ng * np.outer(g, g) / (lg * (1 - lg))
    return float(np.linalg.inv(info)[0, 0]), 1 / float(info[0, 0])


def test_prevalence_variance_is_the_inverse_fisher_information() -> None:
    n = (700.0, 500.0)
    # unrelated-unknown in (pi, u): grad lambda_g = (p_g, 1 - p_g)
    p = (0.7, 0.3)
    lam = lam_uqt(p, 0.3, 0.6)
    full, known = fisher_inverse_00([(p[0], 1 - p[0]), (p[1], 1 - p[1])], lam, n)
    d = UnrelatedUnknown(*p)
    truth = {"prevalence": 0.3, "unrelated_prevalence": 0.6}
    assert d.prevalence_variance(*n, **truth) == pytest.approx(full, rel=1e-12)
    assert d.prevalence_variance_known(*n, **truth) == pytest.approx(known, rel=1e-12)
    # cdm in (pi, gamma): lambda_g = pi + f_g (1 - pi - gamma), grad = (1 - f_g, -f_g)
    f = (0.2, 0.6)
    lam = (0.3 + 0.2 * 0.5, 0.3 + 0.6 * 0.5)
    full, known = fisher_inverse_00([(1 - f[0], -f[0]), (1 - f[1], -f[1])], lam, n)
    c = CheaterDetection(*f)
    assert c.prevalence_variance(*n, prevalence=0.3, cheating=0.2) == pytest.approx(full, rel=1e-12)
    assert c.prevalence_variance(*n, prevalence=0.3, beta=0.5) == pytest.approx(full, rel=1e-12)
    assert c.prevalence_variance_known(*n, prevalence=0.3, cheating=0.2) == pytest.approx(
        known, rel=1e-12
    )
    # cdm-symmetric in (pi, gamma): grad = (1 - fn_g - fy_g, -fy_g)
    s = SymmetricCheaterDetection(0.1, 0.15, 0.3, 0.05)
    lam = (0.25 * 0.85 + 0.6 * 0.1, 0.25 * 0.95 + 0.6 * 0.3)
    full, known = fisher_inverse_00([(0.75, -0.1), (0.65, -0.3)], lam, n)
    assert s.prevalence_variance(*n, prevalence=0.25, cheating=0.15) == pytest.approx(
        full, rel=1e-12
    )
    assert s.prevalence_variance_known(*n, prevalence=0.25, cheating=0.15) == pytest.approx(
        known, rel=1e-12
    )
    # sld in (pi, t): lambda_g = pi t + (1 - pi)(1 - p_g), grad = (t - (1 - p_g), pi)
    q = (2 / 12, 10 / 12)
    pi, t = 0.4, 0.7
    lam = tuple(pi * t + (1 - pi) * (1 - pg) for pg in q)
    full, known = fisher_inverse_00([(t - (1 - pg), pi) for pg in q], lam, n)  # type: ignore[arg-type]
    sld = StochasticLieDetector(*q)
    assert sld.prevalence_variance(*n, prevalence=pi, honesty=t) == pytest.approx(full, rel=1e-12)
    assert sld.prevalence_variance_known(*n, prevalence=pi, honesty=t) == pytest.approx(
        known, rel=1e-12
    )


@pytest.mark.parametrize(("design", "truth"), TRUTHS, ids=[d.name for d, _ in TRUTHS])
def test_known_nuisance_is_never_worse(design: TwoGroupDesign, truth: dict[str, float]) -> None:
    kw = {k: x for k, x in truth.items() if k != "beta"}
    assert design.prevalence_variance_known(900, 1100, **kw) <= design.prevalence_variance(
        900, 1100, **kw
    )


def test_planning_defaults_and_bad_truths() -> None:
    sld = StochasticLieDetector(0.2, 0.8)
    assert sld.prevalence_variance(100, 100, prevalence=0.3) == sld.prevalence_variance(
        100, 100, prevalence=0.3, honesty=1.0
    )
    cdm = CheaterDetection(0.2, 0.6)
    assert cdm.prevalence_variance(100, 100, prevalence=0.3) == cdm.prevalence_variance(
        100, 100, prevalence=0.3, cheating=0.0
    )
    for f in (sld.prevalence_variance, sld.prevalence_variance_known):
        assert type(f(0.4, 0.6, prevalence=0.3)) is float  # per-respondent shares work too
    with pytest.raises(ParameterError, match="needs the true `unrelated_prevalence`"):
        UnrelatedUnknown(0.7, 0.3).prevalence_variance(100, 100, prevalence=0.3)
    with pytest.raises(ParameterError, match="needs the true `prevalence`"):
        sld.prevalence_variance(100, 100, honesty=0.3)
    with pytest.raises(ParameterError, match="got unknown 'cheating'"):
        sld.prevalence_variance(100, 100, prevalence=0.3, cheating=0.1)
    with pytest.raises(ParameterError, match="must be 1"):
        cdm.prevalence_variance(100, 100, prevalence=0.3, cheating=0.1, beta=0.5)
    with pytest.raises(ParameterError, match=r"`prevalence` \+ `cheating` must be at most 1"):
        cdm.prevalence_variance(100, 100, prevalence=0.7, cheating=0.4)
    with pytest.raises(ParameterError, match=r"`honesty` must be in \[0, 1\], got 1.5"):
        sld.prevalence_variance(100, 100, prevalence=0.3, honesty=1.5)
    with pytest.raises(ParameterError, match="`n2` must be in"):
        sld.prevalence_variance(100, 0, prevalence=0.3)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: UnrelatedUnknown(0.5, 0.5), "`p1` and `p2` must differ"),
        (lambda: StochasticLieDetector(0.3, 0.3), "`p1` and `p2` must differ"),
        (lambda: CheaterDetection(0.4, 0.4), "`forced_yes1` and `forced_yes2` must differ"),
        (lambda: SymmetricCheaterDetection(0.1, 0.1, 0.1, 0.1), "forced_no2 = 0.1"),
        (lambda: SymmetricCheaterDetection(0.6, 0.5, 0.1, 0.1),
         "`forced_yes1` + `forced_no1` must be < 1"),
        (lambda: StochasticLieDetector(1.5, 0.3), r"`p1` must be in [0, 1], got 1.5."),
        (lambda: CheaterDetection(-0.1, 0.3), "`forced_yes1` must be in [0, 1]"),
        (lambda: UnrelatedUnknown(1e-20, 0.3), "2**-53"),
    ],
)  # fmt: skip
def test_bad_parameters(make: Any, needle: str) -> None:
    with pytest.raises(ParameterError) as err:
        make()
    assert needle in str(err.value)


def test_parameter_of_the_wrong_type() -> None:
    with pytest.raises(ParameterTypeError, match="`p1` must be a real number"):
        StochasticLieDetector("0.2", 0.8)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"yes": 300, "n": 500}, "needs two groups"),
        ({"yes": (300,), "n": (500,)}, "needs two groups"),
        ({"yes": (300, 0), "n": (500, 0)}, "needs two groups: group 2 has no reports"),
        ({"yes": (300, 700), "n": (500, 692)}, "`yes2` must be in [0, n2] = [0, 692], got 700."),
        ({"data": Tally.binary(3, 10)}, "needs two groups: got a Tally of one group"),
        ({"data": np.array([0, 1, 1])}, "needs two groups: group 2 has no reports"),
        ({"data": np.array([0, 4, 1])}, "`reports` must hold integers in 0..3, got one outside"),
        ({"data": Tally((1, 2, 3, 4, 5))}, "the tally has 5 report values"),
        ({"data": Warner(0.7).tally([0, 1])}, "belongs to mechanism warner"),
        ({}, "give reports (2 (group - 1) + answer"),
    ],
)  # fmt: skip
def test_bad_data(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(DataError) as err:
        StochasticLieDetector(0.2, 0.8).estimate(**kwargs)
    assert needle in str(err.value)


@pytest.mark.parametrize(
    "group", [np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0]), np.array([1, 2, 3], dtype=np.uint8)]
)
def test_bad_group_value_is_printed_plainly(group: Any) -> None:
    # the value as a person writes it (3), not numpy's repr (np.int64(3), np.float64(3.0))
    with pytest.raises(DataError) as err:
        StochasticLieDetector(0.2, 0.8).encode(np.array([0, 1, 1]), group)
    assert str(err.value) == "`group` must hold 1 or 2 (first or second group), got 3."
    with pytest.raises(DataError) as err:
        StochasticLieDetector(0.2, 0.8).encode(np.array([0, 1]), np.array([1.0, np.inf]))
    assert str(err.value) == "`group` must hold 1 or 2 (first or second group), got inf."


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (([0, 1, 1], None), "needs two groups: give `groups`"),
        (([0, 1, 1], [1, 2]), "one entry per respondent"),
        (([0, 2, 1], [1, 2, 2]), "`reports` must hold integers in 0..1"),
        (([0, 1, 1], [1, 2, 0]), "`group` must hold 1 or 2"),
    ],
)
def test_bad_encode_input(args: tuple[Any, Any], needle: str) -> None:
    with pytest.raises(DataError, match=re.escape(needle)):
        StochasticLieDetector(0.2, 0.8).encode(*args)


def test_bad_randomizer_and_tally_input() -> None:
    with pytest.raises(DataError, match=r"`types` must hold integers in 0\.\.2"):
        StochasticLieDetector(0.2, 0.8).randomize([0, 3])
    with pytest.raises(DataError, match="one entry per respondent"):
        StochasticLieDetector(0.2, 0.8).randomize([0, 1], group=[1])
    with pytest.raises(ParameterError, match="`unrelated`"):
        UnrelatedUnknown(0.7, 0.3).types([0, 1])
    with pytest.raises(ParameterError, match="latent indicator `honest`"):
        StochasticLieDetector(0.2, 0.8).types([0, 1], cheater=[0, 1])
    with pytest.raises(DataError, match="`cheater` must have one entry per respondent"):
        CheaterDetection(0.2, 0.6).types([0, 1], cheater=[0])
    with pytest.raises(DataError, match="4 counts"):
        group_counts(Tally((1, 2, 3)))
    with pytest.raises(ParameterError, match="`n1`"):
        StochasticLieDetector(0.2, 0.8).tally_groups((1, 2), (-1, 3))


# ------------------------------------------------------------------ registry and results


def test_registry() -> None:
    assert set(TWO_GROUP_DESIGNS) == {"unrelated-unknown", "cdm", "cdm-symmetric", "sld"}
    assert not set(TWO_GROUP_DESIGNS) & set(DESIGNS)
    d = make_design("cdm-symmetric", {"forced_yes1": "0.1", "forced_no1": "1/10",
                                      "forced_yes2": "0.3", "forced_no2": "0.1"})  # fmt: skip
    assert isinstance(d, SymmetricCheaterDetection) and isinstance(d, Design)
    assert d.forced_no1 == 0.1
    with pytest.raises(ParameterError, match="sld"):
        make_design("nope")
    with pytest.raises(ParameterError, match="needs parameters p1, p2"):
        make_design("sld")


def test_to_dict_is_plain_json_and_table_reads() -> None:
    # pi_hat = 0 exactly: t is undefined and must be "nan", never a bare NaN
    est = StochasticLieDetector(0.2, 0.8).estimate(yes=(800, 200), n=(1000, 1000))
    assert est.prevalence.value == pytest.approx(0.0, abs=1e-12)
    text = json.dumps(est.to_dict(), allow_nan=False)
    out = json.loads(text)
    assert out["epsilon"] == "inf"
    assert out["estimates"]["honesty"]["estimate"] == "nan"
    good = StochasticLieDetector(2 / 12, 10 / 12).estimate(yes=(373, 398), n=(564, 692))
    d = good.to_dict(0.9)
    assert d["groups"][1] == {"group": 2, "yes": 398, "n": 692, "lambda_hat": 398 / 692}
    assert d["covariance"][0][0] == pytest.approx(good.prevalence.se**2, rel=1e-12)
    table = str(good.table())
    assert "prevalence" in table and "0.8707" in table and "group 2: yes / n" in table
    assert "sld (p1=0.166667, p2=0.833333" in table
    with pytest.raises(ParameterError, match="`parameter` must be one of"):
        good["beta"]


# ------------------------------------------------------------------ CLI


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


SLD_ARGS = ("estimate", "sld", "-p", "p1=2/12", "-p", "p2=10/12", "--yes", "373,398",
            "--n", "564,692")  # fmt: skip


def test_cli_estimate_sld_json(runner: CliRunner) -> None:
    out = run_json(runner, *SLD_ARGS)
    assert out["design"] == "sld" and out["epsilon"] == "inf"
    assert out["yes"] == [373, 398] and out["n"] == [564, 692] and out["n_total"] == 1256
    pi, t = out["estimates"]["prevalence"], out["estimates"]["honesty"]
    assert round(pi["estimate"], 4) == 0.8707 and round(pi["se"], 4) == 0.0411
    assert round(t["estimate"], 4) == 0.6358 and round(t["se_unbiased"], 4) == 0.0173
    l1, l2 = 373 / 564, 398 / 692
    assert pi["estimate"] == pytest.approx(1 - (l2 - l1) / (2 / 12 - 10 / 12), rel=1e-12)
    assert pi["ci_wald"] == pytest.approx([pi["estimate"] - Z95 * pi["se"],
                                          pi["estimate"] + Z95 * pi["se"]], rel=1e-12)  # fmt: skip


def test_cli_estimate_counts_and_exact_line(runner: CliRunner) -> None:
    out = run_json(runner, "estimate", "cdm", "-p", "forced_yes1=0", "-p", "forced_yes2=0.5",
                   "--counts", "70,30,40,60")  # fmt: skip
    assert out["estimates"]["prevalence"]["estimate"] == pytest.approx(0.3, rel=1e-12)
    assert out["estimates"]["prevalence"]["ci_exact"] == pytest.approx(
        clopper_pearson(30, 100), rel=1e-12
    )
    text = run(runner, "estimate", "cdm", "-p", "forced_yes1=0", "-p", "forced_yes2=0.5",
               "--counts", "70,30,40,60").stdout  # fmt: skip
    lo, hi = clopper_pearson(30, 100)
    assert f"[{lo:.4f}, {hi:.4f}]" in text and "exact" in text


def test_cli_estimate_table(runner: CliRunner) -> None:
    result = run(runner, *SLD_ARGS)
    assert result.exit_code == 0 and result.stderr == ""
    text = result.stdout
    assert "∞" in text and "0.8707" in text and "0.0411" in text and "0.6358" in text
    assert "373 / 564" in text and "398 / 692" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_cli_designs_lists_the_two_group_designs(runner: CliRunner) -> None:
    out = run_json(runner, "designs")
    assert [r["name"] for r in out["designs"]] == list(DESIGNS)
    rows = {r["name"]: r for r in out["two_group_designs"]}
    assert list(rows) == list(TWO_GROUP_DESIGNS)
    for name, row in rows.items():
        assert row["epsilon"] == "inf" and row["groups"] == 2, name
        assert row["estimates"][0] == "prevalence"
    assert rows["sld"]["required"] == ["p1", "p2"]
    text = run(runner, "designs").stdout
    for name in TWO_GROUP_DESIGNS:
        line = next(x for x in text.splitlines() if x.split()[:1] == [name])
        assert line.rstrip().endswith("∞"), line


CLI_BAD = [
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.8", "--yes", "373", "--n", "564"),
     "needs two groups"),
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.8", "--yes", "600,398", "--n", "564,692"),
     "`yes1` must be in [0, n1] = [0, 564], got 600."),
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.2", "--yes", "1,2", "--n", "5,5"),
     "`p1` and `p2` must differ"),
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.8", "--yes", "1,x", "--n", "5,5"),
     "`--yes` must be a whole number"),
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.8", "--counts", "1,2,3"),
     "4 entries"),
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.8", "--reports", "r.csv"),
     "needs two groups"),
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.8", "--yes", "1,0", "--n", "5,0"),
     "group 2 has no reports"),
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.8"), "give exactly one of"),
    (("estimate", "sld", "-p", "p1=0.2", "-p", "p2=0.8", "--yes", "1,2", "--n", "5,5",
      "--method", "mle"), "`--method`"),
    (("estimate", "warner", "-p", "p=0.7", "--yes", "3,4", "--n", "10"), "takes one number"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "needle"), CLI_BAD, ids=[" ".join(a) for a, _ in CLI_BAD])
def test_cli_bad_input_is_one_error_line(
    runner: CliRunner, args: tuple[str, ...], needle: str
) -> None:
    result = run(runner, *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and result.stdout == ""
    assert needle in lines[0], lines[0]


# ------------------------------------------------------------------ group share and protocol


def test_group_share_is_a_parameter_listed_when_not_one_half() -> None:
    d = StochasticLieDetector(0.2, 0.8)
    e = StochasticLieDetector(0.2, 0.8, group_share=0.3)
    assert d.group_share == 0.5 and "group_share" not in d.parameters()
    assert e.parameters() == {"p1": 0.2, "p2": 0.8, "group_share": 0.3}
    assert repr(d) == "StochasticLieDetector(p1=0.2, p2=0.8)"
    assert repr(e) == "StochasticLieDetector(p1=0.2, p2=0.8, group_share=0.3)"
    assert d != e and d.key != e.key and '"group_share":' in e.key and "group_share" not in d.key
    assert make_design("sld", {"p1": "0.2", "p2": "0.8", "group_share": "0.3"}) == e
    assert d.epsilon == e.epsilon  # the group is public: epsilon does not depend on it
    # the estimator conditions on the group sizes: the same counts, the same estimate
    assert (
        d.estimate(yes=(300, 400), n=(500, 600)).to_dict()["estimates"]
        == e.estimate(yes=(300, 400), n=(500, 600)).to_dict()["estimates"]
    )
    with pytest.raises(DataError, match="belongs to mechanism"):
        d.estimate(e.tally_groups((300, 400), (500, 600)))


@pytest.mark.parametrize("share", [0.0, 1.0, 1.5, 1e-20])
def test_group_share_must_leave_both_groups_possible(share: float) -> None:
    with pytest.raises(ParameterError, match="`group_share`"):
        StochasticLieDetector(0.2, 0.8, group_share=share)


def test_randomize_draws_the_groups_with_the_group_share() -> None:
    """30000 respondents, group 1 with probability 0.3: within 4.5 binomial SE (false alarm
    ~7e-6); the report is 2 (group - 1) + answer, and a given group is kept."""
    d = CheaterDetection(0.2, 0.6, group_share=0.3)
    reports = d.randomize(np.zeros(30_000, dtype=int), rng=4)
    share = float(np.mean(reports < 2))
    assert abs(share - 0.3) < 4.5 * math.sqrt(0.3 * 0.7 / 30_000)
    assert d.group_threshold() == round(0.3 * 2**53)
    fixed = d.randomize(np.zeros(6, dtype=int), group=[1, 2, 1, 2, 2, 2], rng=4)
    assert (fixed // 2 + 1).tolist() == [1, 2, 1, 2, 2, 2]
    # honest carriers (type 0) always say yes: reports 1 (group 1) or 3 (group 2)
    assert set(reports.tolist()) <= {1, 3}


def test_simulation_defaults_to_the_designs_group_share() -> None:
    from deniable import simulate

    sim = simulate(StochasticLieDetector(0.2, 0.8, group_share=0.3), 1000, 0.3, seed=1)
    assert sim.settings["group_share"] == 0.3 and sim.group is not None
    assert int(np.sum(sim.group == 1)) == 300
    assert sim.tally() == sim.design.tally(sim.design.encode(sim.reports, sim.group))
    assert sim.tally().n == 1000 and sim.estimate.tally == sim.tally()


def test_two_group_design_under_the_protocol() -> None:
    from deniable.designs import Mechanism

    d = UnrelatedUnknown(0.7, 0.3)
    assert isinstance(d, Mechanism) and d.n_groups == 2 and d.n_reports == 4
    assert d.report_labels == ("group 1 no", "group 1 yes", "group 2 no", "group 2 yes")
    assert d.n_truths == len(d.respondent_types) == 4
    types = d.types([1, 1, 0, 0], unrelated=[1, 0, 1, 0])
    assert types.tolist() == [0, 1, 2, 3]
