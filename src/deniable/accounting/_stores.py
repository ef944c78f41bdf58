"""Where a ledger keeps its budgets: the :class:`LedgerStore` protocol and
:class:`InMemoryLedgerStore`.

A store keeps, per respondent key, the total spent, per question, its record and which
respondents were charged for it, and the unit of its totals (``epsilon`` or ``rho``: the
unit of the composition rule of its first spend).  It makes one promise:
:meth:`LedgerStore.spend` is one atomic check-and-spend, which refuses a request of another
unit.  Pricing is not the store's business: the store reads the history
of the respondents, hands it to the request's pure planner (:func:`plan_spend
<deniable.accounting._pricing.plan_spend>`), and writes the plan, all or nothing.

This module is pure accounting: it never imports a mechanism.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from deniable.accounting._keys import KeyIndex, Keys
from deniable.accounting._pricing import (
    UNKNOWN_UNIT,
    History,
    QuestionRecord,
    SpendPlan,
    SpendRequest,
)
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = ["InMemoryLedgerStore", "LedgerStore", "SpentSummary"]

IdArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SpentSummary:
    """Totals over every respondent a store holds: how many, the sum, smallest and largest
    amount spent, and how many have spent at least a threshold (``exhausted``)."""

    respondents: int
    total: float
    minimum: float
    maximum: float
    exhausted: int


@runtime_checkable
class LedgerStore(Protocol):
    """The storage behind a :class:`~deniable.accounting.BudgetLedger`.

    Keys are canonical respondent keys: a 1-D numpy array, ``int64`` or ``object`` (of
    Python ints, strings, bytes or other hashables), as ``respondent_keys`` in
    ``deniable.accounting._keys`` makes them; within one :meth:`spend` they are distinct
    (the ledger checks).  A respondent the store has never charged has spent 0 and was
    never charged for any question.

    ``spend(keys, request) -> SpendPlan``
        **One atomic check-and-spend.**  Read the history of ``keys`` for
        ``request.question`` (their totals, whether each was charged for it, its record,
        the store's unit), call ``request.plan(history)``, and unless the plan is
        ``refused`` write it: for the respondents ``keys[plan.write]``, total :=
        ``plan.new_spent`` and charged for the question := True; the question's record :=
        ``plan.record``; the store's unit := ``request.composition.unit`` if it had none.
        Return the plan.  If ``plan`` raises (a request of another unit than the store's
        raises :class:`~deniable.exceptions.PrivacyError`), or anything fails, nothing is
        written.  No other spend may change these respondents, this question or the unit
        between the read and the write.
    ``history(keys, question=None) -> History``
        A consistent snapshot (for pricing queries; not a reservation).  ``unit``: the
        unit of the totals, ``None`` while the store holds none, ``UNKNOWN_UNIT`` for totals
        written before stores recorded their unit.
    ``questions() -> dict[str, QuestionRecord]``, ``respondents() -> keys``
        Every question charged, and every respondent charged at least once (in the order
        first charged).
    ``summary(threshold) -> SpentSummary``
        Count, sum, min, max of the totals, and how many are ``>= threshold``.
    ``snapshot() -> LedgerStore``
        An independent copy taken atomically (a database store may return an
        :class:`InMemoryLedgerStore`); pickling and ``BudgetLedger.copy`` use it.

    How a SQL store keeps :meth:`spend` atomic (the survey service's SQLAlchemy store on
    SQLite and PostgreSQL): tables ``respondent(key unique, spent)``, ``charged(key,
    question, unique (key, question))`` and ``question(name primary key, epsilon,
    memoized, charges)``.  In **one transaction**: lock the question row (``SELECT ... FOR
    UPDATE``; insert it first with ``ON CONFLICT DO NOTHING`` so that there is a row to
    lock), insert the missing respondent rows (``ON CONFLICT DO NOTHING``), ``SELECT ...
    FOR UPDATE`` the respondent rows in key order (a fixed order: no deadlock between two
    spends), read which are charged, plan (pure Python, no I/O), write with ``UPDATE`` and
    ``INSERT ... ON CONFLICT DO NOTHING`` into ``charged``, and ``COMMIT``; on any error
    ``ROLLBACK``.  SQLite has no row locks: open the transaction with ``BEGIN IMMEDIATE``
    (one writer at a time).  Under ``SERIALIZABLE`` isolation instead of row locks, retry
    the whole transaction on a serialization failure: the plan is a pure function of what
    was read, so a retry re-reads and re-plans.  Never plan from a read made outside the
    transaction: two spends could both pass the cap.
    """

    def spend(self, keys: Keys, request: SpendRequest) -> SpendPlan: ...

    def history(self, keys: Keys, question: str | None = None) -> History: ...

    def questions(self) -> dict[str, QuestionRecord]: ...

    def respondents(self) -> Keys: ...

    def summary(self, threshold: float) -> SpentSummary: ...

    def snapshot(self) -> LedgerStore: ...


def adopted_unit(stored: str | None, unit: Any) -> str:
    """The unit a store records when told its totals are in ``unit`` (``adopt_unit``)."""
    if not isinstance(unit, str) or not unit or unit == UNKNOWN_UNIT:
        raise ParameterTypeError(
            f"`unit` must name the unit of the store's totals (e.g. 'epsilon' or 'rho'), got "
            f"{unit!r}."
        )
    if stored not in (None, UNKNOWN_UNIT, unit):
        raise ParameterError(
            f"`unit`: this ledger store records its totals in {stored}, got {unit!r}; a "
            "recorded unit is never changed."
        )
    return unit


def _grown(buf: npt.NDArray[Any], size: int) -> npt.NDArray[Any]:
    """``buf`` if it holds ``size`` items, else a zero-padded copy with room to double."""
    if size <= buf.size:
        return buf
    out = np.zeros(max(size, 2 * buf.size, 16), dtype=buf.dtype)
    out[: buf.size] = buf
    return out


class InMemoryLedgerStore:
    """A :class:`LedgerStore` in this process's memory, safe under threads (one lock).

    Keys are mapped to dense indices (``KeyIndex`` (in ``deniable.accounting._keys``): a
    binary search for integer ids, a dict for other keys), and the totals and charged
    flags live in numpy arrays over those indices, grown by doubling.  Memory follows the
    number of respondents charged, never the size of their ids: id ``99_999_999`` costs
    what id ``0`` costs.

    >>> from deniable.accounting import BudgetLedger
    >>> store = InMemoryLedgerStore()
    >>> ledger = BudgetLedger(cap=1.0, store=store)
    >>> ledger.spend(["tok-a", 99_999_999], "smokes", 0.5)
    >>> store.respondents().tolist(), store.nbytes < 1_000
    (['tok-a', 99999999], True)
    """

    __slots__ = ("_charged", "_index", "_lock", "_records", "_spent", "_unit")

    def __init__(self) -> None:
        self._index = KeyIndex()
        # totals by dense index; entries past len(self._index) are 0 (spare capacity)
        self._spent: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        # per question, charged flags by dense index; entries past the array are False
        self._charged: dict[str, npt.NDArray[np.bool_]] = {}
        self._records: dict[str, QuestionRecord] = {}
        self._unit: str | None = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"InMemoryLedgerStore(respondents={len(self._index)}, "
                f"questions={len(self._records)})"
            )

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            n = len(self._index)
            return {
                "index": self._index.copy(),
                "spent": self._spent[:n].copy(),
                "charged": {q: c.copy() for q, c in self._charged.items()},
                "records": dict(self._records),
                "unit": self._unit,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._index = state["index"]
        self._spent = state["spent"]
        self._charged = state["charged"]
        self._records = state["records"]
        # pickled before stores recorded their unit: the totals' unit is not known
        self._unit = state.get("unit", UNKNOWN_UNIT if len(self._index) else None)
        self._lock = threading.RLock()

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (totals, charged flags, the integer key index)."""
        with self._lock:
            flags = sum(c.nbytes for c in self._charged.values())
            return int(self._spent.nbytes + flags + self._index.nbytes)

    def _history(self, found: IdArray, question: str | None) -> History:
        known = found >= 0
        spent = np.zeros(found.size, dtype=np.float64)
        spent[known] = self._spent[found[known]]
        charged = np.zeros(found.size, dtype=np.bool_)
        flags = None if question is None else self._charged.get(question)
        if flags is not None:
            inside = known & (found < flags.size)
            charged[inside] = flags[found[inside]]
        record = None if question is None else self._records.get(question)
        return History(spent, charged, record, self._unit)

    def history(self, keys: Keys, question: str | None = None) -> History:
        with self._lock:
            return self._history(self._index.find(keys), question)

    def spend(self, keys: Keys, request: SpendRequest) -> SpendPlan:
        q = request.question
        with self._lock:  # the read, the plan and the write: one atomic check-and-spend
            found = self._index.find(keys)
            plan = request.plan(self._history(found, q))
            if plan.refused:
                return plan
            # prepare every buffer first; then the index (all or nothing) and plain writes
            where = found[plan.write]
            n = len(self._index)
            top = n + int((where < 0).sum())
            spent = _grown(self._spent, top)
            flags = _grown(self._charged.get(q, np.zeros(0, dtype=np.bool_)), top)
            idx = self._index.add(keys[plan.write], where)
            spent[idx] = plan.new_spent
            flags[idx] = True
            self._spent = spent
            self._charged[q] = flags
            assert plan.record is not None
            self._records[q] = plan.record
            if self._unit is None:
                self._unit = request.composition.unit
            return plan

    def adopt_unit(self, unit: str) -> None:
        """State the unit of totals whose unit was not recorded (a store pickled by an
        earlier version): an explicit statement, to make only if they are in ``unit``.  A
        store whose unit is recorded accepts only that unit again."""
        with self._lock:
            self._unit = adopted_unit(self._unit, unit)

    def questions(self) -> dict[str, QuestionRecord]:
        with self._lock:
            return dict(self._records)

    def respondents(self) -> Keys:
        with self._lock:
            return self._index.keys()

    def summary(self, threshold: float) -> SpentSummary:
        with self._lock:
            s = self._spent[: len(self._index)]
            if not s.size:
                return SpentSummary(0, 0.0, 0.0, 0.0, 0)
            return SpentSummary(
                int(s.size),
                float(s.sum()),
                float(s.min()),
                float(s.max()),
                int(np.count_nonzero(s >= threshold)),
            )

    def snapshot(self) -> InMemoryLedgerStore:
        new = InMemoryLedgerStore.__new__(InMemoryLedgerStore)
        new.__setstate__(self.__getstate__())
        return new
