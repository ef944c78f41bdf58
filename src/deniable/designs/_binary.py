"""Binary randomized-response designs with a random path only (finite epsilon).

Each class maps its literature parameters onto the channel ``(p_yes_given_1,
p_yes_given_0)``; see ``docs/designs.md`` for the conventions of the R packages rr, RRreg
and GLMMRR.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar, Self

from deniable.common import validation as v
from deniable.designs._base import BinaryDesign, channel_epsilon
from deniable.designs._from_epsilon import design_for_epsilon, expit
from deniable.exceptions import ParameterError
from deniable.randomness import exp_lower_bound

__all__ = ["BiasedCoin", "Binary", "Crosswise", "Custom", "Mirrored", "TwoCoin", "Warner"]

#: The largest epsilon of one randomized bit at the randomizer's resolution: a report whose
#: probability is 2**-53 against 1 - 2**-53, ``ln(2**53 - 1)`` = 36.7368...
MAX_BIT_EPSILON = math.log(2.0**53 - 1)

#: The smallest epsilon :class:`Binary` accepts: below it ``e^eps / (1 + e^eps)`` lies within
#: float rounding (about ``1e-16``) of 1/2 and the float channel would no longer state
#: epsilon to a relative ``1e-9``.
MIN_BINARY_EPSILON = 1e-6


def _set_informative(design: BinaryDesign, name: str) -> None:
    """Store ``design``'s probability ``name`` checked (in (0, 1), not the uninformative
    1/2, drawn exactly by the randomizer), then check the channel: Warner's ``p``, the
    biased coin's ``q``."""
    value = v.probability(
        name, getattr(design, name), low_open=True, high_open=True, exclude=(0.5,)
    )
    object.__setattr__(design, name, v.realizable(name, value))
    design._check_channel()


@dataclass(frozen=True)
class _WarnerAlgebra(BinaryDesign):
    """The channel of Warner (1965), shared by :class:`Warner`, :class:`Mirrored` and
    :class:`Crosswise`: the report equals the answer with probability ``p``.

    ``P(yes | 1) = p``, ``P(yes | 0) = 1 - p``; ``p = 1/2`` is uninformative and rejected.
    """

    p: float

    def __post_init__(self) -> None:
        _set_informative(self, "p")

    @property
    def p_yes_given_1(self) -> float:
        return self.p

    @property
    def p_yes_given_0(self) -> float:
        return 1 - self.p

    @property
    def p_no_given_0(self) -> float:
        return self.p  # not 1 - (1 - p): exact for every p

    @classmethod
    def from_epsilon(cls, epsilon: float) -> Self:
        """The design with ``p = e^eps / (1 + e^eps)`` (> 1/2), never above ``epsilon``.

        ``p`` is a float, and near 1 floats are ``2**-53`` apart: above epsilon ~ 17 the
        epsilons a ``p > 1/2`` can express are that coarse, and the largest one not above
        the request is returned (``from_epsilon(30).epsilon`` is 29.9998...).  Requests above
        ``ln(2**53 - 1)`` = 36.7368 (``p = 1 - 2**-53``, the randomizer's resolution) or
        below the ``4.4e-16`` of ``p = 1/2 + 2**-53`` raise ``ParameterError`` naming
        ``epsilon`` with the bound.  :class:`Binary` states epsilon exactly.
        """
        eps = v.positive("epsilon", epsilon)
        return design_for_epsilon(
            cls, eps, expit(eps), neutral=0.5, extreme=1.0, fallback=expit(1.0),
            context=repr(cls.name),
        )  # fmt: skip


@dataclass(frozen=True)
class Warner(_WarnerAlgebra):
    """Warner (1965): with probability ``p`` answer "I have A", otherwise "I do not have A".

    ``P(yes | 1) = p``, ``P(yes | 0) = 1 - p``; ``epsilon = |ln(p / (1 - p))|``.
    ``p = 1/2`` is uninformative and rejected.

    >>> Warner(0.75).epsilon == math.log(3)
    True
    """

    name: ClassVar[str] = "warner"

    @property
    def epsilon(self) -> float:
        # eps = |ln(p / (1 - p))|: a "yes" is p/(1-p) times likelier from a carrier
        return abs(math.log(self.p / (1 - self.p)))


@dataclass(frozen=True)
class Mirrored(Warner):
    """Mirrored question design: with probability ``p`` answer the sensitive question, else its
    mirror ("Do you *not* have A?").  Same channel as :class:`Warner` (rr's ``mirrored``).
    """

    name: ClassVar[str] = "mirrored"


class _TruthOrYes(BinaryDesign):
    """Answer truthfully with probability ``t``, else report "yes" with probability ``y``
    (``(t, y)`` = ``_coins``): ``TwoCoin``'s two coins, the unrelated question's innocuous
    "yes" (``UnrelatedQuestion``).  ``P(yes | 1) = t + (1 - t) y``,
    ``P(yes | 0) = (1 - t) y``; each "no" probability is computed as its own product, not
    as ``1 -`` a "yes" one (no cancellation)."""

    @property
    @abstractmethod
    def _coins(self) -> tuple[float, float]:
        """``(t, y)``: the probability of a truthful answer and of "yes" otherwise."""

    def _set_coins(self, t: str, y: str, *, check_yes_given_1: bool = False) -> None:
        """Store the fields ``t`` (in (0, 1]) and ``y`` (in [0, 1]) checked, check that the
        randomizer draws the channel's small cells exactly (each named by its formula:
        ``P(yes | 1)`` too where ``check_yes_given_1``), then the channel."""
        object.__setattr__(self, t, v.probability(t, getattr(self, t), low_open=True))
        object.__setattr__(self, y, v.probability(y, getattr(self, y)))
        if check_yes_given_1:
            v.realizable(f"{t} + (1 - {t}) * {y}", self.p_yes_given_1)
        v.realizable(f"(1 - {t}) * {y}", self.p_yes_given_0)
        v.realizable(f"(1 - {t}) * (1 - {y})", self.p_no_given_1)
        self._check_channel()

    @property
    def p_yes_given_1(self) -> float:
        t, y = self._coins
        return t + (1 - t) * y

    @property
    def p_yes_given_0(self) -> float:
        t, y = self._coins
        return (1 - t) * y

    @property
    def p_no_given_1(self) -> float:
        t, y = self._coins
        return (1 - t) * (1 - y)

    @property
    def p_no_given_0(self) -> float:
        t, y = self._coins
        return t + (1 - t) * (1 - y)


class _YesOrNoForced(BinaryDesign):
    """A "yes" forced with probability ``fy``, a "no" with ``fn`` (``(fy, fn)`` =
    ``_forcing``), otherwise the true answer: forced response, and the biased coin (a lie,
    the other answer, with ``q = fy = fn``).  ``P(yes | 1) = 1 - fn``, ``P(yes | 0) = fy``;
    ``P(no | 1)`` is ``fn`` itself, not ``1 - (1 - fn)``, which rounds a small ``fn`` to a
    multiple of ``2**-53``."""

    @property
    @abstractmethod
    def _forcing(self) -> tuple[float, float]:
        """``(fy, fn)``: the probability of a forced "yes" and of a forced "no"."""

    @property
    def p_yes_given_1(self) -> float:
        return 1 - self._forcing[1]

    @property
    def p_yes_given_0(self) -> float:
        return self._forcing[0]

    @property
    def p_no_given_1(self) -> float:
        return self._forcing[1]


@dataclass(frozen=True)
class TwoCoin(_TruthOrYes):
    """Two coins (Dwork & Roth 2014, sec. 3.2): the first coin says "answer truthfully" with
    probability ``p_truthful``; otherwise a second coin says "yes" with probability
    ``p_yes``.

    ``P(yes | 1) = p_truthful + (1 - p_truthful) p_yes``,
    ``P(yes | 0) = (1 - p_truthful) p_yes``.  With fair coins: 3/4 and 1/4,
    ``epsilon = ln 3``.
    """

    p_truthful: float = 0.5
    p_yes: float = 0.5
    name: ClassVar[str] = "two-coin"

    def __post_init__(self) -> None:
        self._set_coins("p_truthful", "p_yes", check_yes_given_1=True)

    @property
    def _coins(self) -> tuple[float, float]:
        return self.p_truthful, self.p_yes

    @classmethod
    def from_epsilon(cls, epsilon: float) -> TwoCoin:
        """Fair second coin, first coin biased so that ``epsilon`` is met:
        ``p_truthful = (e^eps - 1) / (e^eps + 1) = tanh(eps / 2)``.

        ``p_truthful`` is the float with the largest epsilon not above the request (near 1
        floats are ``2**-53`` apart, so large epsilons are matched only that finely).  Above
        ``ln(2**53 - 1)`` = 36.7368 (a lie probability of ``2**-53``) it raises
        ``ParameterError`` naming ``epsilon``; it never returns ``p_truthful = 1`` (direct
        questioning, epsilon infinite).
        """
        eps = v.positive("epsilon", epsilon)
        return design_for_epsilon(
            lambda t: cls(p_truthful=t, p_yes=0.5), eps, math.tanh(eps / 2), neutral=0.0,
            extreme=1.0, fallback=math.tanh(0.5), context=repr(cls.name),
        )  # fmt: skip


@dataclass(frozen=True)
class BiasedCoin(_YesOrNoForced):
    """Report the flipped answer with probability ``q`` (the lying probability).

    ``P(yes | 1) = 1 - q``, ``P(yes | 0) = q``; estimator ``(lambda_hat - q) / (1 - 2q)``;
    ``epsilon = |ln((1 - q) / q)|``.
    """

    q: float
    name: ClassVar[str] = "biased-coin"

    def __post_init__(self) -> None:
        _set_informative(self, "q")

    @property
    def _forcing(self) -> tuple[float, float]:
        return self.q, self.q

    @property
    def epsilon(self) -> float:
        # eps = |ln((1 - q) / q)|: truth-telling odds of one report
        return abs(math.log((1 - self.q) / self.q))

    @classmethod
    def from_epsilon(cls, epsilon: float) -> BiasedCoin:
        """``q = 1 / (1 + e^eps)`` (the float with the largest epsilon not above the request).

        ``q`` below 1/2 keeps full relative precision, so epsilon is met to ``1e-15`` up to
        ``ln(2**53 - 1)`` = 36.7368 (``q = 2**-53``, the randomizer's resolution); above it
        ``ParameterError`` names ``epsilon``.
        """
        eps = v.positive("epsilon", epsilon)
        return design_for_epsilon(
            cls, eps, expit(-eps), neutral=0.5, extreme=0.0, fallback=expit(-1.0),
            context=repr(cls.name),
        )  # fmt: skip


@dataclass(frozen=True, init=False)
class Binary(BinaryDesign):
    """The binary mechanism calibrated to a privacy parameter ``epsilon``.

    ``calibration="exact"`` (default): report the truth with probability
    ``e^eps / (1 + e^eps)``; this is exactly ``eps``-LDP for one bit.

    ``calibration="half"``: truth with probability ``e^(eps/2) / (1 + e^(eps/2))``, the
    calibration needed when one answer changes *two* reported coordinates (one-hot /
    unary encoding).  Used for a single bit it is only ``eps/2``-LDP, and
    :attr:`epsilon` reports that true value, not the parameter; the repr says so, so that
    the parameter is never read as the design's epsilon.

    >>> Binary(1.0, calibration="half").epsilon
    0.5
    >>> Binary(1.0, calibration="half")
    Binary(epsilon=1.0, calibration='half')  # true epsilon 0.5
    >>> Binary(1.0)
    Binary(epsilon=1.0, calibration='exact')
    """

    nominal_epsilon: float
    calibration: str
    name: ClassVar[str] = "binary"

    def __init__(self, epsilon: float, calibration: str = "exact") -> None:
        object.__setattr__(self, "nominal_epsilon", v.positive("epsilon", epsilon))
        object.__setattr__(
            self, "calibration", v.choice("calibration", calibration, ("exact", "half"))
        )
        scale = 1 if self.calibration == "exact" else 2
        if self.nominal_epsilon < MIN_BINARY_EPSILON:
            raise ParameterError(
                f"`epsilon` must be at least {MIN_BINARY_EPSILON:g} for design 'binary' (below "
                "it e^eps / (1 + e^eps) is within float rounding of 1/2: the channel could not "
                f"state epsilon, or would carry no information), got {epsilon!r}."
            )
        if not self.p_yes_given_0 >= v.RESOLUTION:
            # the lie probability 1/(1 + e^eps) below 2**-53: the randomizer would draw it as 0
            top = math.floor(MAX_BIT_EPSILON * scale * 1e4) / 1e4
            raise ParameterError(
                f"`epsilon` must be at most {top:.4f} for design 'binary' with calibration "
                f"{self.calibration!r} (a larger one needs a lie probability below 2**-53, "
                "which the randomizer would draw as 0: epsilon would be infinite), "
                f"got {epsilon!r}."
            )
        self._check_channel()
        stated, floats = self.epsilon, channel_epsilon(self._bit_channel())
        if abs(floats - stated) > 1e-9 * stated:  # pragma: no cover - guarded by the bounds
            raise ParameterError(
                f"`epsilon` = {epsilon!r} cannot be represented: the float channel's epsilon "
                f"is {floats!r}."
            )

    def __repr__(self) -> str:
        call = f"Binary(epsilon={self.nominal_epsilon!r}, calibration={self.calibration!r})"
        # "half": the parameter is the budget of two coordinates, not this bit's epsilon
        return call if self.calibration == "exact" else f"{call}  # true epsilon {self.epsilon!r}"

    def parameters(self) -> dict[str, object]:
        return {"epsilon": self.nominal_epsilon, "calibration": self.calibration}

    @property
    def truth_probability(self) -> float:
        """Probability of reporting the true answer, ``e^eps / (1 + e^eps)`` (eps/2 for
        ``half``)."""
        return expit(self.epsilon)

    @property
    def lie_probability(self) -> float:
        """Probability of reporting the other answer, ``1 / (1 + e^eps)``, computed directly
        (not as ``1 - truth_probability``, which rounds it to a multiple of ``2**-53``)."""
        return expit(-self.epsilon)

    @property
    def p_yes_given_1(self) -> float:
        return self.truth_probability

    @property
    def p_yes_given_0(self) -> float:
        return self.lie_probability

    @property
    def p_no_given_1(self) -> float:
        return self.lie_probability

    @property
    def p_no_given_0(self) -> float:
        return self.truth_probability

    @property
    def epsilon(self) -> float:
        # eps = ln(t / (1 - t)) with t the truth probability: eps, or eps/2 for "half"
        return self.nominal_epsilon if self.calibration == "exact" else self.nominal_epsilon / 2

    def _ratio_bound(self) -> Fraction:
        # the stated epsilon is the parameter, exactly: the implemented ratios must meet
        # e^eps itself, not the float probabilities' ratio (which rounds past it at small eps)
        return exp_lower_bound(self.epsilon)

    @classmethod
    def from_epsilon(cls, epsilon: float, calibration: str = "exact") -> Binary:
        """Same as the constructor: ``epsilon`` in ``[1e-6, ln(2**53 - 1)]`` (36.7368; twice
        that for ``half``), stated exactly."""
        return cls(epsilon, calibration)


@dataclass(frozen=True)
class Crosswise(_WarnerAlgebra):
    """Crosswise model (Yu, Tian & Tang 2008): the respondent says whether their answers to the
    sensitive question and to an innocuous one with known prevalence ``p`` are equal
    (report 1 = "both yes or both no").

    ``P(1 | 1) = p``, ``P(1 | 0) = 1 - p``: Warner's algebra, ``p != 1/2``;
    ``from_epsilon`` picks the innocuous prevalence ``p = e^eps / (1 + e^eps)``.
    Its epsilon is the channel's, ``max(|ln(P1 / P0)|, |ln((1 - P1) / (1 - P0))|)``
    computed from the float probabilities (Warner states the closed form
    ``|ln(p / (1 - p))|``, which can differ in the last digit; each keeps its own, so that
    specs and thresholds stay as they were).
    """

    name: ClassVar[str] = "crosswise"


@dataclass(frozen=True, init=False)
class Custom(BinaryDesign):
    """Any binary channel given by ``p_yes_given_1`` and ``p_yes_given_0`` (must differ).

    ``epsilon = max(|ln(P1 / P0)|, |ln((1 - P1) / (1 - P0))|)``, infinite if a report has
    probability 0 under exactly one answer.
    """

    yes_given_1: float
    yes_given_0: float
    name: ClassVar[str] = "custom"

    def __init__(self, p_yes_given_1: float, p_yes_given_0: float) -> None:
        p1 = v.probability("p_yes_given_1", p_yes_given_1)
        p0 = v.probability("p_yes_given_0", p_yes_given_0)
        if p1 == p0:
            raise ParameterError(
                f"`p_yes_given_1` and `p_yes_given_0` must differ (equal values make the reports "
                f"independent of the answer), got {p1} and {p0}."
            )
        object.__setattr__(self, "yes_given_1", v.realizable("p_yes_given_1", p1))
        object.__setattr__(self, "yes_given_0", v.realizable("p_yes_given_0", p0))
        self._check_channel()

    def __repr__(self) -> str:
        return f"Custom(p_yes_given_1={self.yes_given_1!r}, p_yes_given_0={self.yes_given_0!r})"

    def parameters(self) -> dict[str, object]:
        return {"p_yes_given_1": self.yes_given_1, "p_yes_given_0": self.yes_given_0}

    @property
    def p_yes_given_1(self) -> float:
        return self.yes_given_1

    @property
    def p_yes_given_0(self) -> float:
        return self.yes_given_0
