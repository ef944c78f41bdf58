"""`deniable crosstab`: two randomized items of a responses file together.  The numbers are
deniable.estimation's (joint_estimate, association, independence_test) computed here on
the same rows, with and without a sample design; every bad input is one error line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run, run_json
from deniable.designs import ForcedResponse, Warner
from deniable.estimation import association, independence_test, joint_estimate
from deniable.sampling import SampleDesign

A = ("-q", "a=warner:p=0.8")
B = ("-q", "b=forced:forced_yes=1/6,forced_no=1/6")
DESIGN = ("--weights", "w", "--strata", "s", "--psu", "p")


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(16)
    n = 1200
    x = (rng.random(n) < 0.3).astype(int)
    y = np.where(rng.random(n) < 0.7, x, 1 - x)  # associated with x
    df = pd.DataFrame({
        "a": Warner(0.8).randomize(x, rng=rng).astype(float),
        "b": ForcedResponse(1 / 6, 1 / 6).randomize(y, rng=rng).astype(float),
        "s": np.repeat(np.arange(6), n // 6),
        "w": rng.uniform(0.5, 3.0, n),
    })  # fmt: skip
    df["p"] = df["s"] * 10 + rng.integers(0, 5, n)
    df.loc[[3, 70, 500], "a"] = np.nan  # missing reports
    df.loc[[9], "b"] = np.nan
    return df


@pytest.fixture()
def data(frame: pd.DataFrame, tmp_path: Path) -> Path:
    path = tmp_path / "responses.csv"
    frame.to_csv(path, index=False)
    return path


def _library(frame: pd.DataFrame, design: bool, method: str = "wald") -> tuple[Any, Any, Any]:
    kept = frame.dropna(subset=["a", "b"])
    sample = None
    if design:
        sample = SampleDesign(kept["w"].to_numpy(), kept["s"].to_numpy(), kept["p"].to_numpy())
    reports = [kept["a"].to_numpy().astype(int), kept["b"].to_numpy().astype(int)]
    joint = joint_estimate([Warner(0.8), ForcedResponse(1 / 6, 1 / 6)], reports, sample)
    return joint, association(joint), independence_test(joint, method=method)


@pytest.mark.parametrize("design", [False, True])
def test_numbers_are_the_librarys(
    runner: CliRunner, frame: pd.DataFrame, data: Path, design: bool
) -> None:
    args = ("crosstab", data, *A, *B, *(DESIGN if design else ()))
    out = run_json(runner, *args)
    joint, assoc, indep = _library(frame, design)
    assert out["items"] == ["a", "b"] and out["missing"] == 4
    assert out["joint"]["n"] == len(frame) - 4
    assert out["joint"]["estimate"] == pytest.approx(joint.values.tolist(), rel=1e-12)
    assert out["joint"]["se"] == pytest.approx(joint.se.tolist(), rel=1e-12)
    assert out["joint"]["df"] == (joint.df if design else "inf")
    got = {m["name"]: m for m in out["association"]["measures"]}
    for m in assoc.measures:
        assert got[m.name]["estimate"] == pytest.approx(m.value, rel=1e-12)
        assert got[m.name]["se"] == pytest.approx(m.se, rel=1e-12)
    assert out["independence"]["statistic"] == pytest.approx(indep.statistic, rel=1e-12)
    assert out["independence"]["p_value"] == pytest.approx(indep.p_value, rel=1e-9)
    # the items are named by their columns, not by their designs
    assert out["association"]["items"] == ["a", "b"]


def test_rao_scott_and_the_mle(runner: CliRunner, frame: pd.DataFrame, data: Path) -> None:
    out = run_json(runner, "crosstab", data, *A, *B, *DESIGN, "--test", "rao-scott",
                   "--estimator", "mle")  # fmt: skip
    joint, _, indep = _library(frame, True, "rao-scott")
    mle = association(joint, estimator="mle")
    assert out["estimator"] == "mle"
    got = {m["name"]: m["estimate"] for m in out["association"]["measures"]}
    assert got["odds_ratio"] == pytest.approx(mle["odds_ratio"].value, rel=1e-9)
    assert out["independence"]["statistic"] == pytest.approx(indep.statistic, rel=1e-12)


def test_survey_file_names_the_items(
    runner: CliRunner, frame: pd.DataFrame, data: Path, tmp_path: Path
) -> None:
    survey = tmp_path / "s.yaml"
    survey.write_text(
        "schema: deniable.survey/1\nid: s\nversion: 1\ntitle: S\ncap: 5\nquestions:\n"
        '  - {id: a, text: "A?", design: {mechanism: warner, parameters: {p: 0.8}}}\n'
        '  - {id: b, text: "B?", design: {mechanism: forced,\n'
        "      parameters: {forced_yes: 1/6, forced_no: 1/6}}}\n"
    )
    out = run_json(runner, "crosstab", data, "--survey", survey, "--column", "a",
                   "--column", "b")  # fmt: skip
    joint, _, _ = _library(frame, False)
    assert out["designs"] == ["warner", "forced"]
    assert out["joint"]["estimate"] == pytest.approx(joint.values.tolist(), rel=1e-9)


def test_table(runner: CliRunner, data: Path) -> None:
    result = run(runner, "crosstab", data, *A, *B, *DESIGN)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Joint distribution of a (warner) and b (forced)" in text
    assert "odds ratio" in text and "Test of independence of a and b" in text
    assert "4 rows with a missing report dropped" in text


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        ((*A,), ["`--question`", "exactly twice", "got 1"]),
        ((*A, "-q", "a=warner:p=0.7"), ["different columns", "'a'"]),
        ((*A, "-q", "b=sld:p1=2/12,p2=10/12@s"), ["two-group", "crosstab"]),
        ((*A, "-q", "s=warner:p=0.8"), ["column 's'", "0..1", "got 2"]),
        ((*A, "-q", "nope=warner:p=0.8"), ["no column 'nope'"]),
        ((*A, *B, "--missing", "error"), ["--missing error", "data row 4"]),
        ((*A, *B, "--estimator", "median"), ["--estimator", "moment", "'median'"]),
        ((*A, *B, "--test", "t"), ["--test", "rao-scott", "'t'"]),
        ((*A, "--column", "b"), ["`--column`", "--survey"]),
        ((*A, *B, "--weights", "s", "--psu", "p", "--strata", "s"), ["--weights"]),
        ((*A, *B, "--rho", "0.5"), ["--rho"]),
    ],
)
def test_bad_input_is_one_error(
    runner: CliRunner, data: Path, args: tuple[str, ...], needles: list[str]
) -> None:
    before = data.read_bytes()
    one_error(run(runner, "crosstab", data, *args), *needles)
    assert data.read_bytes() == before


def test_weights_must_be_positive(runner: CliRunner, frame: pd.DataFrame, tmp_path: Path) -> None:
    bad = frame.assign(w=frame["w"].where(frame.index != 20, -1.0))
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    one_error(run(runner, "crosstab", path, *A, *B, "--weights", "w"), "--weights", "> 0")
