"""Design attributes of invitations: what the analyst already knows of each invited person
(stratum, PSU, design weight, raking variables such as region or age band), stored beside
the invitation's token hash (``invitations.attributes``, migration 0004), never beside a
true answer: there is none in the database.

The attributes are not sensitive by construction (the analyst had them before sending the
invitation), but joined with the reports they single out whoever has a combination of
values of their own: the dashboard shows the design-based estimates over the whole sample
only, and its counts per stratum hide any cell of fewer than
:data:`deniable.service.analysis.design.MIN_CELL` respondents (docs/service.md).

:func:`check_attributes` validates a batch before anything is written; one
:class:`~deniable.exceptions.ParameterError` names the field, the rule and the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from numbers import Integral, Real
from typing import Any

from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "DESIGN_ATTRIBUTES",
    "MAX_VALUE_LENGTH",
    "MAX_VARIABLES",
    "NAME_PATTERN",
    "check_attributes",
]

#: The attributes with a fixed role in the sample design (the rest are raking variables).
DESIGN_ATTRIBUTES = ("stratum", "psu", "weight")
#: The most raking variables an invitation may carry.
MAX_VARIABLES = 8
#: The longest text value (a stratum, a PSU, a raking variable's level).
MAX_VALUE_LENGTH = 64
#: What an attribute's name looks like (lower case; it names a column of the export).
NAME_PATTERN = r"[a-z][a-z0-9_]{0,31}"

Attributes = dict[str, str | float]


def check_attributes(
    attributes: Sequence[Mapping[str, Any]],
    count: int,
    *,
    variables: Sequence[str] = (),
    reserved: Collection[str] = (),
) -> list[Attributes]:
    """The validated attributes of ``count`` invitations, one mapping each (normalized:
    texts stripped, the weight a float).

    Every entry names the same attributes: any of ``stratum``, ``psu`` and ``weight``,
    and raking variables declared in ``variables`` (at most :data:`MAX_VARIABLES`, named
    by :data:`NAME_PATTERN`, none of them a question id of the survey: ``reserved``).
    ``weight`` is a finite number > 0; every other value a text (or a whole number) of 1
    to :data:`MAX_VALUE_LENGTH` characters.
    """
    if isinstance(attributes, str | bytes) or not isinstance(attributes, Sequence):
        raise ParameterTypeError(
            f"`attributes` must be a list with one entry per invitation, got "
            f"{type(attributes).__name__}."
        )
    if len(attributes) != count:
        raise ParameterError(
            f"`attributes` must hold one entry per invitation ({count}), got {len(attributes)}."
        )
    declared = _variables(variables, reserved)
    allowed = (*DESIGN_ATTRIBUTES, *declared)
    out: list[Attributes] = []
    names: tuple[str, ...] | None = None
    for i, entry in enumerate(attributes):
        where = f"`attributes[{i}]`"
        if not isinstance(entry, Mapping):
            raise ParameterTypeError(f"{where} must be an object, got {type(entry).__name__}.")
        keys = tuple(sorted(entry))
        if not keys:
            raise ParameterError(f"{where} must name at least one of {', '.join(allowed)}.")
        for key in keys:
            if key not in allowed:
                raise ParameterError(
                    f"{where}: an attribute must be one of {', '.join(allowed)} (declare a "
                    f"raking variable in `variables`), got {key!r}."
                )
        if names is None:
            names = keys
        elif keys != names:
            raise ParameterError(
                f"{where} must name the same attributes as `attributes[0]` "
                f"({', '.join(names)}), got {', '.join(keys)}."
            )
        out.append({key: _value(f"`attributes[{i}].{key}`", key, entry[key]) for key in keys})
    return out


def _variables(variables: Sequence[str], reserved: Collection[str]) -> tuple[str, ...]:
    if isinstance(variables, str) or not isinstance(variables, Sequence):
        raise ParameterTypeError(
            f"`variables` must be a list of names, got {type(variables).__name__}."
        )
    if len(variables) > MAX_VARIABLES:
        raise ParameterError(
            f"`variables` must name at most {MAX_VARIABLES} raking variables, got {len(variables)}."
        )
    for j, name in enumerate(variables):
        where = f"`variables[{j}]`"
        if not isinstance(name, str) or re.fullmatch(NAME_PATTERN, name) is None:
            raise ParameterError(
                f"{where} must be a name of 1 to 32 lower-case letters, digits and _ starting "
                f"with a letter, got {name!r}."
            )
        if name in DESIGN_ATTRIBUTES:
            raise ParameterError(
                f"{where}: {name!r} is a design attribute of its own, not a raking variable."
            )
        if name in reserved:
            raise ParameterError(
                f"{where}: {name!r} is a question id of the survey; a raking variable needs "
                "a name of its own (it names a column of the export)."
            )
        if name in variables[:j]:
            raise ParameterError(f"{where}: {name!r} is declared twice.")
    return tuple(variables)


def _value(where: str, key: str, value: Any) -> str | float:
    if key == "weight":
        if isinstance(value, bool) or not isinstance(value, Real):
            raise ParameterTypeError(f"{where} must be a number, got {value!r}.")
        w = float(value)
        if not math.isfinite(w) or w <= 0:
            raise ParameterError(f"{where} must be a finite number > 0, got {value!r}.")
        return w
    if isinstance(value, Integral) and not isinstance(value, bool):
        value = str(int(value))
    if not isinstance(value, str):
        raise ParameterTypeError(f"{where} must be a text, got {value!r}.")
    text = value.strip()
    if not 1 <= len(text) <= MAX_VALUE_LENGTH or not text.isprintable():
        raise ParameterError(
            f"{where} must be a printable text of 1 to {MAX_VALUE_LENGTH} characters, got "
            f"{value[:80]!r}."
        )
    return text
