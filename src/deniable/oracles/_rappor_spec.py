"""RAPPOR's spec: the JSON a device needs to randomize a string without ``deniable`` (schema
``deniable.rappor-spec/1``, ``docs/specs.md``), read back with every implied field checked.

RAPPOR's values are strings, not ``0..k-1``, and its client keeps a cohort and a permanent
response per value, so its spec is not an oracle spec (``deniable.oracle/1``): it has no
``k``, and its words are counted per round (``words``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deniable.exceptions import ParameterTypeError
from deniable.oracles._base_spec import spec_head
from deniable.oracles._rappor import HASH_FAMILY, Rappor, _threshold
from deniable.oracles._spec import _from_parameters, _number, _spec_fields

__all__ = ["RAPPOR_SPEC_SCHEMA", "rappor_from_spec", "rappor_spec"]

#: The schema identifier of a RAPPOR spec.
RAPPOR_SPEC_SCHEMA = "deniable.rappor-spec/1"

_HASH = {
    "family": HASH_FAMILY,
    "digest": 'x(s) = top 33 bits of BLAKE2b(utf-8 s, digest_size=8, person="deniable-rappor")',
    "formula": "bit_ci(s) = ((((a_ci * x + b_ci) mod 2**64) >> 32) * m) >> 32",
    "seeds": 'a_ci, b_ci = the two little-endian words of BLAKE2b("deniable.rappor/1:c:i", '
    "digest_size=16)",
}
_WORDS = {
    "cohort": 1,
    "permanent": "m (one a Bloom bit, for a value without a kept PRR)",
    "instantaneous": "m",
}
_FIELDS = (
    "schema", "mechanism", "parameters", "key", "algorithm", "constants", "words", "report",
    "hash", "epsilon", "permanent_epsilon",
)  # fmt: skip


def rappor_spec(rappor: Rappor) -> dict[str, Any]:
    """The spec of a RAPPOR mechanism, as plain JSON data (schema ``deniable.rappor-spec/1``).

    >>> spec = rappor_spec(Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75))
    >>> spec["algorithm"], spec["constants"]["f"] == 2**52, spec["report"]
    ('rappor/1', True, 'cohort-bits')
    >>> rappor_from_spec(spec) == Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75)
    True
    """
    if not isinstance(rappor, Rappor):
        raise ParameterTypeError(f"`rappor` must be a Rappor, got {type(rappor).__name__}.")
    constants = {
        "bits": rappor.m,
        "hashes": rappor.h,
        "cohorts": rappor.cohorts,
        # the rounding toward privacy of Rappor's randomizers: f and p up, q down
        "f": int(_threshold(rappor.f, up=True)),
        "p": int(_threshold(rappor.p, up=True)),
        "q": int(_threshold(rappor.q, up=False)),
    }
    return {
        **spec_head(RAPPOR_SPEC_SCHEMA, rappor, rappor.parameters(), "rappor/1"),
        "constants": dict(sorted(constants.items())),
        "words": dict(_WORDS),
        "report": "cohort-bits",
        "hash": dict(_HASH),
        "epsilon": _number(rappor.epsilon),
        "permanent_epsilon": _number(rappor.permanent_epsilon),
    }


def rappor_from_spec(spec: Mapping[str, Any] | str | bytes) -> Rappor:
    """The RAPPOR mechanism a spec describes (a mapping or its JSON text), every implied
    field recomputed and compared: an unknown, missing or altered field is refused with
    :class:`~deniable.exceptions.DataError` naming it."""
    spec = _spec_fields(spec, _FIELDS, RAPPOR_SPEC_SCHEMA, "a RAPPOR spec")
    return _from_parameters(spec, _FIELDS, Rappor, Rappor.name, rappor_spec)
