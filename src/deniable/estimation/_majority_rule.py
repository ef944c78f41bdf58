"""The majority decision rule: checked inputs in, a :class:`MajorityRule` out, and the
exact tails of its count (the error probabilities).

One concept, one place: this module checks the inputs of a majority decision (the design,
``n``, the offset) and builds the rule from them; everything downstream
(:func:`majority_threshold`, :func:`decide_majority`, the exact tails here, and the
decision, its verdict and simulation of :mod:`deniable.estimation._majority`) takes the
checked rule and never checks again.  Each public entry point checks its arguments exactly
once.

Every computation works on ``M``, the number of *majority-indicating* reports ("yes" when
``P1 > P0``, "no" otherwise), whose per-report probabilities ``Q1 > Q0`` increase with the
truth; the rule is always ``M > t_M`` (see :mod:`deniable.estimation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import BinaryDesign, Kuk, Tally
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "MajorityRule",
    "check_design",
    "check_offset",
    "checked_rule",
    "decide_majority",
    "majority_threshold",
    "tails_fixed_at",
    "tails_iid_at",
]

#: Thresholds within this relative distance of an integer are taken to be that integer, so
#: that float rounding in ``P0 + P1`` (``0.7 + 0.3 = 1.0000000000000002``) cannot move the
#: boundary past a whole count.
_SNAP = 1e-12


# --------------------------------------------------------------------------- checks
def check_design(design: Any) -> BinaryDesign:
    """``design`` if it gives one informative binary report per respondent."""
    if isinstance(design, Kuk) and design.draws != 1:
        raise ParameterError(
            f"`draws` must be 1 for a majority decision (one binary report per respondent); "
            f"design {design.name!r} has draws = {design.draws}."
        )
    if not isinstance(design, BinaryDesign):
        raise ParameterTypeError(
            "`design` must be a BinaryDesign (a design with binary reports, e.g. TwoCoin(), "
            f"Warner(0.75)), got {type(design).__name__} {design!r}."
        )
    if design.p_yes_given_1 == design.p_yes_given_0:
        raise ParameterError(
            f"`design` must have P(yes | 1) != P(yes | 0), got {design.p_yes_given_1} for both."
        )
    return design


def check_offset(offset: Any) -> float:
    """``offset`` (``c``) as a finite float."""
    c = v.real("offset", offset)
    if not math.isfinite(c):
        raise ParameterError(f"`offset` must be a finite real number, got {c}.")
    return c


def checked_rule(
    design: Any, n: Any, offset: Any, *, max_n: int | None = None, why: str = ""
) -> MajorityRule:
    """The rule for ``n`` reports of ``design`` at ``offset``, every input checked once
    (``n`` an integer in ``[1, max_n]``, ``why`` saying why there is a maximum)."""
    d = check_design(design)
    size = v.integer("n", n, minimum=1, maximum=max_n, why=why)
    return MajorityRule.of(d, size, check_offset(offset))


# --------------------------------------------------------------------------- the rule
def _snap(t: float) -> float:
    if not math.isfinite(t):  # an offset of 1e308 SDs: no count passes (or every count does)
        return t
    r = round(t)
    return float(r) if abs(t - r) <= _SNAP * max(1.0, abs(t)) else t


@dataclass(frozen=True)
class MajorityRule:
    """Decide "the majority carries A" from ``n`` reports of ``design`` (inputs checked).

    ``q1``, ``q0``: the probabilities of a majority-indicating report for a carrier and a
    non-carrier (``q1 > q0``); ``yes_indicates``: whether that report is "yes";
    ``t_m = n (q0 + q1) / 2 + c sqrt(n lambda_b (1 - lambda_b))``, snapped to a whole count
    within a relative 1e-12, with ``lambda_b = (P0 + P1) / 2``; the rule is ``M > t_m``.
    """

    design: BinaryDesign
    n: int
    offset: float
    q1: float
    q0: float
    yes_indicates: bool
    t_m: float

    @classmethod
    def of(cls, design: BinaryDesign, n: int, offset: float) -> MajorityRule:
        """The rule from checked inputs (no check here)."""
        p1, p0 = design.p_yes_given_1, design.p_yes_given_0
        q1, q0, yes_indicates = (p1, p0, True) if p1 > p0 else (1.0 - p1, 1.0 - p0, False)
        lam_b = (p0 + p1) / 2
        sd = math.sqrt(n * lam_b * (1 - lam_b))
        return cls(design, n, offset, q1, q0, yes_indicates, _snap(n * (q0 + q1) / 2 + offset * sd))

    @property
    def threshold(self) -> float:
        """The threshold on the number of "yes" reports (:func:`majority_threshold`)."""
        return self.t_m if self.yes_indicates else _snap(self.n - self.t_m)

    @property
    def last_silent(self) -> int:
        """Largest count ``m`` in ``[-1, n]`` with ``m <= t_m``: no decision at ``M <= m``."""
        if not math.isfinite(self.t_m):
            return self.n if self.t_m > 0 else -1
        return min(max(math.floor(self.t_m), -1), self.n)

    def indicating_probability(self, prevalence: float) -> float:
        """``lambda_M = Q0 + prevalence (Q1 - Q0)``: the mean share of indicating reports."""
        return self.q0 + prevalence * (self.q1 - self.q0)

    def decides(self, yes: npt.ArrayLike) -> Any:
        """Whether ``yes`` "yes" reports (a count or an array of counts) decide "majority"."""
        y = np.asarray(yes)
        m = y if self.yes_indicates else self.n - y
        out = m > self.t_m
        return bool(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------- public
def majority_threshold(design: BinaryDesign, n: int, offset: float = 0.0) -> float:
    """The threshold on the number of "yes" reports for the decision "the majority carries A".

    ``lambda_b = (P0 + P1) / 2`` is the report probability at prevalence exactly 1/2 and
    ``sd = sqrt(n lambda_b (1 - lambda_b))`` the standard deviation of the "yes" count there
    (iid sampling).  The threshold is

    * ``n lambda_b + c sd`` when ``P1 > P0``: decide "majority" iff ``#yes > threshold``;
    * ``n lambda_b - c sd`` when ``P1 < P0``: decide "majority" iff ``#yes < threshold``

    (see :func:`decide_majority`).  ``c = offset > 0`` makes a "majority" verdict stricter
    (fewer false positives, more false negatives); ``c < 0`` makes it more liberal.  Values
    within a relative ``1e-12`` of an integer are returned as that integer.

    Parameters
    ----------
    design : BinaryDesign
    n : int, number of reports (>= 1).
    offset : float, ``c``, finite.

    Examples
    --------
    >>> from deniable.designs import ForcedResponse, TwoCoin, Warner
    >>> majority_threshold(TwoCoin(), 100)         # symmetric: n / 2
    50.0
    >>> majority_threshold(ForcedResponse(0.2, 0.1), 100)   # n (0.2 + 0.9) / 2
    55.0
    >>> majority_threshold(TwoCoin(), 100, offset=2.0)      # 50 + 2 sqrt(100 / 4)
    60.0
    >>> majority_threshold(Warner(0.25), 100, offset=2.0)   # "no" points to carriers
    40.0
    """
    return checked_rule(design, n, offset).threshold


def decide_majority(design: BinaryDesign, yes: int, n: int, offset: float = 0.0) -> bool:
    """Decide "the majority carries A" from ``yes`` "yes" reports among ``n``.

    ``True`` iff ``yes > majority_threshold(design, n, offset)`` when ``P1 > P0``, and iff
    ``yes < majority_threshold(design, n, offset)`` when ``P1 < P0``.  Ties (a count equal
    to the threshold) are never a "majority".

    >>> from deniable.designs import TwoCoin
    >>> decide_majority(TwoCoin(), 51, 100), decide_majority(TwoCoin(), 50, 100)
    (True, False)
    """
    d = check_design(design)
    tally = Tally.binary(yes, n)  # checks yes and n
    rule = MajorityRule.of(d, tally.n, check_offset(offset))
    return bool(rule.decides(tally.yes))


# --------------------------------------------------------------------------- exact tails
def _tails_iid(n: int, lam_m: float, last: int) -> tuple[float, float]:
    """``(P(M > last), P(M <= last))`` for ``M ~ Binomial(n, lam_m)`` (the regularized
    incomplete beta function: any ``n``, passed as a float beyond 64-bit integers)."""
    from scipy import stats

    nf, lf = float(n), float(last)
    try:
        upper, lower = float(stats.binom.sf(lf, nf, lam_m)), float(stats.binom.cdf(lf, nf, lam_m))
    except OverflowError:  # Boost's incomplete beta gives up on n beyond ~1e150
        upper = lower = math.nan
    if math.isnan(upper) or math.isnan(lower):
        # scipy fails for huge n (beyond ~1e15) where last is the mean: there the normal
        # approximation with continuity correction is within O(n^-1/2) < 1e-7
        sd = math.sqrt(nf * lam_m * (1 - lam_m))
        z = (lf + 0.5 - nf * lam_m) / sd if sd > 0 else math.copysign(math.inf, lf - nf * lam_m)
        upper, lower = float(stats.norm.sf(z)), float(stats.norm.cdf(z))
    return upper, lower


def _tails_fixed(n: int, k: int, q1: float, q0: float, last: int) -> tuple[float, float]:
    """``(P(M > last), P(M <= last))`` for ``M = Bin(k, q1) + Bin(n - k, q0)``.

    The convolution is evaluated at the one point that matters:
    ``P(M > m) = sum_j P(A = j) P(B > m - j)`` over the support of the smaller binomial
    ``A`` (``min(k, n - k) + 1`` terms), and likewise ``P(M <= m)`` with ``P(B <= m - j)``.
    All terms are non-negative and scipy computes each to near machine precision, so both
    tails keep their *relative* accuracy (about 1e-12 or better) even when tiny; neither is
    obtained as ``1 - other``.  Cost: O(min(k, n - k)), ~0.15 s at ``n = 10**6``.
    """
    from scipy import stats

    if k <= n - k:
        size_a, p_a, size_b, p_b = k, q1, n - k, q0
    else:
        size_a, p_a, size_b, p_b = n - k, q0, k, q1
    j = np.arange(size_a + 1)
    pmf = stats.binom.pmf(j, size_a, p_a)
    upper = float(np.dot(pmf, stats.binom.sf(last - j, size_b, p_b)))
    lower = float(np.dot(pmf, stats.binom.cdf(last - j, size_b, p_b)))
    return min(upper, 1.0), min(lower, 1.0)


def tails_iid_at(rule: MajorityRule, prevalence: float) -> tuple[float, float]:
    """``(P(decide majority), P(not))`` for iid sampling at ``prevalence``."""
    return _tails_iid(rule.n, rule.indicating_probability(prevalence), rule.last_silent)


def tails_fixed_at(rule: MajorityRule, k: int) -> tuple[float, float]:
    """``(P(decide majority), P(not))`` for a fixed population with ``k`` carriers."""
    return _tails_fixed(rule.n, k, rule.q1, rule.q0, rule.last_silent)
