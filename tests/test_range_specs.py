"""Specs and keys of the mechanisms of ordered values (oracles._range_spec, _range_files):
every spec round-trips (as data and as JSON text), a tampered or missing field is refused
naming it, and every key parses back to the mechanism that made it."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles import (
    OUE,
    RANGE_SPEC_SCHEMA,
    SQUARE_WAVE_SPEC_SCHEMA,
    HaarHRR,
    HadamardResponse,
    HierarchicalHistogram,
    SquareWave,
    is_range_key,
    oracle_spec,
    range_from_key,
    range_from_spec,
    range_spec,
    square_wave_from_spec,
    square_wave_spec,
)
from deniable.randomness import ArrayWords

RANGES = [
    HierarchicalHistogram(64, 4, 2.0, oracle="oue"),
    HierarchicalHistogram(16, 2, 1.0, oracle="grr"),
    HierarchicalHistogram(27, 3, 0.5, oracle="olh"),
    HierarchicalHistogram(16, 4, 1.5, oracle="hadamard"),
    HaarHRR(2, 1.0),
    HaarHRR(64, 3.0),
]
WAVES = [
    SquareWave(1.0),
    SquareWave(0.25, b=0.5, lower=-3.5, upper=10.0, bins=64, output_bins=100, clip=True),
]


@pytest.mark.parametrize("mech", RANGES, ids=lambda m: m.key[:40])
def test_a_range_spec_round_trips_and_states_its_levels(mech: Any) -> None:
    spec = range_spec(mech)
    assert spec["schema"] == RANGE_SPEC_SCHEMA
    assert range_from_spec(spec) == mech
    assert range_from_spec(json.dumps(spec)) == mech
    assert len(spec["levels"]) == mech.height == spec["constants"]["levels"]
    # each level's spec is the level oracle's own; a report is a level word then its words
    for level, oracle, words in zip(spec["levels"], mech.levels, spec["words_per_report"],
                                    strict=True):  # fmt: skip
        assert level["key"] == oracle.key
        supply = ArrayWords(np.arange(1, 201, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        oracle.randomize(np.array([1]), rng=supply)  # the words one report consumes
        assert words == 1 + 200 - supply.remaining
    assert spec["epsilon"] == max(o.epsilon for o in mech.levels)
    assert spec["implemented_epsilon"] <= spec["epsilon"]


@pytest.mark.parametrize("mech", WAVES, ids=lambda m: m.key[:40])
def test_a_square_wave_spec_round_trips_and_states_its_weights(mech: SquareWave) -> None:
    spec = square_wave_spec(mech)
    assert spec["schema"] == SQUARE_WAVE_SPEC_SCHEMA
    assert square_wave_from_spec(spec) == mech
    assert square_wave_from_spec(json.dumps(spec)) == mech
    c = spec["constants"]
    alpha, beta = int(c["alpha"]), int(c["beta"])
    # w alpha + G beta = 2**64 exactly; the cells are G + w
    assert c["window"] * alpha + c["grid"] * beta == 1 << 64
    assert c["cells"] == c["grid"] + c["window"]
    assert spec["values"]["outside"] == ("moved to the nearer bound" if mech.clip else "refused")


@pytest.mark.parametrize("mech", RANGES + WAVES, ids=lambda m: m.key[:40])
def test_every_key_parses_back_to_its_mechanism(mech: Any) -> None:
    assert is_range_key(mech.key)
    back = range_from_key(mech.key)
    assert back == mech and back.key == mech.key


def test_a_key_that_is_not_canonical_or_not_a_range_mechanism_is_refused() -> None:
    hh = RANGES[0]
    params = json.loads(hh.key.partition("{")[1] + hh.key.partition("{")[2])
    # another level oracle's keys: the parameters build other levels
    other = {**params, "levels": [OUE(k=4, q=0.25).key] * 3}
    with pytest.raises(DataError, match="not canonical"):
        range_from_key("hierarchical-histogram" + json.dumps(other, separators=(",", ":")))
    spaced = "hierarchical-histogram" + json.dumps(params, sort_keys=True)  # not compact
    with pytest.raises(DataError, match="not canonical"):
        range_from_key(spaced)
    for bad in ("olh{}", "haar-hrr", "haar-hrr{not json", 'haar-hrr{"domain":4}'):
        with pytest.raises(DataError, match="`key` must be the key of"):
            range_from_key(bad)
    bad_domain = HaarHRR(4, 1.0).key.replace('"domain":4', '"domain":6')
    with pytest.raises(DataError, match=r"does not fit 'haar-hrr'.*`domain`"):
        range_from_key(bad_domain)
    assert not is_range_key(OUE(k=4, q=0.25).key)


def test_a_tampered_range_spec_is_refused_naming_the_field() -> None:
    spec = range_spec(HierarchicalHistogram(16, 2, 1.0, oracle="olh"))
    tampered = (
        ("constants", {**spec["constants"], "height": 5}),
        ("epsilon", 0.5),
        ("levels", spec["levels"][:-1]),
        ("words_per_report", [1] * 4),
        ("key", HaarHRR(16, 1.0).key),
        ("nodes", "x"),
    )
    for field, value in tampered:
        with pytest.raises(DataError, match=f"`{field}`"):
            range_from_spec({**spec, field: value})
    level = {**spec["levels"][0], "constants": {"buckets": 2, "keep": 1}}
    with pytest.raises(DataError, match="`levels`"):
        range_from_spec({**spec, "levels": [level, *spec["levels"][1:]]})
    with pytest.raises(DataError, match="`mechanism` must be one of haar-hrr, hierarchical"):
        range_from_spec({**spec, "mechanism": "olh"})
    with pytest.raises(DataError, match="unknown spec field `extra`"):
        range_from_spec({**spec, "extra": 1})
    with pytest.raises(DataError, match="spec field `levels` is missing"):
        range_from_spec({k: x for k, x in spec.items() if k != "levels"})
    with pytest.raises(DataError, match=r"`schema` must be 'deniable\.range-spec/1'"):
        range_from_spec({**spec, "schema": SQUARE_WAVE_SPEC_SCHEMA})


def test_bad_parameters_of_a_spec_are_refused_naming_them() -> None:
    spec = range_spec(HierarchicalHistogram(16, 2, 1.0, oracle="olh"))
    params = spec["parameters"]
    cases = (
        ({**params, "oracle": 3}, r"`parameters.oracle` must be a str"),
        ({**params, "oracle": "sue"}, r"`parameters`: .*`oracle`"),
        ({**params, "domain": 12}, r"`parameters`: .*`domain` must be a power"),
        ({**params, "requested_epsilon": "1/3"}, r"`parameters.requested_epsilon`.*exactly"),
        ({**params, "requested_epsilon": True}, r"`parameters.requested_epsilon` must be a number"),
        ({k: x for k, x in params.items() if k != "oracle"}, r"`parameters` must be an object"),
    )
    for bad, message in cases:
        with pytest.raises(DataError, match=message):
            range_from_spec({**spec, "parameters": bad})
    wave = square_wave_spec(WAVES[0])
    with pytest.raises(DataError, match=r"`parameters.clip` must be a bool"):
        square_wave_from_spec({**wave, "parameters": {**wave["parameters"], "clip": 0}})
    with pytest.raises(DataError, match=r"`parameters`: .*`b` must be in"):
        square_wave_from_spec({**wave, "parameters": {**wave["parameters"], "b": "3"}})
    # another b is another window: the implied constants no longer match
    other = {**wave["parameters"], "b": "1/4"}
    with pytest.raises(DataError, match="`key` does not match"):
        square_wave_from_spec({**wave, "parameters": other})


def test_a_tampered_square_wave_spec_is_refused_naming_the_field() -> None:
    spec = square_wave_spec(WAVES[1])
    for field, value in (
        ("constants", {**spec["constants"], "alpha": str(int(spec["constants"]["alpha"]) + 1)}),
        ("words_per_report", 1),
        ("implemented_epsilon", 0.25),
        ("values", {**spec["values"], "outside": "refused"}),
    ):
        with pytest.raises(DataError, match=f"`{field}`"):
            square_wave_from_spec({**spec, field: value})
    with pytest.raises(DataError, match="`mechanism` must be 'square-wave'"):
        square_wave_from_spec({**spec, "mechanism": "piecewise"})


def test_the_spec_functions_refuse_another_mechanism() -> None:
    with pytest.raises(ParameterTypeError, match="`mechanism` must be a HierarchicalHistogram"):
        range_spec(WAVES[0])  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`mechanism` must be a SquareWave"):
        square_wave_spec(RANGES[0])  # type: ignore[arg-type]


def test_haar_levels_are_the_hadamard_responses_the_docs_name() -> None:
    spec = range_spec(HaarHRR(16, 1.0))
    assert [s["k"] for s in spec["levels"]] == [2, 2, 4, 8]
    assert spec["levels"][2] == oracle_spec(HadamardResponse.from_epsilon(1.0, 4))
