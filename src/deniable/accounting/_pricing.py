"""Ledger pricing: what a question costs each respondent, and whether they can afford it.

Pure functions of a respondent's history, vectorized over respondents (numpy arrays), with
no state and no storage: a :class:`~deniable.accounting.LedgerStore` reads the history,
``plan_spend`` decides, and the store writes the plan, all in one atomic step.

Pricing a question ``q`` of epsilon ``eps`` for one respondent, by its history:

==================================================  =========================================
history                                             cost
==================================================  =========================================
never charged for ``q``                             ``charge(eps)``
charged before, ``q`` not memoized                  ``charge(eps)`` (a new release)
charged before, ``q`` memoized, report replayed     ``0`` (the same report, post-processing)
charged before, ``q`` memoized, report drawn anew   ``charge(eps)`` (``fresh``: a new release)
==================================================  =========================================

``charge`` and the sum of charges are the *composition* rule, and a rule prices through the
accountant of its method (``_accountants``: one composition abstraction for the accountant
and the ledger): a question of epsilon ``eps`` is the event ``PureEpsilon(eps)``, its charge
is the accountant's ``price`` of that event and totals add by the accountant's ``total``.
The default, :class:`PureEpsilonComposition`, is basic composition of pure epsilon
(:class:`~deniable.accounting.BasicAccountant`; Dwork, McSherry, Nissim & Smith 2006; Dwork
& Roth 2014, Thm 3.14): a charge is the question's epsilon and a respondent's total is the
sum of the charges, whatever the dependence between the answers.
Sums are rounded upward (:func:`~deniable.accounting._exact_sum.add_up`, TwoSum), so a
stored total is never below the exact sum, and a respondent is admitted while
``total(spent, cost) <= limit`` with ``limit = cap * (1 + tolerance)``.  Another rule plugs in
as an object with the same three members (``unit``, ``charge``, ``total``); it must never
charge less than the privacy loss it accounts for.  :class:`ZCDPComposition` is the second
rule: zero-concentrated DP (:class:`~deniable.accounting.ZCDPAccountant`), whose cap and
totals are in ``rho``.

**One unit per store.**  A store's totals are in the unit of the rule that charged them
(``epsilon`` or ``rho``), and numbers of two units never add: the store records its unit at
its first spend (:attr:`History.unit`) and :func:`plan_spend` refuses a request of another
unit (:func:`check_unit`), so two ledgers of different rules cannot share one store.

This module is pure accounting: it never imports a mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from deniable.accounting._accountants import BasicAccountant
from deniable.accounting._events import PureEpsilon
from deniable.accounting._rdp_accountants import ZCDPAccountant
from deniable.exceptions import ParameterError, PrivacyError

__all__ = [
    "UNKNOWN_UNIT",
    "Composition",
    "History",
    "PureEpsilonComposition",
    "QuestionRecord",
    "SpendPlan",
    "SpendRequest",
    "ZCDPComposition",
    "admitted",
    "check_unit",
    "plan_spend",
    "question_costs",
    "remaining_budget",
    "spend_limit",
]

Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class QuestionRecord:
    """What the ledger knows about one question: its epsilon, whether it is memoized, and
    how many respondents have been charged for it (``charges``; repeats of a
    non-memoized question count again)."""

    question: str
    epsilon: float
    memoized: bool
    charges: int


def fmt_budget(x: float) -> str:
    """A budget as messages show it: 12 significant digits, ``inf`` spelled out."""
    return "inf" if math.isinf(x) else f"{x:.12g}"


@runtime_checkable
class Composition(Protocol):
    """A composition rule: how one release of a question is charged, and how charges add.

    ``unit`` names what the cap and the totals measure (``"epsilon"``); ``charge(epsilon)``
    is what one release of an ``epsilon``-LDP question adds to a respondent's total (never
    below its true cost in that unit); ``total(spent, cost)`` adds charges, elementwise,
    never below the exact sum.  A respondent's total must bound their privacy loss under the
    rule's composition theorem, whatever the dependence between the questions.
    """

    @property
    def unit(self) -> str: ...

    def charge(self, epsilon: float) -> float: ...

    def total(self, spent: npt.ArrayLike, cost: npt.ArrayLike) -> Floats: ...


class _AccountantRule:
    """A composition rule that prices through its ``accountant``: the unit is the
    accountant's, a question of epsilon ``eps`` is charged the accountant's ``price`` of
    ``PureEpsilon(eps)``, and charges add by the accountant's ``total``."""

    accountant: ClassVar[type[BasicAccountant] | type[ZCDPAccountant]]

    @property
    def unit(self) -> str:
        return self.accountant.unit

    def charge(self, epsilon: float) -> float:
        return self.accountant.price(PureEpsilon(epsilon))

    def total(self, spent: npt.ArrayLike, cost: npt.ArrayLike) -> Floats:
        return self.accountant.total(spent, cost)


@dataclass(frozen=True)
class PureEpsilonComposition(_AccountantRule):
    """Basic composition of pure epsilon: a release of an ``eps``-LDP question costs
    ``eps``, and a respondent's questionnaire is ``sum(eps)``-LDP (Dwork & Roth 2014,
    Thm 3.14).  Sums are rounded upward (TwoSum), never below the exact sum.

    >>> rule = PureEpsilonComposition()
    >>> rule.unit, rule.charge(0.5), rule.total([0.5], [0.25]).tolist()
    ('epsilon', 0.5, [0.75])
    """

    #: The accountant this rule prices through.
    accountant = BasicAccountant


@dataclass(frozen=True)
class ZCDPComposition(_AccountantRule):
    """Composition in zero-concentrated DP: the cap and the totals are in ``rho``.

    A release of an ``eps``-LDP question is ``rho = eps * tanh(eps / 2)``-zCDP
    (:func:`~deniable.accounting.pure_to_zcdp`, rounded up; ``eps^2 / 2`` is the classic
    bound of Bun & Steinke 2016, Prop. 1.4), the rhos of adaptively composed releases add
    (Bun & Steinke 2016, Lemma 2.3), and a respondent whose total is at most ``cap`` is
    ``(zcdp_epsilon(cap, delta), delta)``-DP for every ``delta``
    (:func:`~deniable.accounting.zcdp_epsilon`).  Many small questions then fit under a
    stated ``(epsilon, delta)`` where basic composition of pure epsilon admits few; the price
    is a ``delta > 0`` in the guarantee.  Sums are rounded upward (TwoSum).

    >>> rule = ZCDPComposition()
    >>> rule.unit, round(rule.charge(1.0), 6)
    ('rho', 0.462117)
    """

    #: The accountant this rule prices through.
    accountant = ZCDPAccountant


#: The default rule of every ledger.
PURE_EPSILON = PureEpsilonComposition()


def spend_limit(cap: float, tolerance: float) -> float:
    """The largest total admitted: ``cap`` (strict, ``tolerance = 0``) or
    ``cap * (1 + tolerance)``."""
    return cap if tolerance == 0 else cap * (1 + tolerance)


def question_costs(
    charge: float,
    charged: Mask,
    *,
    memoized: bool,
    fresh: Mask | None = None,
) -> Floats:
    """What one asking of a question costs each respondent, from their history.

    ``charged[i]``: respondent ``i`` was charged for this question before.  The cost is
    ``charge`` except for memoized replays (``memoized`` and ``charged[i]`` and not
    ``fresh[i]``), which cost 0; ``fresh[i]`` marks a report drawn anew (a new release).

    >>> question_costs(0.5, np.array([True, False, True]), memoized=True,
    ...                fresh=np.array([False, False, True])).tolist()
    [0.0, 0.5, 0.5]
    >>> question_costs(0.5, np.array([True, False]), memoized=False).tolist()
    [0.5, 0.5]
    """
    cost = np.full(charged.shape, charge, dtype=np.float64)
    if memoized:
        replay = charged if fresh is None else charged & ~fresh
        cost[replay] = 0.0
    return cost


def admitted(
    spent: Floats,
    cost: Floats,
    limit: float,
    composition: Composition = PURE_EPSILON,
) -> Mask:
    """Which respondents can pay ``cost``: ``cost == 0`` or ``total(spent, cost) <= limit``.

    The total is never below the exact sum, so floating point never admits a spend past the
    limit; an infinite cost is refused under every finite limit.

    >>> admitted(np.array([0.2, 0.2, 1.0]), np.array([0.1, 0.1, 0.0]), 0.3).tolist()
    [False, False, True]
    >>> admitted(np.array([0.2]), np.array([0.1]), 0.3 + 1e-12).tolist()
    [True]
    """
    ok: Mask = (cost == 0) | (composition.total(spent, cost) <= limit)
    return ok


def remaining_budget(
    spent: Floats,
    cap: float,
    tolerance: float = 0.0,
    composition: Composition = PURE_EPSILON,
) -> Floats:
    """The largest charge each respondent can still pay: ``cap - spent``, never below 0,
    rounded down so that a charge of exactly this value is admitted.

    >>> remaining_budget(np.array([0.2, 1.5]), 1.0).tolist()
    [0.8, 0.0]
    """
    out = np.maximum(cap - spent, 0.0)
    over = composition.total(spent, out) > spend_limit(cap, tolerance)
    out[over] = np.maximum(np.nextafter(out[over], 0.0), 0.0)
    return out


#: The unit of a store whose totals were written before stores recorded their unit.
UNKNOWN_UNIT = "unknown"


@dataclass(frozen=True)
class History:
    """What a store knows of some respondents before a spend: their totals (``spent``),
    whether each was charged for the question before (``charged``), the question's record
    (``None`` if never charged), and the unit of the store's totals (``unit``: ``None``
    while the store holds none, ``"unknown"`` for totals of a unit not recorded)."""

    spent: Floats
    charged: Mask
    record: QuestionRecord | None
    unit: str | None = None


def check_unit(stored: str | None, asked: str) -> None:
    """Refuse to add a total in ``asked`` to a store whose totals are in ``stored``
    (:class:`~deniable.exceptions.PrivacyError` naming both): rho and epsilon are not one
    number.  ``stored`` ``None``: the store holds no totals yet, any unit may begin.

    >>> check_unit("epsilon", "rho")
    Traceback (most recent call last):
    ...
    deniable.exceptions.PrivacyError: this ledger store keeps its totals in epsilon (recorded
    at its first spend); a ledger whose composition counts rho would add rho to epsilon as one
    number: refused (give that ledger a store of its own, or the store's composition).
    """
    if stored is None or stored == asked:
        return
    if stored == UNKNOWN_UNIT:
        raise PrivacyError(
            "this ledger store holds totals written before stores recorded their unit, so a "
            f"ledger whose composition counts {asked} cannot add to them: refused.  If they "
            f"are in {asked}, say so once with store.adopt_unit({asked!r})."
        )
    raise PrivacyError(
        f"this ledger store keeps its totals in {stored} (recorded at its first spend); a "
        f"ledger whose composition counts {asked} would add {asked} to {stored} as one "
        "number: refused (give that ledger a store of its own, or the store's composition)."
    )


@dataclass(frozen=True)
class SpendRequest:
    """One spend, as a store receives it: charge ``question`` (``epsilon``, ``memoized``;
    ``fresh`` marks reports drawn anew) to every respondent, under ``limit``.

    All or nothing by default; with ``partial=True`` the respondents who can afford it are
    charged and the others skipped (a budget filter's ``commit_admitted``).
    """

    question: str
    epsilon: float
    memoized: bool
    limit: float
    fresh: Mask | None = None
    partial: bool = False
    composition: Composition = PURE_EPSILON

    def plan(self, history: History) -> SpendPlan:
        """``plan_spend`` of this request."""
        return plan_spend(self, history)


@dataclass(frozen=True)
class SpendPlan:
    """The decision on a :class:`SpendRequest`: the cost and admission of every respondent;
    ``refused`` (write nothing) or which to charge (``write``), their new totals
    (``new_spent``, one per written respondent) and the question's record after the spend."""

    spent: Floats
    cost: Floats
    admitted: Mask
    refused: bool
    write: Mask
    new_spent: Floats
    record: QuestionRecord | None


def check_record(
    question: str, epsilon: float, memoized: bool, record: QuestionRecord | None
) -> None:
    """A question name stands for one mechanism: its epsilon and memoization are fixed at
    its first charge.  A record that charged nobody (a partial spend that admitted no one)
    released nothing and binds nothing: a survey's new version may still change it."""
    if (
        record is not None
        and record.charges > 0
        and (record.epsilon != epsilon or record.memoized != memoized)
    ):
        raise ParameterError(
            f"question {question!r} was first charged with epsilon "
            f"{fmt_budget(record.epsilon)}, memoized={record.memoized}; a question name stands "
            f"for one mechanism, got epsilon {fmt_budget(epsilon)}, memoized={memoized} (use a "
            "new name)."
        )


def plan_spend(request: SpendRequest, history: History) -> SpendPlan:
    """Decide a spend from the history: pure, deterministic, so a store may retry it.

    Raises :class:`~deniable.exceptions.PrivacyError` if the store's totals are in another
    unit than the request's composition, :class:`~deniable.exceptions.ParameterError` if
    the question was first charged with another epsilon or memoization.  Every value to
    write is computed here, before the store writes anything.
    """
    r = request
    check_unit(history.unit, r.composition.unit)
    check_record(r.question, r.epsilon, r.memoized, history.record)
    rule = r.composition
    cost = question_costs(
        rule.charge(r.epsilon), history.charged, memoized=r.memoized, fresh=r.fresh
    )
    # as admitted(), keeping the totals: a zero cost leaves a total exactly as it was
    totals = rule.total(history.spent, cost)
    ok = (cost == 0) | (totals <= r.limit)
    if not r.partial and not ok.all():
        nothing = np.zeros(ok.shape, dtype=np.bool_)
        return SpendPlan(history.spent, cost, ok, True, nothing, cost[:0], history.record)
    new_spent = np.where(cost == 0, history.spent, totals)
    write = ok if r.partial else np.ones(ok.shape, dtype=np.bool_)
    paid = cost
    if r.partial:
        new_spent, paid = new_spent[write], cost[write]
    # a free question (epsilon 0) counts every respondent asked; otherwise those who paid
    charges = int(np.count_nonzero(paid > 0)) if r.epsilon > 0 else int(paid.size)
    before = 0 if history.record is None else history.record.charges
    record = QuestionRecord(r.question, r.epsilon, r.memoized, before + charges)
    return SpendPlan(history.spent, cost, ok, False, write, new_spent, record)
