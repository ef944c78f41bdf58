"""Composition: closed forms, brute-force enumeration, cross-checks between routes, edges."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deniable.accounting import (
    Gaussian,
    Laplace,
    PrivacyAccountant,
    RandomizedResponse,
    advanced_composition,
    basic_composition,
    common_lattice,
    compare_composition,
    gaussian_pld,
    gdp_delta,
    gdp_epsilon,
    kov_composition,
    laplace_pld,
    optimal_rr_delta,
    optimal_rr_epsilon,
    rr_pld,
)
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError


def brute_force_delta(epsilons: list[float], target: float, k: int = 2) -> float:
    """Hockey stick of the product of k-ary RR pairs by enumerating every output sequence.

    Each use has three kinds of output: the first input's answer (P = e^e/Z, Q = 1/Z), the
    second's (P = 1/Z, Q = e^e/Z) and, for k > 2, the k - 2 others (P = Q = 1/Z each), which
    are merged into one output of probability (k - 2)/Z under both.
    """
    per_use = []
    for e in epsilons:
        z = math.exp(e) + k - 1
        outs = [(math.exp(e) / z, 1 / z), (1 / z, math.exp(e) / z)]
        if k > 2:
            outs.append(((k - 2) / z, (k - 2) / z))
        per_use.append(outs)
    total = 0.0
    for combo in itertools.product(*per_use):
        p = math.prod(o[0] for o in combo)
        q = math.prod(o[1] for o in combo)
        total += max(0.0, p - math.exp(target) * q)
    return total


# ------------------------------------------------------------------ closed forms
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("frac", [0.0, 0.3, 0.99])
def test_single_rr_delta_closed_form(eps, frac):
    # one use: only the output with loss +eps counts: delta = p (1 - e^{t - eps})
    t = frac * eps
    expected = max(0.0, (math.exp(eps) - math.exp(t)) / (1 + math.exp(eps)))
    assert optimal_rr_delta(eps, t, count=1) == pytest.approx(expected, rel=1e-9)
    assert optimal_rr_delta(eps, t, count=1) >= expected
    assert optimal_rr_delta(eps, eps, count=1) == 0.0  # at the largest loss: exactly 0
    assert optimal_rr_delta(eps, eps * (1 - 1e-15), count=1) <= 1e-14
    assert rr_pld(eps).delta(t) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("eps", [0.3, 1.2])
def test_equal_eps_matches_brute_force(n, eps):
    for t in [0.0, 0.5 * eps, eps, 0.4 * n * eps]:
        bf = brute_force_delta([eps] * n, t)
        assert optimal_rr_delta(eps, t, count=n) == pytest.approx(bf, rel=1e-9, abs=1e-15)
        assert optimal_rr_delta(eps, t, count=n) >= bf * (1 - 1e-12)


def test_heterogeneous_lattice_pld_matches_brute_force():
    eps = [0.2, 0.5, 0.5, 0.7, 1.0, 0.1, 0.3]
    acct = PrivacyAccountant(tuple(RandomizedResponse(e) for e in eps))
    assert acct.lattice == pytest.approx(0.1, rel=1e-12)
    assert acct.optimal_is_exact
    for t in [0.0, 0.35, 1.0, 2.0, 3.0]:
        bf = brute_force_delta(eps, t)
        got = acct.delta(t)
        assert got == pytest.approx(bf, rel=1e-9, abs=1e-15)
        assert got >= bf * (1 - 1e-12)


@pytest.mark.parametrize("k", [3, 5])
def test_kary_pld_matches_brute_force(k):
    eps = [0.4, 0.8, 0.8, 1.2]
    acct = PrivacyAccountant(tuple(RandomizedResponse(e, k=k) for e in eps))
    for t in [0.0, 0.4, 1.0, 2.0]:
        bf = brute_force_delta(eps, t, k=k)
        assert acct.delta(t) == pytest.approx(bf, rel=1e-9, abs=1e-15)
        # k-ary RR leaks less than binary RR at the same epsilon
        assert bf <= brute_force_delta(eps, t, k=2)
    # count for k-ary goes through the closed-form mixture; same as listing the uses
    many = PrivacyAccountant((RandomizedResponse(0.8, count=4, k=k),))
    one_by_one = PrivacyAccountant(tuple(RandomizedResponse(0.8, k=k) for _ in range(4)))
    assert many.delta(0.8) == pytest.approx(brute_force_delta([0.8] * 4, 0.8, k=k), rel=1e-9)
    assert many.delta(0.8) == pytest.approx(one_by_one.delta(0.8), rel=1e-9)


def test_non_lattice_bracket_contains_brute_force():
    eps = [math.log(3), 0.5 * math.sqrt(2), 0.9]
    acct = PrivacyAccountant(tuple(RandomizedResponse(e) for e in eps), step=1e-3)
    assert acct.lattice is None and not acct.optimal_is_exact
    for t in [0.0, 0.5, 1.5]:
        bf = brute_force_delta(eps, t)
        up, down = acct.pld("up").delta(t), acct.pld("down").delta(t)
        assert down <= bf <= up
        assert up - down < 0.01
    lo, hi = acct.epsilon_bounds(1e-3)
    assert lo <= hi <= lo + 3 * 1e-3 + 1e-9  # a priori gap: n * step


def test_advanced_and_kov_closed_forms():
    e, k, d = 0.1, 500, 1e-7
    drv = math.sqrt(2 * k * math.log(1 / d)) * e + k * e * math.expm1(e)
    assert advanced_composition(e, d, counts=k) == pytest.approx(drv, rel=1e-9)
    s = k * e * (math.exp(e) - 1) / (math.exp(e) + 1)
    second = s + e * math.sqrt(2 * k * math.log(math.e + math.sqrt(k * e * e) / d))
    third = s + e * math.sqrt(2 * k * math.log(1 / d))
    assert kov_composition(e, d, counts=k) == pytest.approx(min(k * e, second, third), rel=1e-9)
    # heterogeneous KOV (Thm 3.5) with e_i
    es = [0.1, 0.2, 0.4]
    s = sum(x * math.tanh(x / 2) for x in es)
    q = sum(x * x for x in es)
    expect = min(
        sum(es),
        s + math.sqrt(2 * q * math.log(math.e + math.sqrt(q) / d)),
        s + math.sqrt(2 * q * math.log(1 / d)),
    )
    assert kov_composition(es, d) == pytest.approx(expect, rel=1e-9)
    assert basic_composition(es) == pytest.approx(0.7, rel=1e-15)
    assert basic_composition([0.1] * 10) >= 1.0  # exact sum rounded up, 0.1 is not exact


# ------------------------------------------------------------------ orderings
@pytest.mark.parametrize(
    "eps", [[0.5] * 10, [0.1] * 300, [0.05, 0.1, 0.2, 0.4, 0.8] * 20, [1.0] * 50]
)
@pytest.mark.parametrize("delta", [1e-9, 1e-5])
def test_routes_are_ordered(eps, delta):
    acct = PrivacyAccountant(tuple(RandomizedResponse(e) for e in eps))
    opt = acct.epsilon(delta)
    basic = acct.epsilon(delta, "basic")
    assert opt <= acct.epsilon(delta, "pld") + 1e-9
    assert opt <= acct.epsilon(delta, "rdp")
    assert opt <= acct.epsilon(delta, "zcdp")
    assert opt <= acct.epsilon(delta, "kov") <= basic
    assert opt <= acct.epsilon(delta, "advanced") <= basic
    assert opt * (1 - 1e-9) <= acct.epsilon(delta, "best") <= opt
    lo, hi = acct.epsilon_bounds(delta)
    assert lo == hi == opt
    # and the exact delta at the optimal epsilon is at most delta, but not by much
    assert acct.delta(opt) <= delta
    assert acct.delta(opt * (1 - 1e-6)) > delta


def test_equal_eps_closed_form_agrees_with_lattice_pld():
    acct = PrivacyAccountant((RandomizedResponse(0.3, count=200),))
    pld = rr_pld(0.3, count=200)
    for t in [0.0, 3.0, 10.0]:
        assert acct.delta(t) == pytest.approx(pld.delta(t), rel=1e-8)


def test_large_k_in_log_space():
    # k = 10^5 uses: exact, finite, between the KOV bound and the lower bound of a Gaussian
    e = optimal_rr_epsilon(0.01, 1e-6, count=100_000)
    assert math.isfinite(e)
    assert e <= kov_composition(0.01, 1e-6, counts=100_000)
    assert e > 0.9 * optimal_rr_epsilon(0.01, 1e-5, count=100_000)
    # tiny delta: finite and below basic composition
    assert optimal_rr_epsilon(0.01, 1e-300, count=10_000) < 100.0
    # here P(all answers favour x) = 0.731^1000 ~ 1e-136 > 1e-300: the answer is basic
    assert optimal_rr_epsilon(1.0, 1e-300, count=1000) == 1000.0


# ------------------------------------------------------------------ count and edges
def test_count_is_honoured_by_every_method():
    once = PrivacyAccountant((RandomizedResponse(0.5, count=10),))
    listed = PrivacyAccountant(tuple(RandomizedResponse(0.5) for _ in range(10)))
    for m in ["basic", "advanced", "kov", "optimal", "pld", "rdp", "zcdp"]:
        assert once.epsilon(1e-6, m) == pytest.approx(listed.epsilon(1e-6, m), rel=1e-9)
    lap_many = PrivacyAccountant((Laplace(2.0, count=3),))
    lap_listed = PrivacyAccountant(tuple(Laplace(2.0) for _ in range(3)))
    for m in ["basic", "pld", "rdp", "zcdp"]:
        assert lap_many.epsilon(1e-6, m) == pytest.approx(lap_listed.epsilon(1e-6, m), rel=1e-9)
    g_many = PrivacyAccountant((Gaussian(3.0, count=4),))
    assert g_many.epsilon(1e-6, "gdp") == pytest.approx(
        gdp_epsilon(4 / 3.0 / 2 * 1, 1e-6), rel=1e-9
    )
    assert PrivacyAccountant((RandomizedResponse(0.5, count=0),)).epsilon(1e-6) == 0.0


@pytest.mark.parametrize(
    "method", ["basic", "advanced", "kov", "optimal", "pld", "rdp", "zcdp", "best"]
)
def test_infinite_event_gives_infinite_total(method):
    acct = PrivacyAccountant((RandomizedResponse(0.5, count=3), RandomizedResponse(math.inf)))
    assert acct.epsilon(0.5, method) == math.inf
    assert acct.delta(100.0, method) == 1.0
    assert acct.delta(math.inf, method) == 0.0
    table = acct.compare(1e-6)
    assert all(r.epsilon == math.inf for r in table.rows)
    assert "inf" in str(table)
    assert PrivacyAccountant((Laplace(0.0),)).epsilon(0.1) == math.inf
    assert PrivacyAccountant((Gaussian(0.0),)).epsilon(0.1) == math.inf


def test_zero_epsilon_and_empty():
    acct = PrivacyAccountant((RandomizedResponse(0.0, count=100),))
    assert acct.epsilon(1e-9) == 0.0 and acct.delta(0.0) == 0.0
    assert PrivacyAccountant().epsilon(0.5, "rdp") == 0.0
    assert optimal_rr_epsilon(0.0, 0.1, count=10) == 0.0


def test_delta_limits():
    acct = PrivacyAccountant((RandomizedResponse(0.5, count=20),))
    tiny = acct.epsilon(1e-300)
    assert math.isfinite(tiny) and tiny <= 10.0
    assert acct.epsilon(1 - 1e-12) == 0.0  # delta -> 1: no loss needed
    for m in ["rdp", "zcdp", "kov", "advanced"]:
        e = acct.epsilon(1e-300, m)
        assert math.isfinite(e) and e >= 0
    assert acct.delta(10.0) == 0.0  # beyond the largest loss: exactly 0
    assert acct.delta(0.0, "basic") == 1.0
    assert acct.delta(3.0, "advanced") == 1.0  # sqrt(10 ln(1/d)) + 6.49 > 3: vacuous
    d = acct.delta(9.0, "advanced")
    assert 0.5 < d < 1 and advanced_composition(0.5, d, counts=20) <= 9.0


# ------------------------------------------------------------------ Laplace and Gaussian
@pytest.mark.parametrize("eps0", [0.3, 1.0])
def test_laplace_pld_brackets_closed_form(eps0):
    # one Laplace use: delta(t) = (1 - e^{t - e})/2 + (1 - e^{(t - e)/2})^2 / 2 for 0 <= t < e
    up = laplace_pld(1 / eps0, step=1e-4)
    down = laplace_pld(1 / eps0, step=1e-4, rounding="down")
    for t in [0.0, 0.3 * eps0, 0.9 * eps0]:
        exact = 0.5 * (1 - math.exp(t - eps0)) + 0.5 * (1 - math.exp((t - eps0) / 2)) ** 2
        assert down.delta(t) <= exact <= up.delta(t)
        assert up.delta(t) - down.delta(t) < 1e-3


def test_gaussian_pld_brackets_gdp():
    for mu in [0.5, 2.0]:
        up = gaussian_pld(1 / mu, step=1e-3)
        down = gaussian_pld(1 / mu, step=1e-3, rounding="down")
        for t in [0.0, 1.0, 3.0]:
            assert down.delta(t) <= gdp_delta(mu, t) <= up.delta(t)
    acct = PrivacyAccountant((Gaussian(2.0, count=4), Gaussian(4.0)))
    exact = acct.epsilon(1e-6, "gdp")
    assert exact <= acct.epsilon(1e-6, "pld") <= exact + 0.05
    assert exact <= acct.epsilon(1e-6, "rdp")
    assert exact <= acct.epsilon(1e-6, "zcdp")
    assert acct.epsilon(1e-6, "basic") == math.inf  # no pure-DP epsilon
    assert acct.epsilon(1e-6, "best") == exact


def test_mixed_events():
    acct = PrivacyAccountant(
        (RandomizedResponse(0.5, count=5), Laplace(2.0, count=2), Gaussian(5.0))
    )
    pld = acct.epsilon(1e-6, "pld")
    lo, hi = acct.epsilon_bounds(1e-6)
    assert lo <= pld == hi
    assert hi <= acct.epsilon(1e-6, "rdp") + 0.01
    with pytest.raises(PrivacyError, match="gdp"):
        acct.epsilon(1e-6, "gdp")
    assert acct.add(RandomizedResponse(1.0)).epsilon(1e-6, "pld") > pld


# ------------------------------------------------------------------ table and bad input
def test_compare_table():
    table = compare_composition([0.5] * 10, delta=1e-6)
    assert [r.method for r in table.rows] == [
        "basic",
        "advanced",
        "kov",
        "optimal",
        "pld",
        "rdp",
        "zcdp",
    ]
    assert table["basic"] == 5.0
    assert table["optimal"] <= table["pld"] * (1 + 1e-9) and table["pld"] <= table["basic"]
    text = str(table)
    assert "10 questions at epsilon = 0.5" in text and "5.0000" in text
    with pytest.raises(KeyError):
        table["nope"]
    assert table.to_dicts()[0]["method"] == "basic"


def test_common_lattice():
    assert common_lattice([0.5, 0.25, 1.0], counts=[1, 1, 1]) == 0.25
    assert common_lattice([0.37, 0.5], counts=[1, 1]) == pytest.approx(0.01, rel=1e-12)
    assert common_lattice([math.pi], counts=[1]) is None
    assert common_lattice([1e-6, 1.0], counts=[10**6, 10**6]) is None  # lattice too fine


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: RandomizedResponse(-0.5), "epsilon"),
        (lambda: RandomizedResponse(0.5, count=-1), "count"),
        (lambda: RandomizedResponse(0.5, k=1), "k"),
        (lambda: Laplace(-1.0), "scale"),
        (lambda: Gaussian(1.0, sensitivity=-1.0), "sensitivity"),
        (lambda: PrivacyAccountant().epsilon(0.0), "delta"),
        (lambda: PrivacyAccountant().epsilon(1.0), "delta"),
        (lambda: PrivacyAccountant().epsilon(0.1, method="magic"), "method"),
        (lambda: PrivacyAccountant().delta(-1.0), "epsilon"),
        (lambda: PrivacyAccountant(step=0.0), "step"),
        (lambda: advanced_composition([-0.1], 0.1), "epsilons"),
        (lambda: kov_composition([0.1], 1.5), "delta"),
        (lambda: optimal_rr_epsilon(0.5, 0.0, count=10), "delta"),
        (lambda: compare_composition([0.5], counts=[1, 2]), "counts"),
        (lambda: rr_pld(0.5, rounding="sideways"), "rounding"),
    ],
)
def test_bad_input_raises_naming_the_parameter(call, name):
    with pytest.raises(ParameterError, match=f"`{name}`"):
        call()


def test_events_must_be_events():
    with pytest.raises(ParameterTypeError, match="`events`"):
        PrivacyAccountant((0.5,))  # type: ignore[arg-type]


def test_pld_mass_and_symmetry():
    # the PLD is a probability distribution; E[e^{-L}] = 1 (Q sums to 1) for exact RR
    pld = rr_pld(0.7, k=4, count=30)
    assert pld.mass() == pytest.approx(1.0, abs=1e-12)
    assert float(np.sum(pld.probs * np.exp(-pld.losses))) == pytest.approx(1.0, rel=1e-9)


def test_comparison_description_is_grammatical_for_one_question() -> None:
    from deniable.accounting import compare_composition

    assert "1 question at" in str(compare_composition([0.5], delta=1e-6))
    assert "2 questions at" in str(compare_composition([0.5, 0.5], delta=1e-6))


# ------------------------------------------------------------------ huge finite epsilon
# e^eps overflows a double from eps = 709.78 on: every composition route must still return a
# correct safe value (no exception or warning, never NaN, never below the true value, inf only
# where the true value overflows).  For n uses of RR(x) with x >= 700 the exact optimum is
# known in closed form: only the all-(+x) outcome has a loss above (n - 2) x, so for
# t in ((n - 2) x, n x), delta(t) = p^n (1 - e^(t - n x)) with p^n = (1 + e^-x)^-n = 1 to
# double precision, and epsilon(delta) = n x + ln(1 - delta).
HUGE = [700.0, 710.0, 1e6, 1e300]
DELTAS = [1e-300, 0.5]
PURE_METHODS = ["basic", "advanced", "kov", "optimal", "pld", "rdp", "zcdp", "best"]


def _rr_optimum(x: float, n: int, delta: float) -> float:
    return n * x + math.log1p(-delta)


def test_basic_composition_overflows_to_inf() -> None:
    assert basic_composition([1e308, 1e308]) == math.inf  # the exact sum exceeds every double
    assert basic_composition([1e308], counts=[2]) == math.inf
    assert basic_composition([8e307, 8e307]) == 1.6e308  # exact, just below the largest double
    # two uses of RR(1e308): the total loss 2e308 overflows, and so does the optimum
    # 2e308 + ln(1 - delta): inf everywhere, delta = 1 (vacuous) at every finite epsilon
    assert optimal_rr_epsilon(1e308, 0.5, count=2) == math.inf
    assert optimal_rr_delta(1e308, 1.0, count=2) == 1.0
    acct = PrivacyAccountant((RandomizedResponse(1e308, count=2),))
    for m in PURE_METHODS:
        assert acct.epsilon(0.5, m) == math.inf and acct.delta(1e300, m) == 1.0
    table = compare_composition([1e308, 1e308], delta=0.5)
    assert all(r.epsilon == math.inf for r in table.rows)
    assert "largest double" in str(table)


@pytest.mark.parametrize("x", HUGE)
@pytest.mark.parametrize("d", DELTAS)
def test_huge_epsilon_closed_forms_and_optimum(x: float, d: float) -> None:
    assert basic_composition([x, x]) == 2 * x
    # DRV: sqrt(2 k ln(1/d)) x + k x (e^x - 1) >= x e^x: inf or far above basic
    assert advanced_composition([x], d) == x
    assert advanced_composition([x], d, counts=[3]) == 3 * x
    assert advanced_composition([x, 1.0], d) == basic_composition([x, 1.0])
    assert kov_composition([x] * 3, d) == 3 * x  # S = 3 x tanh(x/2) = 3 x: KOV is basic
    t = _rr_optimum(x, 3, d)
    opt = optimal_rr_epsilon(x, d, count=3)
    assert t * (1 - 1e-15) <= opt <= min(3 * x, t + 1e-11 * 3 * x)
    assert 1 - 1e-12 <= optimal_rr_delta(x, 1.0, count=3) <= 1.0
    assert optimal_rr_delta(x, 3 * x, count=3) == 0.0  # at the largest loss: exactly 0
    # the exact lattice PLD (step = x): the same delta
    pld = rr_pld(x, count=3)
    # (its grid losses carry a rounding slack of a few ulps: delta is 0 just above 3 x)
    assert 1 - 1e-12 <= pld.delta(1.0) <= 1.0 and pld.delta(3 * x * (1 + 1e-12)) == 0.0
    assert t * (1 - 1e-15) <= pld.epsilon(d) <= 3 * x * (1 + 1e-12)


@pytest.mark.parametrize("method", PURE_METHODS)
@pytest.mark.parametrize("x", HUGE)
@pytest.mark.parametrize("d", DELTAS)
def test_huge_epsilon_accountant_every_method(method: str, x: float, d: float) -> None:
    acct = PrivacyAccountant((RandomizedResponse(x, count=3),))
    e = acct.epsilon(d, method)
    t = _rr_optimum(x, 3, d)
    assert math.isfinite(e) and e >= t * (1 - 1e-15), e  # never below the exact optimum
    if method in ("basic", "advanced", "kov"):
        assert e == 3 * x
    elif method in ("optimal", "best"):
        assert e <= t + 1e-11 * 3 * x
    elif method in ("pld", "rdp"):
        assert e <= 3 * x * (1 + 1e-9)
    # delta at epsilon = 1: 1 - e^(1 - 3x) - ... = 1 to double precision
    assert 1 - 1e-12 <= acct.delta(1.0, method) <= 1.0
    assert acct.delta(3 * x * (1 + 1e-9), method) in (0.0, 1.0) or method in ("rdp", "zcdp")
    # the Laplace mechanism with epsilon ~ x: half its mass has loss +x, so for d < 1/2
    # epsilon(d) >= x + ln(1 - 2 d)
    lap = PrivacyAccountant((Laplace(1 / x),))
    le = lap.epsilon(d, method)
    assert math.isfinite(le) and le >= 0
    if d < 0.5:
        assert le >= lap.events[0].pure_epsilon * (1 - 1e-15) + math.log1p(-2 * d)


@pytest.mark.parametrize("x", [*HUGE, 800.0])
@pytest.mark.parametrize("d", DELTAS)
def test_huge_epsilon_comparison_table(x: float, d: float) -> None:
    """compare_composition([800] * 3) used to crash in math.expm1 (the reviewer's repro)."""
    table = compare_composition([x] * 3, delta=d)
    t = _rr_optimum(x, 3, d)
    assert table["basic"] == table["advanced"] == table["kov"] == 3 * x
    for row in table.rows:
        assert math.isfinite(row.epsilon) and row.epsilon >= t * (1 - 1e-15), row
    assert "nan" not in str(table) and "inf" not in str(table)
    # heterogeneous: at least one RR(x) alone, at most basic (but zCDP, which may exceed it)
    mixed = compare_composition([x, 1.0], delta=d)
    single = _rr_optimum(x, 1, d)
    for row in mixed.rows:
        assert math.isfinite(row.epsilon) and row.epsilon >= single * (1 - 1e-15), row
        if row.method != "zcdp":
            assert row.epsilon <= mixed["basic"] * (1 + 1e-9), row


@pytest.mark.parametrize("x", HUGE)
def test_huge_epsilon_plds(x: float) -> None:
    # a grid that could not be held in memory is refused with a named error, not a crash
    if x >= 1e6:
        with pytest.raises(ParameterError, match="`step`"):
            laplace_pld(1 / x, step=1e-4)
        with pytest.raises(ParameterError, match="`step`"):
            rr_pld(x, count=3, step=1e-4)
    lap = laplace_pld(1 / x, step=x / 1000)
    assert lap.mass() == pytest.approx(1.0, abs=1e-9)
    assert 0.5 <= lap.delta(1.0) <= 1.0  # half the mass has loss ~ +x
    gauss = gaussian_pld(1 / x, step=max(x / 100, 1.0) if x < 1e154 else 1.0)
    assert 1 - 1e-9 <= gauss.delta(1.0) <= 1.0  # loss N(x^2 / 2, x^2): far above 1


def test_tiny_epsilon_advanced_and_kov_stay_positive() -> None:
    """eps^2 underflows for eps = 1e-200: sqrt(sum eps_i^2) is computed scaled, so the bounds
    stay positive (sqrt(2 k ln(1/d)) eps to first order) instead of collapsing to 0."""
    d = 0.5  # so that sqrt(6 ln 2) eps = 2.04 eps is below basic (3 eps)
    expected = math.sqrt(2 * 3 * math.log(1 / d)) * 1e-200
    assert advanced_composition([1e-200], d, counts=[3]) >= expected
    assert advanced_composition([1e-200], d, counts=[3]) == pytest.approx(expected, rel=1e-9)
    # KOV's third bound: S + sqrt(2 Q ln(1/d)) with S = 3 eps tanh(eps / 2) ~ 1.5e-400
    assert kov_composition([1e-200], d, counts=[3]) == pytest.approx(expected, rel=1e-9)
    assert kov_composition([1e-200], d, counts=[3]) >= expected


def test_tiny_gaussian_mu_keeps_a_positive_delta() -> None:
    """Gaussian(sigma = 1e200) used 3 times: mu = sqrt(3) 1e-200 and delta(0) is the total
    variation 2 Phi(mu / 2) - 1 = mu / sqrt(2 pi) (1 + O(mu^2)) = 6.9e-201.  mu^2 underflows;
    no route may report 0."""
    mu = math.sqrt(3) * 1e-200
    tv = mu / math.sqrt(2 * math.pi)
    acct = PrivacyAccountant((Gaussian(1e200, count=3),))
    for method in ("zcdp", "rdp", "pld", "gdp", "optimal", "best"):
        assert acct.delta(0.0, method) >= tv, method


# ------------------------------------------------------------------ the default route
def _gdp_delta_by_hand(mu: float, eps: float) -> float:
    """Dong, Roth & Su (2019), Cor. 2.13: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    from scipy import stats

    return float(
        stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    )


def test_default_route_for_gaussian_events_is_the_exact_gdp_value():
    # 4 releases at sigma = 2 and 3 at sigma = 1 (sensitivity 1): mu = sqrt(4/4 + 3) = 2
    acct = PrivacyAccountant((Gaussian(2.0, count=4), Gaussian(1.0, count=3)))
    assert acct.route() == "exact: GDP composition (Dong-Roth-Su 2019)"
    assert acct.optimal_is_exact
    for eps in (0.5, 1.0, 3.0):
        # deterministic: the formula to 1e-9 (the pessimistic PLD is off by ~1e-5)
        assert acct.delta(eps) == pytest.approx(_gdp_delta_by_hand(2.0, eps), rel=1e-9)
        assert acct.delta(eps) >= _gdp_delta_by_hand(2.0, eps)
    eps = acct.epsilon(1e-6)
    assert eps == acct.epsilon(1e-6, "gdp")  # mu rounded up by compose_gdp: never below
    assert gdp_epsilon(2.0, 1e-6) <= eps == pytest.approx(gdp_epsilon(2.0, 1e-6), rel=1e-9)
    assert _gdp_delta_by_hand(2.0, eps) <= 1e-6 < _gdp_delta_by_hand(2.0, eps * (1 - 1e-7))
    assert acct.epsilon_bounds(1e-6) == (eps, eps)
    assert eps < acct.epsilon(1e-6, "pld")


@pytest.mark.parametrize("k", [3, 4])
def test_default_route_for_one_kary_group_is_the_exact_rr_pld(k):
    # ln 3 is on no decimal lattice: before, "optimal" fell back to the pessimistic PLD
    eps, n = math.log(3), 6
    acct = PrivacyAccountant((RandomizedResponse(eps, k=k, count=n),))
    assert acct.lattice is None and acct.optimal_is_exact
    assert acct.route() == "exact: k-ary RR PLD on the lattice epsilon Z"
    for t in (0.0, 0.5, 2.0, 4.0):
        bf = brute_force_delta([eps] * n, t, k=k)
        assert acct.delta(t) == pytest.approx(bf, rel=1e-9, abs=1e-15)
        assert acct.delta(t) >= bf * (1 - 1e-12)
    lo, hi = acct.epsilon_bounds(1e-3)
    assert lo == hi == acct.epsilon(1e-3)
    assert brute_force_delta([eps] * n, hi, k=k) <= 1e-3 * (1 + 1e-9)
    assert brute_force_delta([eps] * n, hi * (1 - 1e-6), k=k) > 1e-3


def test_route_names_every_method():
    acct = PrivacyAccountant((RandomizedResponse(0.5, count=3), Laplace(2.0)))
    assert acct.route() == "not exact here: pessimistic PLD (see pld)"
    assert not acct.optimal_is_exact
    assert acct.route("pld").startswith("pessimistic PLD, step")
    assert acct.route("kov") == "Kairouz-Oh-Viswanath 2015, Thm 3.4/3.5"
    assert acct.route("best").startswith("the smallest of basic, advanced, kov")
    assert PrivacyAccountant().route() == "exact: every event has epsilon = 0"
    with pytest.raises(ParameterError, match="`method`"):
        acct.route("exact")


def test_dp_accounting_randomized_response_pld_golden_values():
    # google/differential-privacy, python/dp_accounting/dp_accounting/pld/
    # privacy_loss_distribution_test.py, RandomizedResponsePrivacyLossDistributionTest:
    # noise_parameter 0.2, 4 buckets has the true PLD {2.83321334: 0.85, -2.83321334: 0.05,
    # 0: 0.1}; noise 0.5, 2 buckets rounded up to a unit grid is {2: 0.75, -1: 0.25}.
    # Their RR reports a uniform bucket with probability p: eps = ln((1 - p + p/k) / (p/k)).
    pld = rr_pld(math.log(17), k=4)
    assert math.log(17) == pytest.approx(2.83321334, abs=1e-8)
    atoms = {
        round(float(x), 8): float(q) for x, q in zip(pld.losses, pld.probs, strict=True) if q > 0
    }
    assert atoms == pytest.approx({2.83321334: 0.85, -2.83321334: 0.05, 0.0: 0.1}, rel=1e-12)
    up = rr_pld(math.log(3), step=1.0, rounding="up")
    grid = {round(float(x)): float(q) for x, q in zip(up.losses, up.probs, strict=True) if q > 0}
    assert grid == pytest.approx({2: 0.75, -1: 0.25}, rel=1e-12)
