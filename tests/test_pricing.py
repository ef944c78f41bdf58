"""Ledger pricing: pure functions of a respondent's history, checked against closed forms
and exact rational arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from deniable.accounting import (
    BudgetLedger,
    Composition,
    History,
    PureEpsilonComposition,
    QuestionRecord,
    ZCDPComposition,
    basic_composition,
    pure_to_zcdp,
    zcdp_epsilon,
)
from deniable.accounting import SpendRequest as Request
from deniable.accounting._exact_sum import add_up
from deniable.accounting._pricing import (
    admitted,
    plan_spend,
    question_costs,
    remaining_budget,
    spend_limit,
)
from deniable.exceptions import ParameterError, PrivacyError

T, F = True, False


def history(
    spent: list[float], charged: list[bool], record: QuestionRecord | None = None
) -> History:
    return History(np.array(spent, dtype=np.float64), np.array(charged, dtype=np.bool_), record)


@pytest.mark.parametrize(
    ("charged", "memoized", "fresh", "expect"),
    [
        # never charged: the full price, memoized or not
        ([F, F], F, None, [0.5, 0.5]),
        ([F, F], T, None, [0.5, 0.5]),
        # charged before, not memoized: a new release, the full price again
        ([T, T], F, None, [0.5, 0.5]),
        # charged before, memoized: a replay is free...
        ([T, F], T, None, [0.0, 0.5]),
        # ... unless the report is drawn anew (fresh): a new release
        ([T, T, F], T, [T, F, T], [0.5, 0.0, 0.5]),
        # fresh has no effect on a question that is not memoized
        ([T, F], F, [F, F], [0.5, 0.5]),
    ],
)
def test_question_costs_by_history(
    charged: list[bool], memoized: bool, fresh: list[bool] | None, expect: list[float]
) -> None:
    mask = None if fresh is None else np.array(fresh)
    out = question_costs(0.5, np.array(charged), memoized=memoized, fresh=mask)
    assert out.dtype == np.float64 and out.tolist() == expect


def test_admission_is_strict_and_rounds_upward() -> None:
    # three doubles 0.1 sum to more than the double 0.3: the third is refused at cap 0.3
    assert Fraction(0.1) * 3 > Fraction(0.3)
    two = float(add_up(0.1, 0.1))
    assert admitted(np.array([two]), np.array([0.1]), 0.3).tolist() == [False]
    assert admitted(np.array([two]), np.array([0.1]), 0.3 + 1e-12).tolist() == [True]
    # exactly the cap is admitted, one double past it is not
    assert admitted(
        np.array([0.5, 0.5]), np.array([0.5, math.nextafter(0.5, 1)]), 1.0
    ).tolist() == [
        True,
        False,
    ]
    # a zero cost is admitted even past the cap (a free replay); infinity never is
    assert admitted(np.array([2.0, 0.0]), np.array([0.0, math.inf]), 1.0).tolist() == [True, False]


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0, 1e6, allow_nan=False),
    st.floats(0, 1e6, allow_nan=False),
)
def test_add_up_is_never_below_the_exact_sum_and_within_one_ulp(a: float, b: float) -> None:
    s = float(add_up(a, b))
    exact = Fraction(a) + Fraction(b)
    assert Fraction(s) >= exact
    nearest = a + b  # round to nearest: at most one step below the upward sum
    assert s in (nearest, math.nextafter(nearest, math.inf))
    if Fraction(nearest) >= exact:
        assert s == nearest  # never moved up without need


def test_add_up_moves_up_exactly_when_rounding_fell_below() -> None:
    # 0.1 + 0.2 rounds to nearest *above* the exact sum: no move
    assert float(add_up(0.1, 0.2)) == 0.1 + 0.2
    assert Fraction(0.1 + 0.2) > Fraction(0.1) + Fraction(0.2)
    # 1 + 2**-53 rounds to nearest 1.0, below the exact sum: moved up one double
    assert 1.0 + 2.0**-53 == 1.0
    assert float(add_up(1.0, 2.0**-53)) == math.nextafter(1.0, 2.0)


@pytest.mark.parametrize(
    ("spent", "cap", "expect"),
    [(0.2, 1.0, 0.8), (1.5, 1.0, 0.0), (0.0, 0.3, 0.3), (1 / 3, 1.0, 1 - 1 / 3)],
)
def test_remaining_is_the_largest_admitted_charge(spent: float, cap: float, expect: float) -> None:
    left = remaining_budget(np.array([spent]), cap)
    assert left[0] == pytest.approx(expect, abs=1e-15)
    # exactly the remaining budget is admitted, one double more is not
    assert admitted(np.array([spent]), left, cap).all() or left[0] == 0
    if left[0] > 0:
        up = np.nextafter(left, math.inf)
        assert Fraction(spent) + Fraction(float(left[0])) <= Fraction(cap)
        assert not admitted(np.array([spent]), up, cap).all()


def test_spend_limit() -> None:
    assert spend_limit(1.0, 0.0) == 1.0
    assert spend_limit(2.0, 1e-9) == 2.0 * (1 + 1e-9)


def test_plan_refuses_all_or_nothing() -> None:
    plan = plan_spend(Request("q", 0.5, False, 1.0), history([0.25, 0.75, 1.0], [F, F, F]))
    assert plan.refused and plan.admitted.tolist() == [True, False, False]
    assert not plan.write.any() and plan.new_spent.size == 0 and plan.record is None
    assert plan.cost.tolist() == [0.5] * 3 and plan.spent.tolist() == [0.25, 0.75, 1.0]


def test_plan_writes_upward_totals_and_counts_charges() -> None:
    record = QuestionRecord("m", 0.5, True, 2)
    plan = plan_spend(Request("m", 0.5, True, 1.0), history([0.5, 0.1, 0.0], [T, F, F], record))
    assert not plan.refused and plan.write.all()
    assert plan.cost.tolist() == [0.0, 0.5, 0.5]
    assert plan.new_spent.tolist() == [0.5, float(add_up(0.1, 0.5)), 0.5]
    assert plan.record == QuestionRecord("m", 0.5, True, 4)  # the replay is not a charge
    # a free question (epsilon 0) counts everyone asked
    free = plan_spend(Request("z", 0.0, False, 1.0), history([1.0, 0.0], [F, F]))
    assert free.record == QuestionRecord("z", 0.0, False, 2)
    assert free.new_spent.tolist() == [1.0, 0.0]


def test_plan_partial_charges_only_who_can_pay() -> None:
    plan = plan_spend(
        Request("q", 0.5, False, 1.0, partial=True), history([0.75, 0.25, 0.5], [F, F, F])
    )
    assert not plan.refused
    assert plan.write.tolist() == [False, True, True]
    assert plan.new_spent.tolist() == [0.75, 1.0]
    assert plan.record == QuestionRecord("q", 0.5, False, 2)


def test_plan_refuses_a_second_mechanism_under_one_name() -> None:
    record = QuestionRecord("q", 0.5, False, 1)
    for r in (Request("q", 0.25, False, 1.0), Request("q", 0.5, True, 1.0)):
        with pytest.raises(ParameterError, match="a question name stands for one mechanism"):
            plan_spend(r, history([0.0], [F], record))


def test_pure_epsilon_is_the_default_composition() -> None:
    rule = PureEpsilonComposition()
    assert isinstance(rule, Composition)
    assert rule.unit == "epsilon" and rule.charge(0.7) == 0.7
    assert Request("q", 0.5, False, 1.0).composition == rule
    assert rule.total([0.1], [0.2]).tolist() == add_up([0.1], [0.2]).tolist()


class _Doubling:
    """A stand-in rule (not a real composition theorem) to show that pricing follows the
    rule it is given: a release costs twice its epsilon."""

    unit = "units"

    def charge(self, epsilon: float) -> float:
        return 2 * epsilon

    def total(self, spent: object, cost: object) -> np.ndarray:  # type: ignore[type-arg]
        return add_up(spent, cost)  # type: ignore[arg-type]


def test_pricing_follows_the_composition_rule() -> None:
    rule = _Doubling()
    assert isinstance(rule, Composition)
    plan = plan_spend(
        Request("q", 0.25, False, 1.0, composition=rule), history([0.0, 0.75], [F, F])
    )
    assert plan.refused and plan.cost.tolist() == [0.5, 0.5]
    assert plan.admitted.tolist() == [True, False]


# --------------------------------------------------------------------------- zCDP


@pytest.mark.parametrize("eps", [1e-300, 1e-3, 0.1, 0.5, 1.0, math.log(3), 5.0, 40.0])
def test_zcdp_charge_is_the_sharp_conversion(eps: float) -> None:
    rho = ZCDPComposition().charge(eps)
    assert rho == pure_to_zcdp(eps).rho
    # never below the exact eps * tanh(eps / 2), never above the classic eps^2 / 2 bound
    assert rho >= eps * math.tanh(eps / 2) * (1 - 1e-15)
    assert rho <= pure_to_zcdp(eps, method="classic").rho * (1 + 1e-15)


def test_zcdp_charge_of_zero_and_infinity() -> None:
    rule = ZCDPComposition()
    assert rule.charge(0.0) == 0.0 and rule.charge(math.inf) == math.inf
    assert isinstance(rule, Composition) and rule.unit == "rho"


def test_a_zcdp_ledger_caps_rho_and_states_its_guarantee() -> None:
    """100 questions of epsilon 0.1 under a cap of rho = 0.5: basic composition would state
    epsilon 10; the zCDP total converts to (5.22, 1e-6)-DP by the package's conversion, below
    the classic rho + 2 sqrt(rho ln(1/delta)) = 5.76 (Bun & Steinke 2016, Prop. 1.3)."""
    ledger = BudgetLedger(cap=0.5, composition=ZCDPComposition())
    rho = pure_to_zcdp(0.1).rho
    fits = int(0.5 // rho)
    assert fits == 100
    for j in range(fits):
        ledger.spend(["r"], f"q{j}", 0.1)
    with pytest.raises(PrivacyError, match=r"question 'q100' costs rho 0\.004995"):
        ledger.spend(["r"], "q100", 0.1)
    spent = ledger.spent("r")
    assert Fraction(spent) >= fits * Fraction(rho) and spent <= 0.5
    classic = 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))
    assert zcdp_epsilon(spent, 1e-6) <= zcdp_epsilon(0.5, 1e-6) <= classic
    # Canonne, Kamath & Steinke 2020, Prop. 12, minimised over alpha by scipy (a second route):
    # eps = min_a rho a + (ln(1/delta) + a ln(1 - 1/a) - ln(a - 1)) / (a - 1); ours is that
    # minimum rounded up by the accounting margin (~1.5e-11 relative), never below it
    cks = optimize.minimize_scalar(
        lambda a: 0.5 * a + (math.log(1e6) + a * math.log1p(-1 / a) - math.log(a - 1)) / (a - 1),
        bounds=(1.0 + 1e-6, 100.0),
        method="bounded",
        options={"xatol": 1e-12},
    ).fun
    assert cks <= zcdp_epsilon(0.5, 1e-6) <= cks * (1 + 1e-9)
    assert (
        zcdp_epsilon(0.5, 1e-6) < basic_composition([0.1] * 100) == pytest.approx(10.0, rel=1e-12)
    )
    # memoized replays stay free under any rule
    ledger2 = BudgetLedger(cap=1.0, composition=ZCDPComposition())
    for _ in range(5):
        ledger2.spend(["r"], "panel", 1.0, memoized=True)
    assert ledger2.spent("r") == pure_to_zcdp(1.0).rho
    assert ledger2.remaining("r") == pytest.approx(1.0 - pure_to_zcdp(1.0).rho, rel=1e-12)
