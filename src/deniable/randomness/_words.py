"""What is made of 64-bit words: thresholds, Bernoulli draws, uniform integers (the public
names are documented in ``deniable.randomness``)."""

from __future__ import annotations

import decimal
import functools
import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from deniable.exceptions import ParameterError
from deniable.randomness._sources import RandomSource, random_words

__all__ = [
    "bernoulli",
    "binary_thresholds",
    "exp_lower_bound",
    "probability_threshold",
    "uniform_below",
    "uniform_below_into",
    "words_below",
]

_TWO53 = 1 << 53


def probability_threshold(p: float | Fraction, rounding: str = "nearest") -> int:
    """Integer ``t`` with ``P(word >> 11 < t) = t / 2**53`` close to ``p``.

    ``rounding="nearest"`` (within ``2**-54``), ``"down"`` (``t / 2**53 <= p``) or ``"up"``
    (``>= p``); all exact for dyadic ``p = a / 2**m`` with ``m <= 53``.
    """
    q = Fraction(p)
    if not 0 <= q <= 1:
        raise ParameterError(f"`p` must be in [0, 1], got {p}.")
    scaled = q * _TWO53
    if rounding == "nearest":
        return round(scaled)
    if rounding == "down":
        return math.floor(scaled)
    if rounding == "up":
        return math.ceil(scaled)
    raise ParameterError(f"`rounding` must be one of 'nearest', 'down', 'up', got {rounding!r}.")


@functools.lru_cache(maxsize=4096)
def exp_lower_bound(x: float) -> Fraction:
    """A rational at most ``e**x``, below it by less than ``10**-45`` relative: the largest
    likelihood ratio a threshold may realise for an ``x``-LDP claim to hold exactly.

    ``decimal`` computes ``exp`` correctly rounded at 50 digits, so one unit of the 50th
    digit below it is a proven lower bound (``math.exp`` promises no error bound).  ``x``
    must be finite and at most 700.

    >>> lower = exp_lower_bound(1.0)
    >>> e_below = Fraction("2.718281828459045235360287471352662497757247093699959")  # e cut
    >>> lower < e_below and e_below - lower < Fraction(1, 10**45)
    True
    """
    # Proof note (threshold rounding toward privacy, docs/architecture.md#proof-notes).
    # Claim: the result L satisfies L < e**x.  Argument: Decimal(x) is x exactly (a float
    # is a dyadic rational); decimal's exp is correctly rounded, so v = exp(x) at 50 digits
    # is within half a unit of its last digit of e**x, and v.next_minus() (one unit below;
    # below a power of ten the unit is the smaller one of the decade beneath) lies at
    # least half a unit below e**x.  For x != 0, e**x is irrational (Lindemann), for x = 0
    # v = 1 exactly: either way L < e**x.  Checked by this docstring and, through every
    # threshold built on it, by tests/test_implemented_epsilon.py (decimal ln at 60 digits).
    if not (math.isfinite(x) and abs(x) <= 700):
        raise ParameterError(f"`x` must be a finite number in [-700, 700], got {x!r}.")
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        value = decimal.Decimal(x).exp()  # exact input (a float is a dyadic rational)
        return Fraction(value.next_minus(ctx))


def binary_thresholds(p_yes_given_1: float, p_yes_given_0: float) -> tuple[int, int]:
    """Thresholds ``(t0, t1)`` that never make the implemented channel less private.

    The larger probability is rounded down and the smaller up, so both likelihood ratios
    ``t_hi / t_lo`` and ``(2**53 - t_lo) / (2**53 - t_hi)`` of the implemented channel are at
    most those of the stated channel: its epsilon never exceeds the stated epsilon.
    """
    # Proof note (threshold rounding toward privacy, docs/architecture.md#proof-notes).
    # Claim: t_hi / t_lo <= hi / lo and (2**53 - t_lo) / (2**53 - t_hi) <= (1 - lo) / (1 -
    # hi), exactly, for the floats hi > lo given: the implemented channel's epsilon (the log
    # of the larger ratio) is at most that of the stated float channel.  Argument: t_hi =
    # floor(hi 2**53) <= hi 2**53 and t_lo = ceil(lo 2**53) >= lo 2**53 (Fraction: exact),
    # so the numerators shrink and the denominators grow; t_hi > t_lo keeps both ratios
    # above 1 (a "yes" still points to the answer whose probability was larger).  Checked
    # by tests/test_implemented_epsilon.py::test_binary_designs_realise_at_most_their_
    # stated_channel (a sweep of epsilon, exact Fractions).
    hi_is_1 = p_yes_given_1 >= p_yes_given_0
    hi, lo = (p_yes_given_1, p_yes_given_0) if hi_is_1 else (p_yes_given_0, p_yes_given_1)
    t_hi = probability_threshold(hi, "down")
    t_lo = probability_threshold(lo, "up")
    if t_hi <= t_lo:
        raise ParameterError(
            f"P(yes | 1) = {p_yes_given_1} and P(yes | 0) = {p_yes_given_0} are closer than the "
            "randomizer's resolution 2**-53 and cannot be implemented."
        )
    return (t_lo, t_hi) if hi_is_1 else (t_hi, t_lo)


def bernoulli(rng: RandomSource, p: float | Fraction, size: int) -> npt.NDArray[np.bool_]:
    """``size`` independent Bernoulli(``p``) draws, one 64-bit word each (see module doc)."""
    return words_below(random_words(rng, size), probability_threshold(p))


def words_below(
    words: npt.NDArray[np.uint64],
    threshold: int,
    *,
    out: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.bool_]:
    """``(words >> 11) < threshold`` for a threshold from :func:`probability_threshold`.

    For ``0 < threshold < 2**53`` this is ``words < threshold << 11`` (the low 11 bits of a
    word cannot lift it past a multiple of ``2**11``), which saves the shift.  The two ends
    are constants: ``threshold = 0`` gives all ``False``, ``threshold = 2**53`` all ``True``
    (``2**53 << 11`` does not fit in 64 bits).  Writes into ``out`` when given.
    """
    if not 0 <= threshold <= _TWO53:
        raise ParameterError(f"`threshold` must be in [0, 2**53], got {threshold}.")
    if out is None:
        out = np.empty(words.shape, dtype=np.bool_)
    if threshold == 0:
        out.fill(False)
    elif threshold == _TWO53:
        out.fill(True)
    else:
        np.less(words, np.uint64(threshold << 11), out=out)
    return out


def uniform_below(words: npt.NDArray[np.uint64], m: int) -> npt.NDArray[np.uint64]:
    """Map uniform 64-bit words to uniform integers in ``0..m-1`` (multiply-shift).

    With ``b = 64 - bit_length(m)`` bits of each word, category ``j`` has probability
    ``floor or ceil(2**b / m) / 2**b``: exact when ``m`` is a power of two, and within
    ``2**-b`` of ``1/m`` otherwise (``b >= 53`` for ``m < 2**11``).
    """
    if m < 1:
        raise ParameterError(f"`m` must be an integer >= 1, got {m}.")
    if m & (m - 1) == 0:
        shift = 64 - (m.bit_length() - 1)
        if shift == 64:
            return np.zeros(words.shape, dtype=np.uint64)
        return words >> np.uint64(shift)
    b = 64 - m.bit_length()
    return ((words >> np.uint64(64 - b)) * np.uint64(m)) >> np.uint64(b)


def uniform_below_into(
    words: npt.NDArray[np.uint64], m: int, out: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64]:
    """:func:`uniform_below` written into ``out`` (same shape, ``uint64``) with no temporary.

    ``out`` may be ``words`` itself when ``words`` is writeable.
    """
    if m < 1:
        raise ParameterError(f"`m` must be an integer >= 1, got {m}.")
    if m & (m - 1) == 0:
        shift = 64 - (m.bit_length() - 1)
        if shift == 64:
            out.fill(0)
        else:
            np.right_shift(words, np.uint64(shift), out=out)
        return out
    b = 64 - m.bit_length()
    np.right_shift(words, np.uint64(64 - b), out=out)
    np.multiply(out, np.uint64(m), out=out)
    np.right_shift(out, np.uint64(b), out=out)
    return out
