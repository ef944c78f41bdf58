"""Choosing a design's parameter for a requested epsilon: :func:`design_for_epsilon` (the
float search behind every ``from_epsilon``) and :func:`expit` (the closed forms' logistic
function, to full precision).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Protocol, TypeVar

from deniable.exceptions import ParameterError

__all__ = ["design_for_epsilon", "expit"]


class _HasEpsilon(Protocol):
    """What the search needs of a design: its epsilon."""

    @property
    def epsilon(self) -> float: ...


D = TypeVar("D", bound=_HasEpsilon)


def expit(x: float) -> float:
    """``e^x / (1 + e^x)`` to full relative precision for every real ``x`` (no overflow).

    ``1 - expit(x)`` is ``expit(-x)``: compute a complement that way, never as ``1 - p``
    (which loses every digit of a probability near 0 that ``p`` near 1 cannot hold).  Near 0
    it uses ``(1 + tanh(x/2)) / 2``, whose only rounding is the final addition.
    """
    if abs(x) < 1.0:
        return 0.5 + 0.5 * math.tanh(x / 2)
    if x > 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)  # x <= -1: no overflow; underflows to 0 only below about -745
    return e / (1.0 + e)


def _key(x: float, sign: int) -> int:
    """Order-preserving integer of a float in [0, 1] (its bit pattern), times ``sign``."""
    return sign * int(struct.unpack("<q", struct.pack("<d", x))[0])


def _unkey(key: int, sign: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", sign * key))[0])


def _bound_text(x: float, up: bool) -> str:
    """The shortest decimal on the safe side of ``x`` (above it if ``up``)."""
    for digits in range(6, 18):
        text = f"{x:.{digits}g}"
        if (float(text) >= x) if up else (float(text) <= x):
            return text
    return repr(x)


def design_for_epsilon(
    make: Callable[[float], D],
    epsilon: float,
    start: float,
    *,
    neutral: float,
    extreme: float,
    fallback: float,
    context: str,
) -> D:
    """The design ``make(x)`` with the largest epsilon not above ``epsilon``.

    ``x`` is one float parameter in the closed range from ``neutral`` (epsilon 0) to
    ``extreme`` (the largest epsilon), along which epsilon grows; ``make`` raises
    :class:`~deniable.exceptions.ParameterError` where the design cannot be built (too close
    to ``neutral``: uninformative after float rounding; too close to ``extreme``: a
    probability below the randomizer's ``2**-53`` resolution), and designs with epsilon 0 or
    infinite are never candidates.  ``start`` is the closed-form
    parameter for ``epsilon`` and ``fallback`` one that is always valid (the closed form for
    epsilon 1).  The search walks the floats between them (their bit patterns are ordered),
    so the returned design's epsilon is at most the request and, among the designs the
    floats can express, the closest to it.  A request above the largest epsilon the family
    can represent, or below the smallest, raises ``ParameterError`` naming ``epsilon`` with
    that bound; so no design with an infinite or overstated epsilon is ever returned.
    """
    sign = 1 if extreme > neutral else -1
    lo_key, hi_key = _key(neutral, sign), _key(extreme, sign)
    cache: dict[int, D | None] = {}

    def build(key: int) -> D | None:
        if key not in cache:
            try:
                d: D | None = None if key == lo_key else make(_unkey(key, sign))
            except ParameterError:
                d = None
            # epsilon 0 (the neutral end) or infinite (a report reveals the answer): not a
            # candidate, like a parameter the design rejects
            cache[key] = None if d is None or not 0 < d.epsilon < math.inf else d
        return cache[key]

    def fits(key: int) -> bool:
        d = build(key)
        return d is not None and d.epsilon <= epsilon

    def clamp(x: float) -> int:
        x = min(max(x, min(neutral, extreme)), max(neutral, extreme))
        return min(max(_key(x, sign), lo_key), hi_key)

    anchor = next((k for k in (clamp(start), clamp(fallback)) if build(k) is not None), None)
    if anchor is None:  # pragma: no cover - the fallback is valid for every design
        raise ParameterError(f"`epsilon`: no design {context} could be built, got {epsilon!r}.")
    good: int | None = None
    bad: int | None = None
    if fits(anchor):
        good, step = anchor, 1
        while bad is None and good < hi_key:  # gallop toward the extreme, then bisect
            key = min(good + step, hi_key)
            if fits(key):
                good, step = key, 2 * step
            else:
                bad = key
    else:
        bad, step = anchor, 1
        low: int | None = None  # an invalid key on the neutral side
        while good is None and low is None:
            key = max(bad - step, lo_key)
            if build(key) is None:
                low = key
            elif fits(key):
                good = key
            else:
                bad, step = key, 2 * step
        if good is None:
            assert low is not None
            valid = bad
            while valid - low > 1:  # the first valid key: the smallest epsilon there is
                mid = (low + valid) // 2
                if build(mid) is None:
                    low = mid
                else:
                    valid = mid
            first = build(valid)
            assert first is not None
            if first.epsilon > epsilon:
                raise ParameterError(
                    f"`epsilon` must be at least {_bound_text(first.epsilon, up=True)} for "
                    f"design {context} (the smallest epsilon it can represent: below it its "
                    "probabilities round to an uninformative channel in floats or at the "
                    f"randomizer's 2**-53 resolution), got {epsilon!r}."
                )
            good = valid  # fits; the largest fitting key lies below `bad`
    if bad is not None:
        while bad - good > 1:
            mid = (good + bad) // 2
            if fits(mid):
                good = mid
            else:
                bad = mid
    best = build(good)
    assert best is not None
    nxt = good + 1
    beyond = build(nxt) if nxt <= hi_key else None
    if best.epsilon < epsilon and (beyond is None or math.isinf(beyond.epsilon)):
        # the largest epsilon the family can represent is below the request
        raise ParameterError(
            f"`epsilon` must be at most {_bound_text(best.epsilon, up=False)} for design "
            f"{context} (the largest epsilon it can represent: its probabilities are drawn "
            f"at the randomizer's 2**-53 resolution), got {epsilon!r}."
        )
    return best
