"""`deniable weight`: the table comes back with weights that reproduce the margins (and
are deniable.sampling's raking, computed here through the library); bad input is one error
line and writes nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run, run_json
from deniable.sampling import SampleDesign, post_stratify, rake_weights, trim_weights

MARGINS = """variable,level,target
sex,f,0.5
sex,m,0.5
age,1,0.3
age,2,0.3
age,3,0.4
"""


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame]:
    rng = np.random.default_rng(9)
    n = 400
    df = pd.DataFrame({
        "q": rng.integers(0, 2, n), "sex": rng.choice(["f", "m"], n, p=[0.7, 0.3]),
        "age": rng.choice([1, 2, 3], n, p=[0.5, 0.3, 0.2]), "w": rng.uniform(1, 2, n),
    })  # fmt: skip
    data = tmp_path / "reports.csv"
    df.to_csv(data, index=False)
    margins = tmp_path / "margins.csv"
    margins.write_text(MARGINS)
    return data, margins, df


def _library(df: pd.DataFrame, base: np.ndarray) -> np.ndarray:
    fit = rake_weights(base, {
        "sex": (df["sex"].to_numpy(), {"f": 0.5, "m": 0.5}),
        "age": (df["age"].to_numpy(), {1: 0.3, 2: 0.3, 3: 0.4}),
    })  # fmt: skip
    return fit.weights


def test_weight_round_trip(runner: CliRunner, files: tuple[Path, Path, pd.DataFrame]) -> None:
    data, margins, df = files
    out = data.parent / "weighted.parquet"
    info = run_json(runner, "weight", data, "--margins", margins, "-o", out, "--weights", "w")
    back = pd.read_parquet(out)
    assert list(back.columns) == ["q", "sex", "age", "w", "weight"]
    pd.testing.assert_frame_equal(back[df.columns], df)
    w = back["weight"]
    total = w.sum()
    for var, level, target in [("sex", "f", 0.5), ("sex", "m", 0.5), ("age", 1, 0.3),
                               ("age", 2, 0.3), ("age", 3, 0.4)]:  # fmt: skip
        assert w[back[var] == level].sum() / total == pytest.approx(target, abs=1e-8)
    np.testing.assert_allclose(w, _library(df, df["w"].to_numpy()), rtol=1e-12)
    assert info["converged"] is True and info["iterations"] >= 2
    assert info["kish_deff"] == pytest.approx(len(w) * (w**2).sum() / total**2)
    assert info["out"] == str(out)
    text = run(runner, "weight", data, "--margins", margins, "-o", data.parent / "w.csv.gz")
    assert text.exit_code == 0
    assert "converged" in text.stdout and "Kish design effect" in text.stdout
    back = pd.read_csv(data.parent / "w.csv.gz")
    np.testing.assert_allclose(back["weight"], _library(df, np.ones(len(df))), rtol=1e-9)


def test_weight_post_stratify_and_trim(
    runner: CliRunner, files: tuple[Path, Path, pd.DataFrame], tmp_path: Path
) -> None:
    data, _, df = files
    margins = tmp_path / "sex.csv"
    margins.write_text("variable,level,target\nsex,f,600\nsex,m,400\n")
    out = tmp_path / "ps.csv"
    info = run_json(runner, "weight", data, "--margins", margins, "-o", out, "--post-stratify")
    want = post_stratify(SampleDesign(weights=np.ones(len(df))), df["sex"].to_numpy(),
                         {"f": 600, "m": 400}).weights  # fmt: skip
    np.testing.assert_allclose(pd.read_csv(out)["weight"], want, rtol=1e-12)
    assert info["method"] == "post-stratify" and info["targets"] == "counts"
    out = tmp_path / "trim.csv"
    run_json(runner, "weight", data, "--margins", files[1], "-o", out, "--trim", "0.8,1.5")
    raked = _library(df, np.ones(len(df)))
    want = trim_weights(SampleDesign(weights=raked), lower=0.8, upper=1.5).weights
    np.testing.assert_allclose(pd.read_csv(out)["weight"], want, rtol=1e-9)


@pytest.mark.parametrize(
    ("margins", "extra", "needles"),
    [
        ("variable,level,target\nsex,f,1\n", (), ("`--margins`", "no target for sex=m")),
        ("variable,level,target\nsex,f,0.5\nsex,m,0.4\nsex,x,0.1\n", (),
         ("`--margins`", "sex=x", "which no respondent has")),
        ("variable,level,target\nsex,f,0.5\nsex,m,0.5\nage,1,40\nage,2,30\nage,3,30\n", (),
         ("`--margins`", "same total", "sex: 1, age: 100")),
        ("variable,level\nsex,f\n", (), ("`--margins`", "no 'target'")),
        ("variable,level,target\nheight,1,1\n", (), ("`--margins`", "'height'")),
        ("variable,level,target\nsex,f,0.5\nsex,m,0.5\nsex2,f,0.2\nsex2,m,0.8\n", (),
         ("`--margins`", "raking did not converge")),
        (MARGINS, ("--weights", "q"), ("`--weights` column 'q' must be finite and > 0",)),
        (MARGINS, ("--weights", "nope"), ("`--weights`", "'nope'")),
        (MARGINS, ("--rake", "--post-stratify"), ("one of --rake and --post-stratify",)),
        (MARGINS, ("--post-stratify",), ("`--post-stratify`", "one variable")),
        (MARGINS, ("--trim", "2"), ("`--trim` must be LOW,HIGH",)),
        (MARGINS, ("--trim", "3,5"), ("`--trim` LOW", "cannot keep the weight total")),
        (MARGINS, ("--column", "sex"), ("`--column` 'sex' is already a column",)),
        (MARGINS, ("--weights", "w", "--column", "w"), ("`--column` 'w' is already a column",)),
    ],
)  # fmt: skip
def test_bad_input_is_one_error_and_writes_nothing(
    runner: CliRunner,
    files: tuple[Path, Path, pd.DataFrame],
    tmp_path: Path,
    margins: str,
    extra: tuple[str, ...],
    needles: tuple[str, ...],
) -> None:
    data, _, df = files
    if "sex2" in margins:
        df.assign(sex2=df["sex"]).to_csv(data, index=False)
    path = tmp_path / "m.csv"
    path.write_text(margins)
    before = data.read_bytes()
    out = tmp_path / "out.csv"
    one_error(run(runner, "weight", data, "--margins", path, "-o", out, *extra), *needles)
    assert not out.exists()
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.csv", "reports.csv",
                                                                 "margins.csv"])  # fmt: skip


def test_never_over_an_existing_file_or_the_input(
    runner: CliRunner, files: tuple[Path, Path, pd.DataFrame]
) -> None:
    data, margins, _ = files
    out = data.parent / "exists.csv"
    out.write_text("keep me\n")
    one_error(run(runner, "weight", data, "--margins", margins, "-o", out), "exists", "--force")
    assert out.read_text() == "keep me\n"
    before = data.read_bytes()
    one_error(run(runner, "weight", data, "--margins", margins, "-o", data, "--force"),
              "same file as the input REPORTS")  # fmt: skip
    one_error(run(runner, "weight", data, "--margins", margins, "-o", margins, "--force"),
              "same file as the input --margins")  # fmt: skip
    assert data.read_bytes() == before
    assert run(runner, "weight", data, "--margins", margins, "-o", out, "--force").exit_code == 0
    assert "weight" in pd.read_csv(out).columns


def test_the_suffix_chooses_the_format(
    runner: CliRunner, files: tuple[Path, Path, pd.DataFrame]
) -> None:
    data, margins, _ = files
    for wrong in ("w.json", "w.txt", "w.parquet.gz"):
        out = data.parent / wrong
        one_error(run(runner, "weight", data, "--margins", margins, "-o", out), "`--out`")
        assert not out.exists()
    out = data.parent / "w.pq"
    assert run(runner, "weight", data, "--margins", margins, "-o", out).exit_code == 0
    assert out.read_bytes()[:4] == b"PAR1"
