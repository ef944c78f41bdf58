"""The one JSON encoder: every ``to_dict()`` and every ``--json`` output goes through it.

Policy (valid JSON always, never ``NaN`` or ``Infinity``):

* an infinite number is the string ``"inf"`` (``"-inf"``), an undefined one (NaN) the
  string ``"nan"``; a finite float stays a number;
* numpy scalars become Python numbers, numpy arrays (nested) lists, tuples lists;
* a :class:`~fractions.Fraction` is the exact string ``"p/q"`` (``"3/4"``; ``"2"`` when whole);
* mapping keys become strings; an object with a ``to_dict()`` method is encoded as what
  that returns; anything else is its ``str()``.

:func:`dumps` writes the result with ``allow_nan=False``, so a value that slipped past the
policy fails loudly instead of producing invalid JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["dumps", "json_number", "to_jsonable"]


def json_number(x: float) -> float | str:
    """A float for JSON: itself when finite, else ``"inf"``, ``"-inf"`` or ``"nan"``.

    >>> [json_number(float(x)) for x in ("0.5", "inf", "-inf", "nan")]
    [0.5, 'inf', '-inf', 'nan']
    """
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def to_jsonable(value: Any) -> Any:
    """Plain JSON data (dicts, lists, strings, numbers, booleans, ``None``) from ``value``,
    by the policy of the module docstring.

    >>> to_jsonable({"e": float("inf"), "x": (np.float64(0.5), Fraction(3, 4)), 1: np.arange(2)})
    {'e': 'inf', 'x': [0.5, '3/4'], '1': [0, 1]}
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(x) for k, x in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(x) for x in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, Fraction):
        return str(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_jsonable(to_dict())
    return str(value)


def dumps(value: Any, *, indent: int | None = 2, ensure_ascii: bool = False) -> str:
    """``value`` as strict JSON text (:func:`to_jsonable`, then ``allow_nan=False``)."""
    return json.dumps(to_jsonable(value), indent=indent, allow_nan=False, ensure_ascii=ensure_ascii)
