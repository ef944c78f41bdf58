"""Designs by name, and construction from parameters given as numbers or text."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Any, TypeVar

from deniable.common import validation
from deniable.designs._base import Design
from deniable.designs._binary import (
    BiasedCoin,
    Binary,
    Crosswise,
    Custom,
    Mirrored,
    TwoCoin,
    Warner,
)
from deniable.designs._categorical import Categorical
from deniable.designs._forced import ForcedResponse, Mangat, Triangular, UnrelatedQuestion
from deniable.designs._kuk import Kuk
from deniable.designs._twogroup import TwoGroupDesign
from deniable.designs._twogroup_cheater import CheaterDetection, SymmetricCheaterDetection
from deniable.designs._twogroup_models import StochasticLieDetector, UnrelatedUnknown
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = ["DESIGNS", "TWO_GROUP_DESIGNS", "design_parameters", "make_design", "parse_value"]

_D = TypeVar("_D", bound=Design | TwoGroupDesign)


def _by_name(*classes: type[_D]) -> Mapping[str, type[_D]]:
    """``classes`` by their CLI ``name``, in the order given, read-only."""
    return MappingProxyType({cls.name: cls for cls in classes})


#: Every design by its CLI name, in the order of the documentation (read-only: a registry
#: shared by every thread cannot be changed behind their back).
DESIGNS: Mapping[str, type[Design]] = _by_name(
    Warner,
    Mirrored,
    TwoCoin,
    BiasedCoin,
    Binary,
    ForcedResponse,
    UnrelatedQuestion,
    Kuk,
    Mangat,
    Crosswise,
    Triangular,
    Custom,
    Categorical,
)

#: The two-group designs (respondents split at random into two groups), by CLI name.
TWO_GROUP_DESIGNS: Mapping[str, type[TwoGroupDesign]] = _by_name(
    UnrelatedUnknown,
    CheaterDetection,
    SymmetricCheaterDetection,
    StochasticLieDetector,
)


def design_parameters(name: str) -> dict[str, inspect.Parameter]:
    """The constructor parameters of design ``name`` (one- or two-group)."""
    cls = _lookup(name)
    return dict(inspect.signature(cls).parameters)


def _lookup(name: str) -> type[Design]:
    if name in TWO_GROUP_DESIGNS:
        return TWO_GROUP_DESIGNS[name]
    if name not in DESIGNS:
        every = ", ".join([*DESIGNS, *TWO_GROUP_DESIGNS])
        raise ParameterError(f"`design` must be one of {every}, got {name!r}.")
    return DESIGNS[name]


def parse_value(text: str) -> Any:
    """A parameter value from text: an integer (``"3"``), a decimal (``"0.75"``, ``"1e-1"``,
    ``"inf"``), a fraction (``"3/4"``, read exactly and rounded once to the nearest float,
    as are the ``"p/q"`` strings a question spec holds), or a comma-separated list of those
    (``"0.2,0.3,0.5"``, a tuple).  Text that is none of these stays text (``"exact"``), for
    the design to accept or reject by name."""
    text = text.strip()
    if "," in text:
        return tuple(parse_value(part) for part in text.split(","))
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if "/" in text:
        num, _, den = text.partition("/")
        try:
            exact = validation.exact_number(num) / validation.exact_number(den)
        except (ValueError, ZeroDivisionError):
            return text
        try:
            return float(exact)
        except OverflowError:  # beyond every double, as float("1e400") reads it
            return math.inf if exact > 0 else -math.inf
    return text


def _value(value: Any) -> Any:
    """A given parameter value as the constructor takes it: text parsed, fractions as floats,
    lists as tuples."""
    if isinstance(value, str):
        return parse_value(value)
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, list | tuple):
        return tuple(_value(x) for x in value)
    return value


def make_design(name: str, params: Mapping[str, Any] | None = None) -> Design:
    """Build design ``name`` (one- or two-group) from its parameters.

    A value may be a number, a :class:`~fractions.Fraction`, or text: ``"0.75"``, ``"3/4"``,
    a list ``"0.2,0.3,0.5"`` (see ``parse_value``), or the exact ``"p/q"`` form a question
    spec writes (``deniable.designs.QuestionSpec``).  Errors name the design and the
    parameter, the allowed values and the value given.

    >>> make_design("warner", {"p": "3/4"})
    Warner(p=0.75)
    >>> make_design("sld", {"p1": "2/12", "p2": "10/12"}).name
    'sld'
    >>> make_design("warner", {})
    Traceback (most recent call last):
    ...
    deniable.exceptions.ParameterError: design 'warner' needs parameter p (it takes p).
    """
    cls = _lookup(name)
    sig = design_parameters(name)
    if params is not None and not isinstance(params, Mapping):
        raise ParameterTypeError(
            f"the parameters of design {name!r} must be a mapping of name to value, got "
            f"{type(params).__name__}."
        )
    given = dict(params or {})
    takes = ", ".join(sig) or "no parameters"
    unknown = [k for k in given if k not in sig]
    if unknown:
        raise ParameterError(
            f"design {name!r} takes parameters {', '.join(sig) or '(none)'}; "
            f"got unknown {', '.join(repr(u) for u in unknown)}."
        )
    missing = [k for k, p in sig.items() if p.default is inspect.Parameter.empty and k not in given]
    if missing:
        raise ParameterError(
            f"design {name!r} needs parameter{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} (it takes {takes})."
        )
    values = {k: _value(x) for k, x in given.items()}
    if cls is Categorical and isinstance(values.get("forced"), int | float):
        values["forced"] = (values["forced"],)
    try:
        return cls(**values)
    except TypeError as exc:  # pragma: no cover - defensive: constructor signature mismatch
        if isinstance(exc, ParameterTypeError):
            raise
        raise ParameterError(f"design {name!r}: {exc}") from None
