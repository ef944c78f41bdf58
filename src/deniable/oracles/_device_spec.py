"""Device specs of every kind of telemetry mechanism, by schema: the one registry that
reads a spec back into its mechanism (:func:`mechanism_from_spec`) and writes a
mechanism's spec (:func:`device_spec`), so the stream specs of the service and the
``spec`` argument of :mod:`deniable.distributed` know the same kinds, with the same
refusals, and a new kind of spec is registered once (:data:`DEVICE_SPECS`).

A device spec is the versioned JSON a device needs to randomize without ``deniable``:

============================  ==========================================================
``deniable.oracle/1``         a frequency oracle (:func:`oracle_spec`), the default: a
                              spec of no registered schema is read as one, and refused
                              as :func:`oracle_from_spec` refuses it
``deniable.rappor-spec/1``    RAPPOR (:func:`rappor_spec`)
``deniable.cms-spec/1``       a count mean sketch, CMS or HCMS (:func:`cms_spec`)
``deniable.cms-spec/2``       a CMS of spec version 2, 16-bit flip fields (:func:`cms_spec`)
``deniable.heavy-spec/1``     PEM or TreeHist (:func:`heavy_spec`)
``deniable.sfp-spec/1``       the Sequence Fragment Puzzle (:func:`sfp_spec`)
``deniable.rappor-ngram-spec/1``  RAPPOR's n-gram discovery (:func:`rappor_ngram_spec`)
``deniable.range-spec/1``     a range mechanism (:func:`range_spec`)
``deniable.square-wave-spec/1``  Square Wave (:func:`square_wave_spec`)
``deniable.question/1``       k-ary randomized response: the question spec of the design
                              ``categorical`` (:func:`~deniable.designs.spec_of`); a
                              question spec of any other design is refused
============================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from deniable.common import load_json
from deniable.designs import SPEC_SCHEMA, Categorical, design_from_spec, spec_of
from deniable.exceptions import DataError
from deniable.oracles import _range_spec as ordered
from deniable.oracles._base import FrequencyOracle
from deniable.oracles._cms_base import CountMeanSketch
from deniable.oracles._cms_spec import CMS_SPEC2_SCHEMA, CMS_SPEC_SCHEMA, cms_from_spec, cms_spec
from deniable.oracles._haar import HaarHRR
from deniable.oracles._heavy_hitters import PEM, TreeHist
from deniable.oracles._heavy_spec import HEAVY_SPEC_SCHEMA, heavy_from_spec, heavy_spec
from deniable.oracles._hierarchical import HierarchicalHistogram
from deniable.oracles._rappor import Rappor
from deniable.oracles._rappor_ngram import RapporNgram
from deniable.oracles._rappor_ngram_spec import (
    RAPPOR_NGRAM_SPEC_SCHEMA,
    rappor_ngram_from_spec,
    rappor_ngram_spec,
)
from deniable.oracles._rappor_spec import RAPPOR_SPEC_SCHEMA, rappor_from_spec, rappor_spec
from deniable.oracles._sfp import SFP
from deniable.oracles._sfp_spec import SFP_SPEC_SCHEMA, sfp_from_spec, sfp_spec
from deniable.oracles._spec import ORACLE_SPEC_SCHEMA, oracle_from_spec, oracle_spec
from deniable.oracles._square_wave import SquareWave

__all__ = ["DEVICE_SPECS", "DeviceSpec", "device_spec", "mechanism_from_spec"]


@dataclass(frozen=True)
class DeviceSpec:
    """One kind of device spec: its ``schema``, the mechanism classes it describes
    (``kinds``, subclasses included), how a mechanism's spec is written (``write``) and
    how a spec is read back with every implied field checked (``read``)."""

    schema: str
    kinds: tuple[type[Any], ...]
    write: Callable[[Any], dict[str, Any]]
    read: Callable[[Any], Any]


def _question_spec(design: Any) -> dict[str, Any]:
    return spec_of(design).to_dict()


def _grr_from_question(spec: Any) -> Any:
    design = design_from_spec(spec)
    if design.name != "categorical":
        raise DataError(
            "a question spec on a stream must be k-ary randomized response "
            f"(mechanism 'categorical'), got mechanism {design.name!r}."
        )
    return design


#: Every kind of device spec by its schema (read-only).  The oracle spec is the default:
#: what no other entry names is read, and written, as an oracle spec.
DEVICE_SPECS: Mapping[str, DeviceSpec] = MappingProxyType(
    {
        entry.schema: entry
        for entry in (
            DeviceSpec(ORACLE_SPEC_SCHEMA, (FrequencyOracle,), oracle_spec, oracle_from_spec),
            DeviceSpec(RAPPOR_SPEC_SCHEMA, (Rappor,), rappor_spec, rappor_from_spec),
            DeviceSpec(CMS_SPEC_SCHEMA, (CountMeanSketch,), cms_spec, cms_from_spec),
            # spec 2 of CMS: read by its schema; written by the entry above (cms_spec picks
            # the schema of the sketch's version)
            DeviceSpec(CMS_SPEC2_SCHEMA, (), cms_spec, cms_from_spec),
            DeviceSpec(HEAVY_SPEC_SCHEMA, (PEM, TreeHist), heavy_spec, heavy_from_spec),
            DeviceSpec(SFP_SPEC_SCHEMA, (SFP,), sfp_spec, sfp_from_spec),
            DeviceSpec(
                RAPPOR_NGRAM_SPEC_SCHEMA,
                (RapporNgram,),
                rappor_ngram_spec,
                rappor_ngram_from_spec,
            ),
            DeviceSpec(
                ordered.RANGE_SPEC_SCHEMA,
                (HierarchicalHistogram, HaarHRR),
                ordered.range_spec,
                ordered.range_from_spec,
            ),
            DeviceSpec(
                ordered.SQUARE_WAVE_SPEC_SCHEMA,
                (SquareWave,),
                ordered.square_wave_spec,
                ordered.square_wave_from_spec,
            ),
            DeviceSpec(SPEC_SCHEMA, (Categorical,), _question_spec, _grr_from_question),
        )
    }
)
_BY_KIND: dict[type[Any], DeviceSpec] = {
    kind: entry for entry in DEVICE_SPECS.values() for kind in entry.kinds
}


def device_spec(mechanism: Any) -> dict[str, Any]:
    """The device spec of ``mechanism``, as plain JSON data: the writer of its kind in
    :data:`DEVICE_SPECS` (its class or the nearest base class registered); a mechanism of
    no registered kind is refused by :func:`oracle_spec`
    (:class:`~deniable.exceptions.ParameterTypeError`).

    >>> from deniable.oracles import OUE, CMS, SquareWave
    >>> [device_spec(m)["schema"] for m in (OUE(k=4, q=0.25), CMS(k=4, m=8, epsilon=1.0),
    ...                                     SquareWave(1.0))]
    ['deniable.oracle/1', 'deniable.cms-spec/2', 'deniable.square-wave-spec/1']
    """
    entry = next(
        (_BY_KIND[c] for c in type(mechanism).__mro__ if c in _BY_KIND),
        DEVICE_SPECS[ORACLE_SPEC_SCHEMA],
    )
    return entry.write(mechanism)


def mechanism_from_spec(spec: Mapping[str, Any] | str | bytes) -> Any:
    """The mechanism a device spec describes (a mapping or its JSON text), read by the
    reader of its ``schema`` in :data:`DEVICE_SPECS` with every implied field recomputed
    and compared; a spec of no registered schema is read as an oracle spec, so refused as
    :func:`oracle_from_spec` refuses it (:class:`~deniable.exceptions.DataError` naming
    the field).

    >>> from deniable.oracles import OUE, HaarHRR
    >>> all(mechanism_from_spec(device_spec(m)) == m for m in (OUE(k=4, q=0.25), HaarHRR(8, 1.0)))
    True
    >>> mechanism_from_spec({"schema": "deniable.nothing/1"})
    Traceback (most recent call last):
    ...
    deniable.exceptions.DataError: spec field `mechanism` is missing.
    """
    if isinstance(spec, str | bytes):
        spec = load_json(spec, source="`spec` (JSON text of an oracle spec)")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    entry = DEVICE_SPECS.get(schema) if isinstance(schema, str) else None
    return (entry or DEVICE_SPECS[ORACLE_SPEC_SCHEMA]).read(spec)
