"""Memoization (permanent randomized response), the averaging attack, related questions."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from scipy import stats

from deniable.accounting import BudgetLedger
from deniable.accounting._keys import respondent_keys
from deniable.designs import BiasedCoin, Binary, Categorical, Kuk, Mangat, TwoCoin, Warner
from deniable.estimation import threshold_vs_bracket
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.mechanisms import InMemoryMemoStore, MemoizedRandomizer, averaging_attack


def test_replay_is_identical_and_ignores_later_truth() -> None:
    memo = MemoizedRandomizer(Warner(0.6))
    ids = np.arange(2000)
    truth = np.arange(2000) % 2
    first = memo.randomize(ids, truth, question="q", rng=1)
    again = memo.randomize(ids[::-1], 1 - truth[::-1], question="q", rng=2)
    assert np.array_equal(again[::-1], first)
    # another question is randomized independently
    memo.randomize(ids, truth, question="r", rng=1)
    assert memo.memoized("q", ids).all() and memo.memoized("r", ids).all()
    assert not memo.memoized("s", ids).any()
    memo.forget("q")
    assert not memo.memoized("q", ids).any()


def test_only_randomized_values_are_stored() -> None:
    memo = MemoizedRandomizer(Warner(0.6))
    ids = np.arange(5000)
    truth = np.ones(5000, dtype=np.uint8)
    reports = memo.randomize(ids, truth, question="q", rng=4)
    stored = memo.store.lookup("q", ids, mechanism=memo.design.key)
    assert np.array_equal(stored, reports)
    # the store is not the truth: about 40% of carriers' stored reports are "no"
    # (4-sigma band on Bin(5000, 0.4): false alarm ~6e-5)
    share_no = float(np.mean(stored == 0))
    assert abs(share_no - 0.4) < 4 * math.sqrt(0.4 * 0.6 / 5000)


def test_ledger_charges_permanent_epsilon_once() -> None:
    design = Binary(0.5)
    memo = MemoizedRandomizer(design)
    ledger = BudgetLedger(cap=1.2, n_respondents=4)
    memo.randomize([0, 1], [1, 0], question="q", rng=1, ledger=ledger)
    for r in range(20):
        memo.randomize([0, 1, 2], [1, 0, 1], question="q", rng=r, ledger=ledger)
    assert ledger.spent([0, 1, 2, 3]).tolist() == [0.5, 0.5, 0.5, 0.0]
    # a question the respondent cannot afford: refused, nothing randomized or stored
    memo2 = MemoizedRandomizer(Binary(1.0))
    with pytest.raises(PrivacyError, match="respondent 0"):
        memo2.randomize([3, 0], [1, 1], question="big", rng=1, ledger=ledger)
    assert not memo2.memoized("big", [0, 3]).any()
    assert ledger.spent([0, 3]).tolist() == [0.5, 0.0]


def test_forget_never_gives_a_fresh_report_for_free() -> None:
    """The reviewer's repro: cap 2, Warner(0.75) (eps = ln 3), 200 memoized rounds, then
    forget('q').  A fresh report after forget is a new release and must be paid for: with
    ln 3 already spent, 2 ln 3 = 2.197 > 2 is refused, so the averaging attack that fresh
    free reports would allow never gets a second report."""
    eps = math.log(3)  # Warner(0.75): ln(0.75 / 0.25)
    memo = MemoizedRandomizer(Warner(0.75))
    ledger = BudgetLedger(cap=2.0, n_respondents=1)
    gen = np.random.default_rng(0)
    first = memo.randomize([0], [1], question="q", rng=gen, ledger=ledger)
    for _ in range(199):
        assert np.array_equal(memo.randomize([0], [1], question="q", rng=gen, ledger=ledger), first)
    assert ledger.spent(0) == pytest.approx(eps, rel=1e-12)
    memo.forget("q")
    for _ in range(200):  # every attempt to re-randomize is refused; nothing is drawn
        with pytest.raises(PrivacyError, match="respondent 0"):
            memo.randomize([0], [1], question="q", rng=gen, ledger=ledger)
    assert not memo.memoized("q", [0]).any()
    assert ledger.spent(0) == pytest.approx(eps, rel=1e-12)
    # with room for it the fresh report is drawn and charged: 2 ln 3 in total
    roomy = BudgetLedger(cap=3.0, n_respondents=2)
    memo2 = MemoizedRandomizer(Warner(0.75))
    memo2.randomize([0, 1], [1, 0], question="q", rng=1, ledger=roomy)
    memo2.forget("q")
    memo2.randomize([0], [1], question="q", rng=2, ledger=roomy)
    memo2.randomize([0, 1], [1, 0], question="q", rng=3, ledger=roomy)  # 1: new draw, 0: replay
    assert roomy.spent([0, 1]).tolist() == pytest.approx([2 * eps, 2 * eps], rel=1e-12)
    assert roomy.spent(0) >= 2 * eps  # never below the exact total


def test_a_second_memo_on_the_same_ledger_pays_for_its_own_draws() -> None:
    """The charge follows the draws: a memo that has no stored report for a respondent
    draws one and pays for it, even if another memo already paid for the same question."""
    ledger = BudgetLedger(cap=10.0, n_respondents=3)
    a, b = MemoizedRandomizer(Binary(1.0)), MemoizedRandomizer(Binary(1.0))
    a.randomize([0, 1, 2], [1, 1, 0], question="q", rng=1, ledger=ledger)
    b.randomize([0, 1], [1, 1], question="q", rng=2, ledger=ledger)
    assert ledger.spent([0, 1, 2]).tolist() == [2.0, 2.0, 1.0]
    b.randomize([0, 1], [1, 1], question="q", rng=3, ledger=ledger)  # replays: free
    a.randomize([0, 1, 2], [1, 1, 0], question="q", rng=4, ledger=ledger)
    assert ledger.spent([0, 1, 2]).tolist() == [2.0, 2.0, 1.0]


def test_infinite_permanent_epsilon_refused_by_ledger() -> None:
    memo = MemoizedRandomizer(Mangat(0.5))
    ledger = BudgetLedger(cap=100.0, n_respondents=1)
    with pytest.raises(PrivacyError, match="infinite"):
        memo.randomize([0], [1], question="q", ledger=ledger)
    assert memo.longitudinal_epsilon() == math.inf


def test_instantaneous_epsilon_closed_form() -> None:
    q1, q2 = 0.2, 0.3
    memo = MemoizedRandomizer(BiasedCoin(q1), instantaneous=BiasedCoin(q2))
    # two binary symmetric channels compose to one with flip q = q1(1-q2) + q2(1-q1)
    q = q1 * (1 - q2) + q2 * (1 - q1)
    assert memo.report_epsilon == pytest.approx(math.log((1 - q) / q), rel=1e-12)
    assert memo.report_epsilon < min(math.log(4), math.log(7 / 3))
    assert memo.permanent_epsilon == pytest.approx(math.log(4), rel=1e-12)
    assert memo.longitudinal_epsilon() == memo.permanent_epsilon
    assert memo.longitudinal_epsilon(0) == 0.0
    assert memo.longitudinal_epsilon(1) == pytest.approx(memo.report_epsilon, rel=1e-12)
    assert memo.longitudinal_epsilon(3) == pytest.approx(
        min(math.log(4), 3 * memo.report_epsilon), rel=1e-12
    )
    assert memo.longitudinal_epsilon(100) == memo.permanent_epsilon
    no_inst = MemoizedRandomizer(BiasedCoin(q1))
    assert no_inst.report_epsilon == no_inst.permanent_epsilon
    assert np.array_equal(no_inst.channel, BiasedCoin(q1).channel)


def test_instantaneous_reports_follow_the_product_channel() -> None:
    """One round's report frequency equals the product channel (4-sigma: false alarm ~6e-5)."""
    memo = MemoizedRandomizer(Warner(0.8), instantaneous=TwoCoin())
    n = 40_000
    ids = np.arange(n)
    reports = memo.randomize(ids, np.ones(n, dtype=np.uint8), question="q", rng=11)
    p = 0.8 * 0.75 + 0.2 * 0.25  # P(yes | 1) through both channels, by hand
    assert memo.channel[1, 1] == pytest.approx(p, rel=1e-12)
    assert abs(reports.mean() - p) < 4 * math.sqrt(p * (1 - p) / n)
    # replays re-apply the instantaneous design: rounds differ, permanent store does not
    again = memo.randomize(ids, np.ones(n, dtype=np.uint8), question="q", rng=12)
    assert not np.array_equal(reports, again)
    # given the permanent report, the two rounds' reports are independent coin flips
    agree = float(np.mean(reports == again))
    expected = 0.75**2 + 0.25**2  # same permanent report, two TwoCoin passes agree
    assert abs(agree - expected) < 4 * math.sqrt(expected * (1 - expected) / n)


def test_categorical_memoization() -> None:
    memo = MemoizedRandomizer(Categorical.from_epsilon(1.0, k=5))
    out = memo.randomize([7, 3], [4, 0], question="bracket", rng=3)
    assert out.dtype == np.int64 and set(out.tolist()) <= set(range(5))
    assert np.array_equal(memo.randomize([3, 7], [0, 0], question="bracket", rng=9), out[::-1])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: m.randomize([0, 0], [1, 1], question="q"), DataError, "got 0 twice"),
        (lambda m: m.randomize([0.5], [1], question="q"), ParameterTypeError, "integer ids"),
        (lambda m: m.randomize([None], [1], question="q"), ParameterTypeError, "not None"),
        (lambda m: m.randomize([[1]], [1], question="q"), DataError, "1-D"),
        (lambda m: m.randomize(["a", ["b"]], [1, 1], question="q"), ParameterTypeError, "unhash"),
        (lambda m: m.randomize([[0]], [1], question="q"), DataError, "1-D"),
        (lambda m: m.randomize([0, 1], [1], question="q"), DataError, "one answer per"),
        (lambda m: m.randomize([0], [2], question="q"), DataError, "`truth`"),
        (lambda m: m.randomize([0], [1], question=""), ParameterTypeError, "`question`"),
        (lambda m: m.randomize([0], [1], question="q", ledger=3), ParameterTypeError, "ledger"),
        (lambda m: m.longitudinal_epsilon(-1), ParameterError, "`rounds`"),
    ],
)
def test_bad_input(call: object, error: type[Exception], match: str) -> None:
    memo = MemoizedRandomizer(Warner(0.7))
    with pytest.raises(error, match=match):
        call(memo)  # type: ignore[operator]
    assert not memo.memoized("q", [0, 1]).any()


def test_bad_construction() -> None:
    with pytest.raises(ParameterTypeError, match="`design`"):
        MemoizedRandomizer("warner")  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`instantaneous`"):
        MemoizedRandomizer(Warner(0.7), instantaneous=0.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="3 report values"):
        MemoizedRandomizer(Kuk(0.7, 0.3, draws=2), instantaneous=Warner(0.7))
    assert "instantaneous=Warner" in repr(
        MemoizedRandomizer(Warner(0.7), instantaneous=Warner(0.6))
    )


# --------------------------------------------------------------------------- the attack


def test_majority_closed_form_three_rounds() -> None:
    t = math.e / (1 + math.e)
    table = averaging_attack(rounds=(1, 3, 4), n=10, seed=0)
    exact = dict(zip(table.column("rounds"), table.column("exact without"), strict=True))
    assert exact[1] == pytest.approx(t, rel=1e-12)
    # majority of 3: at least 2 of 3 reports truthful
    assert exact[3] == pytest.approx(t**3 + 3 * t**2 * (1 - t), rel=1e-12)
    # 4 rounds: >= 3 truthful, or a 2-2 tie broken by a fair coin
    assert exact[4] == pytest.approx(
        t**4 + 4 * t**3 * (1 - t) + 0.5 * 6 * t**2 * (1 - t) ** 2, rel=1e-12
    )
    assert table.column("exact with") == pytest.approx([t, t, t], rel=1e-12)


def test_averaging_attack_simulation() -> None:
    """Simulated accuracies within 4 sigma of the exact ones (false alarm ~6e-5 each)."""
    n = 20_000
    table = averaging_attack(Binary(1.0), rounds=(1, 5, 25, 101), n=n, seed=2024)
    rows = table.to_dicts()
    t = math.e / (1 + math.e)
    band = 4 * math.sqrt(0.25 / n)
    for row in rows:
        assert abs(row["accuracy without"] - row["exact without"]) < band
        assert abs(row["accuracy with"] - t) < band
    # the memoized attacker never improves on one report: identical at every round count
    assert len({row["accuracy with"] for row in rows}) == 1
    assert rows[-1]["exact without"] > 0.999 and rows[-1]["accuracy without"] > 0.99
    assert "averaging attacker" in str(table)


def test_averaging_attack_asymmetric_design_and_prevalence() -> None:
    d = TwoCoin(p_truthful=0.6, p_yes=0.3)  # P1 = 0.72, P0 = 0.12
    table = averaging_attack(d, rounds=(1, 50), n=20_000, prevalence=0.3, seed=5)
    single = 0.3 * 0.72 + 0.7 * 0.88
    assert table.column("exact with") == pytest.approx([single, single], rel=1e-12)
    assert table.column("exact without")[1] > 0.999
    band = 4 * math.sqrt(0.25 / 20_000)  # 4 binomial SEs at worst: false alarm ~6e-5
    assert abs(table.column("accuracy with")[0] - single) < band


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"design": Categorical.from_epsilon(1.0, k=3)}, ParameterTypeError, "binary design"),
        ({"design": Warner(0.3)}, ParameterError, r"P\(yes \| 1\) > P\(yes \| 0\)"),
        ({"rounds": ()}, ParameterError, "`rounds`"),
        ({"rounds": (0,)}, ParameterError, "`rounds"),
        ({"n": 0}, ParameterError, "`n`"),
        ({"prevalence": 1.5}, ParameterError, "`prevalence`"),
    ],
)
def test_averaging_attack_bad_input(
    kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        averaging_attack(**kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- related questions


def test_two_brackets_one_threshold_is_the_same_design() -> None:
    """k = 2: one threshold question at eps *is* binary RR at eps, so the variances agree."""
    table = threshold_vs_bracket(0.8, [0.35, 0.65], 1000)
    assert table.column("variance ratio") == pytest.approx([1.0, 1.0], rel=1e-12)
    t = 1 / (1 + math.exp(-0.8))
    lam = (1 - t) + (2 * t - 1) * 0.35
    assert table.column("SE thresholds")[0] == pytest.approx(
        math.sqrt(lam * (1 - lam) / (1000 * (2 * t - 1) ** 2)), rel=1e-12
    )


def test_one_question_beats_three_thresholds() -> None:
    table = threshold_vs_bracket(
        1.0, [0.2, 0.3, 0.3, 0.2], 10_000, labels=["<20", "20-29", "30-39", "40+"]
    )
    assert table.column("bracket") == ["<20", "20-29", "30-39", "40+"]
    assert all(r > 3 for r in table.column("variance ratio"))


def test_threshold_variances_match_simulation() -> None:
    """Empirical SD of 400 simulated surveys vs the exact SE: the sample SD of 400 draws has
    relative SD ~ 1/sqrt(800) = 3.5%; a 15% band is > 4 sigma (false alarm < 1e-4 each)."""
    eps, n, reps = 1.5, 2000, 400
    shares = np.array([0.1, 0.4, 0.3, 0.2])
    table = threshold_vs_bracket(eps, shares.tolist(), n)
    gen = np.random.default_rng(99)
    brackets = gen.choice(4, size=(reps, n), p=shares)
    binary = Binary(eps / 3)
    t = binary.truth_probability
    f_hat = np.empty((reps, 3))
    for j in range(1, 4):
        answers = (brackets < j).astype(np.uint8).reshape(-1)
        rep = binary.randomize(answers, rng=gen).reshape(reps, n)
        f_hat[:, j - 1] = (rep.mean(axis=1) - (1 - t)) / (2 * t - 1)
    pi_a = np.column_stack(
        [f_hat[:, 0], f_hat[:, 1] - f_hat[:, 0], f_hat[:, 2] - f_hat[:, 1], 1 - f_hat[:, 2]]
    )
    cat = Categorical.from_epsilon(eps, k=4)
    rep_b = cat.randomize(brackets.reshape(-1), rng=gen).reshape(reps, n)
    lam = np.stack([(rep_b == j).mean(axis=1) for j in range(4)], axis=1)
    pi_b = (lam - (1 - cat.p_truthful) / 4) / cat.p_truthful
    for j in range(4):
        # the truth-sampling share varies too (iid respondents), as in the exact formula
        assert pi_a[:, j].std(ddof=1) == pytest.approx(table.column("SE thresholds")[j], rel=0.15)
        assert pi_b[:, j].std(ddof=1) == pytest.approx(table.column("SE one question")[j], rel=0.15)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0.0, [0.5, 0.5], 10), ParameterError, "`epsilon`"),
        ((1.0, [1.0], 10), ParameterError, "at least 2 brackets"),
        ((1.0, [0.5, 0.6], 10), ParameterError, "sum to 1"),
        ((1.0, [0.5, -0.5, 1.0], 10), ParameterError, r"`shares\[1\]`"),
        ((1.0, [0.5, 0.5], 0), ParameterError, "`n`"),
    ],
)
def test_threshold_vs_bracket_bad_input(
    args: tuple[object, ...], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        threshold_vs_bracket(*args)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`labels`"):
        threshold_vs_bracket(1.0, [0.5, 0.5], 10, labels=["a"])


def test_majority_exact_matches_binomial_tail() -> None:
    p = stats.binom.sf(5, 11, 0.7)  # P(Bin(11, 0.7) >= 6)
    d = Warner(0.7)
    table = averaging_attack(d, rounds=(11,), n=10, seed=1)
    assert table.column("exact without")[0] == pytest.approx(p, rel=1e-12)


# --------------------------------------------------------------------------- opaque keys


def test_respondents_are_opaque_keys() -> None:
    """Tokens, negative and huge ids (the old memo refused ids past 10**8 and allocated an
    array up to the largest id) are all respondents with their own permanent report."""
    memo = MemoizedRandomizer(Warner(0.75))
    who = ["tok-" + "a" * 36, -1, 99_999_999, 2**70, "0", 0]
    first = memo.randomize(who, [1, 0, 1, 0, 1, 0], question="q", rng=1)
    again = memo.randomize(who[::-1], [0] * 6, question="q", rng=2)
    assert again[::-1].tolist() == first.tolist()
    assert memo.memoized("q", [*who, "other"]).tolist() == [True] * 6 + [False]
    stored = memo.store.lookup("q", respondent_keys(who, unique=True), mechanism=memo.design.key)
    assert stored.tolist() == first.tolist()


def test_a_memo_on_a_ledger_of_ids_stores_nothing_for_a_foreign_key() -> None:
    memo = MemoizedRandomizer(Warner(0.75))
    ledger = BudgetLedger(cap=2.0, n_respondents=2)
    with pytest.raises(ParameterTypeError, match=r"integer ids in 0\.\.1"):
        memo.randomize([0, "tok"], [1, 1], question="q", rng=1, ledger=ledger)
    assert not memo.memoized("q", [0, "tok"]).any()
    assert ledger.spent([0, 1]).tolist() == [0.0, 0.0]


def test_a_memo_uses_the_store_it_is_given_and_pickles_it() -> None:
    store = InMemoryMemoStore()
    memo = MemoizedRandomizer(Warner(0.75), store=store)
    assert memo.store is store
    first = memo.randomize(["a", "b"], [1, 0], question="q", rng=1)
    twin = MemoizedRandomizer(Warner(0.75), store=store)  # a second memo on the same store
    assert twin.randomize(["b", "a"], [1, 1], question="q", rng=9).tolist() == first[::-1].tolist()
    copy = pickle.loads(pickle.dumps(memo))
    assert copy.store is not store
    copy.forget("q")
    assert memo.memoized("q", ["a", "b"]).all()
