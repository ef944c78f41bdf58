"""Per-respondent privacy budgets: a ledger of pure epsilon spent question by question.

Each respondent ``i`` has a cap ``C``; a questionnaire is one mechanism on the respondent's
whole record, and by basic composition (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth
2014, Thm 3.14) its epsilon is at most the sum of the epsilons of the questions actually
asked, *whatever the dependence between the answers* ("age < 40?" and "age < 30?" included).
The ledger keeps that sum per respondent and refuses a question that would take it past the
cap.  Skipped questions cost nothing; a memoized question (permanent randomized response,
Erlingsson, Pihur & Korolova 2014) costs its epsilon once and nothing when replayed.

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
A ledger may be shared by threads: one re-entrant lock guards its state, and every method
takes it, so a spend is one atomic check-and-spend (concurrent spends never pass the cap)
and a query never sees half of a spend.  A ledger lives in one process; a pickled or copied
ledger is a snapshot that does not share the budget (docs/budgets.md, "Concurrency").

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
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting._exact_sum import add_up
from deniable.common import _validation as v
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError

__all__ = ["BudgetLedger", "QuestionRecord", "first_repeat"]

IdArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class QuestionRecord:
    """What the ledger knows about one question: its epsilon, whether it is memoized, and
    how many respondents have been charged for it (``charges``; repeats of a
    non-memoized question count again)."""

    question: str
    epsilon: float
    memoized: bool
    charges: int


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.12g}"


class BudgetLedger:
    """Per-respondent epsilon budgets with a common ``cap``; respondents are ids ``0..n-1``.

    Parameters
    ----------
    cap : float
        The most epsilon any one respondent may spend, in ``(0, inf)``.
    n_respondents : int
        Number of respondents (ids ``0 .. n_respondents - 1``); :meth:`grow` adds more.
    tolerance : float
        Relative slack: a spend is admitted while ``spent + epsilon <= cap * (1 + tolerance)``
        (the sum rounded upward).  Default ``0``: strict, never a spend past the cap.

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
    """

    __slots__ = ("_cap", "_charged", "_lock", "_log", "_questions", "_spent", "_tolerance")

    def __init__(self, cap: float, n_respondents: int = 0, *, tolerance: float = 0.0) -> None:
        c = v.real("cap", cap)
        if not (0 < c < math.inf):
            raise ParameterError(
                f"`cap` must be in (0, inf) (a budget with no cap is not a budget), got {cap}."
            )
        n = v.integer("n_respondents", n_respondents, minimum=0)
        tol = v.real("tolerance", tolerance)
        if not 0 <= tol <= 1e-6:
            raise ParameterError(f"`tolerance` must be in [0, 1e-06], got {tolerance}.")
        self._cap = c
        self._tolerance = tol
        self._spent: npt.NDArray[np.float64] = np.zeros(n, dtype=np.float64)
        self._questions: dict[str, tuple[float, bool]] = {}
        self._charged: dict[str, npt.NDArray[np.bool_]] = {}
        self._log: dict[str, int] = {}
        # one re-entrant lock guards every read and write of the state above: a spend is one
        # atomic check-and-spend, and a query never sees half of one (docs/budgets.md)
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {
                "cap": self._cap,
                "tolerance": self._tolerance,
                "spent": self._spent.copy(),
                "questions": dict(self._questions),
                "charged": {q: m.copy() for q, m in self._charged.items()},
                "log": dict(self._log),
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._cap = state["cap"]
        self._tolerance = state["tolerance"]
        self._spent = state["spent"]
        self._questions = state["questions"]
        self._charged = state["charged"]
        self._log = state["log"]
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        """The ledger's re-entrant lock.

        Every method takes it, so each call is atomic on its own.  Hold it (``with
        ledger.lock:``) only to make a *sequence* of calls atomic, e.g. a
        :class:`BudgetFilter` ``admit`` followed by ``commit`` that must not be refused by a
        concurrent spend in between.
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
    def n_respondents(self) -> int:
        """Number of respondents."""
        return int(self._spent.size)

    @property
    def questions(self) -> Mapping[str, QuestionRecord]:
        """Every question charged so far, by name."""
        with self._lock:
            return {
                q: QuestionRecord(q, eps, memo, self._log[q])
                for q, (eps, memo) in self._questions.items()
            }

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"BudgetLedger(cap={self._cap!r}, n_respondents={self.n_respondents}, "
                f"questions={len(self._questions)})"
            )

    def __len__(self) -> int:
        return self.n_respondents

    # ------------------------------------------------------------------ validation

    def _ids(self, respondents: Any, *, unique: bool = True) -> IdArray:
        arr = np.asarray(respondents)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.ndim != 1:
            raise DataError(
                f"`respondents` must be a 1-D array of ids, got an array of shape {arr.shape}."
            )
        if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
            if arr.size == 0:
                return np.zeros(0, dtype=np.int64)
            raise ParameterTypeError(
                f"`respondents` must hold integer ids in 0..{self.n_respondents - 1}, "
                f"got dtype {arr.dtype}."
            )
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0 or hi >= self.n_respondents:
                bad = lo if lo < 0 else hi
                raise DataError(
                    f"`respondents` must hold ids in 0..{self.n_respondents - 1}, got {bad}."
                )
        out = arr.astype(np.int64, copy=False)
        if unique and (rep := first_repeat(out)) is not None:
            raise DataError(
                f"`respondents` must not repeat an id within one spend, got {rep} "
                "twice (ask again in a separate call)."
            )
        return out

    @staticmethod
    def _question(question: Any) -> str:
        if not isinstance(question, str) or not question:
            raise ParameterTypeError(
                f"`question` must be a non-empty string naming the question, got {question!r}."
            )
        return question

    def _check_question(self, question: str, eps: float, memoized: bool) -> None:
        if question in self._questions:
            old_eps, old_memo = self._questions[question]
            if old_eps != eps or old_memo != memoized:
                raise ParameterError(
                    f"question {question!r} was first charged with epsilon {_fmt(old_eps)}, "
                    f"memoized={old_memo}; a question name stands for one mechanism, got "
                    f"epsilon {_fmt(eps)}, memoized={memoized} (use a new name)."
                )

    # ------------------------------------------------------------------ queries

    def spent(self, respondents: Any) -> npt.NDArray[np.float64] | float:
        """Epsilon spent so far (a float for one id, an array for an array of ids)."""
        with self._lock:
            ids = self._ids(respondents, unique=False)
            out = self._spent[ids].copy()
        return float(out[0]) if np.ndim(respondents) == 0 else out

    def remaining(self, respondents: Any) -> npt.NDArray[np.float64] | float:
        """The largest epsilon the next question may use: ``cap - spent``, never below 0,
        rounded down so that a question of exactly this epsilon is admitted."""
        with self._lock:
            ids = self._ids(respondents, unique=False)
            spent = self._spent[ids].copy()
        out = np.maximum(self._cap - spent, 0.0)
        over = add_up(spent, out) > self._limit()
        out[over] = np.maximum(np.nextafter(out[over], 0.0), 0.0)
        return float(out[0]) if np.ndim(respondents) == 0 else out

    def costs(
        self,
        respondents: Any,
        question: str,
        epsilon: float,
        *,
        memoized: bool = False,
        fresh: Any = None,
    ) -> npt.NDArray[np.float64]:
        """What asking ``question`` would cost each respondent (0 for memoized repeats;
        ``fresh`` as in :meth:`spend`)."""
        with self._lock:
            return self._priced(respondents, question, epsilon, memoized, fresh, unique=False)[4]

    def _priced(
        self,
        respondents: Any,
        question: Any,
        epsilon: Any,
        memoized: Any,
        fresh: Any,
        *,
        unique: bool = True,
    ) -> tuple[IdArray, str, float, bool, npt.NDArray[np.float64]]:
        """Validate a question's arguments (in this order) and price it: the ids, the
        question, its epsilon, the memoized flag and each respondent's cost."""
        ids = self._ids(respondents, unique=unique)
        q = self._question(question)
        eps = v.positive("epsilon", epsilon, allow_zero=True, allow_inf=True)
        memo = _flag("memoized", memoized)
        self._check_question(q, eps, memo)
        return ids, q, eps, memo, self._costs(ids, q, eps, memo, _fresh(fresh, ids.size))

    def _costs(
        self,
        ids: IdArray,
        q: str,
        eps: float,
        memo: bool,
        fresh: npt.NDArray[np.bool_] | None = None,
    ) -> npt.NDArray[np.float64]:
        cost = np.full(ids.size, eps, dtype=np.float64)
        if memo and q in self._charged:
            replay = self._charged[q][ids]
            if fresh is not None:
                replay &= ~fresh  # a report drawn anew is a new release: it pays again
            cost[replay] = 0.0
        return cost

    def _limit(self) -> float:
        return self._cap if self._tolerance == 0 else self._cap * (1 + self._tolerance)

    def _admitted(self, ids: IdArray, cost: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        # the sum is rounded upward, so a spend past the cap is never admitted by rounding;
        # an infinite cost is refused under every (finite) cap: inf <= limit is False
        ok: npt.NDArray[np.bool_] = (cost == 0) | (add_up(self._spent[ids], cost) <= self._limit())
        return ok

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
            ids, _, _, _, cost = self._priced(
                respondents, question, epsilon, memoized, fresh, unique=False
            )
            return self._admitted(ids, cost)

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
        with self._lock:  # one atomic check-and-spend: no other spend runs in between
            ids, q, eps, memo, cost = self._priced(respondents, question, epsilon, memoized, fresh)
            ok = self._admitted(ids, cost)
            if not ok.all():
                raise self._refusal(ids, q, eps, ok)
            # validated and admitted: compute every new value first, then write, so that an
            # exception (e.g. a MemoryError) leaves the ledger exactly as it was
            new_spent = add_up(self._spent[ids], cost)
            charged = self._charged.get(q)
            if charged is None:
                charged = np.zeros(self.n_respondents, dtype=np.bool_)
            charges = self._log.get(q, 0)
            charges += int(np.count_nonzero(cost > 0)) if eps > 0 else int(ids.size)
            # the writes below are plain assignments of prepared values
            self._spent[ids] = new_spent
            charged[ids] = True
            self._charged[q] = charged
            self._questions.setdefault(q, (eps, memo))
            self._log[q] = charges

    def _refusal(self, ids: IdArray, q: str, eps: float, ok: npt.NDArray[np.bool_]) -> PrivacyError:
        bad = np.flatnonzero(~ok)
        i = int(ids[bad[0]])
        left = float(self.remaining(i))
        cost_s, left_s = _fmt(eps), _fmt(left)
        why = (
            " (an infinite epsilon: a report can reveal the answer, and no finite cap admits it)"
            if math.isinf(eps)
            else ""
        )
        if cost_s == left_s:  # apart only in the last digits: show them, and say why
            cost_s, left_s = repr(eps), repr(left)
            why = (
                " (sums of binary doubles are rounded upward and never pass the cap: "
                "state the cap with a margin)"
            )
        return PrivacyError(
            f"question {q!r} costs epsilon {cost_s}{why} but respondent {i} has only "
            f"{left_s} left of the cap {_fmt(self._cap)} ({bad.size} of {ids.size} "
            "respondents would exceed it); nothing was spent."
        )

    def grow(self, n_respondents: int) -> range:
        """Add respondents so that there are ``n_respondents``; returns the new ids."""
        with self._lock:
            n = v.integer("n_respondents", n_respondents, minimum=self.n_respondents)
            old = self.n_respondents
            if n > old:
                spent = np.concatenate([self._spent, np.zeros(n - old)])
                charged = {
                    q: np.concatenate([mask, np.zeros(n - old, dtype=np.bool_)])
                    for q, mask in self._charged.items()
                }
                self._spent, self._charged = spent, charged
            return range(old, n)

    def copy(self) -> BudgetLedger:
        """An independent snapshot (taken atomically)."""
        new = BudgetLedger.__new__(BudgetLedger)
        new.__setstate__(self.__getstate__())
        return new

    def charged(self, question: str) -> npt.NDArray[np.bool_]:
        """Mask of respondents charged for ``question`` so far (all False if never asked)."""
        q = self._question(question)
        with self._lock:
            if q not in self._charged:
                return np.zeros(self.n_respondents, dtype=np.bool_)
            return self._charged[q].copy()

    def to_dict(self) -> dict[str, Any]:
        """A plain summary: cap, respondents, spent (min / mean / max), questions."""
        with self._lock:
            return self._summary()

    def _summary(self) -> dict[str, Any]:
        s = self._spent
        return {
            "cap": self._cap,
            "n_respondents": self.n_respondents,
            "spent_min": float(s.min()) if s.size else 0.0,
            "spent_mean": float(s.mean()) if s.size else 0.0,
            "spent_max": float(s.max()) if s.size else 0.0,
            "exhausted": int(np.count_nonzero(s >= self._cap)),
            "questions": {
                q: {"epsilon": e, "memoized": m, "charges": self._log[q]}
                for q, (e, m) in self._questions.items()
            },
        }

    def __iter__(self) -> Iterator[float]:
        with self._lock:
            return iter(self._spent.tolist())


def first_repeat(ids: IdArray) -> int | None:
    """The smallest id that occurs more than once in ``ids``, or ``None``."""
    if ids.size > 1:
        s = np.sort(ids)
        dup = s[1:][s[1:] == s[:-1]]
        if dup.size:
            return int(dup[0])
    return None


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ParameterTypeError(f"`{name}` must be True or False, got {value!r}.")
    return bool(value)


def _fresh(value: Any, size: int) -> npt.NDArray[np.bool_] | None:
    """``fresh`` as a boolean mask of ``size`` (``None``/``False``: nobody, ``True``: all)."""
    if value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return np.full(size, bool(value), dtype=np.bool_)
    m = np.asarray(value)
    if m.dtype != np.bool_ or m.shape != (size,):
        raise DataError(
            f"`fresh` must be True, False, None or a boolean array of shape ({size},) (one per "
            f"respondent), got dtype {m.dtype} and shape {m.shape}."
        )
    return m.copy()
