"""Designs with forced answers or an unrelated question, including those whose epsilon is
infinite because one report can only come from one answer (Mangat, triangular, forced
response with a single forced answer)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from deniable.common import validation as v
from deniable.designs._base import BinaryDesign
from deniable.designs._binary import _TruthOrYes, _YesOrNoForced
from deniable.designs._from_epsilon import design_for_epsilon, expit
from deniable.exceptions import ParameterError

__all__ = ["ForcedResponse", "Mangat", "Triangular", "UnrelatedQuestion"]


@dataclass(frozen=True)
class ForcedResponse(_YesOrNoForced):
    """Forced response (Boruch 1971): a randomizer forces "yes" with probability
    ``forced_yes``, "no" with probability ``forced_no``, and otherwise the respondent answers
    truthfully (probability ``1 - forced_yes - forced_no``).

    ``P(yes | 1) = 1 - forced_no``, ``P(yes | 0) = forced_yes``;
    ``epsilon = max(ln((1 - forced_no) / forced_yes), ln((1 - forced_yes) / forced_no))``,
    infinite when either forced probability is 0 (an unforced answer then reveals itself).
    "Two coins: both heads say yes, both tails say no, else the truth" is (1/4, 1/4).
    """

    forced_yes: float
    forced_no: float
    name: ClassVar[str] = "forced"

    def __post_init__(self) -> None:
        fy = v.probability("forced_yes", self.forced_yes)
        fn = v.probability("forced_no", self.forced_no)
        if fy + fn >= 1:
            raise ParameterError(
                "`forced_yes` + `forced_no` must be < 1 (someone must answer truthfully), "
                f"got {fy} + {fn} = {fy + fn}."
            )
        object.__setattr__(self, "forced_yes", v.realizable("forced_yes", fy))
        object.__setattr__(self, "forced_no", v.realizable("forced_no", fn))
        self._check_channel()

    @property
    def _forcing(self) -> tuple[float, float]:
        return self.forced_yes, self.forced_no

    @property
    def epsilon(self) -> float:
        # eps = max(ln((1-fn)/fy), ln((1-fy)/fn)); inf if fy or fn is 0 (a report reveals)
        fy, fn = self.forced_yes, self.forced_no
        if fy == 0 or fn == 0:
            return math.inf
        return max(math.log((1 - fn) / fy), math.log((1 - fy) / fn))

    @classmethod
    def from_epsilon(cls, epsilon: float) -> ForcedResponse:
        """Symmetric forcing ``forced_yes = forced_no = 1 / (1 + e^eps)``.

        The float with the largest epsilon not above the request; above
        ``ln(2**53 - 1)`` = 36.7368 (forcing probability ``2**-53``, the randomizer's
        resolution) ``ParameterError`` names ``epsilon``.  Never returns a zero forcing
        probability (direct questioning, epsilon infinite).
        """
        eps = v.positive("epsilon", epsilon)
        return design_for_epsilon(
            lambda f: cls(f, f), eps, expit(-eps), neutral=0.5, extreme=0.0,
            fallback=expit(-1.0), context=repr(cls.name),
        )  # fmt: skip


@dataclass(frozen=True)
class UnrelatedQuestion(_TruthOrYes):
    """Unrelated question with known prevalence (Greenberg et al. 1969): with probability
    ``p`` answer the sensitive question, otherwise an innocuous question whose "yes"
    probability ``q`` is known.

    ``P(yes | 1) = p + (1 - p) q``, ``P(yes | 0) = (1 - p) q``; ``epsilon`` infinite when
    ``q`` is 0 or 1.
    """

    p: float
    q: float
    name: ClassVar[str] = "unrelated"

    def __post_init__(self) -> None:
        self._set_coins("p", "q")

    @property
    def _coins(self) -> tuple[float, float]:
        return self.p, self.q

    @classmethod
    def from_epsilon(cls, epsilon: float, q: float = 0.5) -> UnrelatedQuestion:
        """The largest ``p`` whose exact epsilon is at most ``epsilon``, for a known ``q`` in
        (0, 1).

        epsilon grows with ``p`` (from 0 at ``p = 0`` to infinity at ``p = 1``):
        ``eps = ln(1 + p / ((1 - p) m))`` with ``m = min(q, 1 - q)``, so
        ``p = m (e^eps - 1) / (1 + m (e^eps - 1))`` (``tanh(eps / 2)`` for ``q = 1/2``).  The
        float ``p`` nearest below is returned; a request the randomizer's ``2**-53``
        resolution cannot represent raises ``ParameterError`` naming ``epsilon``.
        """
        eps = v.positive("epsilon", epsilon)
        qq = v.probability("q", q, low_open=True, high_open=True)
        m = min(qq, 1 - qq)

        def closed_form(e: float) -> float:
            if e > 700:  # m (e^eps - 1) overflows; p is 1 to double precision anyway
                return 1.0
            odds = m * math.expm1(e)
            return odds / (1 + odds)

        return design_for_epsilon(
            lambda p: cls(p, qq), eps, closed_form(eps), neutral=0.0, extreme=1.0,
            fallback=closed_form(1.0), context=f"{cls.name!r} with q = {qq!r}",
        )  # fmt: skip


class _CarriersSayYes(BinaryDesign):
    """Designs in which a carrier always reports "yes": ``P(yes | 1) = 1``, so a "no" can
    only come from a non-carrier and epsilon is infinite (Mangat, triangular).  Their one
    parameter ``p`` is a probability, open at the end ``_p_open`` names."""

    p: float
    _p_open: ClassVar[str]

    def __post_init__(self) -> None:
        low = self._p_open == "low"
        p = v.probability("p", self.p, low_open=low, high_open=not low)
        object.__setattr__(self, "p", p)
        self._check_channel()

    @property
    def p_yes_given_1(self) -> float:
        return 1.0

    @property
    def epsilon(self) -> float:
        # a "no" has probability 0 for carriers: it reveals a non-carrier
        return math.inf


@dataclass(frozen=True)
class Mangat(_CarriersSayYes):
    """Mangat (1994): carriers always say "yes"; a non-carrier answers the direct statement
    ("I have A": "no") with probability ``p``, else its negation ("yes").

    ``P(yes | 1) = 1``, ``P(yes | 0) = 1 - p``.  A "no" can only come from a non-carrier, so
    ``epsilon`` is infinite.
    """

    p: float
    name: ClassVar[str] = "mangat"
    _p_open: ClassVar[str] = "low"  # p in (0, 1]: p = 0 would make every report "yes"

    @property
    def p_yes_given_0(self) -> float:
        return 1 - self.p


@dataclass(frozen=True)
class Triangular(_CarriersSayYes):
    """Triangular model (Yu, Tian & Tang 2008): report 1 = "yes to at least one" of the
    sensitive question and an innocuous one with known prevalence ``p``.

    ``P(1 | 1) = 1``, ``P(1 | 0) = p``.  Report 0 reveals a non-carrier: ``epsilon`` infinite.
    """

    p: float
    name: ClassVar[str] = "triangular"
    _p_open: ClassVar[str] = "high"  # p in [0, 1): p = 1 would make every report 1

    @property
    def p_yes_given_0(self) -> float:
        return self.p
