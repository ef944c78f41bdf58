"""Designs by CLI name, and construction from ``NAME=VALUE`` strings."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

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

__all__ = ["DESIGNS", "TWO_GROUP_DESIGNS", "design_parameters", "make_design"]

#: Every design by its CLI name, in the order of the documentation (read-only: a registry
#: shared by every thread cannot be changed behind their back).
DESIGNS: Mapping[str, type[Design]] = MappingProxyType(
    {
        cls.name: cls
        for cls in (
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
    }
)

#: The two-group designs (respondents split at random into two groups), by CLI name.
TWO_GROUP_DESIGNS: Mapping[str, type[TwoGroupDesign]] = MappingProxyType(
    {
        cls.name: cls
        for cls in (
            UnrelatedUnknown,
            CheaterDetection,
            SymmetricCheaterDetection,
            StochasticLieDetector,
        )
    }
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


def _parse_value(name: str, text: str) -> Any:
    if "," in text:
        return tuple(_parse_value(name, part) for part in text.split(","))
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if "/" in text:
        num, _, den = text.partition("/")
        try:
            return float(num) / float(den)
        except (ValueError, ZeroDivisionError):
            pass
    return text


def make_design(name: str, params: Mapping[str, Any] | None = None) -> Design:
    """Build design ``name`` (one- or two-group) from parameters; string values are parsed
    (``3/4`` allowed).

    >>> make_design("warner", {"p": "3/4"})
    Warner(p=0.75)
    >>> make_design("sld", {"p1": "2/12", "p2": "10/12"}).name
    'sld'
    """
    cls = _lookup(name)
    sig = design_parameters(name)
    given = dict(params or {})
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
            f"{', '.join(missing)} (e.g. --param {missing[0]}=VALUE)."
        )
    values = {k: _parse_value(k, x) if isinstance(x, str) else x for k, x in given.items()}
    if cls is Categorical and isinstance(values.get("forced"), int | float):
        values["forced"] = (values["forced"],)
    try:
        return cls(**values)
    except TypeError as exc:  # pragma: no cover - defensive: constructor signature mismatch
        if isinstance(exc, ParameterTypeError):
            raise
        raise ParameterError(f"design {name!r}: {exc}") from None
