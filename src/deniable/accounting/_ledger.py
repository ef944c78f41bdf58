"""Per-respondent privacy budgets: a ledger of pure epsilon spent question by question.

Each respondent ``i`` has a cap ``C``; a questionnaire is one mechanism on the respondent's
whole record, and by basic composition (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth
2014, Thm 3.14) its epsilon is at most the sum of the epsilons of the questions actually
asked, *whatever the dependence between the answers* ("age < 40?" and "age < 30?" included).
The ledger keeps that sum per respondent and refuses a question that would take it past the
cap.  Skipped questions cost nothing; a memoized question (permanent randomized response,
Erlingsson, Pihur & Korolova 2014) costs its epsilon once and nothing when replayed.

Pricing and storage
-------------------
The ledger is a facade: what a question costs comes from pure functions of a respondent's
history (``_pricing``: the composition rule, memoized replays, upward-rounded sums), and
where the budgets live is a :class:`~deniable.accounting.LedgerStore` (``_stores``;
:class:`~deniable.accounting.InMemoryLedgerStore` by default, a SQL store in the survey
service) that performs each spend as one atomic check-and-spend.  Respondents are opaque
keys (integer ids or string tokens); with ``n_respondents`` the ledger takes only the ids
``0 .. n_respondents - 1``, a guard against typos.

Why a mutable object
--------------------
A ledger *is* a record of spending over time, shared by the code that asks questions (the
survey service's budget filter, a memoizing randomizer).  An immutable ledger would copy an
``n``-respondent array on every question and make it easy to keep spending from a stale
copy, which would under-count.  So :class:`BudgetLedger` is an explicit mutable object (no
global state): every operation is **all-or-nothing** (inputs are validated and the whole
spend checked before anything is written), so a refused or malformed request leaves the
ledger exactly as it was.  :meth:`BudgetLedger.copy` takes a snapshot.

Threads
-------
A ledger may be shared by threads: its store makes every spend one atomic check-and-spend
(concurrent spends never pass the cap) and a query never sees half of a spend; the
ledger's own re-entrant lock (:attr:`BudgetLedger.lock`, taken by every method) makes a
*sequence* of calls atomic within this process.  An in-memory ledger lives in one process;
a pickled or copied ledger is a snapshot that does not share the budget (docs/budgets.md,
"Concurrency").

Floating point
--------------
The spent budget is never below the true sum of the epsilons charged: each addition is
rounded *upward* (the exact error of ``a + b`` is found by Knuth's TwoSum, and where the
rounded sum fell below the exact one it is moved up by one double), and admission is strict
by default (``tolerance=0``: ``spent + epsilon <= cap`` with that upward sum).  A
consequence: decimal budgets are not exact in binary, and three questions of ``0.1`` under a
cap of ``0.3`` are refused (the three doubles ``0.1`` sum to more than the double ``0.3``);
state a cap with a margin (``0.3 + 1e-12``) or budgets that are exact in binary
(``0.25``, ``0.5``).  ``tolerance`` allows a stated relative slack instead.

This module is pure accounting: it never imports a mechanism.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting._keys import Keys
from deniable.accounting._ledger_inputs import (
    checked_keys,
    checked_question,
    flag,
    fresh_mask,
    refusal,
)
from deniable.accounting._pricing import (
    PURE_EPSILON,
    Composition,
    History,
    QuestionRecord,
    SpendRequest,
    admitted,
    check_record,
    check_unit,
    question_costs,
    remaining_budget,
    spend_limit,
)
from deniable.accounting._stores import InMemoryLedgerStore, LedgerStore
from deniable.common import validation as v
from deniable.exceptions import ParameterError

__all__ = [
    "BudgetLedger",
]

Floats = npt.NDArray[np.float64]


class BudgetLedger:
    """Per-respondent epsilon budgets with a common ``cap``.

    Parameters
    ----------
    cap : float
        The most epsilon any one respondent may spend, in ``(0, inf)`` (in the unit of the
        ``composition`` rule: ``rho`` for :class:`ZCDPComposition`).
    n_respondents : int, optional
        Respondents are the ids ``0 .. n_respondents - 1`` (any other key is refused;
        :meth:`grow` adds more).  Default ``None``: respondents are opaque keys, integer
        ids of any size or string tokens, and any key is a respondent with nothing spent
        until charged.
    tolerance : float
        Relative slack: a spend is admitted while ``spent + epsilon <= cap * (1 + tolerance)``
        (the sum rounded upward).  Default ``0``: strict, never a spend past the cap.
    store : LedgerStore, optional
        Where the budgets live; default a new :class:`InMemoryLedgerStore`.  Every spend is
        one atomic check-and-spend in the store.
    composition : Composition, optional
        The rule that prices a question and adds charges; default basic composition of pure
        epsilon (:class:`PureEpsilonComposition`); :class:`ZCDPComposition` caps ``rho``.
        Questions are always given by their epsilon; spent, remaining and costs are in the
        rule's unit.

    Notes
    -----
    Accounting is basic composition of pure epsilon: respondent ``i``'s total is
    ``sum over questions asked of eps_q`` (memoized repeats add 0), accumulated with upward
    rounding so that the stored total is never below the exact sum.  Questions are named;
    a name stands for one mechanism, so its epsilon and memoization are fixed at its first
    spend.  A question with ``epsilon = inf`` (a report can reveal the answer) is refused
    under every cap.

    Examples
    --------
    >>> ledger = BudgetLedger(cap=1.0, n_respondents=3)
    >>> ledger.spend([0, 1, 2], "smokes", 0.5)
    >>> ledger.spend([0], "drinks", 0.25)                  # respondents 1, 2 skip it
    >>> ledger.remaining([0, 1, 2]).tolist()
    [0.25, 0.5, 0.5]
    >>> ledger.spend([0], "drugs", 0.5)
    Traceback (most recent call last):
    ...
    deniable.exceptions.PrivacyError: question 'drugs' costs epsilon 0.5 but respondent 0 has
    only 0.25 left of the cap 1 (1 of 1 respondents would exceed it); nothing was spent.

    Respondent keys may be tokens; a huge id costs what a small one does:

    >>> tokens = BudgetLedger(cap=1.0)
    >>> tokens.spend(["a3f9c2", "77b0e1", 99_999_999], "smokes", 0.5)
    >>> tokens.remaining(["a3f9c2", "never-asked"]).tolist()
    [0.5, 1.0]
    """

    __slots__ = ("_cap", "_composition", "_lock", "_n", "_store", "_tolerance")

    def __init__(
        self,
        cap: float,
        n_respondents: int | None = None,
        *,
        tolerance: float = 0.0,
        store: LedgerStore | None = None,
        composition: Composition | None = None,
    ) -> None:
        c = v.real("cap", cap)
        if not (0 < c < math.inf):
            raise ParameterError(
                f"`cap` must be in (0, inf) (a budget with no cap is not a budget), got {cap}."
            )
        n = None if n_respondents is None else v.integer("n_respondents", n_respondents, minimum=0)
        tol = v.real("tolerance", tolerance)
        if not 0 <= tol <= 1e-6:
            raise ParameterError(f"`tolerance` must be in [0, 1e-06], got {tolerance}.")
        v.instance_or_none(
            "store", store, LedgerStore, "a LedgerStore (e.g. InMemoryLedgerStore())"
        )
        v.instance_or_none(
            "composition", composition, Composition, "a Composition (e.g. PureEpsilonComposition())"
        )
        self._cap = c
        self._tolerance = tol
        self._n = n
        self._store: LedgerStore = InMemoryLedgerStore() if store is None else store
        self._composition: Composition = PURE_EPSILON if composition is None else composition
        # a store whose totals are in another unit is refused now (and on every use: another
        # ledger may record the store's unit later)
        check_unit(self._store.history(np.zeros(0, dtype=np.int64)).unit, self._composition.unit)
        # the store makes each spend atomic; this lock makes a sequence of this process's
        # calls atomic (``with ledger.lock:``), and every method takes it
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {
                "cap": self._cap,
                "tolerance": self._tolerance,
                "n_respondents": self._n,
                "store": self._store.snapshot(),
                "composition": self._composition,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._cap = state["cap"]
        self._tolerance = state["tolerance"]
        self._n = state["n_respondents"]
        self._store = state["store"]
        self._composition = state["composition"]
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        """The ledger's re-entrant lock.

        Every method takes it, and each spend is atomic in the store on its own.  Hold it
        (``with ledger.lock:``) only to make a *sequence* of calls atomic within this
        process, e.g. a :class:`BudgetFilter` ``admit`` followed by ``commit`` that must not
        be refused by a concurrent spend in between.
        """
        return self._lock

    # ------------------------------------------------------------------ properties

    @property
    def cap(self) -> float:
        """The per-respondent cap."""
        return self._cap

    @property
    def tolerance(self) -> float:
        """Relative slack allowed for floating-point sums."""
        return self._tolerance

    @property
    def store(self) -> LedgerStore:
        """Where the budgets live."""
        return self._store

    @property
    def composition(self) -> Composition:
        """The composition rule that prices questions."""
        return self._composition

    @property
    def n_respondents(self) -> int:
        """Number of respondents: ``n_respondents`` as given (ids ``0 .. n - 1``), or, for
        a ledger of opaque keys, the number of respondents charged so far."""
        if self._n is not None:
            return self._n
        with self._lock:
            return self._store.summary(self._cap).respondents

    @property
    def questions(self) -> Mapping[str, QuestionRecord]:
        """Every question charged so far, by name."""
        with self._lock:
            return self._store.questions()

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"BudgetLedger(cap={self._cap!r}, n_respondents={self._n}, "
                f"questions={len(self._store.questions())}, store={self._store!r})"
            )

    def __len__(self) -> int:
        return self.n_respondents

    # ------------------------------------------------------------------ validation

    def _keys(self, respondents: Any, *, unique: bool = True) -> Keys:
        """``respondents`` checked: canonical keys, ids ``0 .. n - 1`` if ``n_respondents``
        was given, distinct if ``unique``."""
        return checked_keys(respondents, self._n, unique=unique)

    def _history(self, keys: Keys, question: str | None = None) -> History:
        """The store's history of ``keys``, refused if its totals are in another unit than
        this ledger's composition (``check_unit``)."""
        history = self._store.history(keys, question)
        check_unit(history.unit, self._composition.unit)
        return history

    def _request(
        self,
        question: Any,
        epsilon: Any,
        memoized: Any,
        fresh: Any,
        size: int,
        *,
        partial: bool = False,
    ) -> SpendRequest:
        """A question's arguments checked (in this order) as a spend request."""
        q = checked_question(question)
        eps = v.positive("epsilon", epsilon, allow_zero=True, allow_inf=True)
        memo = flag("memoized", memoized)
        return SpendRequest(
            q,
            eps,
            memo,
            spend_limit(self._cap, self._tolerance),
            fresh=fresh_mask(fresh, size),
            partial=partial,
            composition=self._composition,
        )

    # ------------------------------------------------------------------ queries

    def spent(self, respondents: Any) -> Floats | float:
        """Epsilon spent so far (a float for one key, an array for an array of keys; in the
        composition rule's unit)."""
        with self._lock:
            out = self._history(self._keys(respondents, unique=False)).spent
        return float(out[0]) if np.ndim(respondents) == 0 else out

    def remaining(self, respondents: Any) -> Floats | float:
        """The largest epsilon the next question may use: ``cap - spent``, never below 0,
        rounded down so that a question of exactly this epsilon is admitted (in the
        composition rule's unit: the largest ``rho`` for :class:`ZCDPComposition`)."""
        with self._lock:
            spent = self._history(self._keys(respondents, unique=False)).spent
        out = remaining_budget(spent, self._cap, self._tolerance, self._composition)
        return float(out[0]) if np.ndim(respondents) == 0 else out

    def _priced(
        self, respondents: Any, question: Any, epsilon: Any, memoized: Any, fresh: Any
    ) -> tuple[Floats, Floats]:
        """The totals and costs of asking a question now (a snapshot, not a reservation)."""
        keys = self._keys(respondents, unique=False)
        r = self._request(question, epsilon, memoized, fresh, keys.size)
        history = self._history(keys, r.question)
        check_record(r.question, r.epsilon, r.memoized, history.record)
        charge = self._composition.charge(r.epsilon)
        return history.spent, question_costs(
            charge, history.charged, memoized=r.memoized, fresh=r.fresh
        )

    def costs(
        self,
        respondents: Any,
        question: str,
        epsilon: float,
        *,
        memoized: bool = False,
        fresh: Any = None,
    ) -> Floats:
        """What asking ``question`` would cost each respondent (0 for memoized repeats;
        ``fresh`` as in :meth:`spend`)."""
        with self._lock:
            return self._priced(respondents, question, epsilon, memoized, fresh)[1]

    def can_afford(
        self,
        respondents: Any,
        question: str,
        epsilon: float,
        *,
        memoized: bool = False,
        fresh: Any = None,
    ) -> npt.NDArray[np.bool_]:
        """Boolean mask: which respondents could be asked ``question`` now."""
        with self._lock:
            spent, cost = self._priced(respondents, question, epsilon, memoized, fresh)
            return admitted(spent, cost, self._limit(), self._composition)

    def _limit(self) -> float:
        return spend_limit(self._cap, self._tolerance)

    def _can_pay(self, keys: Keys, epsilon: float) -> npt.NDArray[np.bool_]:
        """Who could pay a full ``epsilon`` now (a question with no history)."""
        spent = self._history(keys).spent
        cost = np.full(keys.size, self._composition.charge(epsilon), dtype=np.float64)
        return admitted(spent, cost, self._limit(), self._composition)

    # ------------------------------------------------------------------ changes

    def spend(
        self,
        respondents: Any,
        question: str,
        epsilon: float,
        *,
        memoized: bool = False,
        fresh: Any = None,
    ) -> None:
        """Charge ``question`` (epsilon ``epsilon``) to every respondent in ``respondents``.

        All or nothing: if any respondent would exceed the cap, raise
        :class:`~deniable.exceptions.PrivacyError` naming the first such respondent, the
        question, its cost and what is left, and change nothing.  With ``memoized=True``
        respondents already charged for ``question`` pay 0 (their answer is replayed),
        except those marked in ``fresh`` (a boolean mask, one per respondent, or ``True``
        for all): their randomized report is drawn anew (the memo was lost or forgotten),
        which is a new release and is charged again.
        """
        with self._lock:
            keys = self._keys(respondents)
            request = self._request(question, epsilon, memoized, fresh, keys.size)
            plan = self._store.spend(keys, request)  # one atomic check-and-spend
            if plan.refused:
                raise refusal(keys, request, plan, self._cap, self._tolerance, self._composition)

    def _spend_admitted(
        self, respondents: Any, question: str, epsilon: float, memoized: bool
    ) -> Keys:
        """Charge those who can afford the question, in one atomic step; their keys."""
        with self._lock:
            keys = self._keys(respondents)
            request = self._request(question, epsilon, memoized, None, keys.size, partial=True)
            plan = self._store.spend(keys, request)
            return keys[plan.write]

    def grow(self, n_respondents: int) -> range:
        """Add respondents so that there are ``n_respondents``; returns the new ids.

        Only for a ledger of ids ``0 .. n - 1`` (made with ``n_respondents``); a ledger of
        opaque keys takes any new key as it comes.
        """
        with self._lock:
            if self._n is None:
                raise ParameterError(
                    "`grow` needs a ledger of ids 0..n-1 (made with `n_respondents`); this "
                    "ledger takes any respondent key, so there is nothing to grow."
                )
            n = v.integer("n_respondents", n_respondents, minimum=self._n)
            old, self._n = self._n, n
            return range(old, n)

    def copy(self) -> BudgetLedger:
        """An independent snapshot (taken atomically), in memory whatever the store."""
        new = BudgetLedger.__new__(BudgetLedger)
        new.__setstate__(self.__getstate__())
        return new

    def _all(self) -> Keys:
        """Every respondent: the ids ``0 .. n - 1``, or every key charged so far."""
        if self._n is not None:
            return np.arange(self._n, dtype=np.int64)
        return self._store.respondents()

    def charged(self, question: str, respondents: Any = None) -> npt.NDArray[np.bool_]:
        """Mask of respondents charged for ``question`` so far (all False if never asked).

        ``respondents`` default: every respondent (the ids ``0 .. n - 1``, or, for a
        ledger of opaque keys, every key charged so far, in the order first charged).
        """
        q = checked_question(question)
        with self._lock:
            keys = self._all() if respondents is None else self._keys(respondents, unique=False)
            return self._store.history(keys, q).charged

    def to_dict(self) -> dict[str, Any]:
        """A plain summary: cap, respondents, spent (min / mean / max), questions."""
        with self._lock:
            self._history(np.zeros(0, dtype=np.int64))
            s = self._store.summary(self._cap)
            records = self._store.questions()
        n = s.respondents if self._n is None else self._n
        unseen = n - s.respondents  # ids 0..n-1 never charged: spent 0
        return {
            "cap": self._cap,
            "n_respondents": n,
            "spent_min": 0.0 if unseen > 0 or not n else s.minimum,
            "spent_mean": s.total / n if n else 0.0,
            "spent_max": s.maximum,
            "exhausted": s.exhausted,
            "questions": {
                q: {"epsilon": r.epsilon, "memoized": r.memoized, "charges": r.charges}
                for q, r in records.items()
            },
        }

    def __iter__(self) -> Iterator[float]:
        with self._lock:
            return iter(self._history(self._all()).spent.tolist())
