"""The flips of the Count Mean Sketch's spec 2 (``deniable.cms-spec/2``): ``b``-bit fields.

Spec 1 draws one 64-bit word a bit of the one-hot vector and flips the bit iff ``word >>
11 < t`` with ``t = flip_threshold`` on the ``2**53`` grid.  Spec 2 cuts every word into
``r = 64 / b`` fields of ``b`` bits (``b = 16``: four fields a word), field ``i`` of word
``w`` being ``(w >> (b i)) & (2**b - 1)``, and flips bit ``i`` of the one-hot vector iff
field ``i`` of the report's flip words is below ``t_b``:

    t_b = ceil(f 2**b),  f = 1 / (1 + e^(eps / 2)),  raised until ((2**b - t_b) / t_b)^2
    <= exp_lower_bound(eps)  (exactly, in rationals: toward privacy).

The flip probability is exactly ``f_b = t_b / 2**b`` and a report's worst likelihood ratio
``((1 - f_b) / f_b)^2`` (two bits move between two strings), so the **realized epsilon** is
``eps_b = 2 ln((2**b - t_b) / t_b) <= eps``; the sketch states it (its ``epsilon``), as the
smallest float whose proven lower bound of ``e^x`` is at least that ratio (never below the
true value).  A report takes ``1 + ceil(m / r)`` words: the row, then the flip words (the
fields past ``m`` in the last word are drawn and unused).  ``t_b >= 1`` needs ``f >= 2**-b``
(``eps`` at most about ``2 ln(2**b)``, 22.18 for ``b = 16``), and ``2 t_b < 2**b`` keeps
a signal (``eps`` not below about ``2**(2 - b)``); other ``eps`` are refused.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from deniable.randomness import exp_lower_bound

__all__ = ["field_flips", "field_threshold", "fields_per_word", "realized_epsilon"]

#: The field width of ``deniable.cms-spec/2``.
FIELD_BITS = 16


def fields_per_word(bits: int) -> int:
    """``r = 64 / b``: the fields of one 64-bit word."""
    return 64 // bits


def field_threshold(epsilon: float, bits: int, moved: int = 2) -> int | None:
    """``t_b`` (module docstring) for ``epsilon`` and ``b = bits``, or ``None`` when the flip
    probability ``1 / (1 + e^(eps / moved))`` is below ``2**-b`` (``t_b >= 1`` would realize
    a smaller epsilon than asked: refused by the caller)."""
    grid = 1 << bits
    f = Fraction(1.0 / (1.0 + math.exp(epsilon / moved)))
    if f * grid < 1:
        return None
    t = math.ceil(f * grid)
    bound = exp_lower_bound(epsilon)
    while t < grid and Fraction(grid - t, t) ** moved > bound:
        t += 1
    return t


def realized_epsilon(t: int, bits: int, moved: int = 2) -> float:
    """``eps_b = moved ln((2**b - t) / t)`` as the smallest float ``x`` with
    ``exp_lower_bound(x) >= ((2**b - t) / t)^moved`` (so ``x`` is never below the exact
    value, and a sketch built with ``epsilon = x`` finds the same ``t``)."""
    grid = 1 << bits
    ratio = Fraction(grid - t, t) ** moved
    x = moved * math.log((grid - t) / t)
    for _ in range(4):  # start a few ulps below the float log
        x = math.nextafter(x, -math.inf)
    while exp_lower_bound(x) < ratio:
        x = math.nextafter(x, math.inf)
    return x


def field_flips(
    block: npt.NDArray[np.uint64], threshold: int, bits: int, m: int
) -> npt.NDArray[np.bool_]:
    """``(n, m)``: bit ``i`` of report ``j`` flips iff field ``i`` of the report's flip words
    is below ``threshold``; ``block`` is ``(n, 1 + ceil(m / r))``: each report's row word,
    then its flip words."""
    n, r = block.shape[0], fields_per_word(bits)
    if bits == 16:  # the little-endian uint16 view: field i of flip word q is element 4 q + i
        fields = np.ascontiguousarray(block, dtype="<u8").view("<u2").reshape(n, -1)
        out: npt.NDArray[np.bool_] = np.less(fields[:, r : r + m], np.uint16(threshold))
        return out
    shifts = np.arange(r, dtype=np.uint64) * np.uint64(bits)  # other widths (tests): shifts
    mask = np.uint64((1 << bits) - 1)
    spread = (block[:, 1:, None] >> shifts[None, None, :]) & mask
    flips: npt.NDArray[np.bool_] = np.less(spread.reshape(n, -1)[:, :m], np.uint64(threshold))
    return flips
