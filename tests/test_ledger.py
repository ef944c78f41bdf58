"""Per-respondent budget ledger and the survey service's budget filter."""

from __future__ import annotations

import math
import pickle
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.accounting import (
    BudgetFilter,
    BudgetLedger,
    InMemoryLedgerStore,
    PureEpsilonComposition,
    QuestionRecord,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError


def state(ledger: BudgetLedger) -> tuple[Any, ...]:
    """Everything observable about a ledger, to check that refusals change nothing."""
    n = ledger.n_respondents
    ids = np.arange(n)
    return (
        n,
        ledger.spent(ids).tolist() if n else [],
        dict(ledger.questions),
        {q: ledger.charged(q).tolist() for q in ledger.questions},
    )


def test_spend_and_remaining_closed_form() -> None:
    ledger = BudgetLedger(cap=2.0, n_respondents=4)
    ledger.spend([0, 1, 2, 3], "q1", 0.5)
    ledger.spend([0, 2], "q2", 0.75)  # 1 and 3 skip q2: cost nothing
    ledger.spend([3], "q3", 1.5)
    assert ledger.spent([0, 1, 2, 3]).tolist() == [1.25, 0.5, 1.25, 2.0]
    assert ledger.remaining([0, 1, 2, 3]).tolist() == [0.75, 1.5, 0.75, 0.0]
    assert ledger.remaining(1) == 1.5 and isinstance(ledger.remaining(1), float)
    assert ledger.questions["q2"] == QuestionRecord("q2", 0.75, False, 2)
    assert ledger.to_dict()["exhausted"] == 1


def test_remaining_is_the_largest_admissible_epsilon() -> None:
    ledger = BudgetLedger(cap=1.0, n_respondents=2, tolerance=0.0)
    ledger.spend([0, 1], "a", 0.3)
    left = ledger.remaining(0)
    assert left == pytest.approx(0.7, abs=1e-15)
    with pytest.raises(PrivacyError):
        ledger.spend([0], "b", left + 1e-9)
    ledger.spend([0], "b", left)  # exactly the remaining budget is admitted
    assert ledger.remaining(0) == 0.0
    with pytest.raises(PrivacyError):
        ledger.spend([0], "c", 1e-12)
    ledger.spend([0], "free", 0.0)  # an epsilon-0 question costs nothing and is always admitted


def test_refusal_names_everything_and_changes_nothing() -> None:
    ledger = BudgetLedger(cap=1.0, n_respondents=5)
    ledger.spend([0, 1, 2, 3, 4], "warm-up", 0.25)
    ledger.spend([3, 4], "extra", 0.5)
    before = state(ledger)
    with pytest.raises(PrivacyError) as err:
        ledger.spend([0, 1, 2, 3, 4], "sensitive", 0.5)
    msg = str(err.value)
    assert "'sensitive'" in msg and "0.5" in msg and "respondent 3" in msg
    assert "0.25 left" in msg and "2 of 5" in msg and "nothing was spent" in msg
    assert state(ledger) == before


def test_infinite_epsilon_is_refused_under_any_finite_cap() -> None:
    ledger = BudgetLedger(cap=1e300, n_respondents=3)
    before = state(ledger)
    with pytest.raises(PrivacyError, match="infinite epsilon"):
        ledger.spend([0, 1, 2], "mangat", math.inf)
    assert state(ledger) == before
    assert not BudgetFilter(ledger).admit([0, 1, 2], math.inf).any()
    with pytest.raises(ParameterError, match="cap"):
        BudgetLedger(cap=math.inf)


def test_memoized_repeats_cost_nothing_non_memoized_repeats_cost_again() -> None:
    # epsilons exact in binary (0.5 + 0.25 + 0.25 = 1 exactly): the cap is reached, not passed
    ledger = BudgetLedger(cap=1.0, n_respondents=3)
    ledger.spend([0, 1], "memo", 0.5, memoized=True)
    ledger.spend([0, 1, 2], "memo", 0.5, memoized=True)  # 0 and 1 replay for free
    assert ledger.spent([0, 1, 2]).tolist() == [0.5, 0.5, 0.5]
    assert ledger.costs([0, 1, 2], "memo", 0.5, memoized=True).tolist() == [0.0, 0.0, 0.0]
    ledger.spend([0], "fresh", 0.25)
    ledger.spend([0], "fresh", 0.25)  # asked again without memoization: pays again
    assert ledger.spent(0) == 1.0
    assert ledger.questions["fresh"].charges == 2
    assert ledger.questions["memo"].charges == 3
    # a fully spent respondent can still replay a memoized answer
    ledger.spend([0], "memo", 0.5, memoized=True)
    # ... but not have it drawn anew: a fresh report is a new release and pays again
    before = state(ledger)
    assert ledger.costs([0, 2], "memo", 0.5, memoized=True, fresh=[True, False]).tolist() == [
        0.5,
        0.0,
    ]
    assert ledger.can_afford([0, 2], "memo", 0.5, memoized=True, fresh=True).tolist() == [
        False,
        True,
    ]
    with pytest.raises(PrivacyError, match="respondent 0"):
        ledger.spend([0], "memo", 0.5, memoized=True, fresh=True)
    assert state(ledger) == before
    ledger.spend([2], "memo", 0.5, memoized=True, fresh=np.array([True]))
    assert ledger.spent(2) == 1.0 and ledger.questions["memo"].charges == 4
    with pytest.raises(DataError, match="`fresh` must be"):
        ledger.spend([1, 2], "memo", 0.5, memoized=True, fresh=[True])


def test_question_name_fixes_its_mechanism() -> None:
    ledger = BudgetLedger(cap=5.0, n_respondents=2)
    ledger.spend([0], "q", 0.5, memoized=True)
    before = state(ledger)
    with pytest.raises(ParameterError, match=r"first charged with epsilon 0\.5"):
        ledger.spend([1], "q", 0.7, memoized=True)
    with pytest.raises(ParameterError, match="memoized=True"):
        ledger.spend([1], "q", 0.5)
    assert state(ledger) == before


def test_default_is_strict_and_never_admits_a_spend_past_the_cap() -> None:
    """The reviewer's repro: cap 1, spend 0.5 then 0.5000000009 (sum 1.0000000009 > 1)."""
    ledger = BudgetLedger(cap=1.0, n_respondents=1)
    assert ledger.tolerance == 0.0
    ledger.spend([0], "a", 0.5)
    with pytest.raises(PrivacyError, match="nothing was spent"):
        ledger.spend([0], "b", 0.5000000009)
    assert ledger.spent(0) == 0.5
    # exactly the cap is admitted; one double more is not
    ledger.spend([0], "c", 0.5)
    assert ledger.spent(0) == 1.0 and ledger.remaining(0) == 0.0
    with pytest.raises(PrivacyError):
        BudgetLedger(cap=1.0, n_respondents=1).spend([0], "d", math.nextafter(1.0, 2.0))


def test_decimal_budgets_need_a_margin() -> None:
    """Three doubles 0.1 sum to more than the double 0.3 (exactly, not only after rounding),
    so the third question is refused under a cap of 0.3; a cap with a margin admits it."""
    assert Fraction(0.1) * 3 > Fraction(0.3)
    tight = BudgetLedger(cap=0.3, n_respondents=1)
    tight.spend([0], "a", 0.1)
    tight.spend([0], "b", 0.1)
    with pytest.raises(PrivacyError, match=r"0\.09999999999999998 left.*margin|margin.*0\.0999"):
        tight.spend([0], "c", 0.1)
    margin = BudgetLedger(cap=0.3 + 1e-12, n_respondents=1)
    for name in "abc":
        margin.spend([0], name, 0.1)
    assert Fraction(margin.spent(0)) >= 3 * Fraction(0.1)
    # an explicit relative tolerance is still available, and is tiny
    loose = BudgetLedger(cap=0.3, n_respondents=1, tolerance=1e-9)
    for name in "abc":
        loose.spend([0], name, 0.1)
    with pytest.raises(PrivacyError):
        BudgetLedger(cap=1.0, n_respondents=1, tolerance=1e-9).spend([0], "big", 1.0 + 2e-9)


def test_remaining_can_be_spent_exactly() -> None:
    """``remaining`` is rounded down: a question of exactly that epsilon is admitted."""
    for cap, first in ((1.0, 0.8), (0.3, 0.1), (2.0, 1.1), (1.0, 1 / 3)):
        ledger = BudgetLedger(cap=cap, n_respondents=1)
        ledger.spend([0], "first", first)
        left = ledger.remaining(0)
        assert Fraction(first) + Fraction(left) <= Fraction(cap)
        ledger.spend([0], "rest", left)
        assert ledger.spent(0) <= cap


@pytest.mark.parametrize("seed", range(5))
def test_spent_is_never_below_the_exact_sum(seed: int) -> None:
    """Random decimal epsilons charged to 200 respondents, 40 questions each: the stored total
    is at least the exact rational sum of the doubles charged, and within a few ulps of it.
    (Plain float accumulation falls below the exact sum for about half of the respondents.)"""
    gen = np.random.default_rng(seed)
    n = 200
    ledger = BudgetLedger(cap=1e6, n_respondents=n)
    exact = [Fraction(0)] * n
    for j in range(40):
        eps = float(np.round(gen.uniform(0.001, 2.0), int(gen.integers(1, 6))))
        ids = np.flatnonzero(gen.random(n) < 0.7)
        ledger.spend(ids, f"q{j}", eps)
        for i in ids.tolist():
            exact[i] += Fraction(eps)
    spent = ledger.spent(np.arange(n))
    for i in range(n):
        assert Fraction(float(spent[i])) >= exact[i]
        assert float(spent[i]) - float(exact[i]) <= 40 * math.ulp(float(spent[i]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(1e-6, 10.0, allow_nan=False), min_size=1, max_size=30))
def test_property_upward_sum_bounds_the_exact_sum(epsilons: list[float]) -> None:
    ledger = BudgetLedger(cap=1e9, n_respondents=1)
    total = Fraction(0)
    for j, e in enumerate(epsilons):
        ledger.spend([0], f"q{j}", e)
        total += Fraction(e)
        assert Fraction(ledger.spent(0)) >= total


def test_bulk_spend_of_a_million_respondents() -> None:
    # its speed is measured in benchmarks/bench_stores.py, not here
    n = 1_000_000
    ledger = BudgetLedger(cap=3.0, n_respondents=n)
    ids = np.arange(n)
    for j in range(5):
        ledger.spend(ids[j % 2 :: 2], f"q{j}", 0.5)
    spent = ledger.spent(ids)
    assert spent[0] == 1.5 and spent[1] == 1.0
    mask = BudgetFilter(ledger).admit(ids, 1.75)
    assert mask.sum() == n // 2 and not mask[0] and mask[1]


def test_filter_admit_then_commit() -> None:
    ledger = BudgetLedger(cap=1.0, n_respondents=4)
    ledger.spend([2], "a", 0.9)
    gate = BudgetFilter(ledger)
    assert gate.ledger is ledger
    mask = gate.admit([0, 1, 2, 3], 0.5)
    assert mask.tolist() == [True, True, False, True]
    assert ledger.spent([0, 1, 2, 3]).tolist() == [0.0, 0.0, 0.9, 0.0]  # admit spends nothing
    assert gate.commit([0, 1, 2, 3], 0.5, question="b", mask=mask) == [0, 1, 3]
    assert ledger.spent([0, 1, 2, 3]).tolist() == [0.5, 0.5, 0.9, 0.5]
    before = state(ledger)
    with pytest.raises(PrivacyError, match="respondent 2"):
        gate.commit([0, 2], 0.2, question="c")  # 2 was not admitted: nobody is charged
    assert state(ledger) == before
    # a memoized question replays for free, so it is admitted even when the budget is short
    gate.commit([0], 0.5, question="m", memoized=True)
    assert gate.admit([0, 1], 0.5, question="m", memoized=True).tolist() == [True, True]
    assert gate.admit([0, 1], 0.6, question="new").tolist() == [False, False]


def test_grow_and_copy() -> None:
    ledger = BudgetLedger(cap=1.0, n_respondents=2)
    ledger.spend([0, 1], "q", 0.5, memoized=True)
    assert list(ledger.grow(4)) == [2, 3]
    assert ledger.remaining([0, 1, 2, 3]).tolist() == [0.5, 0.5, 1.0, 1.0]
    assert ledger.charged("q").tolist() == [True, True, False, False]
    assert ledger.charged("never").tolist() == [False] * 4
    snap = ledger.copy()
    ledger.spend([2], "q", 0.5, memoized=True)
    assert snap.spent(2) == 0.0 and ledger.spent(2) == 0.5
    assert len(ledger) == 4 and list(ledger) == [0.5, 0.5, 0.5, 0.0]
    with pytest.raises(ParameterError, match="n_respondents"):
        ledger.grow(3)
    assert "BudgetLedger(cap=1.0, n_respondents=4" in repr(ledger)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"cap": 0}, ParameterError, r"`cap` must be in \(0, inf\)"),
        ({"cap": -1.0}, ParameterError, "`cap`"),
        ({"cap": float("nan")}, ParameterError, "`cap` must be a number"),
        ({"cap": "1"}, ParameterTypeError, "`cap` must be a real number"),
        ({"cap": 1.0, "n_respondents": -1}, ParameterError, "`n_respondents`"),
        ({"cap": 1.0, "n_respondents": 1.5}, ParameterTypeError, "`n_respondents`"),
        ({"cap": 1.0, "tolerance": 0.1}, ParameterError, "`tolerance`"),
        ({"cap": 1.0, "tolerance": -1e-9}, ParameterError, "`tolerance`"),
    ],
)
def test_bad_construction(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        BudgetLedger(**kwargs)


@pytest.mark.parametrize(
    ("respondents", "question", "epsilon", "memoized", "error", "match"),
    [
        ([0, 5], "q", 0.1, False, DataError, "ids in 0..3, got 5"),
        ([-1], "q", 0.1, False, DataError, "got -1"),
        ([0.0, 1.0], "q", 0.1, False, ParameterTypeError, "integer ids"),
        ([True, False], "q", 0.1, False, ParameterTypeError, "integer ids"),
        ([[0, 1]], "q", 0.1, False, DataError, "1-D"),
        ([1, 1], "q", 0.1, False, DataError, "got 1 twice"),
        ([0], "", 0.1, False, ParameterTypeError, "`question`"),
        ([0], 3, 0.1, False, ParameterTypeError, "`question`"),
        ([0], "q", -0.1, False, ParameterError, r"`epsilon` must be in \[0, inf\]"),
        ([0], "q", float("nan"), False, ParameterError, "`epsilon`"),
        ([0], "q", "0.1", False, ParameterTypeError, "`epsilon`"),
        ([0], "q", 0.1, "yes", ParameterTypeError, "`memoized` must be True or False"),
    ],
)
def test_bad_spend_raises_and_changes_nothing(
    respondents: Any,
    question: Any,
    epsilon: Any,
    memoized: Any,
    error: type[Exception],
    match: str,
) -> None:
    ledger = BudgetLedger(cap=1.0, n_respondents=4)
    ledger.spend([0, 1], "warm-up", 0.2)
    before = state(ledger)
    with pytest.raises(error, match=match):
        ledger.spend(respondents, question, epsilon, memoized=memoized)
    assert state(ledger) == before


def test_filter_bad_input() -> None:
    with pytest.raises(ParameterTypeError, match="`ledger` must be a BudgetLedger"):
        BudgetFilter("ledger")  # type: ignore[arg-type]
    ledger = BudgetLedger(cap=1.0, n_respondents=3)
    gate = BudgetFilter(ledger)
    with pytest.raises(ParameterError, match="`question_epsilon`"):
        gate.admit([0], -1.0)
    with pytest.raises(DataError, match="`mask` must be a boolean array of shape"):
        gate.commit([0, 1], 0.1, question="q", mask=[1, 0])
    with pytest.raises(DataError, match="`mask`"):
        gate.commit([0, 1], 0.1, question="q", mask=np.array([True]))
    assert ledger.spent([0, 1, 2]).tolist() == [0.0, 0.0, 0.0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True),
            st.sampled_from(["a", "b", "c", "d"]),
            st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 1.0, math.inf]),
        ),
        max_size=25,
    )
)
def test_property_never_exceeds_cap_and_counts_exactly(
    ops: list[tuple[list[int], str, float]],
) -> None:
    """Any sequence of spends (some refused): the ledger is at least the exact sum of the
    admitted costs, never above the cap; a spend whose exact total passes the cap is refused,
    and one that stays below the cap by more than rounding is admitted."""
    cap = 1.0
    ledger = BudgetLedger(cap=cap, n_respondents=6)
    exact = [Fraction(0)] * 6
    eps_of: dict[str, float] = {}
    for ids, q, eps in ops:
        # memoized questions "a", "b"; fresh "c", "d"; a name keeps its first epsilon
        memo = q in "ab"
        eps = eps_of.setdefault(q, eps)
        charged = ledger.charged(q)
        cost = [0.0 if memo and charged[i] else eps for i in ids]
        if any(c == math.inf for c in cost):
            would = None
        else:
            would = [exact[i] + Fraction(c) for i, c in zip(ids, cost, strict=True)]
        over = would is None or any(w > cap for w, c in zip(would, cost, strict=True) if c > 0)
        clear = would is not None and all(
            w <= Fraction(cap) * (1 - Fraction(1, 10**12)) or c == 0
            for w, c in zip(would, cost, strict=True)
        )
        before = state(ledger)
        try:
            ledger.spend(ids, q, eps, memoized=memo)
        except PrivacyError:
            assert not clear
            assert state(ledger) == before
        else:
            assert not over and would is not None
            for i, w in zip(ids, would, strict=True):
                exact[i] = w
        spent = ledger.spent(np.arange(6))
        assert all(Fraction(float(spent[i])) >= exact[i] for i in range(6))
        assert np.all(spent <= cap)


# --------------------------------------------------------------------------- opaque keys


def test_a_ledger_of_opaque_keys() -> None:
    """Without ``n_respondents`` respondents are keys of any kind: tokens, huge ids."""
    ledger = BudgetLedger(cap=1.0)
    assert ledger.n_respondents == 0 and len(ledger) == 0
    ledger.spend(["tok-b", 99_999_999, "tok-a"], "smokes", 0.5)
    ledger.spend(np.array(["tok-a"]), "drinks", 0.25)
    assert ledger.spent(["tok-a", "tok-b", 99_999_999, "never"]).tolist() == [0.75, 0.5, 0.5, 0]
    assert ledger.remaining("tok-a") == 0.25 and isinstance(ledger.remaining("tok-a"), float)
    assert ledger.n_respondents == 3 and list(ledger) == [0.5, 0.5, 0.75]  # first charged
    assert ledger.charged("drinks").tolist() == [False, False, True]
    assert ledger.charged("drinks", ["tok-a", "x"]).tolist() == [True, False]
    d = ledger.to_dict()
    assert (d["n_respondents"], d["spent_min"], d["spent_max"]) == (3, 0.5, 0.75)
    assert d["spent_mean"] == pytest.approx(1.75 / 3, rel=1e-12)
    with pytest.raises(PrivacyError, match=r"respondent 'tok-a' has only 0\.25 left"):
        ledger.spend(["tok-b", "tok-a"], "drugs", 0.5)
    with pytest.raises(ParameterError, match=r"`grow` needs a ledger of ids 0\.\.n-1"):
        ledger.grow(10)
    assert "n_respondents=None" in repr(ledger) and "InMemoryLedgerStore" in repr(ledger)
    snap = ledger.copy()
    ledger.spend(["new"], "smokes", 0.5)
    assert snap.n_respondents == 3 and ledger.n_respondents == 4
    assert pickle.loads(pickle.dumps(ledger)).to_dict() == ledger.to_dict()
    gate = BudgetFilter(ledger)
    assert gate.admit(["tok-a", "tok-b"], 0.5).tolist() == [False, True]
    assert gate.commit(["tok-a", "tok-b"], 0.5, question="q", mask=[False, True]) == ["tok-b"]


def test_one_id_is_one_key_however_it_is_passed() -> None:
    ledger = BudgetLedger(cap=1.0)
    ledger.spend([np.int32(7)], "a", 0.25)
    ledger.spend(np.array([7], dtype=np.uint64), "b", 0.25)
    ledger.spend(7, "c", 0.25)
    assert ledger.spent(7) == 0.75 and ledger.n_respondents == 1
    assert ledger.spent("7") == 0.0  # a string is another respondent
    with pytest.raises(DataError, match="got 7 twice"):
        ledger.spend([7, np.int64(7)], "d", 0.1)


def test_a_ledger_of_ids_refuses_other_keys() -> None:
    ledger = BudgetLedger(cap=1.0, n_respondents=3)
    with pytest.raises(ParameterTypeError, match=r"integer ids in 0\.\.2 .*got 'tok'"):
        ledger.spend(["tok"], "q", 0.5)
    with pytest.raises(DataError, match=r"ids in 0\.\.2, got 1180591620717411303424"):
        ledger.spend([2**70], "q", 0.5)
    with pytest.raises(ParameterTypeError, match="respondent keys"):
        ledger.spend([None], "q", 0.5)
    assert ledger.questions == {}


def test_a_ledger_shares_its_store() -> None:
    """Two ledgers over one store (two workers of a service) spend from one budget."""
    store = InMemoryLedgerStore()
    a, b = BudgetLedger(cap=1.0, store=store), BudgetLedger(cap=1.0, store=store)
    a.spend(["x"], "q1", 0.75)
    with pytest.raises(PrivacyError, match=r"'x' has only 0\.25 left"):
        b.spend(["x"], "q2", 0.5)
    assert b.store is store and b.spent("x") == 0.75
    assert isinstance(b.composition, PureEpsilonComposition)


def test_a_question_nobody_paid_for_binds_no_epsilon() -> None:
    # a partial spend that admits no one still writes the question's record (0 charges);
    # it released nothing, so it must not fix the question's epsilon (a survey's next
    # version may change such a question: it has no report)
    ledger = BudgetLedger(cap=1.0)
    ledger.spend(["a"], "warm", 1.0)
    assert BudgetFilter(ledger).commit_admitted(["a"], 0.5, question="q") == []
    assert ledger.questions["q"].charges == 0
    ledger.spend(["b"], "q", 0.25)
    assert (ledger.questions["q"].epsilon, ledger.questions["q"].charges) == (0.25, 1)
    with pytest.raises(ParameterError, match=r"first charged with epsilon 0\.25"):
        ledger.spend(["c"], "q", 0.5)  # a record with a charge binds
