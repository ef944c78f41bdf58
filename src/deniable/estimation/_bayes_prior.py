"""The prior of a prevalence: :class:`Beta` and the names :func:`posterior` accepts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = ["PRIORS", "Beta", "resolve_prior"]

#: The prior names :func:`~deniable.estimation.posterior` accepts, and the Beta they mean.
PRIORS = {"uniform": (1.0, 1.0), "jeffreys": (0.5, 0.5)}


@dataclass(frozen=True)
class Beta:
    """A Beta(``a``, ``b``) prior of a prevalence, density ``pi^(a-1) (1-pi)^(b-1) / B(a, b)``.

    ``Beta(1, 1)`` is uniform; ``Beta(0.5, 0.5)`` is Jeffreys' prior of a binomial
    proportion (not of the randomized-response likelihood, whose Jeffreys prior depends on
    the design).

    >>> Beta(2, 8).mean
    0.2
    """

    a: float
    b: float

    def __post_init__(self) -> None:
        for name in ("a", "b"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ParameterTypeError(
                    f"`prior` parameter `{name}` must be a real number > 0, got "
                    f"{type(value).__name__} {value!r}."
                )
            if not (math.isfinite(value) and value > 0):
                raise ParameterError(
                    f"`prior` parameter `{name}` must be in (0, inf), got {value!r}."
                )
            object.__setattr__(self, name, float(value))

    @property
    def mean(self) -> float:
        """The prior mean ``a / (a + b)``."""
        return self.a / (self.a + self.b)

    def __str__(self) -> str:
        return f"Beta({self.a:g}, {self.b:g})"


def resolve_prior(prior: Any) -> Beta:
    """A :class:`Beta` from a ``Beta``, a name in :data:`PRIORS` or a pair ``(a, b)``."""
    if isinstance(prior, Beta):
        return prior
    if isinstance(prior, str):
        key = prior.strip().lower()
        if key not in PRIORS:
            allowed = ", ".join(repr(k) for k in PRIORS)
            raise ParameterError(
                f"`prior` must be a Beta(a, b), a pair (a, b) or one of {allowed}, got {prior!r}."
            )
        return Beta(*PRIORS[key])
    if isinstance(prior, tuple | list) and len(prior) == 2:
        return Beta(prior[0], prior[1])
    raise ParameterTypeError(
        "`prior` must be a Beta(a, b), a pair (a, b) or one of "
        f"{', '.join(repr(k) for k in PRIORS)}, got {type(prior).__name__} {prior!r}."
    )
