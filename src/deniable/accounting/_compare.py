"""The questionnaire view: every composition method side by side (:func:`compare_composition`),
or one of them (:func:`compose_questions`)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from deniable.accounting._accountant import COMPOSITION_METHODS, PrivacyAccountant
from deniable.accounting._composition import CompositionRow, CompositionTable, sequence
from deniable.accounting._events import RandomizedResponse
from deniable.accounting._rdp import check_delta
from deniable.common import validation as v
from deniable.exceptions import ParameterError

__all__ = ["QUESTIONNAIRE_METHODS", "compare_composition", "compose_questions"]

#: The methods of :func:`compose_questions`: ``all`` side by side, or one method that
#: applies to randomized-response questions.
QUESTIONNAIRE_METHODS = ("all", *(m for m in COMPOSITION_METHODS if m not in ("gdp", "best")))

#: What each method is, printed beside its total when it is asked for alone.
_NOTES = {
    "basic": "sum of epsilons",
    "advanced": "Dwork-Rothblum-Vadhan 2010, min with basic",
    "kov": "Kairouz-Oh-Viswanath 2015, Thm 3.4/3.5",
    "pld": "pessimistic PLD (losses rounded up)",
    "rdp": "Renyi curves summed, CKS 2020 conversion",
    "zcdp": "rho summed (eps tanh(eps/2) each), CKS 2020 conversion",
}


def _show(epsilon: float) -> str:
    """An epsilon as the description states it: ``0.5``, ``∞``."""
    return "∞" if epsilon == math.inf else f"{epsilon:g}"


def _questions(epsilons: Any, counts: Any) -> tuple[list[Any], list[Any]]:
    """The questionnaire's epsilons and counts as lists (each value is checked where the
    events are made)."""
    eps = sequence("epsilons", epsilons)
    return eps, [1] * len(eps) if counts is None else sequence("counts", counts, "integers")


def _accountant(
    eps: list[float], cnt: list[int], k: int, step: float
) -> tuple[PrivacyAccountant, str]:
    if len(cnt) != len(eps):
        raise ParameterError(
            f"`counts` must have one value per epsilon ({len(eps)}), got {len(cnt)}."
        )
    acct = PrivacyAccountant(
        tuple(RandomizedResponse(e, count=c, k=k) for e, c in zip(eps, cnt, strict=True)),
        step=step,
    )
    n = sum(cnt)
    if eps and all(e == eps[0] for e in eps):
        desc = f"{n} question{'' if n == 1 else 's'} at epsilon = {_show(eps[0])}"
    elif eps:
        desc = f"{n} questions, epsilon {_show(min(eps))} to {_show(max(eps))}"
    else:
        desc = "no questions"
    return acct, desc


def compare_composition(
    epsilons: Iterable[float],
    delta: float = 1e-6,
    *,
    counts: Iterable[int] | None = None,
    k: int = 2,
    step: float = 1e-4,
) -> CompositionTable:
    """All composition methods side by side for a questionnaire of randomized-response
    questions (one per epsilon, each asked ``counts[i]`` times, ``k`` categories).

    >>> table = compare_composition([0.5] * 10, delta=1e-6)
    >>> table["basic"], table["optimal"] <= min(table["rdp"], table["zcdp"], table["kov"])
    (5.0, True)
    """
    eps, cnt = _questions(epsilons, counts)
    acct, desc = _accountant(eps, cnt, k, step)
    return acct.compare(delta, desc)


def compose_questions(
    epsilons: Iterable[float],
    delta: float = 1e-6,
    *,
    counts: Iterable[int] | None = None,
    k: int = 2,
    method: str = "all",
    step: float = 1e-4,
) -> CompositionTable:
    """The total epsilon at ``delta`` of a questionnaire of randomized-response questions
    (one per epsilon, each asked ``counts[i]`` times, ``k`` categories) by ``method``
    (:data:`QUESTIONNAIRE_METHODS`; ``all``: every method, :func:`compare_composition`).

    The table records the questionnaire (``epsilons``, ``counts``, ``k``, ``method``) and
    whether the ``optimal`` value is exact here (``optimal_is_exact``); it is what
    ``deniable privacy compose`` prints.

    >>> t = compose_questions([0.5] * 10, method="basic")
    >>> t["basic"], t.to_dict()["questions"]
    (5.0, 10)
    """
    eps, cnt = _questions(epsilons, counts)
    m = v.choice("method", method, QUESTIONNAIRE_METHODS)
    acct, desc = _accountant(eps, cnt, k, step)
    if m == "all":
        table = acct.compare(delta, desc)
    else:
        d = check_delta(delta)
        value = acct.epsilon(d, m)
        if m == "optimal":
            note = "exact" if acct.optimal_is_exact else "not exact here: pessimistic PLD"
        else:
            note = _NOTES[m]
        table = CompositionTable(d, (CompositionRow(m, value, note),), desc)
    return replace(table, epsilons=tuple(eps), counts=tuple(cnt), k=k, method=m,
                   optimal_is_exact=acct.optimal_is_exact)  # fmt: skip
