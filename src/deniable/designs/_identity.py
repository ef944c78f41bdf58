"""The identity of a mechanism: one canonical string from its name and exact parameters.

A tally carries the key of the mechanism that produced it, so that tallies of different
mechanisms never add, and a question spec (``designs/_spec.py``) has the same key as the
mechanism it describes.  Parameters are written exactly: a float as the fraction it is
(``0.75`` -> ``"3/4"``, ``0.1`` -> ``"3602879701896397/36028797018963968"``), so two
mechanisms share a key exactly when their parameters are the same numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from deniable.exceptions import ParameterTypeError

__all__ = ["exact_value", "mechanism_key"]


def exact_value(value: Any) -> Any:
    """A parameter as plain JSON with every number exact: a float (or Fraction) becomes the
    string ``"p/q"`` (``"p"`` for a whole number), an int stays an int, ``inf`` is
    ``"inf"``; tuples and lists become lists; strings and booleans stay as they are."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            raise ParameterTypeError("a mechanism parameter must not be NaN.")
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return str(Fraction(value))
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, list | tuple):
        return [exact_value(x) for x in value]
    if hasattr(value, "item") and callable(value.item):  # a numpy scalar
        return exact_value(value.item())
    raise ParameterTypeError(
        f"a mechanism parameter must be a number, string, boolean or list, got "
        f"{type(value).__name__} {value!r}."
    )


def mechanism_key(name: str, parameters: Mapping[str, Any]) -> str:
    """``name`` and ``parameters`` as one canonical string (compact JSON, sorted keys, exact
    numbers).

    >>> mechanism_key("warner", {"p": 0.75})
    'warner{"p":"3/4"}'
    >>> mechanism_key("categorical", {"k": 4, "p_truthful": 0.5, "forced": None})
    'categorical{"forced":null,"k":4,"p_truthful":"1/2"}'
    """
    body = {str(k): exact_value(v) for k, v in parameters.items()}
    return name + json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
