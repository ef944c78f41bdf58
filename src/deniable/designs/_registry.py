"""Designs by CLI name, and construction from ``NAME=VALUE`` strings."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
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
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = ["DESIGNS", "design_parameters", "make_design"]

#: Every design by its CLI name, in the order of the documentation.
DESIGNS: Mapping[str, type[Design]] = {
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


def design_parameters(name: str) -> dict[str, inspect.Parameter]:
    """The constructor parameters of design ``name``."""
    cls = _lookup(name)
    return dict(inspect.signature(cls).parameters)


def _lookup(name: str) -> type[Design]:
    if name not in DESIGNS:
        raise ParameterError(f"`design` must be one of {', '.join(DESIGNS)}, got {name!r}.")
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
    """Build design ``name`` from parameters; string values are parsed (``3/4`` allowed).

    >>> make_design("warner", {"p": "3/4"})
    Warner(p=0.75)
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
