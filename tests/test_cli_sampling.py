"""`deniable analyze` and `deniable report` under a sample design (--weights, --strata,
--psu, --fpc, replicate weights): the numbers are deniable.sampling's, computed here
through the library; bad design options are one error line; without them the output is
what it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run, run_json
from _sampling_data import clustered_sample
from deniable import Warner
from deniable.sampling import (
    ReplicateDesign,
    SampleDesign,
    as_replicate,
    survey_by,
    survey_estimate,
)

WARNER = ("-d", "warner", "-p", "p=0.8")


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    stratum, psu, weights, reports = clustered_sample()
    df = pd.DataFrame({"q": reports, "s": stratum, "p": psu, "w": weights, "N": 12, "two": 2})
    rep = as_replicate(SampleDesign(weights, stratum, psu), "JKn")
    for i in range(rep.replicates):
        df[f"rw{i}"] = rep.replicate_weights[:, i]
    df.attrs["rscales"] = rep.rscales.tolist()
    return df


@pytest.fixture()
def data(frame: pd.DataFrame, tmp_path: Path) -> Path:
    path = tmp_path / "sample.csv"
    frame.to_csv(path, index=False)
    return path


def _check(payload: dict[str, Any], want: Any) -> None:
    got = payload["design_based"]
    assert got["estimate"] == pytest.approx(want.value, rel=1e-12)
    assert got["se"] == pytest.approx(want.se, rel=1e-12)
    assert got["df"] == want.df
    assert got["deff"] == pytest.approx(want.deff, rel=1e-12)
    assert got["ci_t"] == pytest.approx(list(want.ci(0.95, "t")), rel=1e-12)


def test_analyze_taylor_numbers_are_the_librarys(
    runner: CliRunner, frame: pd.DataFrame, data: Path
) -> None:
    out = run_json(runner, "analyze", data, "--column", "q", *WARNER,
                   "--weights", "w", "--strata", "s", "--psu", "p")  # fmt: skip
    design = SampleDesign(frame["w"].to_numpy(), frame["s"].to_numpy(), frame["p"].to_numpy())
    _check(out, survey_estimate(Warner(0.8), frame["q"].to_numpy(), design))
    assert out["design_based"]["variance_method"] == "Taylor linearization"
    assert out["comparison"][0]["design_se"] == pytest.approx(out["design_based"]["se"])
    # the unweighted estimate is printed beside it, as without a design
    plain = run_json(runner, "analyze", data, "--column", "q", *WARNER)
    assert out["estimate"] == plain["estimate"] and out["se"] == plain["se"]
    fpc = run_json(runner, "analyze", data, "--column", "q", *WARNER,
                   "--weights", "w", "--strata", "s", "--psu", "p", "--fpc", "N")  # fmt: skip
    with_fpc = SampleDesign(frame["w"].to_numpy(), frame["s"].to_numpy(),
                            frame["p"].to_numpy(), fpc=frame["N"].to_numpy())  # fmt: skip
    _check(fpc, survey_estimate(Warner(0.8), frame["q"].to_numpy(), with_fpc))
    assert fpc["design_based"]["se"] < out["design_based"]["se"]  # 5 of 12 PSUs: f = 5/12


def test_analyze_replicate_weights(runner: CliRunner, frame: pd.DataFrame, data: Path) -> None:
    reps = frame[[c for c in frame.columns if c.startswith("rw")]].to_numpy()
    rscales = ",".join(repr(float(x)) for x in frame.attrs["rscales"])
    out = run_json(runner, "analyze", data, "--column", "q", *WARNER, "--weights", "w",
                   "--repweights", "rw*", "--repmethod", "JKn", "--rscales", rscales)  # fmt: skip
    want = ReplicateDesign(reps, frame["w"].to_numpy(), "JKn", rscales=frame.attrs["rscales"])
    _check(out, survey_estimate(Warner(0.8), frame["q"].to_numpy(), want))
    listed = ",".join(f"rw{i}" for i in range(reps.shape[1]))
    out = run_json(runner, "analyze", data, "--column", "q", *WARNER, "--weights", "w",
                   "--repweights", listed, "--repmethod", "Fay", "--rho", "0.3",
                   "--scale", "0.05", "--mse")  # fmt: skip
    fay = ReplicateDesign(reps, frame["w"].to_numpy(), "Fay", rho=0.3, scale=0.05, mse=True)
    _check(out, survey_estimate(Warner(0.8), frame["q"].to_numpy(), fay))


def test_analyze_lonely_psu_rule(runner: CliRunner, frame: pd.DataFrame, tmp_path: Path) -> None:
    df = frame[["q", "s", "p", "w"]].assign(p=np.where(frame["s"] == 2, 0, frame["p"]))
    path = tmp_path / "lonely.parquet"
    df.to_parquet(path)
    args = ("analyze", path, "--column", "q", *WARNER, "--weights", "w", "--strata", "s",
            "--psu", "p")  # fmt: skip
    one_error(run(runner, *args), "stratum 2 has only one PSU", "--lonely-psu")
    out = run_json(runner, *args, "--lonely-psu", "average")
    design = SampleDesign(df["w"], df["s"], df["p"], lonely_psu="average")
    _check(out, survey_estimate(Warner(0.8), df["q"].to_numpy(), design))


def test_report_under_a_design(runner: CliRunner, frame: pd.DataFrame, data: Path) -> None:
    out = run_json(runner, "report", data, "-q", "q=warner:p=0.8", "--weights", "w",
                   "--strata", "s", "--psu", "p")  # fmt: skip
    design = SampleDesign(frame["w"].to_numpy(), frame["s"].to_numpy(), frame["p"].to_numpy())
    _check(out["questions"][0], survey_estimate(Warner(0.8), frame["q"].to_numpy(), design))
    assert out["sample_design"].startswith("480 respondents, 8 strata, 40 PSUs")
    text = run(runner, "report", data, "-q", "q=warner:p=0.8", "--weights", "w").stdout
    assert "Design-based estimates" in text


def test_text_output_shows_both_analyses(runner: CliRunner, data: Path) -> None:
    plain = run(runner, "analyze", data, "--column", "q", *WARNER)
    designed = run(runner, "analyze", data, "--column", "q", *WARNER, "--weights", "w",
                   "--strata", "s", "--psu", "p")  # fmt: skip
    assert plain.exit_code == designed.exit_code == 0
    # the unweighted part is the plain output, line for line; the design adds sections
    assert designed.stdout.startswith(plain.stdout)
    rest = designed.stdout[len(plain.stdout) :]
    assert "Unweighted and design-based estimates" in rest
    assert "design-based" in rest and "Taylor linearization" in rest
    assert "Design-based" not in plain.stdout
    report = run(runner, "report", data, "-q", "q=warner:p=0.8")
    assert "Design-based" not in report.stdout


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (("--weights", "nope"), ("`--weights` must be one of the header", "'nope'")),
        (("--strata", "nope"), ("`--strata`", "'nope'")),
        (("--weights", "q"), ("`--weights` column 'q' must be finite and > 0", "data row")),
        (("--rho", "0.5"), ("`--rho` describes the sample's design",)),
        (("--weights", "w", "--rho", "0.5"), ("`--rho` applies to replicate weights only",)),
        (("--weights", "w", "--repmethod", "JKn"), ("`--repmethod` applies to replicate",)),
        (("--weights", "w", "--repweights", "rw*", "--repmethod", "jk"),
         ("`--repmethod` must be one of 'JK1'", "'jk'")),
        (("--weights", "w", "--repweights", "zz*"), ("`--repweights` 'zz*' must match",)),
        (("--weights", "w", "--repweights", "rw*", "--repmethod", "JKn"),
         ("`--rscales` must be given for method 'JKn'",)),
        (("--weights", "w", "--repweights", "rw*", "--repmethod", "Fay"), ("`--rho` must be",)),
        (("--weights", "w", "--repweights", "rw*", "--rscales", "1,2"),
         ("`--rscales` must be",)),
        (("--weights", "w", "--repweights", "rw*", "--strata", "s"),
         ("`--repweights` carries the design by itself", "`--strata`")),
        (("--strata", "s", "--lonely-psu", "drop"), ("`--lonely-psu` must be one of",)),
        (("--psu", "p", "--fpc", "two"), ("`--fpc` must be at least the number of PSUs",)),
        (("--strata", "s", "--fpc", "q"), ("`--fpc` must be the same on every row",)),
    ],
)  # fmt: skip
def test_bad_design_options_are_one_error(
    runner: CliRunner, data: Path, extra: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    before = data.read_bytes()
    one_error(run(runner, "analyze", data, "--column", "q", *WARNER, *extra), *needles)
    assert data.read_bytes() == before


def test_zero_weights_in_a_report_are_one_error(
    runner: CliRunner, frame: pd.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / "zero.csv"
    frame[["q", "w"]].assign(w=np.where(np.arange(len(frame)) == 5, 0.0, frame["w"])).to_csv(
        path, index=False
    )
    one_error(run(runner, "report", path, "-q", "q=warner:p=0.8", "--weights", "w"),
              "`--weights` column 'w' must be finite and > 0", "got 0.0 in data row 6")  # fmt: skip


def test_analyze_by_group_under_a_design(
    runner: CliRunner, frame: pd.DataFrame, data: Path
) -> None:
    out = run_json(runner, "analyze", data, "--column", "q", *WARNER, "--weights", "w",
                   "--strata", "s", "--psu", "p", "--by", "s")  # fmt: skip
    design = SampleDesign(frame["w"].to_numpy(), frame["s"].to_numpy(), frame["p"].to_numpy())
    want = survey_by(Warner(0.8), frame["q"].to_numpy(), design, frame["s"].to_numpy())
    assert [g["group"] for g in out["groups"]] == list(range(8))
    for g in out["groups"]:
        est = want[g["group"]]
        assert g["design_estimate"] == pytest.approx(est.value, rel=1e-12)
        assert g["design_se"] == pytest.approx(est.se, rel=1e-12)
    text = run(runner, "analyze", data, "--column", "q", *WARNER, "--weights", "w", "--by", "s")
    assert "Design-based estimates by group" in text.stdout
