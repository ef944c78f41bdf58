"""The count mean sketches' spec: the JSON a device needs to randomize a string without
``deniable`` (schema ``deniable.cms-spec/1``, and ``deniable.cms-spec/2`` for a CMS of spec
version 2: 16-bit flip fields, ``deniable.oracles._cms_fields``; ``docs/specs.md``), read
back with every implied field checked.  A spec of schema 1 reads as the spec-1 sketch it
always described (its parameters name no ``spec_version``).

Like RAPPOR's, the sketches' values are strings, not ``0..k-1``, so their spec is not an
oracle spec (``deniable.oracle/1``): it states the string hash (``deniable.cms/1``, keyed
by the salt) and the bound on a string's UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deniable.common import load_json
from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._base_spec import spec_head
from deniable.oracles._cms import CMS
from deniable.oracles._cms_base import CountMeanSketch
from deniable.oracles._hcms import HCMS
from deniable.oracles._sketch import SKETCH_HASH
from deniable.oracles._spec import _from_parameters, _number, _spec_fields

__all__ = ["CMS_SPEC2_SCHEMA", "CMS_SPEC_SCHEMA", "cms_from_spec", "cms_spec"]

#: The schema identifier of a count-mean-sketch spec (HCMS, and CMS of spec version 1).
CMS_SPEC_SCHEMA = "deniable.cms-spec/1"
#: The schema identifier of the spec of a CMS of spec version 2 (16-bit flip fields).
CMS_SPEC2_SCHEMA = "deniable.cms-spec/2"

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


def _version(sketch: CountMeanSketch) -> int:
    return sketch.spec_version if isinstance(sketch, CMS) else 1


def cms_spec(sketch: CountMeanSketch) -> dict[str, Any]:
    """The spec of a count mean sketch, as plain JSON data (schema ``deniable.cms-spec/1``;
    ``deniable.cms-spec/2`` for a CMS of spec version 2, whose constants add the field
    width ``field_bits`` and ``fields_per_word``).

    >>> spec = cms_spec(CMS(k=4, m=8, epsilon=1.0))
    >>> spec["schema"], spec["algorithm"], spec["words_per_report"], spec["constants"]["flip"]
    ('deniable.cms-spec/2', 'count-mean-sketch/2', 3, 24743)

    >>> spec = cms_spec(HCMS(k=4, m=8, epsilon=1.0))
    >>> spec["algorithm"], spec["words_per_report"], spec["constants"]["columns"]
    ('hadamard-count-mean-sketch/1', 3, 8)
    >>> cms_from_spec(spec) == HCMS(k=4, m=8, epsilon=1.0)
    True
    """
    if not isinstance(sketch, CountMeanSketch):
        raise ParameterTypeError(f"`sketch` must be a CMS or an HCMS, got {type(sketch).__name__}.")
    version = _version(sketch)
    constants: dict[str, Any] = {
        "columns": sketch.m, "flip": sketch.flip_threshold, "rows": sketch.k,
    }  # fmt: skip
    bits = sketch.field_bits if isinstance(sketch, CMS) else None
    if bits is not None:
        constants.update(field_bits=bits, fields_per_word=64 // bits)
    return {
        **spec_head(
            CMS_SPEC2_SCHEMA if version == 2 else CMS_SPEC_SCHEMA,
            sketch,
            sketch.parameters(),
            _ALGORITHMS[sketch.name] if version == 1 else "count-mean-sketch/2",
        ),
        "constants": constants,
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
    :class:`~deniable.exceptions.DataError` naming it.  Schema 1 gives an HCMS or a CMS of
    spec version 1 (its parameters name no ``spec_version``); schema 2 a CMS of spec
    version 2 (its parameters say ``"spec_version": 2``)."""
    if isinstance(spec, str | bytes):
        spec = load_json(spec, source="`spec` (JSON text of a count-mean-sketch spec)")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    version2 = schema == CMS_SPEC2_SCHEMA
    spec = _spec_fields(
        spec, _FIELDS, CMS_SPEC2_SCHEMA if version2 else CMS_SPEC_SCHEMA, "a count-mean-sketch spec"
    )
    name = spec["mechanism"]
    if name not in _SKETCHES or (version2 and name != CMS.name):
        allowed = "cms" if version2 else "cms, hcms"
        raise DataError(
            f"spec field `mechanism` must be one of {allowed} for schema {spec['schema']!r}, "
            f"got {name!r}."
        )
    params = spec["parameters"]
    if isinstance(params, Mapping) and name == CMS.name:
        given = params.get("spec_version", 1)
        if given != (2 if version2 else 1) or (not version2 and "spec_version" in params):
            raise DataError(
                f"spec field `parameters` must say spec_version "
                f"{'2' if version2 else 'nothing (version 1)'} for schema "
                f"{spec['schema']!r}, got {params.get('spec_version')!r}."
            )

    def make(**parameters: Any) -> CountMeanSketch:
        if name == CMS.name and not version2:
            return CMS(**parameters, spec_version=1)
        return _SKETCHES[name](**parameters)

    return _from_parameters(spec, _FIELDS, make, name, cms_spec)
