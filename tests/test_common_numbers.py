"""``validation.exact_number``: numbers written as text, exactly, and never 10**exponent.

A decimal exponent of 22 digits (``"6e+1000000000000000000000"``) made ``Fraction(text)``
build an integer of 10**22 digits: ``deniable privacy compose --delta`` hung on it.  Text
whose exponent is past every double is read as ``float`` reads it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from deniable.common import validation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3/10", Fraction(3, 10)),
        (" 0.1 ", Fraction(1, 10)),
        ("1e-3", Fraction(1, 1000)),
        ("-2.5E+2", Fraction(-250)),
        ("1e400", Fraction(10) ** 400),  # past the doubles, still exact: callers decide
        ("1e-400", Fraction(1, 10**400)),
    ],
)
def test_exact_values(text: str, expected: Fraction) -> None:
    got = validation.exact_number(text)
    assert isinstance(got, Fraction) and got == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("6.276951789613612e+1000000000000000000000", math.inf),
        ("-2e+99999999999999", -math.inf),
        ("7e-99999999999", 0.0),
        ("-7E-0000000000099999999999", -0.0),
        ("0e+99999999999999", 0.0),
        ("2e+401", math.inf),  # one past the exact range: float's reading
    ],
)
def test_huge_exponents_are_read_as_float_reads_them(text: str, expected: float) -> None:
    got = validation.exact_number(text)
    assert isinstance(got, float) and got == expected
    assert math.copysign(1, got) == math.copysign(1, float(text))


@pytest.mark.parametrize("text", ["abc", "1e", "1/1e999999999999", "", "e+99999999999"])
def test_what_is_not_a_number_raises_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        validation.exact_number(text)


def test_division_by_zero_is_fractions() -> None:
    with pytest.raises(ZeroDivisionError):
        validation.exact_number("1/0")
