"""Privacy events: what a mechanism was, by its parameters only (never mechanism code).

An event is one mechanism applied ``count`` times to the same respondent's data.  The
accountant (``_accountant``) turns events into privacy loss distributions, Renyi curves and
zCDP parameters.  ``count`` is honoured by every method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from deniable.common import _validation as v

__all__ = ["Event", "Gaussian", "Laplace", "RandomizedResponse"]


@dataclass(frozen=True)
class RandomizedResponse:
    """``count`` uses of ``epsilon``-LDP randomized response over ``k`` categories.

    The truth is reported with probability ``e^eps / (e^eps + k - 1)``, each other category with
    ``1 / (e^eps + k - 1)``.  ``epsilon = inf`` (a deterministic answer) is allowed and makes
    every total epsilon infinite.

    >>> RandomizedResponse(0.5, count=10)
    RandomizedResponse(epsilon=0.5, count=10, k=2)
    """

    epsilon: float
    count: int = 1
    k: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", v.positive("epsilon", self.epsilon, allow_zero=True, allow_inf=True)
        )
        object.__setattr__(self, "count", v.integer("count", self.count, minimum=0))
        object.__setattr__(
            self,
            "k",
            v.integer("k", self.k, minimum=2, maximum=2**1000, why="k - 1 must be a double"),
        )

    @property
    def pure_epsilon(self) -> float:
        """The pure-DP epsilon of one use."""
        return self.epsilon


@dataclass(frozen=True)
class Laplace:
    """``count`` releases with Laplace noise of ``scale`` on a query of ``sensitivity``:
    ``epsilon = sensitivity / scale`` each (``scale = 0`` is no noise: ``epsilon = inf``).

    >>> Laplace(2.0).pure_epsilon
    0.5
    """

    scale: float
    sensitivity: float = 1.0
    count: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "scale", v.positive("scale", self.scale, allow_zero=True, allow_inf=True)
        )
        object.__setattr__(
            self, "sensitivity", v.positive("sensitivity", self.sensitivity, allow_zero=True)
        )
        object.__setattr__(self, "count", v.integer("count", self.count, minimum=0))

    @property
    def pure_epsilon(self) -> float:
        """``sensitivity / scale``: the pure-DP epsilon of one release."""
        if self.sensitivity == 0 or self.scale == math.inf:
            return 0.0
        if self.scale == 0:
            return math.inf
        return self.sensitivity / self.scale


@dataclass(frozen=True)
class Gaussian:
    """``count`` releases with Gaussian noise of standard deviation ``sigma`` on a query of L2
    ``sensitivity``: ``mu = sensitivity / sigma`` each (Gaussian DP), no pure-DP guarantee.

    >>> Gaussian(2.0).mu
    0.5
    """

    sigma: float
    sensitivity: float = 1.0
    count: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "sigma", v.positive("sigma", self.sigma, allow_zero=True, allow_inf=True)
        )
        object.__setattr__(
            self, "sensitivity", v.positive("sensitivity", self.sensitivity, allow_zero=True)
        )
        object.__setattr__(self, "count", v.integer("count", self.count, minimum=0))

    @property
    def mu(self) -> float:
        """``sensitivity / sigma`` (``inf`` without noise)."""
        if self.sensitivity == 0 or self.sigma == math.inf:
            return 0.0
        if self.sigma == 0:
            return math.inf
        return self.sensitivity / self.sigma

    @property
    def pure_epsilon(self) -> float:
        """Gaussian noise gives no pure-DP guarantee: ``inf`` unless it is a no-op."""
        return 0.0 if self.mu == 0 else math.inf


Event = RandomizedResponse | Laplace | Gaussian
