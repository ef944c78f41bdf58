"""The one registry of frequency oracles (``deniable.oracles.FREQUENCY_ORACLES``): the
command line, the oracle specs and keys, and ``choose_oracle`` all read it, so each knows
exactly the registered oracles, and a name builds the same oracle everywhere."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.designs import Categorical
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import (
    BLH,
    FREQUENCY_ORACLES,
    LGRR,
    LOLOHA,
    LOSUE,
    LOUE,
    LSUE,
    OLH,
    OUE,
    SUE,
    HadamardResponse,
    LinearOLH,
    SubsetSelection,
    choose_oracle,
    make_oracle,
    oracle_from_key,
    oracle_from_spec,
    oracle_spec,
    read_report_key,
    tally_file,
    write_reports,
)

#: The registry as the documentation states it (docs/telemetry.md): name -> class.
DOCUMENTED: dict[str, type[Any]] = {
    "grr": Categorical,
    "sue": SUE,
    "oue": OUE,
    "blh": BLH,
    "olh": OLH,
    "olh-linear": LinearOLH,
    "hadamard": HadamardResponse,
    "subset": SubsetSelection,
    "l-grr": LGRR,
    "l-sue": LSUE,
    "l-oue": LOUE,
    "l-osue": LOSUE,
    "loloha": LOLOHA,
}


def test_the_registry_holds_every_frequency_oracle_and_is_read_only() -> None:
    assert dict(FREQUENCY_ORACLES) == DOCUMENTED
    with pytest.raises(TypeError):
        FREQUENCY_ORACLES["rappor"] = OUE  # type: ignore[index]


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_make_oracle_builds_the_oracle_at_epsilon(name: str) -> None:
    oracle = make_oracle(name, 1.5, 12)
    assert oracle == DOCUMENTED[name].from_epsilon(1.5, 12)
    # at most the asked epsilon (unary encoding rounds q toward privacy, within 1e-4)
    assert 1.5 - 1e-4 <= oracle.epsilon <= 1.5 and oracle.k == 12


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_every_registered_oracle_is_read_back_from_its_key(name: str) -> None:
    oracle = make_oracle(name, 2.0, 20)
    assert oracle_from_key(oracle.key) == oracle


@pytest.mark.parametrize("name", [n for n in DOCUMENTED if n != "grr"])
def test_every_registered_oracle_but_grr_has_an_oracle_spec(name: str) -> None:
    oracle = make_oracle(name, 2.0, 20)
    spec = oracle_spec(oracle)
    assert spec["mechanism"] == oracle.name
    assert oracle_from_spec(spec) == oracle


def test_grr_is_the_categorical_design_and_keys_of_any_forcing_read_back(
    tmp_path: Path,
) -> None:
    # its spec is the design's question spec
    with pytest.raises(ParameterTypeError, match="question spec"):
        oracle_spec(make_oracle("grr", 1.0, 4))
    # a stream's question spec may declare non-uniform forcing (charged its exact epsilon):
    # its key, the key its report files carry, reads back to the same design, so the
    # reports a stream stores and their files are estimated by the same mechanism
    forced = Categorical(k=3, p_truthful=0.5, forced=(0.2, 0.3, 0.5))
    back = oracle_from_key(forced.key)
    assert back == forced and back.key == forced.key
    # the report j is most telling at the least forced j: epsilon = ln((p + (1 - p) f_min)
    # / ((1 - p) f_min)) = ln(0.6 / 0.1)
    assert back.epsilon == pytest.approx(math.log(6.0), rel=1e-12)
    reports = forced.randomize(
        np.repeat(np.arange(3), [500, 300, 200]), rng=np.random.default_rng(3)
    )
    path = write_reports(tmp_path / "forced.reports", forced, reports)
    from_file = oracle_from_key(read_report_key(path))
    assert from_file.estimate(tally_file(from_file, path)).values == pytest.approx(
        forced.estimate(reports).values, abs=1e-12
    )
    # a key whose forced entries are not exact fractions is refused naming the field
    with pytest.raises(DataError, match=r"parameters\.forced"):
        oracle_from_key('categorical{"forced":["a","b","c"],"k":3,"p_truthful":"1/2"}')
    with pytest.raises(DataError, match="must name a frequency oracle"):
        oracle_from_key('harmony{"k":4}')
    # RAPPOR's keys are read by RAPPOR's own parser (its parameters, not k)
    with pytest.raises(DataError, match="must be a RAPPOR key like"):
        oracle_from_key('rappor{"k":4}')


def test_choose_ranks_every_registered_oracle() -> None:
    # k = 64, eps = 1: every registered one-shot oracle is a candidate (none out of its
    # range); the longitudinal ones (l-*) answer another question (two epsilons per report)
    one_shot = [
        name for name in FREQUENCY_ORACLES if not name.startswith("l-") and name != "loloha"
    ]
    choice = choose_oracle(1.0, k=64, n=10_000)
    assert choice.candidates.notes == ()
    assert len(choice.candidates.rows) == len(one_shot)
    built = {type(make_oracle(name, 1.0, 64)) for name in one_shot}
    assert type(choice.oracle) in built


def test_a_name_outside_the_registry_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(ParameterError) as err:
        make_oracle("rappor", 1.0, 8)
    message = str(err.value)
    assert message.startswith("`name` must be one of") and "got 'rappor'" in message
    assert all(repr(name) in message for name in DOCUMENTED)
