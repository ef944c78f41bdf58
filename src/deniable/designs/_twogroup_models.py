"""Two-group designs: the unrelated question with unknown prevalence and the stochastic lie
detector (the cheater detection models are in ``_twogroup_cheater``).

Each maps its literature parameters onto the linear system ``lambda_g = c_g + M[g] @ phi``
of :class:`~deniable.designs.TwoGroupDesign`; ``docs/twogroup.md`` gives the
derivations and the parameter conventions of RRreg.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs._base import channel_epsilon
from deniable.designs._twogroup import FloatArray, RespondentType, TwoGroupDesign
from deniable.exceptions import ParameterError

__all__ = ["SIMPLEX", "SQUARE", "StochasticLieDetector", "UnrelatedUnknown", "differ", "prob"]

#: |pi_hat| at or below this is 0 up to the rounding of solving the 2 x 2 system.
_PI_ZERO = 1e-12

SQUARE = ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))
SIMPLEX = ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0))


def differ(a: str, x: float, b: str, y: float, why: str) -> None:
    if x == y:
        raise ParameterError(
            f"`{a}` and `{b}` must differ ({why}; equal values leave the model "
            f"non-identifiable), got {a} = {b} = {x}."
        )


def prob(name: str, value: Any) -> float:
    p = v.probability(name, value)
    v.realizable(name, p)
    v.realizable(f"1 - {name}", 1 - p)
    return p


class _GroupProbabilities(TwoGroupDesign):
    """A two-group design with one probability per group, ``p1`` and ``p2``, that must
    differ (each subclass declares them as its fields)."""

    p1: float
    p2: float

    def _check_probabilities(self, what: str) -> None:
        """Check the group share and ``p1``, ``p2`` (``what`` they are, said when equal)."""
        self._check_group_share()
        object.__setattr__(self, "p1", prob("p1", self.p1))
        object.__setattr__(self, "p2", prob("p2", self.p2))
        differ("p1", self.p1, "p2", self.p2, what)

    def _p(self, group: int) -> float:
        return self.p1 if group == 1 else self.p2


# --------------------------------------------------------------------------- UQT unknown


@dataclass(frozen=True, repr=False)
class UnrelatedUnknown(_GroupProbabilities):
    """Unrelated question with unknown prevalence (Greenberg et al. 1969).

    In group ``g`` a respondent answers the sensitive question with probability ``p_g`` and
    otherwise an unrelated question whose prevalence ``pi_u`` is unknown:
    ``lambda_g = p_g pi + (1 - p_g) pi_u``.  Two groups with ``p1 != p2`` give
    ``pi = ((1 - p2) lambda_1 - (1 - p1) lambda_2) / (p1 - p2)`` and
    ``pi_u = (p2 lambda_1 - p1 lambda_2) / (p2 - p1)``.  RRreg: ``model = "UQTunknown"``,
    ``p = c(p1, p2)``.  ``p2 = 0`` is Moors' (1971) variant (group 2 answers only the
    unrelated question, and ``pi_u`` gets exact intervals).

    Estimated: ``prevalence`` (pi), ``unrelated_prevalence`` (pi_u).  Truth keywords for
    planning: ``prevalence`` and ``unrelated_prevalence`` (required).

    Epsilon is infinite: a respondent's answer to the unrelated question is a fixed trait, so
    a carrier who says "no" to it reports "yes" with probability ``p_g > 0`` while a
    non-carrier who says "no" to it never does.  :meth:`epsilon_at` gives the finite value
    under the weaker model where the unrelated answer is a coin with a given probability.

    Randomizer inputs: ``types(truth, unrelated=...)`` with each respondent's own 0/1
    answer to the unrelated question.

    >>> d = UnrelatedUnknown(0.7, 0.3)
    >>> est = d.estimate(yes=(310, 290), n=(500, 500))
    >>> round(est.prevalence.value, 6), round(est["unrelated_prevalence"].value, 6)
    (0.65, 0.55)
    >>> d.epsilon
    inf
    """

    p1: float
    p2: float
    name: ClassVar[str] = "unrelated-unknown"
    estimated: ClassVar[tuple[str, ...]] = ("prevalence", "unrelated_prevalence")
    nuisance: ClassVar[Mapping[str, float | None]] = {"unrelated_prevalence": None}
    respondent_types: ClassVar[tuple[RespondentType, ...]] = (
        RespondentType("carrier, unrelated yes", 1, True),
        RespondentType("carrier, unrelated no", 1, True),
        RespondentType("non-carrier, unrelated yes", 0, True),
        RespondentType("non-carrier, unrelated no", 0, True),
    )
    vertices: ClassVar[tuple[tuple[float, float], ...]] = SQUARE
    latent: ClassVar[tuple[str, int | None]] = ("unrelated", None)

    def __post_init__(self) -> None:
        self._check_probabilities("the sensitive-question probabilities")

    def _yes_probabilities(self, group: int) -> tuple[float, ...]:
        p = self._p(group)
        return (1.0, p, 1 - p, 0.0)

    @property
    def epsilon(self) -> float:
        # eps = inf: "yes" has probability p_g > 0 for (carrier, unrelated no) and 0 for
        # (non-carrier, unrelated no); p1 != p2, so some p_g > 0
        return math.inf

    def epsilon_at(self, unrelated_prevalence: float) -> float:
        """Epsilon if the unrelated answer were a coin with probability ``unrelated_prevalence``
        (independent of everything, unknown to the collector), as for
        :class:`~deniable.UnrelatedQuestion`: ``max_g`` of the channel epsilon of
        ``P(yes | 1) = p_g + (1 - p_g) q``, ``P(yes | 0) = (1 - p_g) q``.  Not the design's
        epsilon, which is infinite.
        """
        q = v.probability("unrelated_prevalence", unrelated_prevalence)
        eps = 0.0
        for p in (self.p1, self.p2):
            p1, p0 = p + (1 - p) * q, (1 - p) * q
            eps = max(eps, channel_epsilon([[1 - p0, 1 - p1], [p0, p1]]))
        return eps

    def linear_system(self) -> tuple[FloatArray, FloatArray]:
        return np.zeros(2), np.array([[self.p1, 1 - self.p1], [self.p2, 1 - self.p2]])

    def _outputs(self, phi: FloatArray) -> tuple[FloatArray, FloatArray]:
        return np.array(phi, dtype=float), np.eye(2)

    def _affine_outputs(self) -> tuple[tuple[tuple[float, float], float] | None, ...]:
        return (((1.0, 0.0), 0.0), ((0.0, 1.0), 0.0))

    def _truth(self, truth: Mapping[str, Any]) -> tuple[FloatArray, FloatArray]:
        t = self._truth_values(truth, ("prevalence", "unrelated_prevalence"))
        phi = np.array([t["prevalence"], self._nuisance_value(t, "unrelated_prevalence")])
        return phi, np.array([self.p1, self.p2])  # d lambda_g / d pi = p_g

    def _types_of(
        self, x: npt.NDArray[np.intp], latent: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.intp]:
        # (carrier, unrelated yes), (carrier, no), (non-carrier, yes), (non-carrier, no)
        return 2 * (1 - x) + (1 - latent)


# --------------------------------------------------------------------------- SLD


@dataclass(frozen=True, repr=False)
class StochasticLieDetector(_GroupProbabilities):
    """Stochastic lie detector (Moshagen, Musch & Erdfelder 2012).

    Mangat's design with a lie parameter: non-carriers in group ``g`` say "no" with
    probability ``p_g`` (else "yes"); carriers answer honestly ("yes") with probability
    ``t`` and otherwise lie ("no"): ``lambda_g = pi t + (1 - pi) (1 - p_g)``.  Hence
    ``pi = 1 - (lambda_2 - lambda_1) / (p1 - p2)`` and
    ``t = (lambda_2 (1 - p1) - lambda_1 (1 - p2)) / (lambda_2 - lambda_1 + p2 - p1)``;
    internally ``phi = (pi, pi t)`` makes the system linear.  RRreg: ``model = "SLD"``,
    ``p = c(p1, p2)`` (``p[g]``: probability that a non-carrier says "no" in group ``g``).

    Estimated: ``prevalence`` (pi), ``honesty`` (t; undefined, NaN, when the prevalence
    estimate is 0, i.e. ``|pi_hat| <= 1e-12``, the rounding error of solving the system).
    Truth keywords: ``prevalence`` and ``honesty`` (default 1).

    Epsilon is infinite: an honest carrier never says "no", a non-carrier does with
    probability ``p_g > 0`` (and a lying carrier never says "yes").

    Randomizer inputs: ``types(truth, honest=...)`` with 0/1 per respondent (1 = a carrier
    who answers honestly; ignored for non-carriers; default: everyone honest).

    The minaret survey of Heck & Moshagen (2018): 373 "yes" of 564 with ``p1 = 2/12`` and 398
    of 692 with ``p2 = 10/12``:

    >>> est = StochasticLieDetector(2 / 12, 10 / 12).estimate(yes=(373, 398), n=(564, 692))
    >>> round(est.prevalence.value, 4), round(est.prevalence.se, 4)
    (0.8707, 0.0411)
    >>> round(est["honesty"].value, 4), round(est["honesty"].se, 4)
    (0.6358, 0.0173)
    """

    p1: float
    p2: float
    name: ClassVar[str] = "sld"
    estimated: ClassVar[tuple[str, ...]] = ("prevalence", "honesty")
    nuisance: ClassVar[Mapping[str, float | None]] = {"honesty": 1.0}
    respondent_types: ClassVar[tuple[RespondentType, ...]] = (
        RespondentType("honest carrier", 1, True),
        RespondentType("lying carrier", 1, False),
        RespondentType("non-carrier", 0, True),
    )
    vertices: ClassVar[tuple[tuple[float, float], ...]] = ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0))
    latent: ClassVar[tuple[str, int | None]] = ("honest", 1)

    def __post_init__(self) -> None:
        self._check_probabilities("the non-carriers' probabilities of 'no'")

    def _yes_probabilities(self, group: int) -> tuple[float, ...]:
        return (1.0, 0.0, 1 - self._p(group))

    @property
    def epsilon(self) -> float:
        # eps = inf: "no" has probability 0 for an honest carrier and p_g > 0 for a
        # non-carrier in some group (p1 != p2)
        return math.inf

    def linear_system(self) -> tuple[FloatArray, FloatArray]:
        q1, q2 = 1 - self.p1, 1 - self.p2
        return np.array([q1, q2]), np.array([[-q1, 1.0], [-q2, 1.0]])

    def _outputs(self, phi: FloatArray) -> tuple[FloatArray, FloatArray]:
        pi, a = float(phi[0]), float(phi[1])
        if abs(pi) <= _PI_ZERO:  # t = a / pi is undefined (a is 0 up to rounding too)
            return np.array([pi, math.nan]), np.array([[1.0, 0.0], [math.nan, math.nan]])
        return np.array([pi, a / pi]), np.array([[1.0, 0.0], [-a / (pi * pi), 1 / pi]])

    def _affine_outputs(self) -> tuple[tuple[tuple[float, float], float] | None, ...]:
        return (((1.0, 0.0), 0.0), None)

    def _truth(self, truth: Mapping[str, Any]) -> tuple[FloatArray, FloatArray]:
        t = self._truth_values(truth, ("prevalence", "honesty"))
        pi, h = t["prevalence"], self._nuisance_value(t, "honesty")
        # t fixed: d lambda_g / d pi = t - (1 - p_g)
        return np.array([pi, pi * h]), np.array([h - (1 - self.p1), h - (1 - self.p2)])

    def _types_of(
        self, x: npt.NDArray[np.intp], latent: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.intp]:
        # honest carrier 0, lying carrier 1, non-carrier 2
        return x * (1 - latent) + 2 * (1 - x)
