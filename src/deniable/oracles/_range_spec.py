"""The specs of the mechanisms of ordered values: the JSON a device needs to randomize a
value without ``deniable``, read back with every implied field checked (``docs/specs.md``).

* ``deniable.range-spec/1``: :class:`~deniable.oracles.HierarchicalHistogram` and
  :class:`~deniable.oracles.HaarHRR`.  A device draws its level from its first word,
  ``uniform(word, L)``, then reports its node at that level through the level's oracle,
  whose own spec is in ``levels`` (an oracle spec, ``deniable.oracle/1``, or for k-ary
  randomized response the question spec of the design ``categorical``).
* ``deniable.square-wave-spec/1``: :class:`~deniable.oracles.SquareWave`, two words a
  report: the window's start rounded up with probability ``frac(v G)``, then the cell by the
  inverse CDF of the integer weights ``alpha``, ``beta`` (64-bit integers, written as
  decimal strings: a JSON reader may hold only 53 bits of a number).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from deniable.designs import spec_of
from deniable.exceptions import DataError, DeniableError, ParameterTypeError
from deniable.oracles._base_spec import spec_head
from deniable.oracles._haar import HaarHRR
from deniable.oracles._hierarchical import HierarchicalHistogram
from deniable.oracles._spec import _number, _parameter, _spec_fields, oracle_spec
from deniable.oracles._square_wave import SW_GRID, SquareWave

__all__ = [
    "RANGE_SPEC_SCHEMA",
    "SQUARE_WAVE_SPEC_SCHEMA",
    "range_from_spec",
    "range_spec",
    "square_wave_from_spec",
    "square_wave_spec",
]

#: The schema identifier of a range mechanism's spec.
RANGE_SPEC_SCHEMA = "deniable.range-spec/1"
#: The schema identifier of a Square Wave spec.
SQUARE_WAVE_SPEC_SCHEMA = "deniable.square-wave-spec/1"

RangeMechanism = HierarchicalHistogram | HaarHRR
_RANGES: dict[str, type[HierarchicalHistogram] | type[HaarHRR]] = {
    HierarchicalHistogram.name: HierarchicalHistogram,
    HaarHRR.name: HaarHRR,
}
#: The parameters of each mechanism and which of them are strings (the others numbers).
_PARAMETERS: dict[str, tuple[str, ...]] = {
    HierarchicalHistogram.name: ("domain", "branching", "requested_epsilon", "oracle"),
    HaarHRR.name: ("domain", "requested_epsilon"),
    SquareWave.name: ("epsilon", "b", "lower", "upper", "bins", "output_bins", "clip"),
}
_NODES = {
    HierarchicalHistogram.name: (
        "levels[l] (tree level l + 1, B**(l + 1) nodes) reports node_l(x) = x // B**(h - 1 - l)"
    ),
    HaarHRR.name: (
        "levels[l] (a Hadamard response over max(2, 2**l) values) reports node_l(x) = "
        "x >> (h - l); its bit (report & 1) is flipped when (x >> (h - l - 1)) & 1 = 1"
    ),
}
_RANGE_FIELDS = (
    "schema", "mechanism", "parameters", "key", "algorithm", "constants", "level_draw",
    "nodes", "levels", "words_per_report", "report", "epsilon", "implemented_epsilon",
)  # fmt: skip
_SW_FIELDS = (
    "schema", "mechanism", "parameters", "key", "algorithm", "constants", "words_per_report",
    "values", "report", "epsilon", "implemented_epsilon",
)  # fmt: skip


def _level_spec(oracle: Any) -> dict[str, Any]:
    """A level oracle's spec: its oracle spec, or k-ary RR's question spec."""
    if oracle.name == "categorical":
        out: dict[str, Any] = spec_of(oracle).to_dict()
        return out
    return oracle_spec(oracle)


def range_spec(mechanism: RangeMechanism) -> dict[str, Any]:
    """The spec of a :class:`~deniable.oracles.HierarchicalHistogram` or a
    :class:`~deniable.oracles.HaarHRR`, as plain JSON data (schema
    ``deniable.range-spec/1``).

    >>> spec = range_spec(HaarHRR(16, 1.0))
    >>> spec["algorithm"], spec["constants"], spec["words_per_report"]
    ('haar-hrr/1', {'branching': 2, 'domain': 16, 'height': 4, 'levels': 4}, [3, 3, 3, 3])
    >>> range_from_spec(spec) == HaarHRR(16, 1.0)
    True
    """
    if not isinstance(mechanism, HierarchicalHistogram | HaarHRR):
        raise ParameterTypeError(
            f"`mechanism` must be a HierarchicalHistogram or a HaarHRR, got "
            f"{type(mechanism).__name__}."
        )
    levels = [_level_spec(o) for o in mechanism.levels]
    branching = getattr(mechanism, "branching", 2)
    return {
        **spec_head(RANGE_SPEC_SCHEMA, mechanism, _constructor(mechanism), f"{mechanism.name}/1"),
        "constants": {
            "branching": branching,
            "domain": mechanism.domain,
            "height": mechanism.height,
            "levels": len(levels),
        },
        "level_draw": "l = uniform(w_0, levels): the report's first word",
        "nodes": _NODES[mechanism.name],
        "levels": levels,
        "words_per_report": [1 + int(s["words_per_report"]) for s in levels],
        "report": "level-report",
        "epsilon": _number(mechanism.epsilon),
        "implemented_epsilon": _number(mechanism.implemented_epsilon),
    }


def _constructor(mechanism: Any) -> dict[str, Any]:
    """The arguments that build ``mechanism`` (its dataclass fields), by name."""
    return {n: getattr(mechanism, n) for n in _PARAMETERS[mechanism.name]}


def square_wave_spec(mechanism: SquareWave) -> dict[str, Any]:
    """The spec of a :class:`~deniable.oracles.SquareWave`, as plain JSON data (schema
    ``deniable.square-wave-spec/1``).

    >>> spec = square_wave_spec(SquareWave(1.0))
    >>> spec["algorithm"], spec["words_per_report"], spec["constants"]["window"]
    ('square-wave/1', 2, 2098)
    >>> square_wave_from_spec(spec) == SquareWave(1.0)
    True
    """
    if not isinstance(mechanism, SquareWave):
        raise ParameterTypeError(
            f"`mechanism` must be a SquareWave, got {type(mechanism).__name__}."
        )
    alpha, beta = mechanism.weights
    return {
        **spec_head(SQUARE_WAVE_SPEC_SCHEMA, mechanism, _constructor(mechanism), "square-wave/1"),
        "constants": {
            "alpha": str(alpha),
            "beta": str(beta),
            "cells": mechanism.n_reports,
            "grid": SW_GRID,
            "window": mechanism.window,
        },
        "words_per_report": 2,
        "values": {
            "map": "v = (x - lower) / (upper - lower), in [0, 1]",
            "outside": "moved to the nearer bound" if mechanism.clip else "refused",
            "start": "s = floor(v G) + 1 if (w_0 >> 11) < floor(frac(v G) 2**53) else floor(v G)",
            "cell": (
                "u = w_1 // beta if w_1 < s beta, else s + (w_1 - s beta) // alpha if that is "
                "below w alpha, else s + w + (w_1 - s beta - w alpha) // beta"
            ),
        },
        "report": "cell",
        "epsilon": _number(mechanism.epsilon),
        "implemented_epsilon": _number(mechanism.implemented_epsilon),
    }


def _build(spec: Mapping[str, Any], name: str, make: Callable[..., Any]) -> Any:
    """The mechanism ``make`` builds from the spec field ``parameters`` (exactly the
    parameters of ``name``; strings and booleans as they are, numbers exact)."""
    params = spec["parameters"]
    wanted = _PARAMETERS[name]
    if not isinstance(params, Mapping) or set(params) != set(wanted):
        raise DataError(
            f"spec field `parameters` must be an object with {', '.join(wanted)} for "
            f"{name!r}, got {params!r}."
        )
    values: dict[str, Any] = {}
    for n, x in params.items():
        if n in ("oracle", "clip"):  # a level oracle's name; whether values are clipped
            kind = str if n == "oracle" else bool
            if not isinstance(x, kind):
                raise DataError(
                    f"spec field `parameters.{n}` must be a {kind.__name__}, got {x!r}."
                )
            values[n] = x
        else:
            values[n] = _parameter(n, x)
    try:
        return make(**values)
    except DeniableError as exc:
        raise DataError(f"spec field `parameters`: {exc}") from None


def _check_implied(
    spec: Mapping[str, Any], fields: tuple[str, ...], implied: Mapping[str, Any]
) -> None:
    for field in fields:
        if json.dumps(spec[field], sort_keys=True) != json.dumps(implied[field], sort_keys=True):
            raise DataError(
                f"spec field `{field}` does not match the parameters: it says "
                f"{spec[field]!r}, the parameters imply {implied[field]!r}."
            )


def range_from_spec(spec: Mapping[str, Any] | str | bytes) -> RangeMechanism:
    """The range mechanism a spec describes (a mapping or its JSON text), every implied
    field (the level oracles' specs included) recomputed and compared: an unknown, missing
    or altered field is refused with :class:`~deniable.exceptions.DataError` naming it."""
    spec = _spec_fields(spec, _RANGE_FIELDS, RANGE_SPEC_SCHEMA, "a range spec")
    name = spec["mechanism"]
    if name not in _RANGES:
        raise DataError(
            f"spec field `mechanism` must be one of {', '.join(sorted(_RANGES))}, got {name!r}."
        )
    out: RangeMechanism = _build(spec, name, _RANGES[name])
    _check_implied(spec, _RANGE_FIELDS, range_spec(out))
    return out


def square_wave_from_spec(spec: Mapping[str, Any] | str | bytes) -> SquareWave:
    """The :class:`~deniable.oracles.SquareWave` a spec describes (a mapping or its JSON
    text), every implied field recomputed and compared: an unknown, missing or altered field
    is refused with :class:`~deniable.exceptions.DataError` naming it."""
    spec = _spec_fields(spec, _SW_FIELDS, SQUARE_WAVE_SPEC_SCHEMA, "a Square Wave spec")
    if spec["mechanism"] != SquareWave.name:
        raise DataError(
            f"spec field `mechanism` must be {SquareWave.name!r}, got {spec['mechanism']!r}."
        )
    out: SquareWave = _build(spec, SquareWave.name, SquareWave)
    _check_implied(spec, _SW_FIELDS, square_wave_spec(out))
    return out
