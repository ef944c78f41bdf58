"""Privacy measures as value objects: pure, approximate, zero-concentrated, Renyi and Gaussian DP.

Each measure is a frozen dataclass validated in ``__post_init__``; an infinite parameter
(``epsilon = inf``, ``rho = inf``, ``mu = inf``) is allowed and means "no guarantee", so a
mechanism with a deterministic path is never given a finite value.  Conversions between them
live in :mod:`deniable.accounting`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from deniable.common import validation as v
from deniable.exceptions import ParameterError

__all__ = ["GDP", "RDP", "ZCDP", "ApproxDP", "PureDP"]

_M = TypeVar("_M")


def _nonnegative_fields(measure: Any) -> None:
    """``__post_init__`` of a measure whose every field is a number in ``[0, inf]``."""
    for f in fields(measure):
        value = v.positive(f.name, getattr(measure, f.name), allow_zero=True, allow_inf=True)
        object.__setattr__(measure, f.name, value)


def _add_fields(measure: _M, other: _M) -> _M:
    """``__add__`` of a measure whose guarantees add field by field under composition."""
    if type(other) is not type(measure):
        not_implemented: _M = NotImplemented
        return not_implemented
    names = [f.name for f in fields(measure)]  # type: ignore[arg-type]
    added: _M = type(measure)(*(getattr(measure, n) + getattr(other, n) for n in names))
    return added


class _NonnegativeMeasure:
    """A measure whose every field is a number in ``[0, inf]`` (checked when it is made)."""

    __slots__ = ()

    def __post_init__(self) -> None:
        _nonnegative_fields(self)


class _AdditiveMeasure(_NonnegativeMeasure):
    """A measure whose guarantees also add field by field under composition."""

    __slots__ = ()

    __add__ = _add_fields


@dataclass(frozen=True)
class PureDP(_AdditiveMeasure):
    """Pure ``epsilon``-differential privacy: ``P[M(x) in S] <= e^epsilon P[M(x') in S]``.

    ``epsilon`` is in ``[0, inf]``; ``inf`` is "no guarantee".  Adding two guarantees is basic
    composition (Dwork, McSherry, Nissim & Smith 2006).

    >>> PureDP(0.5) + PureDP(0.25)
    PureDP(epsilon=0.75)
    """

    epsilon: float


@dataclass(frozen=True)
class ApproxDP:
    """Approximate ``(epsilon, delta)``-DP: ``P[M(x) in S] <= e^epsilon P[M(x') in S] + delta``.

    ``epsilon`` in ``[0, inf]``, ``delta`` in ``[0, 1)`` (``delta = 1`` holds for every mechanism
    and is not a guarantee).  Dwork, Kenthapadi, McSherry, Mironov & Naor (2006).

    >>> ApproxDP(1.0, 1e-6)
    ApproxDP(epsilon=1.0, delta=1e-06)
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", v.positive("epsilon", self.epsilon, allow_zero=True, allow_inf=True)
        )
        object.__setattr__(self, "delta", v.probability("delta", self.delta, high_open=True))


@dataclass(frozen=True)
class ZCDP(_AdditiveMeasure):
    """``rho``-zero-concentrated DP: ``D_alpha(M(x) || M(x')) <= rho * alpha`` for all
    ``alpha > 1`` (Bun & Steinke 2016).  ``rho`` in ``[0, inf]``; guarantees add under
    composition.

    >>> ZCDP(0.1) + ZCDP(0.2)
    ZCDP(rho=0.30000000000000004)
    """

    rho: float


@dataclass(frozen=True)
class RDP:
    """Renyi DP at a finite set of orders: ``D_alpha(M(x) || M(x')) <= epsilons[i]`` at
    ``alpha = alphas[i]`` (Mironov 2017).

    The representation is a *grid*: ``alphas`` strictly increasing, each in ``(1, inf]``;
    ``epsilons`` in ``[0, inf]``, one per order.  A curve known in closed form is sampled with
    :meth:`from_curve`; conversions that can use the whole curve (zCDP, randomized response)
    minimise over a continuous order instead (see ``_conversions``).  Guarantees on the same
    grid add under composition.

    >>> RDP((2.0, 4.0), (0.1, 0.3)) + RDP((2.0, 4.0), (0.1, 0.1))
    RDP(alphas=(2.0, 4.0), epsilons=(0.2, 0.4))
    """

    alphas: tuple[float, ...]
    epsilons: tuple[float, ...]

    def __post_init__(self) -> None:
        alphas = tuple(v.real("alphas", a) for a in _as_tuple("alphas", self.alphas))
        epsilons = tuple(
            v.positive("epsilons", e, allow_zero=True, allow_inf=True)
            for e in _as_tuple("epsilons", self.epsilons)
        )
        if not alphas:
            raise ParameterError("`alphas` must hold at least one order, got ().")
        if len(alphas) != len(epsilons):
            raise ParameterError(
                f"`epsilons` must have one value per order ({len(alphas)}), got {len(epsilons)}."
            )
        for a in alphas:
            if not a > 1:
                raise ParameterError(f"`alphas` must be in (1, inf], got {a}.")
        if any(b <= a for a, b in itertools.pairwise(alphas)):
            raise ParameterError(f"`alphas` must be strictly increasing, got {alphas}.")
        object.__setattr__(self, "alphas", alphas)
        object.__setattr__(self, "epsilons", epsilons)

    @classmethod
    def from_curve(cls, curve: Callable[[float], float], alphas: Iterable[float]) -> RDP:
        """Sample a Renyi curve ``alpha -> epsilon(alpha)`` at ``alphas``."""
        grid = tuple(float(a) for a in alphas)
        return cls(grid, tuple(float(curve(a)) for a in grid))

    def __add__(self, other: RDP) -> RDP:
        if not isinstance(other, RDP):
            return NotImplemented
        if self.alphas != other.alphas:
            raise ParameterError(
                "`alphas` must match to compose RDP guarantees, got "
                f"{self.alphas} and {other.alphas}."
            )
        return RDP(
            self.alphas, tuple(a + b for a, b in zip(self.epsilons, other.epsilons, strict=True))
        )


@dataclass(frozen=True)
class GDP(_NonnegativeMeasure):
    """``mu``-Gaussian DP (Dong, Roth & Su 2019): distinguishing ``M(x)`` from ``M(x')`` is no
    easier than ``N(0, 1)`` from ``N(mu, 1)``.  ``mu`` in ``[0, inf]``; composition is
    ``sqrt(sum mu_i^2)`` (:func:`compose_gdp`).

    >>> GDP(1.0)
    GDP(mu=1.0)
    """

    mu: float


def _as_tuple(name: str, values: Iterable[float]) -> tuple[float, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ParameterError(f"`{name}` must be a sequence of numbers, got {values!r}.")
    out = tuple(values)
    for x in out:
        if isinstance(x, float) and math.isnan(x):
            raise ParameterError(f"`{name}` must hold numbers, got nan.")
    return out
