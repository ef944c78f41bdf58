"""The budget gate in front of a question, :class:`BudgetFilter`: admit, then commit, against
a :class:`~deniable.accounting.BudgetLedger`."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting._ledger import BudgetLedger
from deniable.common import validation as v
from deniable.exceptions import DataError

__all__ = ["BudgetFilter"]


class BudgetFilter:
    """The budget gate a survey service puts in front of a question.

    ``admit`` answers "who may be asked?" without spending; ``commit`` charges those who
    were asked (all or nothing, re-checked, so a race between ``admit`` and ``commit``
    raises rather than over-spends); ``commit_admitted`` does both in one atomic step and
    charges exactly those who can afford the question.  Every spend is one atomic
    check-and-spend in the ledger's store, so concurrent threads never spend past the cap;
    hold ``ledger.lock`` around an ``admit`` ... ``commit`` pair only if a refusal in
    between is not wanted (within one process).

    >>> from deniable.accounting import BudgetLedger
    >>> ledger = BudgetLedger(cap=1.0, n_respondents=4)
    >>> ledger.spend([3], "warm-up", 0.8)
    >>> gate = BudgetFilter(ledger)
    >>> mask = gate.admit([0, 1, 2, 3], 0.5)
    >>> mask.tolist()
    [True, True, True, False]
    >>> gate.commit([0, 1, 2, 3], 0.5, question="q1", mask=mask)
    [0, 1, 2]
    >>> ledger.remaining(3)
    0.2
    """

    __slots__ = ("_ledger",)

    def __init__(self, ledger: BudgetLedger) -> None:
        v.instance("ledger", ledger, BudgetLedger, "a BudgetLedger")
        self._ledger = ledger

    @property
    def ledger(self) -> BudgetLedger:
        """The ledger this filter spends from."""
        return self._ledger

    def admit(
        self,
        respondent_ids: Any,
        question_epsilon: float,
        *,
        question: str | None = None,
        memoized: bool = False,
    ) -> npt.NDArray[np.bool_]:
        """Boolean mask of the respondents whose remaining budget covers the question.

        Nothing is spent.  Without ``question`` every respondent is charged the full
        ``question_epsilon``; with a memoized ``question``, earlier askees replay for free.
        """
        eps = v.positive("question_epsilon", question_epsilon, allow_zero=True, allow_inf=True)
        with self._ledger.lock:
            keys = self._ledger._keys(respondent_ids, unique=False)
            if question is None:
                return self._ledger._can_pay(keys, eps)
            return self._ledger.can_afford(keys, question, eps, memoized=memoized)

    def commit(
        self,
        respondent_ids: Any,
        question_epsilon: float,
        *,
        question: str,
        mask: Any = None,
        memoized: bool = False,
    ) -> list[Any]:
        """Charge the question to ``respondent_ids`` (to those where ``mask`` is True, if
        given); return the keys charged.  Raises :class:`PrivacyError` and charges nobody if
        any of them cannot afford it."""
        keys = self._ledger._keys(respondent_ids)
        if mask is not None:
            m = np.asarray(mask)
            if m.dtype != np.bool_ or m.shape != keys.shape:
                raise DataError(
                    f"`mask` must be a boolean array of shape {keys.shape} (one per "
                    f"respondent), got dtype {m.dtype} and shape {m.shape}."
                )
            keys = keys[m]
        self._ledger.spend(keys, question, question_epsilon, memoized=memoized)
        return list(keys.tolist())

    def commit_admitted(
        self,
        respondent_ids: Any,
        question_epsilon: float,
        *,
        question: str,
        memoized: bool = False,
    ) -> list[Any]:
        """Charge the question to every respondent who can afford it, in one atomic step,
        and return the keys charged (the others are not asked and pay nothing).

        The admission and the spend are one atomic step in the ledger's store (a partial
        spend request), so a concurrent spend, from this process or another sharing the
        store, can neither push a charged respondent past the cap nor make this call raise.

        >>> from deniable.accounting import BudgetLedger
        >>> ledger = BudgetLedger(cap=1.0, n_respondents=3)
        >>> ledger.spend([2], "warm-up", 0.8)
        >>> BudgetFilter(ledger).commit_admitted([0, 1, 2], 0.5, question="q1")
        [0, 1]
        """
        eps = v.positive("question_epsilon", question_epsilon, allow_zero=True, allow_inf=True)
        return list(self._ledger._spend_admitted(respondent_ids, question, eps, memoized).tolist())
