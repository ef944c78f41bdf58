"""The count mean sketches' spec: the JSON a device needs to randomize a string without
``deniable`` (schema ``deniable.cms-spec/1``, ``docs/specs.md``), read back with every
implied field checked.

Like RAPPOR's, the sketches' values are strings, not ``0..k-1``, so their spec is not an
oracle spec (``deniable.oracle/1``): it states the string hash (``deniable.cms/1``, keyed
by the salt) and the bound on a string's UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deniable.designs import exact_value
from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._cms import CMS
from deniable.oracles._cms_base import CountMeanSketch
from deniable.oracles._hcms import HCMS
from deniable.oracles._sketch import SKETCH_HASH
from deniable.oracles._spec import _from_parameters, _number, _spec_fields

__all__ = ["CMS_SPEC_SCHEMA", "cms_from_spec", "cms_spec"]

#: The schema identifier of a count-mean-sketch spec.
CMS_SPEC_SCHEMA = "deniable.cms-spec/1"

_SKETCHES: dict[str, type[CountMeanSketch]] = {CMS.name: CMS, HCMS.name: HCMS}
_ALGORITHMS = {"cms": "count-mean-sketch/1", "hcms": "hadamard-count-mean-sketch/1"}
_REPORTS = {"cms": "row-bits", "hcms": "row-coefficient-bit"}
_HASH = {
    "family": SKETCH_HASH,
    "digest": 'x(s) = top 33 bits of SHA-256("deniable.cms/1" || 0x00 || utf-8 s), big-endian',
    "seeds": 'a_j, b_j = bytes 0..7, 8..15 (little-endian) of SHA-256("deniable.cms/1:<salt>:<j>")',
    "formula": "h_j(s) = ((((a_j * x + b_j) mod 2**64) >> 32) * m) >> 32",
}
_FIELDS = (
    "schema", "mechanism", "parameters", "key", "algorithm", "constants", "words_per_report",
    "report", "hash", "strings", "epsilon", "implemented_epsilon",
)  # fmt: skip


def cms_spec(sketch: CountMeanSketch) -> dict[str, Any]:
    """The spec of a count mean sketch, as plain JSON data (schema ``deniable.cms-spec/1``).

    >>> spec = cms_spec(HCMS(k=4, m=8, epsilon=1.0))
    >>> spec["algorithm"], spec["words_per_report"], spec["constants"]["columns"]
    ('hadamard-count-mean-sketch/1', 3, 8)
    >>> cms_from_spec(spec) == HCMS(k=4, m=8, epsilon=1.0)
    True
    """
    if not isinstance(sketch, CountMeanSketch):
        raise ParameterTypeError(f"`sketch` must be a CMS or an HCMS, got {type(sketch).__name__}.")
    return {
        "schema": CMS_SPEC_SCHEMA,
        "mechanism": sketch.name,
        "parameters": {n: exact_value(x) for n, x in sketch.parameters().items()},
        "key": sketch.key,
        "algorithm": _ALGORITHMS[sketch.name],
        "constants": {"columns": sketch.m, "flip": sketch.flip_threshold, "rows": sketch.k},
        "words_per_report": sketch.words_per_report,
        "report": _REPORTS[sketch.name],
        "hash": dict(_HASH),
        "strings": {"encoding": "utf-8", "empty": "refused", "max_bytes": sketch.max_bytes},
        "epsilon": _number(sketch.epsilon),
        "implemented_epsilon": _number(sketch.implemented_epsilon),
    }


def cms_from_spec(spec: Mapping[str, Any] | str | bytes) -> CountMeanSketch:
    """The sketch a spec describes (a mapping or its JSON text), every implied field
    recomputed and compared: an unknown, missing or altered field is refused with
    :class:`~deniable.exceptions.DataError` naming it."""
    spec = _spec_fields(spec, _FIELDS, CMS_SPEC_SCHEMA, "a count-mean-sketch spec")
    name = spec["mechanism"]
    if name not in _SKETCHES:
        raise DataError(f"spec field `mechanism` must be one of cms, hcms, got {name!r}.")
    return _from_parameters(spec, _FIELDS, _SKETCHES[name], name, cms_spec)
