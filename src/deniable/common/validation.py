"""Parameter checks shared by every module: one message format everywhere."""

from __future__ import annotations

import datetime as dt
import math
import numbers
import re
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterError, ParameterTypeError

#: Errors about data never quote a value: an answer or a device's value is what the
#: randomization hides, and an error message may be logged or sent on.
_NOT_SHOWN = " (values are not shown in errors)"


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        digits = str(abs(value))
        sign = "-" if value < 0 else ""
        short = f"{sign}{digits[0]}.{digits[1:7]}e+{len(digits) - 1}"
        return f"{short} (an integer of {len(digits)} digits)"
    return repr(value) if isinstance(value, str) else str(value)


#: A decimal exponent beyond this is past every double (about 1e308, 5e-324): text with
#: one is read as ``float`` reads it, never as an exact Fraction of ``10**exponent``.
MAX_EXACT_EXPONENT = 400

_EXPONENT = re.compile(r"[eE]\s*([+-]?)\s*0*(\d+)\s*$")


def exact_number(text: str) -> Fraction | float:
    """The number written in ``text`` (``"0.3"``, ``"3/10"``, ``"1e-6"``) as an exact
    :class:`~fractions.Fraction`, the way ``Fraction(text)`` reads it, except that a
    decimal exponent beyond :data:`MAX_EXACT_EXPONENT` gives what ``float(text)`` gives
    (``inf``, ``-inf``, ``0.0`` or ``-0.0``) instead of building ``10**exponent``, which
    for ``"1e+1000000000000000000000"`` would take forever.  Raises ``ValueError`` (or
    ``ZeroDivisionError`` for ``"1/0"``) for text that is not a number, as ``Fraction``
    does.

    >>> exact_number("3/10"), exact_number("1e-3")
    (Fraction(3, 10), Fraction(1, 1000))
    >>> exact_number("-2.5e+1000000000000000000000"), exact_number("7e-99999999999")
    (-inf, 0.0)
    """
    stripped = text.strip()
    found = _EXPONENT.search(stripped)
    if found and (len(found.group(2)) > 4 or int(found.group(2)) > MAX_EXACT_EXPONENT):
        return float(stripped)  # ValueError for anything float does not read either
    return Fraction(stripped)


def real(name: str, value: Any) -> float:
    """Return ``value`` as a finite-or-infinite float; reject non-reals and NaN."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(
            f"`{name}` must be a real number, got {type(value).__name__} {value!r}."
        )
    try:
        out = float(value)
    except OverflowError:  # an integer beyond every double (10**400)
        out = math.inf if value > 0 else -math.inf  # type: ignore[operator]
    if math.isnan(out):
        raise ParameterError(f"`{name}` must be a number, got nan.")
    return out


def probability(
    name: str,
    value: Any,
    *,
    low_open: bool = False,
    high_open: bool = False,
    exclude: Iterable[float] = (),
) -> float:
    """Check ``value`` is a probability in the stated interval, excluding listed points."""
    p = real(name, value)
    excluded = tuple(exclude)
    lo_ok = p > 0 if low_open else p >= 0
    hi_ok = p < 1 if high_open else p <= 1
    if not (lo_ok and hi_ok) or p in excluded:
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        extra = "".join(f" and not {_fmt(x)}" for x in excluded)
        raise ParameterError(f"`{name}` must be in {interval}{extra}, got {_fmt(value)}.")
    return p


#: The smallest positive probability the 53-bit randomizers realize (``deniable.randomness``).
RESOLUTION = 2.0**-53


def realizable(name: str, value: float) -> float:
    """Check a probability a randomizer draws is 0 or at least ``2**-53``.

    A Bernoulli draw compares 53 random bits with ``round(p * 2**53)``, so a positive ``p``
    below ``2**-53`` may be drawn as 0: a report meant to be merely unlikely becomes
    impossible and reveals the answer (epsilon infinite while the design states it finite).
    """
    p = float(value)
    if 0 < p < RESOLUTION:
        raise ParameterError(
            f"`{name}` must be 0 or at least 2**-53 (the randomizer draws 53-bit "
            f"probabilities; a smaller one would become 0 and reveal the answer), got {value!r}."
        )
    return p


def positive(name: str, value: Any, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """Check ``value`` is a real > 0 (or >= 0), finite unless ``allow_inf``."""
    x = real(name, value)
    ok = (x >= 0 if allow_zero else x > 0) and (allow_inf or math.isfinite(x))
    if not ok:
        bound = "[0, " if allow_zero else "(0, "
        bound += "inf]" if allow_inf else "inf)"
        raise ParameterError(f"`{name}` must be in {bound}, got {_fmt(value)}.")
    return x


def instance(name: str, value: Any, kind: Any, what: str) -> None:
    """Check ``value`` is an instance of ``kind`` (a class, abstract or not, or a union or
    tuple of them); ``what`` names the kind in the message: "`ledger` must be a
    BudgetLedger, got list."

    >>> instance("n", 3, int, "an int")
    >>> instance("n", "3", int, "an int")
    Traceback (most recent call last):
    ...
    deniable.exceptions.ParameterTypeError: `n` must be an int, got str.
    """
    if not isinstance(value, kind):
        raise ParameterTypeError(f"`{name}` must be {what}, got {type(value).__name__}.")


def instance_or_none(name: str, value: Any, kind: Any, what: str) -> None:
    """Check ``value`` is ``None`` or an instance of ``kind`` (a class, or a union or tuple
    of them); ``what`` names the kind in the message: "`store` must be a MemoStore (e.g.
    InMemoryMemoStore()) or None, got list."

    >>> instance_or_none("n", 3, int, "an int")
    >>> instance_or_none("n", "3", int, "an int")
    Traceback (most recent call last):
    ...
    deniable.exceptions.ParameterTypeError: `n` must be an int or None, got str.
    """
    if value is not None:
        instance(name, value, kind, f"{what} or None")


def fmt_limit(x: int) -> str:
    """A limit as people read it: ``10**15`` or ``2**62`` for large round ones."""
    if abs(x) >= 10**6:
        for base in (10, 2):
            k = round(math.log(abs(x), base))
            if base**k == abs(x):
                return f"{'-' if x < 0 else ''}{base}**{k}"
    return str(x)


def integer(
    name: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    why: str = "",
) -> int:
    """Check ``value`` is an integer within ``[minimum, maximum]``; ``why`` (e.g. "the
    exact convolution needs memory linear in n") is said after the range.

    Every range is stated one way: "`n` must be an integer in [1, 10**8] (why), got 0."
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ParameterTypeError(
                f"`{name}` must be an integer, got {type(value).__name__} {value!r}."
            )
    out = int(value)
    if (minimum is not None and out < minimum) or (maximum is not None and out > maximum):
        lo = "-inf" if minimum is None else fmt_limit(minimum)
        hi = "inf" if maximum is None else fmt_limit(maximum)
        reason = f" ({why})" if why else ""
        raise ParameterError(
            f"`{name}` must be an integer in [{lo}, {hi}]{reason}, got {_fmt(out)}."
        )
    return out


def choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Check ``value`` is one of the allowed strings."""
    allowed = tuple(choices)
    if not isinstance(value, str) or value not in allowed:
        listed = ", ".join(repr(c) for c in allowed)
        raise ParameterError(f"`{name}` must be one of {listed}, got {value!r}.")
    return value


def day(name: str, value: Any, *, what: str = "a date") -> dt.date:
    """Check a calendar day: a :class:`datetime.date` (not a datetime) or its ISO text
    ``'YYYY-MM-DD'`` (``what`` names it in the error); the day as a date."""
    if isinstance(value, dt.datetime) or not isinstance(value, dt.date | str):
        raise ParameterTypeError(
            f"`{name}` must be a datetime.date or 'YYYY-MM-DD', got {type(value).__name__}."
        )
    if isinstance(value, dt.date):
        return value
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ParameterError(f"`{name}` must be {what} 'YYYY-MM-DD', got {value!r}.") from None


def level(value: Any) -> float:
    """Check a confidence level in (0, 1)."""
    return probability("level", value, low_open=True, high_open=True)


def reports_array(name: str, values: Any, *, categories: int = 2) -> npt.NDArray[np.integer[Any]]:
    """Return ``values`` as a 1-D integer array whose entries are in ``0..categories-1``.

    Booleans are accepted for two categories. Floats must hold integral values.
    """
    arr = np.asarray(values)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise DataError(f"`{name}` must be a 1-D array, got an array of shape {arr.shape}.")
    if arr.dtype == np.bool_:
        if categories < 2:
            raise DataError(f"`{name}`: booleans need at least 2 categories.")
        return arr.view(np.uint8)
    if arr.dtype.kind == "f":
        whole = np.isfinite(arr) & (arr == np.floor(arr))
        if arr.size and not np.all(whole):
            raise DataError(
                f"`{name}` must hold integers in 0..{categories - 1}, got a number that is "
                f"not at index {int(np.flatnonzero(~whole)[0])}{_NOT_SHOWN}."
            )
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iu":
        raise DataError(
            f"`{name}` must hold integers in 0..{categories - 1}, got dtype {arr.dtype}."
        )
    # an unsigned array has no entry below 0: one pass (max) instead of two
    if arr.size and (arr.max() > categories - 1 or (arr.dtype.kind == "i" and arr.min() < 0)):
        at = int(np.flatnonzero((arr < 0) | (arr > categories - 1))[0])
        raise DataError(
            f"`{name}` must hold integers in 0..{categories - 1}, got one outside at index "
            f"{at}{_NOT_SHOWN}."
        )
    return arr
