"""What a :class:`~deniable.accounting.BudgetLedger` checks and says: its arguments
(respondent keys, question names, flags, ``fresh`` masks) and the message of a refused spend.

Plumbing of ``_ledger``, kept apart so that the ledger module holds the ledger.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting._keys import Keys, first_repeat, format_key, respondent_keys
from deniable.accounting._pricing import (
    Composition,
    SpendPlan,
    SpendRequest,
    fmt_budget,
    remaining_budget,
)
from deniable.exceptions import DataError, ParameterTypeError, PrivacyError

__all__ = ["checked_keys", "checked_question", "flag", "fresh_mask", "refusal"]


def checked_keys(respondents: Any, n: int | None, *, unique: bool) -> Keys:
    """``respondents`` checked: canonical keys, ids ``0 .. n - 1`` if ``n`` is given,
    distinct if ``unique``."""
    keys = respondent_keys(respondents, unique=False)
    if n is not None and keys.size:
        if keys.dtype == object:  # strings, or integers past int64
            bad = next((k for k in keys.tolist() if not isinstance(k, int)), None)
            if bad is not None:
                raise ParameterTypeError(
                    f"`respondents` must hold integer ids in 0..{n - 1} (this ledger "
                    f"was made with n_respondents={n}; make it without "
                    f"`n_respondents` for any respondent keys), got {format_key(bad)}."
                )
            lo, hi = min(keys.tolist()), max(keys.tolist())
        else:
            lo, hi = int(keys.min()), int(keys.max())
        if lo < 0 or hi >= n:
            raise DataError(
                f"`respondents` must hold ids in 0..{n - 1}, got {lo if lo < 0 else hi}."
            )
    if unique and (rep := first_repeat(keys)) is not None:
        raise DataError(
            f"`respondents` must not repeat a respondent within one spend, got "
            f"{format_key(rep)} twice (ask again in a separate call)."
        )
    return keys


def checked_question(question: Any) -> str:
    """A question name: a non-empty string."""
    if not isinstance(question, str) or not question:
        raise ParameterTypeError(
            f"`question` must be a non-empty string naming the question, got {question!r}."
        )
    return question


def flag(name: str, value: Any) -> bool:
    """A boolean argument (a numpy bool too)."""
    if not isinstance(value, bool | np.bool_):
        raise ParameterTypeError(f"`{name}` must be True or False, got {value!r}.")
    return bool(value)


def fresh_mask(value: Any, size: int) -> npt.NDArray[np.bool_] | None:
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


def refusal(
    keys: Keys,
    r: SpendRequest,
    plan: SpendPlan,
    cap: float,
    tolerance: float,
    composition: Composition,
) -> PrivacyError:
    """The error of a refused spend: the question, its cost, the first respondent who cannot
    pay it and what they have left, and how many cannot."""
    bad = np.flatnonzero(~plan.admitted)
    first = int(bad[0])
    left = float(remaining_budget(plan.spent[first : first + 1], cap, tolerance, composition)[0])
    cost = float(plan.cost[first])
    cost_s, left_s = fmt_budget(cost), fmt_budget(left)
    why = (
        " (an infinite epsilon: a report can reveal the answer, and no finite cap admits it)"
        if math.isinf(cost)
        else ""
    )
    if cost_s == left_s:  # apart only in the last digits: show them, and say why
        cost_s, left_s = repr(cost), repr(left)
        why = (
            " (sums of binary doubles are rounded upward and never pass the cap: "
            "state the cap with a margin)"
        )
    return PrivacyError(
        f"question {r.question!r} costs {composition.unit} {cost_s}{why} but "
        f"respondent {format_key(keys[first])} has only {left_s} left of the cap "
        f"{fmt_budget(cap)} ({bad.size} of {keys.size} respondents would exceed it); "
        "nothing was spent."
    )
