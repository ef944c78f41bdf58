"""Designs with forced answers or an unrelated question, including those whose epsilon is
infinite because one report can only come from one answer (Mangat, triangular, forced
response with a single forced answer)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from deniable import _validation as v
from deniable.designs._base import BinaryDesign
from deniable.exceptions import ParameterError

__all__ = ["ForcedResponse", "Mangat", "Triangular", "UnrelatedQuestion"]


@dataclass(frozen=True)
class ForcedResponse(BinaryDesign):
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

    @property
    def p_yes_given_1(self) -> float:
        return 1 - self.forced_no

    @property
    def p_yes_given_0(self) -> float:
        return self.forced_yes

    @property
    def epsilon(self) -> float:
        # eps = max(ln((1-fn)/fy), ln((1-fy)/fn)); inf if fy or fn is 0 (a report reveals)
        fy, fn = self.forced_yes, self.forced_no
        if fy == 0 or fn == 0:
            return math.inf
        return max(math.log((1 - fn) / fy), math.log((1 - fy) / fn))

    @classmethod
    def from_epsilon(cls, epsilon: float) -> ForcedResponse:
        """Symmetric forcing ``forced_yes = forced_no = 1 / (1 + e^eps)``."""
        eps = v.positive("epsilon", epsilon)
        f = 1 / (1 + math.exp(eps))
        return cls(f, f)


@dataclass(frozen=True)
class UnrelatedQuestion(BinaryDesign):
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
        object.__setattr__(self, "p", v.probability("p", self.p, low_open=True))
        object.__setattr__(self, "q", v.probability("q", self.q))
        v.realizable("(1 - p) * q", self.p_yes_given_0)

    @property
    def p_yes_given_1(self) -> float:
        return self.p + (1 - self.p) * self.q

    @property
    def p_yes_given_0(self) -> float:
        return (1 - self.p) * self.q

    @classmethod
    def from_epsilon(cls, epsilon: float, q: float = 0.5) -> UnrelatedQuestion:
        """The largest ``p`` whose exact epsilon is ``epsilon``, for a known ``q`` in (0, 1).

        epsilon grows with ``p`` (from 0 at ``p = 0`` to infinity at ``p = 1``), so the root
        is unique; with ``q = 1/2``, ``p = tanh(eps / 2)``.  Found by bisection and then
        nudged down so that the returned design's epsilon never exceeds the request.
        """
        eps = v.positive("epsilon", epsilon)
        qq = v.probability("q", q, low_open=True, high_open=True)
        lo, hi = 0.0, 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            if mid > 0 and cls(mid, qq).epsilon <= eps:
                lo = mid
            else:
                hi = mid
        if lo == 0.0:
            raise ParameterError(f"`epsilon` = {eps} is too small to represent with q = {qq}.")
        return cls(lo, qq)


@dataclass(frozen=True)
class Mangat(BinaryDesign):
    """Mangat (1994): carriers always say "yes"; a non-carrier answers the direct statement
    ("I have A": "no") with probability ``p``, else its negation ("yes").

    ``P(yes | 1) = 1``, ``P(yes | 0) = 1 - p``.  A "no" can only come from a non-carrier, so
    ``epsilon`` is infinite.
    """

    p: float
    name: ClassVar[str] = "mangat"

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", v.probability("p", self.p, low_open=True))

    @property
    def p_yes_given_1(self) -> float:
        return 1.0

    @property
    def p_yes_given_0(self) -> float:
        return 1 - self.p

    @property
    def epsilon(self) -> float:
        # a "no" has probability 0 for carriers: it reveals a non-carrier
        return math.inf


@dataclass(frozen=True)
class Triangular(BinaryDesign):
    """Triangular model (Yu, Tian & Tang 2008): report 1 = "yes to at least one" of the
    sensitive question and an innocuous one with known prevalence ``p``.

    ``P(1 | 1) = 1``, ``P(1 | 0) = p``.  Report 0 reveals a non-carrier: ``epsilon`` infinite.
    """

    p: float
    name: ClassVar[str] = "triangular"

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", v.probability("p", self.p, high_open=True))

    @property
    def p_yes_given_1(self) -> float:
        return 1.0

    @property
    def p_yes_given_0(self) -> float:
        return self.p

    @property
    def epsilon(self) -> float:
        # report 0 ("no to both") has probability 0 for carriers: it reveals a non-carrier
        return math.inf
