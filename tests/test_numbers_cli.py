"""`deniable numbers`: a scrambled numeric column of a report file, its mean and total
(simple random sample or under the sample's design) and the design's privacy; bad input is
one error line.  Specs of the quantitative designs (``number_design``, ``number_spec``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run, run_json
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.quantitative import (
    Additive,
    FDistribution,
    Laplace,
    Multiplicative,
    Normal,
    UnrelatedQuantitative,
    number_design,
    number_spec,
)
from deniable.sampling import SampleDesign

runner = CliRunner(env=ENV)


@pytest.fixture
def data(tmp_path):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    n = 240
    income = rng.uniform(10_000, 90_000, n)
    rr = Additive(Laplace(20_000.0), bounds=(0, 100_000))
    frame = pd.DataFrame({
        "income": rr.randomize(income, rng=2), "stratum": np.repeat([1, 2, 3, 4], 60),
        "school": np.tile(np.repeat([1, 2, 3, 4, 5, 6], 10), 4),
        "w": rng.uniform(20, 60, n).round(1), "name": ["x"] * n,
    })  # fmt: skip
    frame.loc[3, "income"] = np.nan
    path = tmp_path / "reports.csv"
    frame.to_csv(path, index=False)
    return path, pd.read_csv(path), rr


ADDITIVE = ["-c", "income", "-d", "additive", "-s", "laplace", "--param", "scale=20000",
            "--bounds", "0,100000"]  # fmt: skip


def test_numbers_under_a_design_agrees_with_the_library(data) -> None:  # type: ignore[no-untyped-def]
    path, frame, rr = data
    out = run_json(runner, "numbers", path, *ADDITIVE, "--weights", "w", "--strata", "stratum",
                   "--psu", "school", "--population", 50_000)  # fmt: skip
    present = frame["income"].notna().to_numpy()
    design = SampleDesign(weights=frame["w"], strata=frame["stratum"], psu=frame["school"])
    ref = rr.estimate(frame["income"].fillna(0).to_numpy(), sample_design=design,
                      population=50_000, domain=present)  # fmt: skip
    assert out["estimate"]["estimate"] == pytest.approx(ref.value, rel=1e-12)
    assert out["estimate"]["se"] == pytest.approx(ref.se, rel=1e-12)
    assert out["estimate"]["n"] == 239 and out["estimate"]["df"] == 20
    assert out["estimate"]["total"] == pytest.approx(50_000 * ref.value, rel=1e-12)
    assert out["privacy"]["epsilon"] == 5.0  # (100000 - 0) / 20000
    # the missing report is left out: the mean of the others
    srs = run_json(runner, "numbers", path, *ADDITIVE)
    assert srs["estimate"]["estimate"] == pytest.approx(frame["income"].mean(), rel=1e-12)


def test_numbers_table_never_prints_a_finite_epsilon_for_an_infinite_one(data) -> None:  # type: ignore[no-untyped-def]
    path, _, _ = data
    result = run(runner, "numbers", path, "-c", "income", "-d", "unrelated", "-s", "normal",
                 "--param", "mean=50000", "--param", "sd=10000", "--p", "0.7")  # fmt: skip
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if "epsilon (LDP" in x)
    assert "∞" in line
    out = run_json(runner, "numbers", path, "-c", "income", "-d", "additive", "-s", "normal",
                   "--param", "sd=100", "--bounds", "0,100000")  # fmt: skip
    assert out["privacy"]["epsilon"] == "inf"


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["-d", "additive", "-s", "laplace", "--param", "scale=-1"], ["`scale`", "-1"]),
        (["-d", "unrelated", "-s", "normal", "--p", "1.5"], ["`p`", "(0, 1]", "1.5"]),
        (["-d", "unrelated", "-s", "normal", "--p", "0"], ["`p`", "0"]),
        (["-d", "multiplicative", "-s", "normal"], ["`scrambler`", "mean other than 0"]),
        (["-d", "additive", "-s", "cauchy"], ["`distribution`", "'cauchy'"]),
        (["-d", "quadratic", "-s", "normal"], ["`design`", "'quadratic'"]),
        (["-d", "additive", "-s", "normal", "--param", "rate=2"], ["`rate`", "normal"]),
        (["-d", "additive", "-s", "normal", "--bounds", "5"], ["`bounds`"]),
        (["-d", "additive", "-s", "normal", "--population", "-3"], ["`population`"]),
        (["-d", "additive", "-s", "normal", "--weights", "nope"], ["nope"]),
    ],
)
def test_numbers_bad_input_is_one_error_line(data, args, needles) -> None:  # type: ignore[no-untyped-def]
    path, _, _ = data
    column = ["-c", "income"]
    one_error(run(runner, "numbers", path, *column, *args), *needles)


def test_numbers_bad_columns(data) -> None:  # type: ignore[no-untyped-def]
    path, _, _ = data
    base = ["-d", "additive", "-s", "normal"]
    one_error(run(runner, "numbers", path, "-c", "nope", *base), "`--column`", "'nope'")
    one_error(run(runner, "numbers", path, "-c", "name", *base), "`--column`", "numbers")


@pytest.mark.parametrize(
    "design",
    [
        Additive(Laplace(2.0, loc=1.0), bounds=(0, 10)),
        Additive(Normal(0, 3)),
        Multiplicative(FDistribution(20, 20), bounds=(1, 5)),
        UnrelatedQuantitative.mix_exp(0.6, 4.0),
    ],
    ids=str,
)
def test_specs_round_trip(design) -> None:  # type: ignore[no-untyped-def]
    spec = number_spec(design)
    assert number_design(spec) == design
    assert math.isinf(number_design(spec).epsilon) == math.isinf(design.epsilon)


def test_bad_specs() -> None:
    with pytest.raises(ParameterError, match="`design` must be one of"):
        number_design({"design": "x", "scrambler": {"distribution": "normal"}})
    with pytest.raises(ParameterError, match="`scrambler` must be given"):
        number_design({"design": "additive"})
    with pytest.raises(ParameterError, match="`p` must be given"):
        number_design({"design": "unrelated", "scrambler": {"distribution": "normal"}})
    with pytest.raises(ParameterError, match="`p` is not a field of the additive design"):
        number_design({"design": "additive", "p": 0.5, "scrambler": {"distribution": "normal"}})
    with pytest.raises(ParameterTypeError, match="`scrambler` must be a Distribution or a dict"):
        number_design({"design": "additive", "scrambler": "normal"})
    with pytest.raises(ParameterError, match="`bounds` does not apply"):
        number_design({"design": "unrelated", "p": 0.5, "bounds": [0, 1],
                       "scrambler": {"distribution": "normal"}})  # fmt: skip


def test_a_missing_distribution_parameter_is_named(data) -> None:  # type: ignore[no-untyped-def]
    # found by the fuzzer: `-s laplace` without --param scale=... was a TypeError traceback
    path, _, _ = data
    one_error(run(runner, "numbers", path, "-c", "income", "-d", "additive", "-s", "laplace"),
              "`scale` must be given for the laplace distribution")  # fmt: skip
    with pytest.raises(ParameterError, match="`high` must be given for the uniform"):
        number_design({"design": "additive", "scrambler": {"distribution": "uniform", "low": 0}})
