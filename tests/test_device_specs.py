"""The one registry of device specs (``oracles.DEVICE_SPECS``): every kind written and read
back, the refusals, and the service's and ``distributed``'s readers being that one."""

from __future__ import annotations

import json

import pytest

from deniable.designs import Categorical, Warner, spec_of
from deniable.distributed import resolve_mechanism
from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles import (
    CMS,
    DEVICE_SPECS,
    HCMS,
    LGRR,
    OUE,
    PEM,
    SFP,
    HaarHRR,
    HierarchicalHistogram,
    Rappor,
    RapporNgram,
    SquareWave,
    TreeHist,
    device_spec,
    mechanism_from_spec,
)

MECHANISMS = {
    "deniable.oracle/1": [OUE(k=8, q=0.25), LGRR.from_epsilon(2.0, 3, eps_1=0.5)],
    "deniable.rappor-spec/1": [Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75)],
    "deniable.cms-spec/1": [
        CMS(k=4, m=8, epsilon=1.0, spec_version=1),
        HCMS(k=4, m=8, epsilon=1.0),
    ],
    "deniable.cms-spec/2": [CMS(k=4, m=8, epsilon=1.0)],
    "deniable.heavy-spec/1": [
        PEM(epsilon=1.0, max_bytes=9, start_bits=5, step_bits=8, g=4),
        TreeHist(epsilon=0.5, max_bytes=3, g=2),
    ],
    "deniable.sfp-spec/1": [SFP(epsilon=2.0, max_length=4, alphabet="ab", puzzle_bits=2, k=4, m=8)],
    "deniable.rappor-ngram-spec/1": [
        RapporNgram(Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75), None, "ab", 1, 3),
        RapporNgram(
            Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75),
            Rappor(m=8, h=1, cohorts=2, f=0.5, p=0.25, q=0.75),
            alphabet="abc",
            gram=2,
            length=4,
        ),
    ],
    "deniable.range-spec/1": [HierarchicalHistogram(16, 2, 1.0, oracle="oue"), HaarHRR(16, 1.0)],
    "deniable.square-wave-spec/1": [SquareWave(2.0)],
    "deniable.question/1": [Categorical.from_epsilon(1.0, k=4)],
}


def test_the_registry_names_every_kind_once() -> None:
    assert set(DEVICE_SPECS) == set(MECHANISMS)
    kinds = [k for entry in DEVICE_SPECS.values() for k in entry.kinds]
    assert len(kinds) == len(set(kinds))


@pytest.mark.parametrize(
    ("schema", "mechanism"), [(s, m) for s, ms in MECHANISMS.items() for m in ms]
)
def test_every_kind_is_written_and_read_back(schema: str, mechanism: object) -> None:
    spec = device_spec(mechanism)
    assert spec["schema"] == schema
    assert spec == DEVICE_SPECS[schema].write(mechanism)
    assert mechanism_from_spec(spec) == mechanism
    assert mechanism_from_spec(json.dumps(spec)) == mechanism
    assert resolve_mechanism(spec) == mechanism  # distributed reads the same registry
    assert resolve_mechanism(json.dumps(spec)) == mechanism


def test_an_altered_field_is_refused_by_its_kinds_reader() -> None:
    spec = device_spec(CMS(k=4, m=8, epsilon=1.0))
    spec["epsilon"] = 2.0
    with pytest.raises(DataError, match="spec field `epsilon` does not match the parameters"):
        mechanism_from_spec(spec)


def test_an_unregistered_schema_is_refused_as_an_oracle_spec() -> None:
    spec = {**device_spec(OUE(k=8, q=0.25)), "schema": "deniable.nothing/1"}
    with pytest.raises(DataError, match=r"spec field `schema` must be 'deniable\.oracle/1', got"):
        mechanism_from_spec(spec)
    with pytest.raises(ParameterTypeError, match="`spec` must be a mapping or JSON text, got list"):
        mechanism_from_spec([])  # type: ignore[arg-type]


def test_a_question_spec_of_another_design_is_refused() -> None:
    spec = spec_of(Warner(0.75)).to_dict()
    with pytest.raises(
        DataError, match=r"must be k-ary randomized response .* got mechanism 'warner'"
    ):
        mechanism_from_spec(spec)


def test_what_is_no_registered_kind_is_refused_by_oracle_spec() -> None:
    with pytest.raises(ParameterTypeError, match="`oracle` must be one of the frequency oracles"):
        device_spec(Warner(0.75))
