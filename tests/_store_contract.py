"""The store contract: tests written once, run against every LedgerStore and MemoStore.

tests/test_stores.py runs them against the in-memory stores; a new store (the survey
service's SQL stores) runs the same tests by subclassing the two classes below in its own
test module and giving the ``make_store`` fixture, a factory of *empty* stores::

    import pytest
    from _store_contract import LedgerStoreContract, MemoStoreContract

    class TestSqliteLedgerStore(LedgerStoreContract):
        @pytest.fixture
        def make_store(self, tmp_path):
            return lambda: SqlLedgerStore(f"sqlite:///{tmp_path}/ledger.db")

(The classes are not named ``Test...`` so that they are collected only through a subclass.)
Every test goes through the protocol only (``spend``, ``history``, ``questions``,
``respondents``, ``summary``, ``snapshot``; ``get_or_create``, ``lookup``, ``forget``,
``snapshot``) and through the :class:`BudgetLedger` and :class:`MemoizedRandomizer` facades
that use them.  The concurrency tests start their threads behind a barrier with a short
thread switch interval (see tests/test_concurrency.py for the design and its rates); each
asserts its invariant in every trial, so they have no false alarms.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Iterator
from fractions import Fraction
from re import escape as re_escape
from typing import Any

import numpy as np
import pytest

from deniable.accounting import (
    BudgetFilter,
    BudgetLedger,
    Composition,
    History,
    LedgerStore,
    PureEpsilonComposition,
    SpendPlan,
    SpendRequest,
    ZCDPComposition,
)
from deniable.accounting._keys import respondent_keys
from deniable.designs import BiasedCoin, Binary, Categorical, Warner
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.mechanisms import MemoizedRandomizer, MemoStore

THREADS = 8
TRIALS = 10

#: The mechanism that draws the contract's reports, and another one.
M = Warner(0.75).key
OTHER = Categorical(3, 0.5).key
PURE, ZCDP = PureEpsilonComposition(), ZCDPComposition()

#: Keys of every kind a store must take: small, negative and huge ids, tokens, bytes.
ODD_KEYS: list[Any] = [0, -5, 99_999_999, 2**62, 2**70, "tok-" + "f" * 36, "0", b"\x00raw"]


def keys(*items: Any) -> np.ndarray:  # type: ignore[type-arg]
    return respondent_keys(list(items), unique=False)


def request(
    question: str = "q",
    epsilon: float = 0.5,
    *,
    memoized: bool = False,
    limit: float = 1.0,
    fresh: Any = None,
    partial: bool = False,
    composition: Composition = PURE,
) -> SpendRequest:
    return SpendRequest(
        question, epsilon, memoized, limit, fresh=fresh, partial=partial, composition=composition
    )


def ones(missing: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    return np.ones(int(missing.sum()), dtype=np.int64)


def observable(store: LedgerStore, probe: np.ndarray) -> tuple[Any, ...]:  # type: ignore[type-arg]
    """Everything the protocol shows about a store, for the given keys."""
    qs = store.questions()
    return (
        store.history(probe).spent.tolist(),
        {q: store.history(probe, q).charged.tolist() for q in qs},
        qs,
        store.respondents().tolist(),
        store.summary(1.0),
    )


def run_together(work: Callable[[int], None], threads: int = THREADS) -> None:
    """Run ``work(i)`` in ``threads`` threads released together by a barrier; re-raise the
    first exception a thread raised."""
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def body(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    pool = [threading.Thread(target=body, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]


class _Contract:
    @pytest.fixture
    def _frequent_switches(self) -> Iterator[None]:
        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            yield
        finally:
            sys.setswitchinterval(old)


class LedgerStoreContract(_Contract):
    """What every :class:`~deniable.accounting.LedgerStore` must do."""

    @pytest.fixture
    def make_store(self) -> Callable[[], LedgerStore]:  # pragma: no cover - overridden
        raise NotImplementedError("a subclass gives a factory of empty stores")

    def test_is_a_ledger_store(self, make_store: Callable[[], LedgerStore]) -> None:
        assert isinstance(make_store(), LedgerStore)

    def test_an_empty_store_knows_nobody(self, make_store: Callable[[], LedgerStore]) -> None:
        store = make_store()
        h = store.history(keys(*ODD_KEYS), "q")
        assert isinstance(h, History)
        assert h.spent.tolist() == [0.0] * len(ODD_KEYS)
        assert h.charged.tolist() == [False] * len(ODD_KEYS) and h.record is None
        assert store.questions() == {} and store.respondents().size == 0
        s = store.summary(1.0)
        assert (s.respondents, s.total, s.exhausted) == (0, 0.0, 0)

    def test_spend_writes_the_plan(self, make_store: Callable[[], LedgerStore]) -> None:
        store = make_store()
        plan = store.spend(keys("b", 7, "a"), request("q", 0.25))
        assert isinstance(plan, SpendPlan) and not plan.refused
        assert plan.cost.tolist() == [0.25] * 3 and plan.admitted.all()
        store.spend(keys(7), request("r", 0.5))
        h = store.history(keys("a", "b", 7, "never"), "q")
        assert h.spent.tolist() == [0.25, 0.25, 0.75, 0.0]
        assert h.charged.tolist() == [True, True, True, False]
        assert h.record is not None and (h.record.epsilon, h.record.charges) == (0.25, 3)
        assert store.history(keys(7), "r").charged.tolist() == [True]
        assert store.history(keys("a"), "r").charged.tolist() == [False]
        assert set(store.questions()) == {"q", "r"}
        assert store.respondents().tolist() == ["b", 7, "a"]  # in the order first charged
        s = store.summary(0.75)
        assert (s.respondents, s.minimum, s.maximum, s.exhausted) == (3, 0.25, 0.75, 1)
        assert s.total == pytest.approx(1.25)

    def test_every_kind_of_key_is_its_own_respondent(
        self, make_store: Callable[[], LedgerStore]
    ) -> None:
        store = make_store()
        store.spend(keys(*ODD_KEYS), request("q", 0.125))
        store.spend(keys(*ODD_KEYS[::2]), request("r", 0.25))
        expect = [0.375 if i % 2 == 0 else 0.125 for i in range(len(ODD_KEYS))]
        assert store.history(keys(*ODD_KEYS)).spent.tolist() == expect
        # an id is the same key however it is passed; "0" and 0 are different respondents
        assert store.history(np.array([99_999_999], dtype=np.uint32)).spent.tolist() == [0.375]
        assert store.history(keys(1, "1", "tok-" + "f" * 35)).spent.tolist() == [0.0] * 3
        assert store.summary(1.0).respondents == len(ODD_KEYS)

    def test_a_refused_spend_writes_nothing(self, make_store: Callable[[], LedgerStore]) -> None:
        store = make_store()
        store.spend(keys("a", 1), request("q", 0.75))
        probe = keys("a", 1, "new", 2)
        before = observable(store, probe)
        plan = store.spend(keys("new", "a", 2), request("r", 0.5))
        assert plan.refused and plan.admitted.tolist() == [True, False, True]
        assert plan.spent.tolist() == [0.0, 0.75, 0.0]
        assert observable(store, probe) == before  # not even the new keys are added

    def test_a_question_is_one_mechanism(self, make_store: Callable[[], LedgerStore]) -> None:
        store = make_store()
        store.spend(keys("a"), request("q", 0.25, memoized=True))
        probe = keys("a", "b")
        before = observable(store, probe)
        for bad in (request("q", 0.5, memoized=True), request("q", 0.25)):
            with pytest.raises(ParameterError, match=r"first charged with epsilon 0\.25"):
                store.spend(keys("b"), bad)
        assert observable(store, probe) == before

    def test_memoized_replays_are_free_fresh_draws_pay(
        self, make_store: Callable[[], LedgerStore]
    ) -> None:
        store = make_store()
        store.spend(keys("a", "b"), request("m", 0.5, memoized=True))
        plan = store.spend(
            keys("a", "b", "c"),
            request("m", 0.5, memoized=True, limit=2.0, fresh=np.array([False, True, False])),
        )
        assert plan.cost.tolist() == [0.0, 0.5, 0.5]
        assert store.history(keys("a", "b", "c")).spent.tolist() == [0.5, 1.0, 0.5]
        record = store.questions()["m"]
        assert record.charges == 4 and record.memoized

    def test_a_partial_spend_charges_who_can_pay(
        self, make_store: Callable[[], LedgerStore]
    ) -> None:
        store = make_store()
        store.spend(keys("x"), request("warm", 0.75))
        plan = store.spend(keys("w", "x", "y"), request("q", 0.5, partial=True))
        assert not plan.refused and plan.write.tolist() == [True, False, True]
        h = store.history(keys("w", "x", "y"), "q")
        assert h.spent.tolist() == [0.5, 0.75, 0.5]
        assert h.charged.tolist() == [True, False, True]
        assert store.questions()["q"].charges == 2

    def test_sums_round_upward(self, make_store: Callable[[], LedgerStore]) -> None:
        store = make_store()
        for q in "ab":
            store.spend(keys("k"), request(q, 0.1, limit=0.3))
        assert store.spend(keys("k"), request("c", 0.1, limit=0.3)).refused
        store.spend(keys("k"), request("c", 0.1, limit=0.3 + 1e-12))
        assert Fraction(float(store.history(keys("k")).spent[0])) >= 3 * Fraction(0.1)

    def test_an_infinite_epsilon_is_refused(self, make_store: Callable[[], LedgerStore]) -> None:
        store = make_store()
        assert store.spend(keys("a"), request("q", math.inf, limit=1e300)).refused
        assert store.questions() == {}
        assert store.history(keys("a")).unit is None  # a refused spend records no unit

    @pytest.mark.parametrize(("first", "second"), [(PURE, ZCDP), (ZCDP, PURE)])
    def test_a_store_keeps_its_totals_in_one_unit(
        self, make_store: Callable[[], LedgerStore], first: Composition, second: Composition
    ) -> None:
        # rho of zCDP and epsilon of pure DP are not one number: the store records the unit
        # of its first spend and refuses a spend of the other, naming both
        store = make_store()
        assert store.history(keys("a")).unit is None
        store.spend(keys("a"), request("q", 0.5, composition=first))
        assert store.history(keys("a", "b"), "q").unit == first.unit
        probe = keys("a", "b")
        before = observable(store, probe)
        both = rf"totals in {first.unit} .* counts {second.unit} would add {second.unit}"
        for who in (keys("b"), keys("a")):
            with pytest.raises(PrivacyError, match=both):
                store.spend(who, request("r", 0.125, composition=second))
        assert observable(store, probe) == before
        assert store.snapshot().history(probe).unit == first.unit
        store.spend(keys("b"), request("r", 0.125, composition=first))  # its own unit: fine

    @pytest.mark.parametrize(("first", "second"), [(PURE, ZCDP), (ZCDP, PURE)])
    def test_ledgers_of_two_compositions_never_share_a_store(
        self, make_store: Callable[[], LedgerStore], first: Composition, second: Composition
    ) -> None:
        store = make_store()
        early = BudgetLedger(cap=2.0, store=store, composition=second)  # empty: any unit
        BudgetLedger(cap=2.0, store=store, composition=first).spend(["ann", 7], "q", 0.5)
        both = rf"totals in {first.unit} .* counts {second.unit}"
        with pytest.raises(PrivacyError, match=both):
            BudgetLedger(cap=2.0, store=store, composition=second)
        calls: list[Callable[[], object]] = [
            lambda: early.spend(["bob"], "r", 0.125),
            lambda: early.spent(["ann"]),
            lambda: early.remaining("ann"),
            lambda: early.can_afford(["ann"], "r", 0.125),
            lambda: early.costs(["ann"], "r", 0.125),
            lambda: BudgetFilter(early).commit_admitted(["bob"], 0.125, question="r"),
            lambda: early.to_dict(),
            lambda: list(early),
        ]
        for call in calls:
            with pytest.raises(PrivacyError, match=both):
                call()
        later = BudgetLedger(cap=2.0, store=store, composition=first)
        assert later.spent(["ann", "bob"]).tolist() == [first.charge(0.5), 0.0]

    def test_snapshot_is_independent(self, make_store: Callable[[], LedgerStore]) -> None:
        store = make_store()
        store.spend(keys("a", 5), request("q", 0.5))
        snap = store.snapshot()
        store.spend(keys("a"), request("r", 0.25))
        assert snap.history(keys("a", 5)).spent.tolist() == [0.5, 0.5]
        assert store.history(keys("a", 5)).spent.tolist() == [0.75, 0.5]
        assert set(snap.questions()) == {"q"}

    def test_through_the_ledger_and_the_filter(self, make_store: Callable[[], LedgerStore]) -> None:
        ledger = BudgetLedger(cap=1.0, store=make_store())
        ledger.spend(["ann", "bob", 10**15], "smokes", 0.5)
        with pytest.raises(PrivacyError, match=r"respondent 'ann' has only 0\.5 left"):
            ledger.spend(["ann"], "drinks", 0.75)
        with pytest.raises(DataError, match="got 'bob' twice"):
            ledger.spend(["bob", "bob"], "drinks", 0.25)
        gate = BudgetFilter(ledger)
        assert gate.commit_admitted(["ann", "cy"], 0.75, question="drinks") == ["cy"]
        assert ledger.remaining(["ann", "cy", 10**15]).tolist() == [0.5, 0.25, 0.5]
        assert ledger.n_respondents == 4 and sorted(map(str, ledger)) == [
            "0.5",
            "0.5",
            "0.5",
            "0.75",
        ]

    @pytest.mark.usefixtures("_frequent_switches")
    def test_concurrent_spends_with_string_keys_never_pass_the_cap(
        self, make_store: Callable[[], LedgerStore]
    ) -> None:
        # one ledger per thread over one shared store, as workers sharing a database: only
        # the store's atomic check-and-spend stands between them and an overspend
        who = np.array([f"respondent-{i:05d}" for i in range(200)], dtype=object)
        for trial in range(TRIALS):
            store = make_store()
            ledgers = [BudgetLedger(cap=1.0, store=store) for _ in range(THREADS)]
            admitted = [0] * THREADS

            def work(i: int, admitted: list[int] = admitted, ledgers: Any = ledgers) -> None:
                for j in range(4):
                    try:
                        ledgers[i].spend(who, f"q{i}-{j}", 0.25)
                        admitted[i] += 1
                    except PrivacyError:
                        pass

            run_together(work)
            spent = ledgers[0].spent(who)
            assert spent.max() <= 1.0, f"trial {trial}: overspent up to {spent.max()}"
            assert sum(admitted) == 4, f"trial {trial}: {sum(admitted)} spends admitted"
            np.testing.assert_array_equal(spent, np.full(who.size, 1.0))


class MemoStoreContract(_Contract):
    """What every :class:`~deniable.mechanisms.MemoStore` must do."""

    @pytest.fixture
    def make_store(self) -> Callable[[], MemoStore]:  # pragma: no cover - overridden
        raise NotImplementedError("a subclass gives a factory of empty stores")

    def test_is_a_memo_store(self, make_store: Callable[[], MemoStore]) -> None:
        assert isinstance(make_store(), MemoStore)

    def test_get_or_create_creates_exactly_the_missing(
        self, make_store: Callable[[], MemoStore]
    ) -> None:
        store = make_store()
        calls: list[list[bool]] = []

        def create(missing: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
            calls.append(missing.tolist())
            return np.arange(int(missing.sum()), dtype=np.int64) + 10 * len(calls)

        first = store.get_or_create("q", keys("a", 2**70, -3), create, mechanism=M)
        assert first.tolist() == [10, 11, 12] and calls == [[True, True, True]]
        again = store.get_or_create("q", keys(-3, "b", "a"), create, mechanism=M)
        assert again.tolist() == [12, 20, 10] and calls[-1] == [False, True, False]
        replay = store.get_or_create("q", keys("b"), create, mechanism=M)
        assert replay.tolist() == [20] and calls[-1] == [False]  # called even if none missing
        assert store.lookup("q", keys("a", "b", "c", 2**70), mechanism=M).tolist() == [
            10,
            20,
            -1,
            11,
        ]
        assert store.lookup("other", keys("a"), mechanism=M).tolist() == [-1]

    def test_questions_are_separate_and_forget_drops_one(
        self, make_store: Callable[[], MemoStore]
    ) -> None:
        store = make_store()
        store.get_or_create(
            "q", keys(*ODD_KEYS), lambda m: np.ones(int(m.sum()), np.int64), mechanism=M
        )
        store.get_or_create(
            "r", keys(*ODD_KEYS), lambda m: np.zeros(int(m.sum()), np.int64), mechanism=M
        )
        assert store.lookup("q", keys(*ODD_KEYS), mechanism=M).tolist() == [1] * len(ODD_KEYS)
        assert store.lookup("r", keys(*ODD_KEYS), mechanism=M).tolist() == [0] * len(ODD_KEYS)
        store.forget("q")
        store.forget("never")
        assert store.lookup("q", keys(*ODD_KEYS), mechanism=M).tolist() == [-1] * len(ODD_KEYS)
        assert store.lookup("r", keys(*ODD_KEYS), mechanism=M).tolist() == [0] * len(ODD_KEYS)

    def test_a_failed_create_stores_nothing(self, make_store: Callable[[], MemoStore]) -> None:
        store = make_store()
        store.get_or_create("q", keys("a"), lambda m: np.ones(int(m.sum()), np.int64), mechanism=M)

        def boom(missing: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
            raise PrivacyError("refused")

        with pytest.raises(PrivacyError):
            store.get_or_create("q", keys("a", "b", 7), boom, mechanism=M)
        assert store.lookup("q", keys("a", "b", 7), mechanism=M).tolist() == [1, -1, -1]
        with pytest.raises(ValueError, match="one per missing key"):
            store.get_or_create("q", keys("b", 7), lambda m: np.ones(1, np.int64), mechanism=M)
        with pytest.raises(ValueError, match="non-negative integer"):
            store.get_or_create("q", keys("b"), lambda m: np.full(1, -1, np.int64), mechanism=M)
        assert store.lookup("q", keys("a", "b", 7), mechanism=M).tolist() == [1, -1, -1]

    def test_snapshot_is_independent(self, make_store: Callable[[], MemoStore]) -> None:
        store = make_store()
        store.get_or_create("q", keys("a"), lambda m: np.ones(int(m.sum()), np.int64), mechanism=M)
        snap = store.snapshot()
        store.get_or_create("q", keys("b"), lambda m: np.ones(int(m.sum()), np.int64), mechanism=M)
        store.forget("q")
        assert snap.lookup("q", keys("a", "b"), mechanism=M).tolist() == [1, -1]

    def test_through_the_memoizer(self, make_store: Callable[[], MemoStore]) -> None:
        memo = MemoizedRandomizer(Warner(0.75), store=make_store())
        ledger = BudgetLedger(cap=1.5)
        who = ["ann", 10**12, "bob"]
        first = memo.randomize(who, [1, 0, 1], question="q", rng=1, ledger=ledger)
        again = memo.randomize(who[::-1], [0, 1, 0], question="q", rng=2, ledger=ledger)
        assert again[::-1].tolist() == first.tolist()
        assert ledger.spent(who).tolist() == [math.log(3)] * 3
        assert memo.memoized("q", ["ann", "cy"]).tolist() == [True, False]

    def test_a_report_is_only_replayed_to_the_mechanism_that_drew_it(
        self, make_store: Callable[[], MemoStore]
    ) -> None:
        store = make_store()
        store.get_or_create("q", keys("a", 7), ones, mechanism=M)
        called: list[list[bool]] = []

        def twos(missing: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
            called.append(missing.tolist())
            return np.full(int(missing.sum()), 2, dtype=np.int64)

        for call in (
            lambda: store.get_or_create("q", keys("new", 7), twos, mechanism=OTHER),
            lambda: store.lookup("q", keys("new", 7), mechanism=OTHER),
        ):
            with pytest.raises(PrivacyError) as err:
                call()
            text = str(err.value)
            assert "question 'q'" in text and "respondent 7 " in text, text
            assert f"drawn by {M}" in text and f"the mechanism {OTHER}" in text, text
        assert called == []  # refused before drawing: nothing drawn, charged or stored
        assert store.lookup("q", keys("a", 7, "new"), mechanism=M).tolist() == [1, 1, -1]
        # a respondent without a report holds nothing to replay or to draw twice
        assert store.lookup("q", keys("new"), mechanism=OTHER).tolist() == [-1]
        assert store.get_or_create("q", keys("new"), twos, mechanism=OTHER).tolist() == [2]
        with pytest.raises(PrivacyError, match=rf"respondent 'new' .* drawn by {re_escape(OTHER)}"):
            store.lookup("q", keys("a", "new"), mechanism=M)
        assert store.get_or_create("r", keys("a"), twos, mechanism=OTHER).tolist() == [2]
        # the mechanism survives a snapshot; forget drops the reports with their mechanism
        with pytest.raises(PrivacyError, match=rf"drawn by {re_escape(M)}"):
            store.snapshot().lookup("q", keys(7), mechanism=OTHER)
        store.forget("q")
        assert store.get_or_create("q", keys(7), twos, mechanism=OTHER).tolist() == [2]

    def test_the_mechanism_is_required(self, make_store: Callable[[], MemoStore]) -> None:
        store = make_store()
        for bad in ("", None, 3):
            with pytest.raises(ParameterTypeError, match="`mechanism` must be the key"):
                store.get_or_create("q", keys("a"), ones, mechanism=bad)  # type: ignore[arg-type]
            with pytest.raises(ParameterTypeError, match="`mechanism` must be the key"):
                store.lookup("q", keys("a"), mechanism=bad)  # type: ignore[arg-type]
        assert store.lookup("q", keys("a"), mechanism=M).tolist() == [-1]

    def test_the_memoizer_keeps_or_refuses_across_designs(
        self, make_store: Callable[[], MemoStore]
    ) -> None:
        store = make_store()
        ledger = BudgetLedger(cap=5.0)
        who = ["ann", 10**12, "bob"]
        warner = MemoizedRandomizer(Warner(0.75), store=store)
        first = warner.randomize(who, [1, 0, 1], question="q", rng=1, ledger=ledger)
        # another permanent design: the k = 3 categorical question (once served the binary
        # reports), and the same epsilon by another design, which the ledger cannot tell
        for design in (Categorical(3, 0.5), Binary(math.log(3))):
            other = MemoizedRandomizer(design, store=store)
            with pytest.raises(PrivacyError, match=r"question 'q': respondent 'ann' holds"):
                other.randomize(who, [1, 1, 1], question="q", rng=2, ledger=ledger)
            with pytest.raises(PrivacyError, match=rf"drawn by {re_escape(M)}"):
                other.memoized("q", who)
        assert ledger.spent(who).tolist() == [math.log(3)] * 3  # nothing charged again
        # another instantaneous design (or none) replays the same permanent reports
        inst = MemoizedRandomizer(Warner(0.75), instantaneous=BiasedCoin(0.2), store=store)
        inst.randomize(who, [0, 1, 0], question="q", rng=3, ledger=ledger)
        assert inst.memoized("q", who).all()
        assert ledger.spent(who).tolist() == [math.log(3)] * 3  # a replay: no new draw
        again = MemoizedRandomizer(Warner(0.75), store=store)
        assert again.randomize(who, [0, 1, 0], question="q", rng=4).tolist() == first.tolist()

    @pytest.mark.usefixtures("_frequent_switches")
    def test_concurrent_get_or_create_gives_one_report_per_key(
        self, make_store: Callable[[], MemoStore]
    ) -> None:
        tokens = [f"tok-{i:04d}" for i in range(300)] + [10**12 + 7 * i for i in range(300)]
        who = keys(*tokens)
        for trial in range(TRIALS):
            store = make_store()
            created = [0] * THREADS
            outs: list[Any] = [None] * THREADS

            def work(
                i: int, store: MemoStore = store, created: list[int] = created, outs: Any = outs
            ) -> None:
                def create(missing: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
                    created[i] += int(missing.sum())
                    return np.full(int(missing.sum()), i, dtype=np.int64)

                order = np.random.default_rng(i).permutation(who.size)
                out = store.get_or_create("q", who[order], create, mechanism=M)
                back = np.empty_like(out)
                back[order] = out
                outs[i] = back

            run_together(work)
            assert sum(created) == who.size, f"trial {trial}: {sum(created)} reports created"
            for i, out in enumerate(outs):
                assert out.tolist() == outs[0].tolist(), f"trial {trial}: thread {i} differs"
            assert store.lookup("q", who, mechanism=M).tolist() == outs[0].tolist()
