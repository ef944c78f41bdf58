"""The majority decision rule: the threshold on the count of "yes" reports
(:func:`majority_threshold`) and the decision (:func:`decide_majority`).

Every computation works on ``M``, the number of *majority-indicating* reports ("yes" when
``P1 > P0``, "no" otherwise), whose per-report probabilities ``Q1 > Q0`` increase with the
truth; the rule is always ``M > t_M`` (see :mod:`deniable.estimation`, which
evaluates the rule's exact error probabilities and re-exports these functions).
"""

from __future__ import annotations

import math
from typing import Any

from deniable.common import _validation as v
from deniable.designs import BinaryDesign, Kuk, Tally
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "check_design",
    "check_offset",
    "decide_majority",
    "indicating",
    "indicating_threshold",
    "last_silent",
    "majority_threshold",
]

#: Thresholds within this relative distance of an integer are taken to be that integer, so
#: that float rounding in ``P0 + P1`` (``0.7 + 0.3 = 1.0000000000000002``) cannot move the
#: boundary past a whole count.
_SNAP = 1e-12


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


def indicating(design: BinaryDesign) -> tuple[float, float, bool]:
    """``(Q1, Q0, yes_indicates)``: probabilities of the majority-indicating report."""
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    if p1 > p0:
        return p1, p0, True
    return 1.0 - p1, 1.0 - p0, False


def _snap(t: float) -> float:
    if not math.isfinite(t):  # an offset of 1e308 SDs: no count passes (or every count does)
        return t
    r = round(t)
    return float(r) if abs(t - r) <= _SNAP * max(1.0, abs(t)) else t


def indicating_threshold(design: BinaryDesign, n: int, offset: float) -> float:
    """``t_M = n (Q0 + Q1) / 2 + c sqrt(n lambda_b (1 - lambda_b))``, snapped (see ``_SNAP``)."""
    q1, q0, _ = indicating(design)
    lam_b = (design.p_yes_given_0 + design.p_yes_given_1) / 2
    sd = math.sqrt(n * lam_b * (1 - lam_b))
    return _snap(n * (q0 + q1) / 2 + offset * sd)


def last_silent(t_m: float, n: int) -> int:
    """Largest count ``m`` in ``[-1, n]`` with ``m <= t_m`` (no decision at ``M <= m``)."""
    if not math.isfinite(t_m):
        return n if t_m > 0 else -1
    return min(max(math.floor(t_m), -1), n)


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
    design = check_design(design)
    n = v.integer("n", n, minimum=1)
    c = check_offset(offset)
    t_m = indicating_threshold(design, n, c)
    return t_m if indicating(design)[2] else _snap(n - t_m)


def decide_majority(design: BinaryDesign, yes: int, n: int, offset: float = 0.0) -> bool:
    """Decide "the majority carries A" from ``yes`` "yes" reports among ``n``.

    ``True`` iff ``yes > majority_threshold(design, n, offset)`` when ``P1 > P0``, and iff
    ``yes < majority_threshold(design, n, offset)`` when ``P1 < P0``.  Ties (a count equal
    to the threshold) are never a "majority".

    >>> from deniable.designs import TwoCoin
    >>> decide_majority(TwoCoin(), 51, 100), decide_majority(TwoCoin(), 50, 100)
    (True, False)
    """
    design = check_design(design)
    tally = Tally.binary(yes, n)
    c = check_offset(offset)
    _, _, yes_indicates = indicating(design)
    m = tally.yes if yes_indicates else tally.n - tally.yes
    return m > indicating_threshold(design, tally.n, c)
