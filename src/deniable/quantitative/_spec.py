"""Quantitative designs from plain data (a dict, as JSON or a command line gives them) and
back: ``{"design": "additive", "scrambler": {"distribution": "laplace", "scale": 40000},
"bounds": [0, 200000]}``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.quantitative import _distributions as dist
from deniable.quantitative._base import ScrambledDesign
from deniable.quantitative._mixture import UnrelatedQuantitative
from deniable.quantitative._scrambling import Additive, Multiplicative

__all__ = ["DISTRIBUTIONS", "NUMBER_DESIGNS", "make_distribution", "number_design", "number_spec"]

#: Every scrambling distribution by name, with its parameters.
DISTRIBUTIONS: dict[str, tuple[type[dist.Distribution], tuple[str, ...]]] = {
    "constant": (dist.Constant, ("value",)),
    "exponential": (dist.Exponential, ("mean",)),
    "f": (dist.FDistribution, ("d1", "d2")),
    "laplace": (dist.Laplace, ("scale", "loc")),
    "normal": (dist.Normal, ("mean", "sd")),
    "uniform": (dist.Uniform, ("low", "high")),
}

#: The quantitative designs a spec can name (the optional design needs its subsamples and
#: each respondent's choice, so it is built in code only).
NUMBER_DESIGNS = ("additive", "multiplicative", "unrelated")


def make_distribution(name: Any, params: Mapping[str, Any]) -> dist.Distribution:
    """The distribution ``name`` (one of :data:`DISTRIBUTIONS`) with ``params``.

    >>> make_distribution("laplace", {"scale": 2})
    Laplace(scale=2, loc=0)
    """
    kind = v.choice("distribution", name, DISTRIBUTIONS)
    cls, allowed = DISTRIBUTIONS[kind]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ParameterError(
            f"`{unknown[0]}` is not a parameter of the {kind} distribution (its parameters: "
            f"{', '.join(allowed)})."
        )
    required = [f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if f.default is dataclasses.MISSING]  # fmt: skip
    missing = [k for k in required if k not in params]
    if missing:
        raise ParameterError(
            f"`{missing[0]}` must be given for the {kind} distribution (its parameters: "
            f"{', '.join(allowed)}), got none."
        )
    return cls(**{k: params[k] for k in allowed if k in params})


def _distribution(name: str, data: Any) -> dist.Distribution:
    if isinstance(data, dist.Distribution):
        return data
    if not isinstance(data, Mapping) or "distribution" not in data:
        raise ParameterTypeError(
            f"`{name}` must be a Distribution or a dict with a 'distribution' name and its "
            f"parameters, got {type(data).__name__}."
        )
    params = {k: x for k, x in data.items() if k != "distribution"}
    return make_distribution(data["distribution"], params)


def number_design(spec: Mapping[str, Any]) -> ScrambledDesign:
    """The design a spec describes: ``design`` (``additive``, ``multiplicative`` or
    ``unrelated``), ``scrambler`` (a distribution's dict; for ``unrelated`` the innocuous
    answer's), ``p`` (``unrelated``) and ``bounds`` (``[low, high]``, optional).

    >>> d = number_design({"design": "unrelated", "p": 0.7,
    ...                    "scrambler": {"distribution": "normal", "mean": 50, "sd": 15}})
    >>> d == UnrelatedQuantitative.mix_norm(0.7, 50, 15)
    True
    """
    v.instance("spec", spec, Mapping, "a dict")
    kind = v.choice("design", spec.get("design"), NUMBER_DESIGNS)
    allowed = {"design", "scrambler", "bounds"} | ({"p"} if kind == "unrelated" else set())
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ParameterError(
            f"`{unknown[0]}` is not a field of the {kind} design (its fields: "
            f"{', '.join(sorted(allowed))})."
        )
    if "scrambler" not in spec:
        raise ParameterError(f"`scrambler` must be given for the {kind} design, got none.")
    s = _distribution("scrambler", spec["scrambler"])
    bounds = spec.get("bounds")
    bounds = None if bounds is None else tuple(bounds) if isinstance(bounds, list) else bounds
    if kind == "additive":
        return Additive(s, bounds=bounds)
    if kind == "multiplicative":
        return Multiplicative(s, bounds=bounds)
    if bounds is not None:
        raise ParameterError("`bounds` does not apply to the unrelated design, got bounds.")
    if "p" not in spec:
        raise ParameterError("`p` must be given for the unrelated design, got none.")
    return UnrelatedQuantitative(spec["p"], s)


def number_spec(design: ScrambledDesign) -> dict[str, Any]:
    """The spec of ``design``, the inverse of :func:`number_design`.

    >>> from deniable.quantitative import Laplace
    >>> spec = number_spec(Additive(Laplace(2.0), bounds=(0, 10)))
    >>> spec["scrambler"], spec["bounds"]
    ({'distribution': 'laplace', 'scale': 2.0, 'loc': 0.0}, [0.0, 10.0])
    >>> number_design(spec) == Additive(Laplace(2.0), bounds=(0, 10))
    True
    """
    if isinstance(design, Additive | Multiplicative):
        out: dict[str, Any] = {"design": design.name, "scrambler": design.scrambler.to_dict()}
        if design.bounds is not None:
            out["bounds"] = list(design.bounds)
        return out
    if isinstance(design, UnrelatedQuantitative):
        return {"design": "unrelated", "p": design.p, "scrambler": design.innocuous.to_dict()}
    raise ParameterTypeError(
        f"`design` must be an Additive, Multiplicative or UnrelatedQuantitative design, got "
        f"{type(design).__name__}."
    )
