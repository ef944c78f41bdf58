"""What accountants need to know of one unit (a mechanism event or a sampled event).

A *unit* is what :func:`~deniable.accounting._event_tree.expand` yields: a mechanism event
(one use; the number of uses is beside it), a sampled event, or :class:`NonPrivate`.  These
functions read its pure epsilon, its delta, its Gaussian ``mu``, whether it costs nothing or
reveals everything, and whether a neighbouring relation allows it.
"""

from __future__ import annotations

import math
from typing import Any

from deniable.accounting._event_tree import (
    PoissonSampled,
    SampledWithoutReplacement,
    inner_uses,
)
from deniable.accounting._events import (
    Channel,
    DiscreteLaplace,
    EpsilonDelta,
    Gaussian,
    NonPrivate,
    RandomizedResponse,
)
from deniable.accounting._pairs import (
    MAX_PAIR_USES,
    Pair,
    approx_pair,
    discrete_laplace_pair,
    rr_pair,
)
from deniable.accounting._safety import up
from deniable.accounting._sampling import amplified_epsilon
from deniable.exceptions import ParameterError

__all__ = [
    "RELATIONS",
    "approx_parts",
    "base_pair",
    "gaussian_mu",
    "is_blatant",
    "is_free",
    "is_gaussian",
    "rate",
    "relation_problem",
    "sampled_mu",
]

#: The neighbouring relations an accountant reads events under.
RELATIONS = ("replace", "add_remove")


def rate(unit: Any) -> float:
    """The chance that a record is in the sample of a sampled unit (1 for any other)."""
    if isinstance(unit, PoissonSampled):
        return unit.probability
    if isinstance(unit, SampledWithoutReplacement):
        return unit.fraction
    return 1.0


def is_gaussian(unit: Any) -> bool:
    """A Gaussian event, or a sampled one: no pure-DP epsilon."""
    if isinstance(unit, PoissonSampled | SampledWithoutReplacement):
        inner, _ = inner_uses(unit)
        return isinstance(inner, Gaussian)
    return isinstance(unit, Gaussian)


def gaussian_mu(unit: Any) -> float:
    """``mu`` of a Gaussian event."""
    assert isinstance(unit, Gaussian)
    return unit.mu


def sampled_mu(unit: Any) -> float:
    """``mu`` of the Gaussian a sampled unit runs, its uses on one sample folded in
    (``sqrt(uses) mu``: Gaussians on one sample compose into one)."""
    inner, uses = inner_uses(unit)
    assert isinstance(inner, Gaussian)
    return math.sqrt(uses) * inner.mu if inner.mu < math.inf else math.inf


def approx_parts(unit: Any) -> tuple[float, float]:
    """``(epsilon, delta)`` of one use (pure events: ``delta = 0``; Gaussian kinds:
    ``epsilon = inf``); a sampled unit's are amplified (``_sampling``), its inner uses on
    one sample composed by basic composition first."""
    if isinstance(unit, NonPrivate):
        return math.inf, 0.0
    if isinstance(unit, PoissonSampled | SampledWithoutReplacement):
        inner, uses = inner_uses(unit)
        if inner is None or uses == 0:
            return 0.0, 0.0
        eps, dlt = approx_parts(inner)
        q = rate(unit)
        total_eps = up(eps * uses) if math.isfinite(eps) else eps
        total_dlt = min(1.0, up(dlt * uses)) if dlt else 0.0
        return amplified_epsilon(total_eps, q), min(up(q * total_dlt), total_dlt)
    if isinstance(unit, EpsilonDelta):
        return unit.epsilon, unit.delta
    return unit.pure_epsilon, 0.0


def is_free(unit: Any, count: int) -> bool:
    """The unit costs nothing: no use, no loss, a sample that never holds the record."""
    if count == 0:
        return True
    if isinstance(unit, NonPrivate):
        return False
    if isinstance(unit, PoissonSampled | SampledWithoutReplacement):
        inner, uses = inner_uses(unit)
        if inner is None:
            return False  # a structure no accountant reads: refused, never free
        return rate(unit) == 0.0 or uses == 0 or is_free(inner, uses)
    if isinstance(unit, Gaussian):
        return unit.mu == 0
    eps, dlt = approx_parts(unit)
    return eps == 0 and dlt == 0


def is_blatant(unit: Any) -> bool:
    """The unit may reveal the record with certainty: no guarantee at all."""
    if isinstance(unit, NonPrivate):
        return True
    if isinstance(unit, PoissonSampled | SampledWithoutReplacement):
        inner, uses = inner_uses(unit)
        return inner is not None and rate(unit) > 0 and uses > 0 and is_blatant(inner)
    if isinstance(unit, Gaussian):
        return unit.mu == math.inf
    return approx_parts(unit)[0] == math.inf


def relation_problem(unit: Any, relation: str) -> str | None:
    """Why ``relation`` cannot read ``unit`` (``None``: it can)."""
    if isinstance(unit, PoissonSampled) and relation != "add_remove":
        return (
            "Poisson sampling amplifies under the 'add_remove' relation (Balle, Barthe & "
            "Gaboardi 2018, Thm 8); use an accountant with relation='add_remove'"
        )
    if isinstance(unit, SampledWithoutReplacement) and relation != "replace":
        return (
            "sampling without replacement amplifies under the 'replace' relation (Balle, "
            "Barthe & Gaboardi 2018, Thm 9); use an accountant with relation='replace'"
        )
    inner = (
        inner_uses(unit)[0]
        if isinstance(unit, PoissonSampled | SampledWithoutReplacement)
        else unit
    )
    if isinstance(inner, RandomizedResponse | Channel) and relation != "replace":
        return (
            "randomized response is a guarantee for replacing one answer (relation "
            "'replace'); under 'add_remove' use PureEpsilon(epsilon) for a mechanism that "
            "is epsilon-DP for adding or removing a record"
        )
    if isinstance(unit, PoissonSampled | SampledWithoutReplacement) and inner is None:
        return "a sampled event must hold one mechanism event (composed or sampled again: no)"
    return None


def base_pair(inner: Any, uses: int) -> Pair:
    """A finite pair dominating ``uses`` uses of the pure or approximate-DP mechanism event
    ``inner`` on one sample (``_pairs``): its own pair where one is known (k-ary RR once,
    discrete Laplace once, the ``(eps, delta)`` pair), else binary randomized response at
    its epsilon, which dominates every pure-DP mechanism (Kairouz, Oh & Viswanath 2015,
    Thm 3.3)."""
    eps, dlt = approx_parts(inner)
    if uses > MAX_PAIR_USES:
        raise ParameterError(
            f"`count` of the event a sampled event runs must be in [0, {MAX_PAIR_USES}] (its "
            f"uses on one sample are composed outcome by outcome), got {uses}."
        )
    if isinstance(inner, RandomizedResponse):
        return rr_pair(eps, k=inner.k, uses=uses)
    if isinstance(inner, DiscreteLaplace) and uses == 1:
        return discrete_laplace_pair(inner.scale, inner.sensitivity)
    if dlt > 0:
        return approx_pair(eps, dlt, uses=uses)
    return rr_pair(eps, uses=uses)
