"""Numbers for people: the one epsilon formatter (:func:`format_epsilon`), delta, and the
small number, interval and parameter formats every printed result uses.

The rule of :func:`format_epsilon` (the only place an epsilon becomes text):

* ``∞`` for an infinite epsilon (``-∞`` for minus infinity), ``nan`` for NaN: never a
  finite stand-in;
* 4 decimals (``1.0986``, ``1.0000``, ``0.0500``, ``2130.0000``, and an exact zero as
  ``0.0000``) from 0.001 up to 10⁹, so that the tables line up on the decimal point and
  every value shows at least two significant digits;
* 4 significant digits below 0.001 (``0.0009995``, ``1e-06``, ``1e-300``): a tiny epsilon
  is never shown as ``0.0000``, which only an exact zero prints as;
* 7 significant digits from 10⁹ up (``1e+09``, ``1.797693e+308``), not hundreds of digits.

With ``digits`` other than 4 the same rule holds with ``digits`` decimals from
``10^(1 - digits)`` up.

Values that differ only beyond these digits print alike (``1.00001`` and ``1.00002`` are
both ``1.0000``); :func:`format_epsilons` gives a column of epsilons enough digits that
distinct values look distinct.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "epsilon_note",
    "format_delta",
    "format_epsilon",
    "format_epsilons",
    "format_interval",
    "format_number",
    "format_parameters",
    "format_probabilities",
    "format_probability",
]

#: From this up an epsilon is printed with 7 significant digits.
_LARGE = 1e9


def format_epsilon(epsilon: float, digits: int = 4) -> str:
    """An epsilon (or rho, mu, an order alpha) for people; see the module docstring:
    ``digits`` decimals from ``10^(1 - digits)`` to 10⁹, ``digits`` significant digits
    below (default 4).

    >>> format_epsilon(float("inf")), format_epsilon(0.0), format_epsilon(math.log(3))
    ('∞', '0.0000', '1.0986')
    >>> format_epsilon(0.05), format_epsilon(1e-6), format_epsilon(1e-300), format_epsilon(1e300)
    ('0.0500', '1e-06', '1e-300', '1e+300')
    """
    x = float(epsilon)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return f"{0:.{digits}f}"
    if abs(x) >= _LARGE:
        return f"{x:.7g}"
    if abs(x) < 10.0 ** (1 - digits):
        return f"{x:.{digits}g}"
    return f"{x:.{digits}f}"


def format_epsilons(values: Sequence[float], digits: int = 4) -> list[str]:
    """:func:`format_epsilon` of each value, with more digits where needed so that values
    that differ never print alike (at most 17 digits, a double's precision).

    >>> format_epsilons([1.00001, 1.00002])
    ['1.00001', '1.00002']
    """
    xs = [float(x) for x in values]
    distinct = len({x for x in xs if not math.isnan(x)}) + any(math.isnan(x) for x in xs)
    for d in range(digits, 18):
        out = [format_epsilon(x, d) for x in xs]
        if len(set(out)) >= distinct:
            if d > digits:  # drop trailing zeros the extra digits added
                out = [_trim(s) if "." in s and "e" not in s else s for s in out]
            return out
    return [repr(x) for x in xs]


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def epsilon_note(epsilon: float) -> str:
    """Epsilon with what it means: ``∞ (some report reveals the true answer: ...)`` or the
    value and the largest factor by which one report changes the odds.

    >>> epsilon_note(math.log(3))
    '1.0986 (one report changes the odds of any answer by at most 3x)'
    """
    eps = float(epsilon)
    if math.isinf(eps):
        return "∞ (some report reveals the true answer: no finite privacy guarantee)"
    if eps < 1e-3:  # e^eps to 4 digits would read "1x"
        ratio = f"(1 + {math.expm1(eps):.3g})"
    elif eps < 700:
        ratio = f"{math.exp(eps):.4g}"
    else:  # e^eps overflows a float
        ratio = f"e^{eps:.4g} "
    return f"{format_epsilon(eps)} (one report changes the odds of any answer by at most {ratio}x)"


def format_delta(delta: float) -> str:
    """Delta for people: ``0``, ``1 (vacuous)`` from 1 up, else 4 significant digits.

    >>> format_delta(0.0), format_delta(1e-6), format_delta(1.0)
    ('0', '1e-06', '1 (vacuous)')
    """
    if delta == 0:
        return "0"
    if delta >= 1:
        return "1 (vacuous)"
    return f"{delta:.4g}"


def format_number(x: float | None, digits: int = 4) -> str:
    """An estimate or probability for people: ``digits`` decimals, scientific when smaller
    than the last decimal shown (never ``0.0000`` for a tiny non-zero value), ``-`` for
    none, ``n/a`` for NaN, ``∞`` for infinity.

    >>> format_number(0.3), format_number(3.3e-06), format_number(None), format_number(float("nan"))
    ('0.3000', '3.30e-06', '-', 'n/a')
    """
    if x is None:
        return "-"
    x = float(x)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x != 0 and abs(x) < 10 ** (-digits):
        return f"{x:.2e}"
    return f"{x:.{digits}f}"


def format_interval(interval: Sequence[float] | Any, digits: int = 4) -> str:
    """``[low, high]`` with :func:`format_number` at each end."""
    return f"[{format_number(interval[0], digits)}, {format_number(interval[1], digits)}]"


def format_parameters(parameters: Mapping[str, Any]) -> str:
    """``p=0.75, q=0.166667``: floats to 6 significant digits, lists comma-separated.

    >>> format_parameters({"p": 0.75, "forced": (0.2, 0.8)}), format_parameters({})
    ('p=0.75, forced=0.2,0.8', '(defaults)')
    """

    def show(x: Any) -> str:
        if isinstance(x, float):
            return f"{x:.6g}"
        if isinstance(x, tuple | list):
            return ",".join(show(y) for y in x)
        return str(x)

    return ", ".join(f"{k}={show(x)}" for k, x in parameters.items()) or "(defaults)"


def format_probability(p: float, digits: int = 6) -> str:
    """A probability with ``digits`` significant digits; near 1/2 with enough more to show
    its distance from 1/2 to 3 digits (``0.50000025``, not ``0.5``); within rounding of 1 (but
    not 1) as ``1 − 2.22e-16``.  Only an exact 0, 1/2 or 1 is shown as ``0``, ``0.5``, ``1``."""
    text = f"{p:.{digits}g}"
    if p < 1 and float(text) == 1.0:
        return f"1 − {1 - p:.3g}"
    off = abs(p - 0.5)
    while digits < 17 and off > 0 and abs(float(text) - p) > 1e-3 * off:
        digits += 1
        text = f"{p:.{digits}g}"
    return text


def format_probabilities(*values: float) -> list[str]:
    """:func:`format_probability` of each value, with enough digits that different values
    never look the same (``P(yes | 1), P(yes | 0)`` of a tiny epsilon are not ``0.5, 0.5``)."""
    for digits in range(6, 17):
        out = [format_probability(x, digits) for x in values]
        if len(set(out)) == len(set(values)):
            return out
    return [repr(x) for x in values]
