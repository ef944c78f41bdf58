"""The adaptive choice for several attributes per device: the protocol (SPL, SMP, RS+FD) and
each attribute's oracle with the smallest exact variance for the domains ``ks``, a device
budget ``epsilon`` and ``n`` devices."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deniable.common import validation as v
from deniable.designs import MAX_COUNT
from deniable.exceptions import DeniableError, ParameterError
from deniable.oracles._base import check_epsilon
from deniable.oracles._multi import (
    _OUE_Z,
    MULTI_ORACLES,
    MultiAttribute,
    check_ks,
    effective_support,
)
from deniable.oracles._registry import FREQUENCY_ORACLES
from deniable.results import Result, Table

__all__ = ["MULTI_CRITERION", "MultiChoice", "choose_multi"]

#: What :func:`choose_multi` minimizes.
MULTI_CRITERION = (
    "the exact variance of a value's estimate at the uniform distribution, averaged over the "
    "values of every attribute (each attribute's oracle the one of least variance under the "
    "protocol)"
)

#: Protocols in the order ties are broken: one report per device first.
_ORDER = ("smp", "rs+fd", "spl")
_TIE = 1e-9
_COLUMNS = ("protocol", "oracles", "variance", "SE", "vs best")


@dataclass(frozen=True)
class MultiChoice(Result):
    """The result of :func:`choose_multi`: the chosen ``multi``
    (:class:`~deniable.oracles.MultiAttribute`), the ``reason`` and one row per protocol in
    :attr:`candidates`."""

    epsilon: float
    ks: tuple[int, ...]
    n: int
    multi: MultiAttribute
    variance: float
    reason: str
    candidates: Table = field(repr=False)

    def table(self) -> Table:
        """The protocols (their oracles, mean variance per value and SE at ``n``, relative
        variance) with the reason below."""
        c = self.candidates
        return Table(c.columns, c.rows, title=c.title, notes=(*c.notes, self.reason))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the request, the chosen protocol and oracles, the reason and rows."""
        return {
            "epsilon": self.epsilon,
            "ks": list(self.ks),
            "n": self.n,
            "protocol": self.multi.protocol,
            "oracles": list(self.multi.oracle_names),
            "criterion": MULTI_CRITERION,
            "reason": self.reason,
            "candidates": self.candidates.to_json(),
        }


def _mean_variance(p: float, q: float, k: int, n: int) -> float:
    """The exact variance of a value's estimate averaged over ``k`` values at uniform."""
    return (q * (1 - q) + (p * (1 - p) - q * (1 - q)) / k) / (n * (p - q) ** 2)


def choose_multi(ks: Sequence[int], epsilon: float, n: int) -> MultiChoice:
    """The protocol and oracles for ``d`` attributes of domains ``ks`` at a device budget
    ``epsilon`` with the smallest exact variance from ``n`` devices (:data:`MULTI_CRITERION`).

    For each protocol every attribute takes the oracle of
    :data:`~deniable.oracles.MULTI_ORACLES` (and OUE-z for RS+FD) of least variance with
    its ``(p', q')``
    (:class:`~deniable.oracles.MultiAttribute`); the protocols are ranked by the variance
    averaged over every value of every attribute.  Ties go to SMP, then RS+FD, then SPL.

    >>> choice = choose_multi([2, 2], 4.0, n=10_000)   # two yes/no questions, high epsilon
    >>> choice.multi.protocol, choice.multi.oracle_names
    ('spl', ('grr', 'grr'))
    >>> choose_multi([2, 2], 0.5, n=10_000).multi.protocol   # low epsilon: sample one
    'smp'
    """
    kk = check_ks(ks)
    eps = check_epsilon(epsilon)
    size = v.integer("n", n, minimum=1, maximum=MAX_COUNT)
    d = len(kk)
    built: dict[tuple[str, float, int], Any] = {}
    scored: list[tuple[str, tuple[str, ...], float]] = []
    for protocol in _ORDER:
        per = eps / d if protocol == "spl" else eps
        names = (*MULTI_ORACLES, _OUE_Z) if protocol == "rs+fd" else MULTI_ORACLES
        chosen, total = [], 0.0
        for k in kk:
            best: tuple[float, str] | None = None
            for name in names:
                cache = ("oue" if name == _OUE_Z else name, per, k)
                if cache not in built:
                    try:
                        built[cache] = FREQUENCY_ORACLES[cache[0]].from_epsilon(per, k)
                    except DeniableError:  # k or epsilon beyond this oracle's range
                        built[cache] = None
                oracle = built[cache]
                if oracle is None:
                    continue
                p, q = effective_support(protocol, name, oracle, d)
                var = _mean_variance(p, q, k, size)
                if best is None or var < best[0] * (1 - _TIE):
                    best = (var, name)
            if best is None:
                raise ParameterError(f"no oracle takes k = {k} at epsilon = {per:g}.")
            chosen.append(best[1])
            total += best[0]
        scored.append((protocol, tuple(chosen), total / d))
    least = min(s[2] for s in scored)
    protocol, names_chosen, var = next(s for s in scored if s[2] <= least * (1 + _TIE))
    ranked = sorted(scored, key=lambda s: s[2])
    rows = tuple((p, ", ".join(o), x, math.sqrt(x), x / var) for p, o, x in ranked)
    runner = min((s for s in scored if s[0] != protocol), key=lambda s: s[2])
    reason = (
        f"{protocol.upper()} ({', '.join(names_chosen)}) has the smallest exact variance for "
        f"ks = {list(kk)}, epsilon = {eps:g}: {var:.4g} per value at n = {size}; "
        f"{runner[0].upper()} is next, its variance {runner[2] / var - 1:.2%} larger. Ranked by "
        f"{MULTI_CRITERION}."
    )
    table = Table(_COLUMNS, rows, title=f"protocols for ks = {list(kk)}, epsilon = {eps:g}")
    multi = MultiAttribute(kk, eps, protocol=protocol, oracle=names_chosen)
    return MultiChoice(eps, kk, size, multi, var, reason, table)
