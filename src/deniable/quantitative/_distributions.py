"""The known distributions a scrambled-response design draws its scrambling variable
``S`` (or an innocuous answer ``Y``) from: :class:`Normal`, :class:`Uniform`,
:class:`Exponential`, :class:`Laplace`, :class:`FDistribution` and :class:`Constant`.

Each is a frozen dataclass with its first two moments in closed form, a log density (for
the likelihood ratios of :mod:`deniable.quantitative`) and ``sample(words)``: one
64-bit word per draw, turned into ``u`` in (0, 1) from its top 53 bits and then through
the inverse distribution function, so every draw costs the same whatever the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import format_parameters
from deniable.common import validation as v
from deniable.exceptions import ParameterError

__all__ = [
    "Constant",
    "Distribution",
    "Exponential",
    "FDistribution",
    "Laplace",
    "Normal",
    "Uniform",
    "open_uniform",
]

FloatArray = npt.NDArray[np.float64]


def open_uniform(words: npt.NDArray[np.uint64]) -> FloatArray:
    """``((w >> 11) + 1/2) / 2**53``: uniform on (0, 1), never 0 or 1."""
    return np.asarray(((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53)


def _finite(name: str, value: Any) -> float:
    x = v.real(name, value)
    if not math.isfinite(x):
        raise ParameterError(f"`{name}` must be a finite real number, got {x}.")
    return x


def _above_four(name: str, value: Any) -> float:
    """F's ``d2``: positive and above 4 (a finite mean and variance)."""
    x = v.positive(name, value)
    if not x > 4:
        raise ParameterError(
            f"`{name}` must be in (4, inf) (a finite mean and variance), got {value}."
        )
    return x


class Distribution:
    """The interface of a scrambling distribution (a base class; see the subclasses)."""

    name = "distribution"
    #: Each parameter's check, in order: ``check(name, value)`` gives the value stored.
    _checks: ClassVar[tuple[tuple[str, Callable[[str, Any], float]], ...]] = ()

    def __post_init__(self) -> None:
        for field, check in self._checks:
            object.__setattr__(self, field, check(field, getattr(self, field)))

    if TYPE_CHECKING:  # a field of some distributions, a property of the others

        @property
        def mean(self) -> float:
            """``E[S]``."""

    @property
    def variance(self) -> float:
        """``Var S``."""
        raise NotImplementedError

    @property
    def second_moment(self) -> float:
        """``E[S^2] = Var S + E[S]^2``."""
        return self.variance + self.mean**2

    def quantile(self, u: FloatArray) -> FloatArray:
        """The inverse distribution function at ``u`` in (0, 1)."""
        raise NotImplementedError

    def logpdf(self, x: npt.ArrayLike) -> FloatArray:
        """The log density at ``x`` (``-inf`` outside the support)."""
        raise NotImplementedError

    def sample(self, words: npt.NDArray[np.uint64]) -> FloatArray:
        """One draw per 64-bit word."""
        return self.quantile(open_uniform(words))

    def parameters(self) -> dict[str, float]:
        """The parameters by name."""
        return {k: float(getattr(self, k)) for k in self.__dataclass_fields__}  # type: ignore[attr-defined]

    def describe(self) -> str:
        """``Normal(mean=0, sd=1)``."""
        return f"{type(self).__name__}({format_parameters(self.parameters())})"

    def to_dict(self) -> dict[str, Any]:
        """The name and parameters as plain data."""
        return {"distribution": self.name, **self.parameters()}

    def __repr__(self) -> str:
        return self.describe()


@dataclass(frozen=True, repr=False)
class Normal(Distribution):
    """``N(mean, sd^2)``.

    >>> Normal(10, 2).second_moment
    104.0
    """

    mean: float = 0.0
    sd: float = 1.0
    name = "normal"
    _checks = (("mean", _finite), ("sd", v.positive))

    @property
    def variance(self) -> float:
        return self.sd**2

    def quantile(self, u: FloatArray) -> FloatArray:
        from scipy import special

        return np.asarray(self.mean + self.sd * special.ndtri(u), dtype=np.float64)

    def logpdf(self, x: npt.ArrayLike) -> FloatArray:
        z = (np.asarray(x, dtype=np.float64) - self.mean) / self.sd
        return np.asarray(-0.5 * z * z - math.log(self.sd * math.sqrt(2 * math.pi)))


@dataclass(frozen=True, repr=False)
class Uniform(Distribution):
    """Uniform on ``[low, high]``.

    >>> Uniform(0, 12).variance
    12.0
    """

    low: float
    high: float
    name = "uniform"
    _checks = (("low", _finite), ("high", _finite))

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.high > self.low:
            raise ParameterError(
                f"`high` must be greater than `low` ({self.low}), got {self.high}."
            )

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    @property
    def variance(self) -> float:
        return (self.high - self.low) ** 2 / 12

    def quantile(self, u: FloatArray) -> FloatArray:
        return np.asarray(self.low + (self.high - self.low) * u, dtype=np.float64)

    def logpdf(self, x: npt.ArrayLike) -> FloatArray:
        arr = np.asarray(x, dtype=np.float64)
        inside = (arr >= self.low) & (arr <= self.high)
        return np.where(inside, -math.log(self.high - self.low), -np.inf)


@dataclass(frozen=True, repr=False)
class Exponential(Distribution):
    """Exponential with mean ``mean`` (rate ``1 / mean``), as RRreg's ``mix.exp``.

    >>> Exponential(2).variance
    4.0
    """

    mean: float
    name = "exponential"
    _checks = (("mean", v.positive),)

    @property
    def variance(self) -> float:
        return self.mean**2

    def quantile(self, u: FloatArray) -> FloatArray:
        return np.asarray(-self.mean * np.log1p(-u), dtype=np.float64)

    def logpdf(self, x: npt.ArrayLike) -> FloatArray:
        arr = np.asarray(x, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return np.where(arr >= 0, -arr / self.mean - math.log(self.mean), -np.inf)


@dataclass(frozen=True, repr=False)
class Laplace(Distribution):
    """Laplace with location ``loc`` and scale ``scale``: density
    ``exp(-|x - loc| / scale) / (2 scale)``, variance ``2 scale^2``.

    >>> Laplace(2.0).variance
    8.0
    """

    scale: float
    loc: float = 0.0
    name = "laplace"
    _checks = (("scale", v.positive), ("loc", _finite))

    @property
    def mean(self) -> float:
        return self.loc

    @property
    def variance(self) -> float:
        return 2 * self.scale**2

    def quantile(self, u: FloatArray) -> FloatArray:
        d = u - 0.5
        return np.asarray(
            self.loc - self.scale * np.sign(d) * np.log1p(-2 * np.abs(d)), dtype=np.float64
        )

    def logpdf(self, x: npt.ArrayLike) -> FloatArray:
        arr = np.asarray(x, dtype=np.float64)
        return np.asarray(-np.abs(arr - self.loc) / self.scale - math.log(2 * self.scale))


@dataclass(frozen=True, repr=False)
class FDistribution(Distribution):
    """Snedecor's F with ``d1`` and ``d2`` degrees of freedom (``d2 > 4``, so that the mean
    ``d2 / (d2 - 2)`` and the variance ``2 d2^2 (d1 + d2 - 2) / (d1 (d2 - 2)^2 (d2 - 4))``
    exist): Eichhorn & Hayre's (1983) multiplicative scrambler; RRTCS's example data use
    ``F(20, 20)`` (mean 1.111111, sd 0.5414886).

    >>> s = FDistribution(20, 20)
    >>> round(s.mean, 6), round(math.sqrt(s.variance), 7)
    (1.111111, 0.5414886)
    """

    d1: float
    d2: float
    name = "f"
    _checks = (("d1", v.positive), ("d2", _above_four))

    @property
    def mean(self) -> float:
        return self.d2 / (self.d2 - 2)

    @property
    def variance(self) -> float:
        d1, d2 = self.d1, self.d2
        return 2 * d2 * d2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ** 2 * (d2 - 4))

    def quantile(self, u: FloatArray) -> FloatArray:
        from scipy import special

        return np.asarray(special.fdtri(self.d1, self.d2, u), dtype=np.float64)

    def logpdf(self, x: npt.ArrayLike) -> FloatArray:
        from scipy import stats

        return np.asarray(stats.f.logpdf(np.asarray(x, dtype=np.float64), self.d1, self.d2))


@dataclass(frozen=True, repr=False)
class Constant(Distribution):
    """``S = value`` always: no scrambling at all (``Constant(0)`` for additive,
    ``Constant(1)`` for multiplicative scrambling give the plain answer).  For tests and
    comparisons; its privacy is none (epsilon infinite)."""

    value: float
    name = "constant"
    _checks = (("value", _finite),)

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0

    def quantile(self, u: FloatArray) -> FloatArray:
        return np.full(np.shape(u), self.value, dtype=np.float64)

    def logpdf(self, x: npt.ArrayLike) -> FloatArray:
        arr = np.asarray(x, dtype=np.float64)
        return np.where(arr == self.value, np.inf, -np.inf)
