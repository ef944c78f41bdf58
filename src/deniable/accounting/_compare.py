"""The questionnaire view: every composition method side by side."""

from __future__ import annotations

from collections.abc import Iterable

from deniable.accounting._accountant import PrivacyAccountant
from deniable.accounting._composition import CompositionTable
from deniable.accounting._events import RandomizedResponse
from deniable.exceptions import ParameterError

__all__ = ["compare_composition"]


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
    eps = list(epsilons)
    cnt = [1] * len(eps) if counts is None else list(counts)
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
        desc = f"{n} question{'' if n == 1 else 's'} at epsilon = {eps[0]:g}"
    elif eps:
        desc = f"{n} questions, epsilon {min(eps):g} to {max(eps):g}"
    else:
        desc = "no questions"
    return acct.compare(delta, desc)
